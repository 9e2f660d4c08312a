package mirror

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/sqlite"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
	"trove.dev/trove/internal/trovetest/testarchive"
)

// moduleUpstream is a modules.v1 registry on loopback (plain http) whose
// download answers point at a real git server (git http-backend behind
// net/http/cgi) and at archives it serves itself.
type moduleUpstream struct {
	srv       *httptest.Server
	src       string // the working repository the tags are made in
	locations map[string]string
	archives  map[string][]byte
	mu        sync.Mutex
	down      atomic.Bool
	gets      atomic.Int64 // archive downloads
}

func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func newModuleUpstream(t *testing.T) *moduleUpstream {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	backend := filepath.Join(runGit(t, ".", "--exec-path"), "git-http-backend")
	root := t.TempDir()
	u := &moduleUpstream{src: filepath.Join(root, "src"), locations: map[string]string{}, archives: map[string][]byte{}}
	runGit(t, root, "init", "-q", "-b", "main", u.src)
	writeFiles(t, u.src, map[string]string{"main.tf": "variable \"cidr\" {}\n", "modules/sub/main.tf": "output \"x\" { value = 1 }\n"})
	runGit(t, u.src, "add", ".")
	runGit(t, u.src, "commit", "-q", "-m", "one")
	runGit(t, u.src, "tag", "v1.0.0")
	// A tag whose tree holds a link out of the module.
	if err := os.Symlink("/etc/passwd", filepath.Join(u.src, "passwd")); err != nil {
		t.Fatal(err)
	}
	runGit(t, u.src, "add", ".")
	runGit(t, u.src, "commit", "-q", "-m", "link")
	runGit(t, u.src, "tag", "v9.0.0-link")
	runGit(t, root, "clone", "-q", "--bare", u.src, filepath.Join(root, "net.git"))

	mux := http.NewServeMux()
	mux.Handle("/git/", http.StripPrefix("/git", &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}))
	mux.HandleFunc("GET /.well-known/terraform.json", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]string{"providers.v1": "/v1/providers/", "modules.v1": "/v1/modules/"})
	})
	mux.HandleFunc("GET /v1/modules/acme/net/aws/versions", func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		defer u.mu.Unlock()
		var vs []map[string]string
		for v := range u.locations {
			vs = append(vs, map[string]string{"version": v})
		}
		vs = append(vs, map[string]string{"version": "v0.1"}) // not a version Trove can serve: left out
		writeJSON(w, map[string]any{"modules": []any{map[string]any{"versions": vs}}})
	})
	mux.HandleFunc("GET /v1/modules/acme/net/aws/{version}/download", func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		loc, ok := u.locations[r.PathValue("version")]
		u.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("X-Terraform-Get", loc)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /archives/{name}", func(w http.ResponseWriter, r *http.Request) {
		u.gets.Add(1)
		u.mu.Lock()
		data, ok := u.archives[r.PathValue("name")]
		u.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(data)
	})
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u.down.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *moduleUpstream) set(version, location string) {
	u.mu.Lock()
	u.locations[version] = location
	u.mu.Unlock()
}

func (u *moduleUpstream) archive(name string, data []byte) string {
	u.mu.Lock()
	u.archives[name] = data
	u.mu.Unlock()
	return u.srv.URL + "/archives/" + name
}

// moveTag points v1.0.0 at a new commit with other files, as an upstream
// that re-tags a release does.
func (u *moduleUpstream) moveTag(t *testing.T) {
	t.Helper()
	runGit(t, u.src, "checkout", "-q", "v1.0.0")
	writeFiles(t, u.src, map[string]string{"main.tf": "variable \"cidr\" {}\nresource \"x\" \"evil\" {}\n"})
	runGit(t, u.src, "commit", "-q", "-am", "moved")
	runGit(t, u.src, "tag", "-f", "v1.0.0")
	runGit(t, u.src, "push", "-q", "--force", filepath.Join(filepath.Dir(u.src), "net.git"), "refs/tags/v1.0.0")
}

type moduleFixture struct {
	mm      *Modules
	idx     *sqlite.Index
	up      *moduleUpstream
	metrics *prometheus.Registry
}

func newModuleFixture(t *testing.T, rules ...registry.MirrorRule) *moduleFixture {
	t.Helper()
	ctx := context.Background()
	st := sqlitetest.New(t)
	dir, idx, blobs := st.Dir, st.Index, st.Blobs
	if err := idx.CreateNamespace(ctx, registry.Namespace{Name: "tfmods", Visibility: registry.VisibilityPublic, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	up := newModuleUpstream(t)
	if len(rules) == 0 {
		rules = []registry.MirrorRule{{Provider: "acme/*"}}
	}
	if err := idx.PutMirrorUpstream(ctx, registry.MirrorUpstream{
		Host: upstreamHost, ServiceURL: up.srv.URL + "/v1/providers/", Allow: rules, CreatedAt: time.Now(), UpdatedAt: time.Now(),
	}); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := New(Options{Index: idx, Blobs: blobs, TempDir: filepath.Join(dir, "tmp"), VersionsTTL: time.Nanosecond, Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	pub := modules.NewPublisher(modules.Options{Index: idx, Blobs: blobs, TempDir: filepath.Join(dir, "tmp")})
	mp, err := ParseModuleMapping("tfmods=" + upstreamHost + "/acme")
	if err != nil {
		t.Fatal(err)
	}
	mm := m.Modules(ModuleOptions{Mappings: []ModuleMapping{mp}, Index: idx, Publisher: pub, MaxArchiveBytes: 256 << 10, MaxCheckoutBytes: 64 << 20, GitTimeout: time.Minute})
	return &moduleFixture{mm: mm, idx: idx, up: up, metrics: reg}
}

func (f *moduleFixture) refused() float64 {
	mfs, err := f.metrics.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "trove_mirror_refused_total" {
			for _, m := range mf.GetMetric() {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func TestModuleMirrorGit(t *testing.T) {
	f := newModuleFixture(t)
	ctx := context.Background()
	f.up.set("1.0.0", "git::"+f.up.srv.URL+"/git/net.git?ref=v1.0.0")
	f.up.set("1.0.1", "git::"+f.up.srv.URL+"/git/net.git//modules/sub?ref=v1.0.0")

	vs, err := f.mm.ModuleVersions(ctx, "tfmods", "net", "aws")
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 2 {
		t.Fatalf("versions = %v, want 1.0.0 and 1.0.1 (v0.1 left out)", vs)
	}
	commit := runGit(t, f.up.src, "rev-parse", "v1.0.0")
	v, err := f.mm.FetchModule(ctx, "tfmods", "net", "aws", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v.Origin, "commit "+commit) || v.ArchiveFormat != modules.FormatTarGz {
		t.Fatalf("stored %+v, want the origin to name commit %s", v, commit)
	}
	// The archive is the deterministic packing of the tagged tree, as a
	// publish with --git-tag packs it.
	co := filepath.Join(t.TempDir(), "co")
	runGit(t, ".", "clone", "-q", "--branch", "v1.0.0", f.up.src, co)
	var want bytes.Buffer
	if _, err := modules.PackArchiveFiles(&want, co, []string{"main.tf", "modules/sub/main.tf"}); err != nil {
		t.Fatal(err)
	}
	if v.ArchiveDigest != digestOf(want.Bytes()) {
		t.Fatalf("digest %s, want the packing of the tag %s", v.ArchiveDigest, digestOf(want.Bytes()))
	}
	sub, err := f.mm.FetchModule(ctx, "tfmods", "net", "aws", "1.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if sub.ArchiveDigest == v.ArchiveDigest {
		t.Fatal("the subdirectory source packed the whole repository")
	}

	// Upstream down: what Trove holds is served, the list fails.
	f.up.down.Store(true)
	again, err := f.mm.FetchModule(ctx, "tfmods", "net", "aws", "1.0.0")
	if err != nil || again.ArchiveDigest != v.ArchiveDigest {
		t.Fatalf("held version with the upstream down: %+v, %v", again, err)
	}
	if _, err := f.mm.ModuleVersions(ctx, "tfmods", "net", "aws"); !registry.IsKind(err, registry.Unavailable) {
		t.Fatalf("versions with the upstream down: %v, want Unavailable", err)
	}
	f.up.down.Store(false)

	// The tag moves: Trove keeps serving what it holds, and a fetch of
	// the version again is refused.
	f.up.moveTag(t)
	again, err = f.mm.FetchModule(ctx, "tfmods", "net", "aws", "1.0.0")
	if err != nil || again.ArchiveDigest != v.ArchiveDigest {
		t.Fatalf("after the tag moved: %+v, %v; want the version first fetched", again, err)
	}
	before := f.refused()
	_, err = f.mm.fetch(ctx, "tfmods", "net", "aws", "1.0.0")
	if !registry.IsKind(err, registry.UpstreamInvalid) || !strings.Contains(registry.Message(err), "immutable") {
		t.Fatalf("re-fetch after the tag moved: %v, want a refusal", err)
	}
	if f.refused() != before+1 {
		t.Fatal("the refusal was not counted")
	}
	stored, err := f.idx.GetModuleVersion(ctx, "tfmods", "net", "aws", "1.0.0")
	if err != nil || stored.ArchiveDigest != v.ArchiveDigest {
		t.Fatalf("stored after the refusal: %+v, %v", stored, err)
	}
}

func TestModuleMirrorArchive(t *testing.T) {
	f := newModuleFixture(t)
	ctx := context.Background()
	good := testarchive.TarGz(t, map[string]string{"main.tf": "variable \"a\" {}\n"})
	f.up.set("1.1.0", f.up.archive("net-1.1.0.tar.gz", good))
	var wg sync.WaitGroup
	digests := make([]string, 8)
	errs := make([]error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := f.mm.FetchModule(ctx, "tfmods", "net", "aws", "1.1.0")
			digests[i], errs[i] = v.ArchiveDigest, err
		}()
	}
	wg.Wait()
	for i := range 8 {
		if errs[i] != nil || digests[i] != digestOf(good) {
			t.Fatalf("fetch %d: %s, %v; want the archive as served (%s)", i, digests[i], errs[i], digestOf(good))
		}
	}
	if n := f.up.gets.Load(); n != 1 {
		t.Fatalf("the archive was downloaded %d times, want once", n)
	}
}

func TestModuleMirrorRefuses(t *testing.T) {
	f := newModuleFixture(t)
	ctx := context.Background()
	good := testarchive.TarGz(t, map[string]string{"main.tf": "variable \"a\" {}\n"})
	huge := make([]byte, 1<<20)
	rand.Read(huge)
	base := f.up.srv.URL
	cases := map[string]struct {
		version, location string
	}{
		"checksum mismatch (tampered)": {"2.0.0", f.up.archive("t.tar.gz", good) + "?checksum=sha256:" + strings.Repeat("0", 64)},
		"file URL":                     {"2.0.1", "file:///etc/passwd.tar.gz"},
		"git over file":                {"2.0.2", "git::file:///etc"},
		"ssh":                          {"2.0.3", "git::ssh://git@example.com/x.git?ref=v1"},
		"s3 getter":                    {"2.0.4", "s3::https://s3.amazonaws.com/b/x.zip"},
		"subdir escapes":               {"2.0.5", "git::" + base + "/git/net.git//../x?ref=v1.0.0"},
		"option as ref":                {"2.0.6", "git::" + base + "/git/net.git?ref=--upload-pack=touch%20/tmp/x"},
		"credentials":                  {"2.0.7", "https://user:pw@" + strings.TrimPrefix(base, "http://") + "/archives/t.tar.gz"},
		"huge archive":                 {"2.0.8", f.up.archive("huge.tar.gz", huge)},
		"not an archive":               {"2.0.9", f.up.archive("junk.tar.gz", []byte("not a tarball"))},
		"dot-dot entry":                {"2.1.0", f.up.archive("dd.tar.gz", testarchive.TarGzOf(t, testarchive.Entry{Name: "main.tf"}, testarchive.Entry{Name: "../evil.tf", Body: "x"}))},
		"symlink out of archive":       {"2.1.1", f.up.archive("ln.tar.gz", testarchive.TarGzOf(t, testarchive.Entry{Name: "main.tf"}, testarchive.Entry{Name: "passwd", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}))},
		"symlink out of git tree":      {"2.1.2", "git::" + base + "/git/net.git?ref=v9.0.0-link"},
		"unknown ref":                  {"2.1.3", "git::" + base + "/git/net.git?ref=v7.7.7"},
		"no configuration":             {"2.1.4", f.up.archive("empty.tar.gz", testarchive.TarGz(t, map[string]string{"README.md": "hi"}))},
		"plain path":                   {"2.1.5", "/etc/passwd"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			f.up.set(c.version, c.location)
			_, err := f.mm.FetchModule(ctx, "tfmods", "net", "aws", c.version)
			if err == nil {
				t.Fatal("fetched; want a refusal")
			}
			if k := registry.KindOf(err); k != registry.UpstreamInvalid && k != registry.Unavailable {
				t.Fatalf("error kind %v (%v), want upstream invalid or unavailable", k, err)
			}
			t.Log(registry.Message(err))
			if _, err := f.idx.GetModuleVersion(ctx, "tfmods", "net", "aws", c.version); !registry.IsKind(err, registry.NotFound) {
				t.Fatalf("stored after a refusal: %v", err)
			}
		})
	}
	if _, err := os.Stat("/tmp/x"); err == nil {
		t.Error("a ref ran a command")
	}
}

func TestModuleMirrorRules(t *testing.T) {
	f := newModuleFixture(t, registry.MirrorRule{Provider: "acme/net", Versions: "~> 1.0"})
	ctx := context.Background()
	f.up.set("1.0.0", "git::"+f.up.srv.URL+"/git/net.git?ref=v1.0.0")
	f.up.set("2.0.0", "git::"+f.up.srv.URL+"/git/net.git?ref=v1.0.0")
	vs, err := f.mm.ModuleVersions(ctx, "tfmods", "net", "aws")
	if err != nil || len(vs) != 1 || vs[0] != "1.0.0" {
		t.Fatalf("versions %v, %v; want 1.0.0 only", vs, err)
	}
	if _, err := f.mm.FetchModule(ctx, "tfmods", "net", "aws", "2.0.0"); !registry.IsKind(err, registry.NotFound) {
		t.Fatalf("a version the rule does not allow: %v", err)
	}
	if _, err := f.mm.ModuleVersions(ctx, "tfmods", "other", "aws"); !registry.IsKind(err, registry.NotFound) {
		t.Fatalf("a module no rule allows: %v", err)
	}
	if _, err := f.mm.ModuleVersions(ctx, "acme", "net", "aws"); !registry.IsKind(err, registry.NotFound) || f.mm.Mirrored("acme") {
		t.Fatalf("a namespace that mirrors nothing: %v", err)
	}
}

// TestModuleSourceGuard: a public upstream cannot make Trove fetch from
// loopback or private addresses, by git or by https.
func TestModuleSourceGuard(t *testing.T) {
	f := newModuleFixture(t)
	ctx := context.Background()
	src, err := parseModuleSource(&url.URL{Scheme: "http", Host: "x"}, "git::"+f.up.srv.URL+"/git/net.git?ref=v1.0.0", true)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fetchGit(ctx, src, t.TempDir(), hostGuard{}, time.Minute, 1<<20)
	if err == nil || !strings.Contains(err.Error(), "non-public") {
		t.Fatalf("git from loopback with a public upstream: %v", err)
	}
	src, err = parseModuleSource(&url.URL{Scheme: "http", Host: "x"}, f.up.archive("g.tar.gz", testarchive.TarGz(t, map[string]string{"main.tf": ""})), true)
	if err != nil {
		t.Fatal(err)
	}
	ups, err := f.mm.m.config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = f.mm.download(ctx, ups[upstreamHost], hostGuard{}, src, filepath.Join(t.TempDir(), "a"))
	if err == nil || !strings.Contains(err.Error(), "non-public") {
		t.Fatalf("archive from loopback with a public upstream: %v", err)
	}
	// A git checkout over the size limit is given up.
	src, _ = parseModuleSource(&url.URL{Scheme: "http", Host: "x"}, "git::"+f.up.srv.URL+"/git/net.git?ref=v1.0.0", true)
	if _, err := fetchGit(ctx, src, t.TempDir(), guardFor(true), time.Minute, 10); !registry.IsKind(err, registry.TooLarge) {
		t.Fatalf("a checkout over the limit: %v", err)
	}
}

func TestParseModuleSource(t *testing.T) {
	doc, _ := url.Parse("https://registry.example.com/v1/modules/a/b/c/1.0.0/download")
	good := map[string]string{
		"git::https://github.com/acme/net?ref=v1.2.3":         "git::https://github.com/acme/net?ref=v1.2.3",
		"git::https://github.com/acme/net.git//mods/x?ref=v1": "git::https://github.com/acme/net.git//mods/x?ref=v1",
		"https://cdn.example.com/net-1.0.0.tar.gz":            "https://cdn.example.com/net-1.0.0.tar.gz",
		"/archive/x.zip": "https://registry.example.com/archive/x.zip",
		"https://cdn.example.com/get?id=3&archive=tgz": "https://cdn.example.com/get",
	}
	for in, want := range good {
		s, err := parseModuleSource(doc, in, false)
		if err != nil || s.String() != want {
			t.Errorf("%q: %q, %v; want %q", in, s.String(), err, want)
		}
	}
	// A signed URL's query is kept byte for byte.
	const signed = "https://cdn.example.com/x.tar.gz?b=1&X-Amz-Signature=a%2Fb"
	if s, err := parseModuleSource(doc, signed, false); err != nil || s.url.String() != signed {
		t.Errorf("%q fetched as %v, %v", signed, s.url, err)
	}
	bad := []string{
		"", "git::http://github.com/acme/net?ref=v1", "http://cdn.example.com/x.tar.gz", "git::ssh://git@github.com/a/b",
		"git@github.com:a/b.git", "file:///etc/passwd.zip", "hg::https://x/y", "https://x/y//sub.zip", "https://x/y.exe",
		"git::https://x/y?ref=-u", "git::https://x/y?ref=a..b", "git::https://x/y//a/../../b?ref=v1", "https://x/y.zip?checksum=md5:00",
		"git::https://u:p@x/y", "https://x/\x00.zip", "https:///x.zip", strings.Repeat("a", 5000),
	}
	for _, in := range bad {
		if s, err := parseModuleSource(doc, in, false); err == nil {
			t.Errorf("%q accepted as %q", in, s.String())
		}
	}
}

func TestParseModuleMapping(t *testing.T) {
	mp, err := ParseModuleMapping("TFaws=Registry.Terraform.io/terraform-aws-modules")
	if err != nil || mp.Namespace != "tfaws" || mp.Host != "registry.terraform.io" || mp.UpstreamNamespace != "terraform-aws-modules" {
		t.Fatalf("ParseModuleMapping = %+v, %v", mp, err)
	}
	for _, bad := range []string{
		"", "tfaws", "tfaws=", "tfaws=registry.terraform.io", "tfaws=registry.terraform.io/", "=registry.terraform.io/x",
		"tf aws=registry.terraform.io/x", "café=registry.terraform.io/x", "tfaws=reg istry/x", "tfaws=registry.terraform.io/a/b",
		"tfaws=registry.terraform.io/../x", "tfaws=http://registry.terraform.io/x",
	} {
		if mp, err := ParseModuleMapping(bad); err == nil {
			t.Errorf("%q accepted as %+v", bad, mp)
		}
	}
}
