package e2e

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// requireORAS returns the ORAS CLI the tests run (TROVE_TEST_ORAS), failing
// the test with the command that provides it when it is missing.
func requireORAS(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("TROVE_TEST_ORAS")
	if bin == "" {
		t.Fatal("TROVE_TEST_ORAS is not set: the OCI tests run the ORAS CLI; " +
			"run 'source scripts/testenv/oras.sh' (it installs ORAS with go install into a cache directory once) and run again")
	}
	if _, err := exec.LookPath(bin); err != nil {
		t.Fatalf("TROVE_TEST_ORAS=%s: %v", bin, err)
	}
	return bin
}

// orasCLI runs the ORAS CLI with a fresh HOME (its credential store,
// ~/.docker/config.json, starts empty) trusting the test CA only.
type orasCLI struct {
	bin   string
	env   []string
	dir   string
	stdin string // the next run's standard input
}

func newORAS(t *testing.T, s *troveServer) *orasCLI {
	t.Helper()
	bin := requireORAS(t)
	home := t.TempDir()
	certDir := filepath.Join(home, "no-certs")
	if err := os.Mkdir(certDir, 0o700); err != nil {
		t.Fatal(err)
	}
	return &orasCLI{bin: bin, dir: t.TempDir(), env: append(baseEnv(home), "SSL_CERT_FILE="+s.CAFile, "SSL_CERT_DIR="+certDir)}
}

// run runs oras in o.dir and returns its combined output and error.
func (o *orasCLI) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// ORAS speaks plain HTTP to a registry on localhost unless told
	// otherwise; Trove answers only HTTPS.
	if len(args) > 0 && args[0] == "cp" {
		args = append(slices.Clip(args), "--from-plain-http=false")
	} else {
		args = append(slices.Clip(args), "--plain-http=false")
	}
	cmd := exec.CommandContext(ctx, o.bin, args...)
	cmd.Env, cmd.Dir = o.env, o.dir
	cmd.Stdin, o.stdin = strings.NewReader(o.stdin), ""
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (o *orasCLI) mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := o.run(t, args...)
	if err != nil {
		t.Fatalf("oras %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// TestOCIWithORAS: the ORAS CLI, an OCI-native client that is not
// OpenTofu, pulls a provider's platform packages (by platform and by the
// platform manifest's digest) and a module from Trove's OCI API, lists
// tags, discovers the SHA256SUMS referrer of a provider index and pulls
// it; a private namespace needs `oras login` with a Trove token, which
// goes through the token endpoint's short-lived OCI tokens (docs/oci.md).
func TestOCIWithORAS(t *testing.T) {
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	key, publishToken := setupNamespace(t, srv)
	rel := packageRelease(t, key, releaseSpec{Version: "1.0.0"})
	publish(t, srv, publishToken, rel)
	srv.mustCLI(t, publishToken, "module", "publish", namespace+"/labels/null", "1.0.0", writeModuleDir(t, "labels", "1.0.0", ""))
	srv.mustCLI(t, srv.AdminToken, "namespace", "create", "vault")
	srv.mustCLI(t, srv.AdminToken, "module", "publish", "vault/secrets/aws", "1.0.0", writeModuleDir(t, "secrets", "1.0.0", ""))
	vaultToken := strings.TrimSpace(srv.mustCLI(t, srv.AdminToken, "token", "create", "--namespace", "vault", "--scope", "read"))
	providerRepo := srv.Host + "/" + namespace + "/" + providerType
	o := newORAS(t, srv)

	t.Run("repo tags", func(t *testing.T) {
		out := o.mustRun(t, "repo", "tags", providerRepo)
		if strings.Fields(out)[0] != "1.0.0" || len(strings.Fields(out)) != 1 {
			t.Errorf("oras repo tags %s = %q, want 1.0.0", providerRepo, out)
		}
		out = o.mustRun(t, "repo", "tags", srv.Host+"/"+namespace+"/modules/labels/null")
		if !slices.Equal(strings.Fields(out), []string{"1.0.0", "latest"}) {
			t.Errorf("module tags = %q, want 1.0.0 and latest", out)
		}
	})

	t.Run("pull provider packages", func(t *testing.T) {
		// By platform, from the version's index.
		goos, goarch, _ := strings.Cut(hostPlatform, "_")
		dir := filepath.Join(o.dir, "by-platform")
		o.mustRun(t, "pull", "--platform", goos+"/"+goarch, "-o", dir, providerRepo+":1.0.0")
		assertSameFile(t, filepath.Join(dir, rel.zipName(hostPlatform)), rel.path(rel.zipName(hostPlatform)))
		// By the digest of the other platform's manifest, read from the index.
		var index struct {
			Manifests []struct {
				Digest   string `json:"digest"`
				Platform struct {
					OS           string `json:"os"`
					Architecture string `json:"architecture"`
				} `json:"platform"`
			} `json:"manifests"`
		}
		if err := json.Unmarshal([]byte(o.mustRun(t, "manifest", "fetch", providerRepo+":1.0.0")), &index); err != nil {
			t.Fatal(err)
		}
		var digest string
		for _, m := range index.Manifests {
			if m.Platform.OS+"_"+m.Platform.Architecture == otherPlatform {
				digest = m.Digest
			}
		}
		if digest == "" {
			t.Fatalf("the index has no manifest of %s: %+v", otherPlatform, index)
		}
		dir = filepath.Join(o.dir, "by-digest")
		o.mustRun(t, "pull", "-o", dir, providerRepo+"@"+digest)
		assertSameFile(t, filepath.Join(dir, rel.zipName(otherPlatform)), rel.path(rel.zipName(otherPlatform)))
	})

	t.Run("pull a module", func(t *testing.T) {
		// A module's layer carries no file name (OpenTofu needs none,
		// and adding one would change every published digest), so oras
		// pull leaves it out: copy the artifact into an OCI layout.
		repo := srv.Host + "/" + namespace + "/modules/labels/null"
		layout := filepath.Join(o.dir, "layout")
		o.mustRun(t, "cp", "--to-oci-layout", repo+":1.0.0", layout+":1.0.0")
		var m struct {
			ArtifactType string `json:"artifactType"`
			Layers       []struct {
				MediaType string `json:"mediaType"`
				Digest    string `json:"digest"`
			} `json:"layers"`
		}
		if err := json.Unmarshal([]byte(o.mustRun(t, "manifest", "fetch", repo+":1.0.0")), &m); err != nil {
			t.Fatal(err)
		}
		if m.ArtifactType != "application/vnd.opentofu.modulepkg" || len(m.Layers) != 1 || m.Layers[0].MediaType != "archive/zip" {
			t.Fatalf("module manifest %+v", m)
		}
		blob, err := os.ReadFile(filepath.Join(layout, "blobs", "sha256", strings.TrimPrefix(m.Layers[0].Digest, "sha256:")))
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(blob); "sha256:"+hex.EncodeToString(sum[:]) != m.Layers[0].Digest {
			t.Fatal("the pulled layer does not match its digest")
		}
		// The same bytes through oras blob fetch.
		fetched := filepath.Join(o.dir, "module.zip")
		o.mustRun(t, "blob", "fetch", "--output", fetched, repo+"@"+m.Layers[0].Digest)
		assertSameFile(t, fetched, filepath.Join(layout, "blobs", "sha256", strings.TrimPrefix(m.Layers[0].Digest, "sha256:")))
		zr, err := zip.NewReader(bytes.NewReader(blob), int64(len(blob)))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range zr.File {
			names = append(names, f.Name)
			if f.Name == "main.tf" {
				rc, _ := f.Open()
				var b bytes.Buffer
				_, _ = b.ReadFrom(rc)
				rc.Close()
				if !strings.Contains(b.String(), `"labels 1.0.0"`) {
					t.Errorf("main.tf in the layer = %q", b.String())
				}
			}
		}
		if !slices.Contains(names, "main.tf") || slices.Contains(names, "terraform.tfstate") {
			t.Errorf("module zip holds %v", names)
		}
	})

	t.Run("discover the SHA256SUMS referrer", func(t *testing.T) {
		var tree struct {
			Referrers []struct {
				Digest       string `json:"digest"`
				ArtifactType string `json:"artifactType"`
			} `json:"referrers"`
		}
		out := o.mustRun(t, "discover", "--format", "json", providerRepo+":1.0.0")
		if err := json.Unmarshal([]byte(out), &tree); err != nil {
			t.Fatalf("oras discover: %v\n%s", err, out)
		}
		byType := map[string]string{}
		for _, r := range tree.Referrers {
			byType[r.ArtifactType] = r.Digest
		}
		if len(tree.Referrers) != 2 || byType["application/vnd.trove.provider-shasums"] == "" || byType["application/vnd.trove.signing-key"] == "" {
			t.Fatalf("referrers = %+v, want the SHA256SUMS artifact and the signing key\n%s", tree.Referrers, out)
		}
		dir := filepath.Join(o.dir, "sums")
		o.mustRun(t, "pull", "-o", dir, providerRepo+"@"+byType["application/vnd.trove.provider-shasums"])
		assertSameFile(t, filepath.Join(dir, rel.sumsName()), rel.path(rel.sumsName()))
		assertSameFile(t, filepath.Join(dir, rel.sigName()), rel.path(rel.sigName()))
		keyDir := filepath.Join(o.dir, "key")
		o.mustRun(t, "pull", "-o", keyDir, providerRepo+"@"+byType["application/vnd.trove.signing-key"])
		entries, err := os.ReadDir(keyDir)
		if err != nil || len(entries) != 1 {
			t.Fatalf("oras pull of the signing key wrote %v, %v; want one .asc file", entries, err)
		}
		if armor, err := os.ReadFile(filepath.Join(keyDir, entries[0].Name())); err != nil || !strings.Contains(string(armor), "BEGIN PGP PUBLIC KEY BLOCK") {
			t.Errorf("the signing key pulled with oras is not an armored key: %v\n%s", err, armor)
		}
	})

	t.Run("a private namespace needs oras login", func(t *testing.T) {
		repo := srv.Host + "/vault/modules/secrets/aws"
		if out, err := o.run(t, "repo", "tags", repo); err == nil {
			t.Fatalf("oras repo tags of a private repository without credentials succeeded:\n%s", out)
		}
		// oras login checks nothing here (Trove's /v2/ answers anonymous
		// requests), it stores the credentials; every later command
		// answers the Bearer challenge with them at /v2/token and uses
		// the short-lived OCI token it gets.
		o.stdin = vaultToken + "\n"
		o.mustRun(t, "login", srv.Host, "-u", "oras", "--password-stdin")
		if out := o.mustRun(t, "repo", "tags", repo); !slices.Equal(strings.Fields(out), []string{"1.0.0", "latest"}) {
			t.Errorf("oras repo tags after login = %q", out)
		}
		var m struct {
			Layers []struct {
				Digest string `json:"digest"`
			} `json:"layers"`
		}
		if err := json.Unmarshal([]byte(o.mustRun(t, "manifest", "fetch", repo+":latest")), &m); err != nil || len(m.Layers) != 1 {
			t.Fatalf("private module manifest: %v %+v", err, m)
		}
		got := filepath.Join(o.dir, "secrets.zip")
		o.mustRun(t, "blob", "fetch", "--output", got, repo+"@"+m.Layers[0].Digest)
		if b, err := os.ReadFile(got); err != nil || !bytes.HasPrefix(b, []byte("PK")) {
			t.Errorf("private module layer: %v %.20q", err, b)
		}
		// The OCI token is stored nowhere: the credential store holds
		// the Trove token, and nothing of the vault leaks into a
		// public repository's pull.
		if out, err := o.run(t, "repo", "tags", srv.Host+"/vault/modules/nosuch/aws"); err == nil {
			t.Errorf("tags of a module that does not exist: %s", out)
		}
		// A wrong token is refused at the first pull.
		o2 := newORAS(t, srv)
		o2.stdin = "trove_not-a-token\n"
		o2.mustRun(t, "login", srv.Host, "-u", "oras", "--password-stdin")
		if out, err := o2.run(t, "repo", "tags", repo); err == nil {
			t.Errorf("oras repo tags with a wrong token succeeded:\n%s", out)
		}
	})
}

// assertSameFile fails the test unless the files hold the same bytes.
func assertSameFile(t *testing.T, got, want string) {
	t.Helper()
	g, err := os.ReadFile(got)
	if err != nil {
		t.Fatalf("reading what oras wrote: %v", err)
	}
	w, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		t.Errorf("%s (%d bytes) differs from the published %s (%d bytes)", got, len(g), filepath.Base(want), len(w))
	}
}
