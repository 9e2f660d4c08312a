package gitsource

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gst "trove.dev/trove/internal/gitsource/gitsourcetest"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/netguard"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/store/fsblob"
	"trove.dev/trove/internal/store/sqlite"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

// env is a Service on a real SQLite index and blob store.
type env struct {
	svc   *Service
	idx   *sqlite.Index
	blobs *fsblob.Store
	mu    sync.Mutex
	audit []registry.AuditEvent
}

// newEnv is a Service that may reach the test's git servers on loopback
// (--git-source-allow-private).
func newEnv(t *testing.T, maxRepo int64) *env {
	t.Helper()
	return newGuardedEnv(t, maxRepo, netguard.Guard{AllowPrivate: true})
}

func newGuardedEnv(t *testing.T, maxRepo int64, guard netguard.Guard) *env {
	t.Helper()
	st := sqlitetest.New(t)
	dir, idx, blobs := st.Dir, st.Index, st.Blobs
	if err := idx.CreateNamespace(t.Context(), registry.Namespace{Name: "acme", CreatedAt: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	e := &env{idx: idx, blobs: blobs}
	pub := modules.NewPublisher(modules.Options{Index: idx, Blobs: blobs, TempDir: filepath.Join(dir, "tmp")})
	e.svc = New(Options{Index: idx, Modules: pub, TempDir: filepath.Join(dir, "tmp"), MaxRepoBytes: maxRepo, Guard: guard,
		Secret: signing.SecretFile{Path: filepath.Join(dir, "signing-secret"), Create: true},
		Record: func(_ context.Context, a registry.AuditEvent) {
			e.mu.Lock()
			e.audit = append(e.audit, a)
			e.mu.Unlock()
		}})
	return e
}

const mainTF = "variable \"x\" {\n  default = 1\n}\n"

func (e *env) versions(t *testing.T) map[string]registry.ModuleVersion {
	t.Helper()
	vs, err := e.idx.ListModuleVersions(t.Context(), "acme", "net", "aws")
	if err != nil && !registry.IsKind(err, registry.NotFound) {
		t.Fatal(err)
	}
	out := map[string]registry.ModuleVersion{}
	for _, v := range vs {
		out[v.Version] = v
	}
	return out
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestSyncPublic(t *testing.T) {
	e := newEnv(t, 0)
	root := t.TempDir()
	repo := gst.NewRepo(t, root, "net", map[string]string{"main.tf": mainTF, "README.md": "# net\n"})
	first := gst.Git(t, repo, "rev-parse", "HEAD")
	gst.Git(t, repo, "tag", "v1.0.0")
	gst.Git(t, repo, "tag", "1.0.0") // the same version, the same commit
	gst.Git(t, repo, "tag", "-a", "v1.1.0", "-m", "annotated")
	gst.Git(t, repo, "tag", "release-3") // no version: ignored
	gst.Git(t, repo, "tag", "v1.2")      // no version: ignored
	gst.Commit(t, repo, map[string]string{"outputs.tf": "output \"y\" {\n  value = 2\n}\n"})
	gst.Git(t, repo, "tag", "v2.0.0-rc.1")
	base := gst.Daemon(t, root)

	c, err := e.svc.Create(t.Context(), Source{Namespace: "acme", Name: "net", System: "aws", URL: base + "net", CreatedBy: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(c.WebhookSecret, "gitsec_") {
		t.Fatalf("webhook secret %q", c.WebhookSecret)
	}
	rep, err := e.svc.Sync(t.Context(), "acme", "net", "aws", "test")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"1.0.0", "1.1.0", "2.0.0-rc.1"}; !slices.Equal(rep.Published, want) || rep.Ignored != 2 || len(rep.Refused) != 0 {
		t.Fatalf("report %+v, want published %v and 2 ignored", rep, want)
	}
	vs := e.versions(t)
	if got := keys(vs); !slices.Equal(got, []string{"1.0.0", "1.1.0", "2.0.0-rc.1"}) {
		t.Fatalf("versions %v", got)
	}
	if !strings.Contains(vs["1.0.0"].Origin, first) {
		t.Fatalf("origin %q does not name commit %s", vs["1.0.0"].Origin, first)
	}
	if !strings.Contains(archiveNames(t, e, vs["2.0.0-rc.1"]), "outputs.tf") || strings.Contains(archiveNames(t, e, vs["1.0.0"]), "outputs.tf") {
		t.Fatal("a version does not hold its tag's files")
	}

	// Again: nothing new.
	rep, err = e.svc.Sync(t.Context(), "acme", "net", "aws", "test")
	if err != nil || len(rep.Published) != 0 || rep.Current != 3 {
		t.Fatalf("second sync: %+v, %v", rep, err)
	}

	// A new tag is published; a moved tag is refused and audited, its
	// version unchanged.
	gst.Commit(t, repo, map[string]string{"main.tf": mainTF + "# changed\n"})
	gst.Git(t, repo, "tag", "v1.3.0")
	gst.Git(t, repo, "tag", "-f", "v1.0.0")
	gst.Git(t, repo, "tag", "-d", "1.0.0")
	rep, err = e.svc.Sync(t.Context(), "acme", "net", "aws", "test")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Published, []string{"1.3.0"}) || len(rep.Refused) != 1 || !strings.Contains(rep.Refused[0], "tag v1.0.0 moved") {
		t.Fatalf("report %+v", rep)
	}
	if got := e.versions(t)["1.0.0"]; got.ArchiveDigest != vs["1.0.0"].ArchiveDigest {
		t.Fatal("the moved tag changed version 1.0.0")
	}
	if len(e.audit) != 1 || e.audit[0].Action != registry.AuditGitSourceTagMoved {
		t.Fatalf("audit %+v", e.audit)
	}
	g, err := e.idx.GetGitSource(t.Context(), "acme", "net", "aws")
	if err != nil || !strings.Contains(g.LastError, "moved") || g.LastSyncAt.IsZero() {
		t.Fatalf("source %+v, %v", g, err)
	}
	// The next sync reports the refusal again without auditing it again.
	if rep, err := e.svc.Sync(t.Context(), "acme", "net", "aws", "test"); err != nil || len(rep.Refused) != 1 || len(e.audit) != 1 {
		t.Fatalf("sync after the refusal: %+v, %v, %d audit entries", rep, err, len(e.audit))
	}
	// The sync lease is free again; a running sync elsewhere is a Conflict.
	now := time.Now()
	if err := e.idx.ClaimGitSource(t.Context(), "acme", "net", "aws", "other", now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Sync(t.Context(), "acme", "net", "aws", "test"); !registry.IsKind(err, registry.Conflict) {
		t.Fatalf("sync during another: %v", err)
	}
}

func archiveNames(t *testing.T, e *env, v registry.ModuleVersion) string {
	t.Helper()
	b, err := e.blobs.Open(t.Context(), v.ArchiveDigest)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Content.Close()
	zr, err := gzip.NewReader(b.Content)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	return strings.Join(names, " ")
}

func TestSyncSubdirAndSymlinks(t *testing.T) {
	e := newEnv(t, 0)
	root := t.TempDir()
	repo := gst.NewRepo(t, root, "mono", map[string]string{
		"modules/net/main.tf": mainTF, "other/secret.tf": "# not in the module\n", "README.md": "# mono\n",
	})
	gst.Git(t, repo, "tag", "net/v1.0.0")
	gst.Git(t, repo, "tag", "v9.0.0") // another prefix: ignored
	gst.Commit(t, repo, map[string]string{"modules/net/leak.tf": "->../../other/secret.tf"})
	gst.Git(t, repo, "tag", "net/v1.1.0") // a link leaving the sub-directory
	os.Remove(filepath.Join(repo, "modules/net/leak.tf"))
	os.RemoveAll(filepath.Join(repo, "modules/net"))
	gst.Commit(t, repo, map[string]string{"modules/net": "->/etc"})
	gst.Git(t, repo, "tag", "net/v1.2.0") // the sub-directory is a link out of the repository
	base := gst.Daemon(t, root)

	if _, err := e.svc.Create(t.Context(), Source{Namespace: "acme", Name: "net", System: "aws", URL: base + "mono", Subdir: "modules/net/", TagPrefix: "net/"}); err != nil {
		t.Fatal(err)
	}
	rep, err := e.svc.Sync(t.Context(), "acme", "net", "aws", "test")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Published, []string{"1.0.0"}) || len(rep.Refused) != 2 || rep.Ignored != 1 {
		t.Fatalf("report %+v", rep)
	}
	if !strings.Contains(rep.Refused[0], "outside the module") || !strings.Contains(rep.Refused[1], "leaves") {
		t.Fatalf("refusals %q", rep.Refused)
	}
	if names := archiveNames(t, e, e.versions(t)["1.0.0"]); names != "main.tf" {
		t.Fatalf("archive holds %q, want main.tf only", names)
	}
}

func TestSyncPrivateHTTP(t *testing.T) {
	e := newEnv(t, 0)
	root := t.TempDir()
	repo := gst.NewRepo(t, root, "net", map[string]string{"main.tf": mainTF})
	gst.Git(t, repo, "tag", "v1.0.0")
	base := gst.HTTP(t, root, "ci", "s3cret-token")

	if _, err := e.svc.Create(t.Context(), Source{Namespace: "acme", Name: "net", System: "aws", URL: base + "net",
		Auth: registry.GitAuthBasic, Username: "ci", Password: "wrong-token"}); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.Sync(t.Context(), "acme", "net", "aws", "test")
	if err == nil || !strings.Contains(registry.Message(err), "authentication failed") || strings.Contains(err.Error(), "wrong-token") {
		t.Fatalf("wrong credentials: %v", err)
	}
	g, _ := e.idx.GetGitSource(t.Context(), "acme", "net", "aws")
	if !strings.Contains(g.LastError, "authentication failed") || strings.Contains(string(g.SealedSecrets), "wrong-token") {
		t.Fatalf("last error %q, or the credential is stored in clear", g.LastError)
	}
	if err := e.idx.DeleteGitSource(t.Context(), "acme", "net", "aws"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Create(t.Context(), Source{Namespace: "acme", Name: "net", System: "aws", URL: base + "net",
		Auth: registry.GitAuthBasic, Username: "ci", Password: "s3cret-token"}); err != nil {
		t.Fatal(err)
	}
	rep, err := e.svc.Sync(t.Context(), "acme", "net", "aws", "test")
	if err != nil || !slices.Equal(rep.Published, []string{"1.0.0"}) {
		t.Fatalf("right credentials: %+v, %v", rep, err)
	}
}

func TestSyncRepoTooLarge(t *testing.T) {
	e := newEnv(t, 256<<10)
	root := t.TempDir()
	big := make([]byte, 2<<20)
	rand.Read(big)
	repo := gst.NewRepo(t, root, "net", map[string]string{"main.tf": mainTF, "blob.bin": string(big)})
	gst.Git(t, repo, "tag", "v1.0.0")
	base := gst.Daemon(t, root)
	if _, err := e.svc.Create(t.Context(), Source{Namespace: "acme", Name: "net", System: "aws", URL: base + "net"}); err != nil {
		t.Fatal(err)
	}
	rep, err := e.svc.Sync(t.Context(), "acme", "net", "aws", "test")
	if err != nil || len(rep.Refused) != 1 || !strings.Contains(rep.Refused[0], "more than 262144 bytes") {
		t.Fatalf("report %+v, %v", rep, err)
	}
	if len(e.versions(t)) != 0 {
		t.Fatal("a version was published")
	}
}

func TestCreateRefusesHostileInput(t *testing.T) {
	e := newEnv(t, 0)
	marker := filepath.Join(t.TempDir(), "pwned")
	for name, src := range map[string]Source{
		"file URL":            {URL: "file:///etc"},
		"local path":          {URL: "/srv/git/net"},
		"relative path":       {URL: "./net"},
		"ext transport":       {URL: "ext::sh -c touch% " + marker},
		"fd transport":        {URL: "fd::3"},
		"ssh proxy option":    {URL: "ssh://-oProxyCommand=touch%20" + marker + "/x"},
		"scp proxy option":    {URL: "-oProxyCommand=touch:" + marker},
		"scp host option":     {URL: "git@-oProxyCommand=x:repo"},
		"upload-pack option":  {URL: "--upload-pack=touch " + marker},
		"path option":         {URL: "https://git.example.com/--upload-pack=x"},
		"credentials in URL":  {URL: "https://ci:token@git.example.com/net.git"},
		"unknown scheme":      {URL: "gopher://git.example.com/net"},
		"space":               {URL: "https://git.example.com/a b"},
		"dotdot subdir":       {URL: "https://git.example.com/net.git", Subdir: "../../etc"},
		"inner dotdot":        {URL: "https://git.example.com/net.git", Subdir: "a/../../b"},
		"absolute subdir":     {URL: "https://git.example.com/net.git", Subdir: "/etc"},
		"git dir subdir":      {URL: "https://git.example.com/net.git", Subdir: ".git/hooks"},
		"tag prefix pattern":  {URL: "https://git.example.com/net.git", TagPrefix: "*"},
		"basic without user":  {URL: "https://git.example.com/net.git", Auth: "basic", Password: "x"},
		"basic over ssh":      {URL: "git@git.example.com:net.git", Auth: "basic", Username: "u", Password: "x"},
		"ssh without hosts":   {URL: "git@git.example.com:net.git", Auth: "ssh", SSHKey: "-----BEGIN OPENSSH PRIVATE KEY-----\n"},
		"secret without auth": {URL: "https://git.example.com/net.git", Password: "x"},
		"unknown auth":        {URL: "https://git.example.com/net.git", Auth: "kerberos"},
		"header injection":    {URL: "https://git.example.com/net.git", Auth: "basic", Username: "u", Password: "x\r\nX-Evil: 1"},
		"poll too often":      {URL: "https://git.example.com/net.git", PollInterval: time.Second},
		"bad module name":     {URL: "https://git.example.com/net.git", Name: "../x"},
	} {
		t.Run(name, func(t *testing.T) {
			src.Namespace, src.System = "acme", "aws"
			if src.Name == "" {
				src.Name = "net"
			}
			_, err := e.svc.Create(t.Context(), src)
			if !registry.IsKind(err, registry.Invalid) {
				t.Fatalf("Create: %v, want Invalid", err)
			}
		})
	}
	if all, err := e.idx.ListGitSources(t.Context(), ""); err != nil || len(all) != 0 {
		t.Fatalf("stored %v, %v", all, err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a hostile URL ran a command")
	}
}

// TestGitRefusesLocalTransports checks the second line of defence: git,
// as Trove runs it, refuses file and ext transports even if a URL got
// past ParseGitURL.
func TestGitRefusesLocalTransports(t *testing.T) {
	root := t.TempDir()
	gst.NewRepo(t, root, "net", map[string]string{"main.tf": mainTF})
	marker := filepath.Join(t.TempDir(), "pwned")
	for _, u := range []string{"file://" + filepath.Join(root, "net"), filepath.Join(root, "net"), "ext::sh -c touch% " + marker} {
		run, err := newRunner(t.TempDir(), registry.GitSource{URL: u, Auth: registry.GitAuthNone}, pin{url: u}, credentials{}, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := run.listTags(t.Context()); err == nil {
			t.Errorf("git read %s", u)
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("ext:: ran a command")
	}
}

func TestWebhookVerification(t *testing.T) {
	e := newEnv(t, 0)
	c, err := e.svc.Create(t.Context(), Source{Namespace: "acme", Name: "net", System: "aws", URL: "https://git.example.com/net.git", PollInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"ref":"refs/tags/v1.0.0"}`)
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	for _, tc := range []struct {
		name string
		h    http.Header
		mod  string
		ok   bool
	}{
		{"github", hdr(HeaderGitHubSignature, SignGitHub(c.WebhookSecret, body), HeaderGitHubEvent, "push"), "net", true},
		{"gitlab", hdr(HeaderGitLabToken, c.WebhookSecret), "net", true},
		{"github bad signature", hdr(HeaderGitHubSignature, SignGitHub("other", body)), "net", false},
		{"github no prefix", hdr(HeaderGitHubSignature, strings.TrimPrefix(SignGitHub(c.WebhookSecret, body), "sha256=")), "net", false},
		{"github signature of another body", hdr(HeaderGitHubSignature, SignGitHub(c.WebhookSecret, []byte("{}"))), "net", false},
		{"gitlab bad token", hdr(HeaderGitLabToken, c.WebhookSecret+"x"), "net", false},
		{"unsigned", hdr(), "net", false},
		{"no such source", hdr(HeaderGitLabToken, c.WebhookSecret), "other", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synced, err := e.svc.Webhook(t.Context(), "acme", tc.mod, "aws", tc.h, body)
			if tc.ok != (err == nil) || synced != tc.ok {
				t.Fatalf("Webhook: %v, %v", synced, err)
			}
			if !tc.ok && !registry.IsKind(err, registry.Unauthenticated) {
				t.Fatalf("refusal %v, want Unauthenticated", err)
			}
			select {
			case k := <-e.svc.trigger:
				e.svc.mu.Lock()
				delete(e.svc.pending, k)
				e.svc.mu.Unlock()
				if !tc.ok {
					t.Fatal("an unverified webhook scheduled a sync")
				}
			default:
				if tc.ok {
					t.Fatal("a verified webhook scheduled no sync")
				}
			}
		})
	}
}

func TestSyncPrivateSSH(t *testing.T) {
	root := t.TempDir()
	repo := gst.NewRepo(t, root, "net", map[string]string{"main.tf": mainTF})
	gst.Git(t, repo, "tag", "v1.0.0")
	key, stranger := gst.NewSSHKey(t), gst.NewSSHKey(t)
	base, knownHosts := gst.SSH(t, root, key.Public)
	_, otherHost := gst.SSH(t, t.TempDir(), key.Public)
	otherHost = base[len("ssh://git@"):len(base)-1] + otherHost[strings.Index(otherHost, " "):] // the other server's key for this address
	otherHost = "[" + strings.Replace(otherHost, ":", "]:", 1)

	for _, tc := range []struct {
		name, key, hosts, want string
	}{
		{"wrong key", stranger.Private, knownHosts, "refused the git source's key"},
		{"unknown host key", key.Private, otherHost, "host key is not in the git source's known_hosts"},
		{"right key", key.Private, knownHosts, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 0)
			if _, err := e.svc.Create(t.Context(), Source{Namespace: "acme", Name: "net", System: "aws", URL: base + "net",
				Auth: registry.GitAuthSSH, SSHKey: tc.key, KnownHosts: tc.hosts}); err != nil {
				t.Fatal(err)
			}
			rep, err := e.svc.Sync(t.Context(), "acme", "net", "aws", "test")
			if tc.want == "" {
				if err != nil || !slices.Equal(rep.Published, []string{"1.0.0"}) {
					t.Fatalf("sync: %+v, %v", rep, err)
				}
				return
			}
			if err == nil || !strings.Contains(registry.Message(err), tc.want) || strings.Contains(err.Error(), "PRIVATE KEY") {
				t.Fatalf("sync: %v, want an error with %q", err, tc.want)
			}
		})
	}
}
