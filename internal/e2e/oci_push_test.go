package e2e

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"trove.dev/trove/internal/signing/signingtest"
)

// ociRegistry is distribution's registry (scripts/testenv/registry.sh),
// started by a test on loopback with TLS and filesystem storage.
type ociRegistry struct {
	Host   string // localhost:<port>
	CAFile string // the PEM certificate of the CA that signed its certificate
	Root   string // the storage directory
	client *http.Client
}

// startOCIRegistry starts the registry for t and stops it when t ends.
// With htpasswd lines (user:bcrypt-hash), it requires Basic credentials.
func startOCIRegistry(t *testing.T, htpasswd ...string) *ociRegistry {
	t.Helper()
	bin := os.Getenv("TROVE_TEST_OCI_REGISTRY")
	if bin == "" {
		t.Fatal("TROVE_TEST_OCI_REGISTRY is not set: build distribution's registry with 'source scripts/testenv/registry.sh' (it exports it) and run again")
	}
	dir := t.TempDir()
	caFile, certFile, keyFile := writeTestTLS(t, dir)
	port := freePort(t)
	r := &ociRegistry{Host: "localhost:" + strconv.Itoa(port), CAFile: caFile, Root: filepath.Join(dir, "storage")}
	config := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
http:
  addr: 127.0.0.1:%d
  secret: trove-e2e
  tls:
    certificate: %s
    key: %s
`, r.Root, port, certFile, keyFile)
	if len(htpasswd) > 0 {
		file := writeFile(t, dir, "htpasswd", []byte(strings.Join(htpasswd, "\n")+"\n"))
		config += fmt.Sprintf("auth:\n  htpasswd:\n    realm: trove-e2e\n    path: %s\n", file)
	}
	configFile := writeFile(t, dir, "config.yml", []byte(config))
	logFile, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", configFile)
	cmd.Env = baseEnv(dir)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the registry: %v", err)
	}
	logFile.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	r.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	deadline := time.Now().Add(startTimeout)
	for {
		resp, err := r.client.Get("https://" + r.Host + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || (len(htpasswd) > 0 && resp.StatusCode == http.StatusUnauthorized) {
				return r
			}
		}
		select {
		case err := <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "registry.log"))
			t.Fatalf("the registry exited: %v\n%s", err, log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "registry.log"))
			t.Fatalf("the registry did not answer /v2/ (last error: %v)\n%s", err, log)
		}
	}
}

// getJSON GETs a document of the registry with the Accept header accept.
func (r *ociRegistry) getJSON(t *testing.T, path, accept string, v any) string {
	t.Helper()
	req, err := http.NewRequest("GET", "https://"+r.Host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.Header.Get("Docker-Content-Digest")
}

// blobPath is where the registry's filesystem storage keeps a blob.
func (r *ociRegistry) blobPath(digest string) string {
	hexDigest := strings.TrimPrefix(digest, "sha256:")
	return filepath.Join(r.Root, "docker", "registry", "v2", "blobs", "sha256", hexDigest[:2], hexDigest, "data")
}

// writeTestTLS writes a fresh CA and a certificate it signs for localhost
// and 127.0.0.1, and returns the files of the CA, the certificate and its
// key.
func writeTestTLS(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Trove e2e registry CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), DNSNames: []string{"localhost"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	caFile = writeFile(t, dir, "ca.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}))
	certFile = writeFile(t, dir, "cert.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	keyFile = writeFile(t, dir, "key.pem", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	return caFile, certFile, keyFile
}

// trustAlso makes tf trust the CA in caFile as well as the server's.
func trustAlso(t *testing.T, tf *terraformCLI, s *troveServer, caFile string) {
	t.Helper()
	a, err := os.ReadFile(s.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	bundle := writeFile(t, t.TempDir(), "bundle.pem", append(append(a, '\n'), b...))
	for i, kv := range tf.env {
		if strings.HasPrefix(kv, "SSL_CERT_FILE=") {
			tf.env[i] = "SSL_CERT_FILE=" + bundle
		}
	}
}

// ociIndex and ociManifest are what the test reads of the pushed
// documents.
type ociIndex struct {
	ArtifactType string `json:"artifactType"`
	Manifests    []struct {
		Digest       string `json:"digest"`
		ArtifactType string `json:"artifactType"`
		Platform     struct {
			OS           string `json:"os"`
			Architecture string `json:"architecture"`
		} `json:"platform"`
	} `json:"manifests"`
}

type ociManifest struct {
	ArtifactType string `json:"artifactType"`
	Layers       []struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
		Size      int64  `json:"size"`
	} `json:"layers"`
}

// TestOCIPushPull pushes a provider and a module from Trove to a real OCI
// registry with `trove oci push`, installs both from that registry with
// OpenTofu (oci_mirror and an oci:// source), pulls them back into other
// namespaces with `trove oci pull`, and checks that a pull of a tampered
// or untrusted artifact is refused with nothing stored.
func TestOCIPushPull(t *testing.T) {
	requireTofu(t)
	reg := startOCIRegistry(t)
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	key, publishToken := setupNamespace(t, srv)
	rel := packageRelease(t, key, releaseSpec{Version: "1.0.0"})
	publish(t, srv, publishToken, rel)
	srv.mustCLI(t, publishToken, "module", "publish", namespace+"/labels/null", "1.0.0", writeModuleDir(t, "labels", "1.0.0", ""))
	regFlags := []string{"--registry-ca-file", reg.CAFile}
	prefix := reg.Host + "/mirror"

	out := srv.mustCLI(t, publishToken, append([]string{"oci", "push", namespace + "/" + providerType + "@>= 1.0", namespace + "/labels/null", "--to", prefix}, regFlags...)...)
	if !strings.Contains(out, "Verified "+namespace+"/"+providerType+" 1.0.0: SHA256SUMS signed by key "+key.KeyID) ||
		!strings.Contains(out, "Pushed 2 version(s)") {
		t.Errorf("trove oci push output:\n%s", out)
	}

	// The pushed index is Trove's own, byte for byte.
	var idx ociIndex
	pushedIndex := reg.getJSON(t, "/v2/mirror/"+namespace+"/"+providerType+"/manifests/1.0.0", "application/vnd.oci.image.index.v1+json", &idx)
	r := srv.do(t, "HEAD", "https://"+srv.Host+"/v2/"+namespace+"/"+providerType+"/manifests/1.0.0", nil)
	if troveIndex := r.Header.Get("Docker-Content-Digest"); pushedIndex == "" || pushedIndex != troveIndex {
		t.Errorf("pushed index digest %q, Trove's %q", pushedIndex, troveIndex)
	}
	if idx.ArtifactType != "application/vnd.opentofu.provider" || len(idx.Manifests) != 2 {
		t.Fatalf("pushed index = %+v", idx)
	}
	layerDigest := ""
	for _, m := range idx.Manifests {
		if m.ArtifactType != "application/vnd.opentofu.provider-target" {
			t.Errorf("platform manifest artifactType %q", m.ArtifactType)
		}
		if m.Platform.OS+"_"+m.Platform.Architecture != hostPlatform {
			continue
		}
		var man ociManifest
		reg.getJSON(t, "/v2/mirror/"+namespace+"/"+providerType+"/manifests/"+m.Digest, "application/vnd.oci.image.manifest.v1+json", &man)
		if len(man.Layers) != 1 || man.Layers[0].MediaType != "archive/zip" {
			t.Fatalf("platform manifest = %+v", man)
		}
		layerDigest = man.Layers[0].Digest
	}
	zip, err := os.ReadFile(rel.path(rel.zipName(hostPlatform)))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(zip)
	if want := "sha256:" + hex.EncodeToString(sum[:]); layerDigest != want {
		t.Fatalf("the %s layer digest is %q, want the zip's %s", hostPlatform, layerDigest, want)
	}

	t.Run("tofu installs from the registry", func(t *testing.T) {
		tf := newClient(t, clientTofu, srv, "")
		trustAlso(t, tf, srv, reg.CAFile)
		appendCLIConfig(t, tf, fmt.Sprintf(`
provider_installation {
  oci_mirror {
    repository_template = "%s/${namespace}/${type}"
    include             = ["%s/*/*"]
  }
}
`, prefix, srv.Host))
		dir := writeProject(t, srv, "1.0.0", "from-pushed-oci")
		res := tf.mustRun(t, dir, "init", "-input=false")
		if !strings.Contains(res.Flat, "Installed "+srv.Host+"/"+namespace+"/"+providerType+" v1.0.0") {
			t.Errorf("tofu init output lacks the installation:\n%s", res.Output)
		}
		lock := readLock(t, srv, dir)
		if zh := "zh:" + strings.TrimPrefix(layerDigest, "sha256:"); lock.Version != "1.0.0" || !slices.Contains(lock.Hashes, zh) {
			t.Errorf("lock file = %+v, want version 1.0.0 with %s (the layer digest)", lock, zh)
		}
		applyAndCheck(t, tf, dir, "from-pushed-oci")

		mdir := t.TempDir()
		writeFile(t, mdir, "main.tf", []byte(fmt.Sprintf("module \"m\" {\n  source = %q\n}\n\noutput \"text\" {\n  value = module.m.text\n}\n",
			"oci://"+prefix+"/"+namespace+"/modules/labels/null?tag=1.0.0")))
		tf.mustRun(t, mdir, "init", "-input=false")
		out := tf.mustRun(t, mdir, "apply", "-auto-approve", "-input=false")
		if !strings.Contains(out.Flat, `text = "labels 1.0.0"`) {
			t.Errorf("apply output lacks the module's output:\n%s", out.Output)
		}
	})

	t.Run("a private namespace is read with the token", func(t *testing.T) {
		srv.mustCLI(t, srv.AdminToken, "namespace", "create", "vault")
		srv.mustCLI(t, srv.AdminToken, "module", "publish", "vault/secrets/aws", "1.0.0", writeModuleDir(t, "secrets", "1.0.0", ""))
		readToken := strings.TrimSpace(srv.mustCLI(t, srv.AdminToken, "token", "create", "--namespace", "vault", "--scope", "read"))
		args := append([]string{"oci", "push", "vault/secrets/aws", "--to", prefix}, regFlags...)
		if res := srv.cli(t, publishToken, args...); res.Code == 0 || !strings.Contains(res.Stderr, "not found on the Trove server") {
			t.Errorf("push of a private module with another namespace's token: exit %d\nstderr: %s", res.Code, res.Stderr)
		}
		srv.mustCLI(t, readToken, args...)
		var man ociManifest
		reg.getJSON(t, "/v2/mirror/vault/modules/secrets/aws/manifests/1.0.0", "application/vnd.oci.image.manifest.v1+json", &man)
		if man.ArtifactType != "application/vnd.opentofu.modulepkg" || len(man.Layers) != 1 {
			t.Errorf("pushed private module manifest = %+v", man)
		}
	})

	t.Run("registry credentials", func(t *testing.T) {
		hash, err := bcrypt.GenerateFromPassword([]byte("s3cret-pw"), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		locked := startOCIRegistry(t, "pusher:"+string(hash))
		args := []string{"oci", "push", namespace + "/labels/null", "--to", locked.Host + "/team", "--registry-ca-file", locked.CAFile}
		if res := srv.cli(t, publishToken, args...); res.Code == 0 || !strings.Contains(res.Stderr, "refused the request (401): give credentials") {
			t.Errorf("push without credentials: exit %d\nstderr: %s", res.Code, res.Stderr)
		}
		// --username with --password-stdin.
		cmd := exec.Command(troveBin, append(args, "--username", "pusher", "--password-stdin")...)
		cmd.Env = append(baseEnv(t.TempDir()), "TROVE_ADDR="+srv.Addr, "TROVE_CA_FILE="+srv.CAFile, "TROVE_TOKEN="+publishToken)
		cmd.Stdin = strings.NewReader("s3cret-pw\n")
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "Pushed 1 version(s)") {
			t.Errorf("push with --password-stdin: %v\n%s", err, out)
		}
		// Pulling needs them too.
		if res := srv.cli(t, publishToken, "oci", "pull", locked.Host+"/team/"+namespace+"/modules/labels/null:1.0.0", "acme/labels/null",
			"--registry-ca-file", locked.CAFile); res.Code == 0 || !strings.Contains(res.Stderr, "refused the request (401)") {
			t.Errorf("pull without credentials: exit %d\nstderr: %s", res.Code, res.Stderr)
		}
		// The Docker configuration of the user.
		home := t.TempDir()
		if err := os.Mkdir(filepath.Join(home, ".docker"), 0o700); err != nil {
			t.Fatal(err)
		}
		auth := base64.StdEncoding.EncodeToString([]byte("pusher:s3cret-pw"))
		writeFile(t, filepath.Join(home, ".docker"), "config.json", []byte(fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, locked.Host, auth)))
		res, err := srv.runCLI(t.Context(), home, publishToken, "oci", "push", namespace+"/labels/null", "--to", locked.Host+"/docker", "--registry-ca-file", locked.CAFile)
		if err != nil || res.Code != 0 || !strings.Contains(res.Stdout, "Pushed 1 version(s)") {
			t.Errorf("push with ~/.docker/config.json: %v, exit %d\nstdout: %s\nstderr: %s", err, res.Code, res.Stdout, res.Stderr)
		}
	})

	// A second namespace trusting the same key takes the copies back.
	newNamespace := func(t *testing.T, name, armoredKey string) string {
		t.Helper()
		srv.mustCLI(t, srv.AdminToken, "namespace", "create", name, "--visibility", "public")
		if armoredKey != "" {
			srv.mustCLI(t, srv.AdminToken, "key", "add", name, "--file", writeFile(t, t.TempDir(), "key.asc", []byte(armoredKey)))
		}
		return strings.TrimSpace(srv.mustCLI(t, srv.AdminToken, "token", "create", "--namespace", name, "--scope", "publish"))
	}

	t.Run("pull into another namespace", func(t *testing.T) {
		token := newNamespace(t, "copy", key.ArmoredPublic)
		out := srv.mustCLI(t, token, append([]string{"oci", "pull", prefix + "/" + namespace + "/" + providerType + ":1.0.0", "copy/" + providerType}, regFlags...)...)
		if !strings.Contains(out, "Published copy/"+providerType+" 1.0.0") {
			t.Errorf("trove oci pull output:\n%s", out)
		}
		// Served: the same zips give the same generated index.
		r := srv.do(t, "HEAD", "https://"+srv.Host+"/v2/copy/"+providerType+"/manifests/1.0.0", nil)
		if got := r.Header.Get("Docker-Content-Digest"); got != pushedIndex {
			t.Errorf("copy's index digest %q (status %d), want %s", got, r.Status, pushedIndex)
		}
		var versions versionsDoc
		srv.getJSON(t, srv.providersBase(t).String()+"copy/"+providerType+"/versions", "", &versions)
		if len(versions.Versions) != 1 || versions.Versions[0].Version != "1.0.0" {
			t.Errorf("copy's versions = %+v", versions)
		}

		out = srv.mustCLI(t, token, append([]string{"oci", "pull", prefix + "/" + namespace + "/modules/labels/null:1.0.0", "copy/labels/null"}, regFlags...)...)
		if !strings.Contains(out, "Published copy/labels/null 1.0.0") {
			t.Errorf("trove oci pull (module) output:\n%s", out)
		}
		show := srv.mustCLI(t, token, "module", "show", "copy/labels/null")
		if !strings.Contains(show, "1.0.0") {
			t.Errorf("trove module show copy/labels/null:\n%s", show)
		}
	})

	t.Run("untrusted signature refused", func(t *testing.T) {
		other := signingtest.NewKey(t, "other")
		token := newNamespace(t, "untrusted", other.ArmoredPublic)
		res := srv.cli(t, token, append([]string{"oci", "pull", prefix + "/" + namespace + "/" + providerType + ":1.0.0", "untrusted/" + providerType}, regFlags...)...)
		if res.Code == 0 || !strings.Contains(res.Stderr, "does not verify with a key the namespace trusts") {
			t.Errorf("pull with an untrusted key: exit %d\nstdout: %s\nstderr: %s", res.Code, res.Stdout, res.Stderr)
		}
		assertNoProvider(t, srv, token, "untrusted")
	})

	t.Run("tampered layers refused", func(t *testing.T) {
		token := newNamespace(t, "tampered", key.ArmoredPublic)
		// Flip one byte of the provider zip and of the module zip in the
		// registry's storage: the sizes stay, the digests no longer match.
		var man ociManifest
		reg.getJSON(t, "/v2/mirror/"+namespace+"/modules/labels/null/manifests/1.0.0", "application/vnd.oci.image.manifest.v1+json", &man)
		for _, d := range []string{layerDigest, man.Layers[0].Digest} {
			p := reg.blobPath(d)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 0xff
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		res := srv.cli(t, token, append([]string{"oci", "pull", prefix + "/" + namespace + "/" + providerType + ":1.0.0", "tampered/" + providerType}, regFlags...)...)
		if res.Code == 0 || !strings.Contains(res.Stderr, "tampered or corrupted") {
			t.Errorf("pull of a tampered provider: exit %d\nstdout: %s\nstderr: %s", res.Code, res.Stdout, res.Stderr)
		}
		assertNoProvider(t, srv, token, "tampered")
		res = srv.cli(t, token, append([]string{"oci", "pull", prefix + "/" + namespace + "/modules/labels/null:1.0.0", "tampered/labels/null"}, regFlags...)...)
		if res.Code == 0 || !strings.Contains(res.Stderr, "tampered or corrupted") {
			t.Errorf("pull of a tampered module: exit %d\nstdout: %s\nstderr: %s", res.Code, res.Stdout, res.Stderr)
		}
		if res := srv.cli(t, token, "module", "show", "tampered/labels/null"); res.Code == 0 {
			t.Errorf("the tampered module was stored:\n%s", res.Stdout)
		}
	})
}

// assertNoProvider checks that namespace holds no provider.
func assertNoProvider(t *testing.T, s *troveServer, token, ns string) {
	t.Helper()
	out := s.mustCLI(t, token, "provider", "list", ns, "--json")
	if strings.Contains(out, providerType) {
		t.Errorf("namespace %s holds a provider after a refused pull:\n%s", ns, out)
	}
}
