package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/signing/signingtest"
)

// TestOnlySignedFilesAreServed publishes releases whose manifest the
// signed SHA256SUMS does not cover, straight to the API, and checks that
// each is refused with 400 naming the file and that nothing of it is
// stored: no version, no blob.
func TestOnlySignedFilesAreServed(t *testing.T) {
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	key, publishToken := setupNamespace(t, srv)

	rel := packageRelease(t, key, releaseSpec{Version: "1.0.0", Platforms: []string{hostPlatform}})
	// SHA256SUMS without the manifest's line, signed: the manifest (and
	// the protocols it declares) would be served without a signature.
	var kept []string
	for line := range strings.Lines(string(rel.sums(t))) {
		if !strings.HasSuffix(strings.TrimSuffix(line, "\n"), "  "+rel.manifestName()) {
			kept = append(kept, line)
		}
	}
	rel.writeSums(t, []byte(strings.Join(kept, "")))
	rel.sign(t, key.Sign)
	writeFile(t, rel.Dir, rel.manifestName(), []byte(`{"version":1,"metadata":{"protocol_versions":["6.0"]}}`))

	status, body := rawPublish(t, srv, publishToken, rel.Version, rel,
		rel.sumsName(), rel.sigName(), rel.manifestName(), rel.zipName(hostPlatform))
	want := rel.manifestName() + " is not listed in SHA256SUMS"
	if status != http.StatusBadRequest || !strings.Contains(body, want) {
		t.Errorf("publish with an unlisted manifest: %d %s; want 400 saying %q", status, body, want)
	}
	if r := srv.get(t, versionsURL(t, srv)); r.Status != http.StatusNotFound {
		t.Errorf("versions after the refused publish: %d %s, want 404", r.Status, r.Body)
	}
	if blobs := storedBlobs(t, srv.DataDir); len(blobs) != 0 {
		t.Errorf("the refused publish stored blobs: %q", blobs)
	}

	// Without the manifest, the same release is published, with the
	// default protocol: what the signature covers.
	status, body = rawPublish(t, srv, publishToken, rel.Version, rel, rel.sumsName(), rel.sigName(), rel.zipName(hostPlatform))
	if status != http.StatusCreated {
		t.Fatalf("publish without the unlisted manifest: %d %s, want 201", status, body)
	}
	for _, v := range getVersions(t, srv).Versions {
		if v.Version == rel.Version && (len(v.Protocols) != 1 || v.Protocols[0] != "5.0") {
			t.Errorf("%s is served with protocols %q, want the default [5.0]", v.Version, v.Protocols)
		}
	}
}

// TestExpiredSigningKey follows a signing key through its expiry. Before
// it: an already expired key cannot be added, and a release signed by the
// key publishes. After it: a release the key signed while it was valid is
// refused, and what was published keeps installing with both clients,
// with the expiry shown in the key listing. Terraform installs it as
// before; OpenTofu installs it with a warning (see docs/security.md).
func TestExpiredSigningKey(t *testing.T) {
	requireTerraform(t)
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	srv.mustCLI(t, srv.AdminToken, "namespace", "create", namespace, "--visibility", "public")
	publishToken := createToken(t, srv, "publish")

	t.Run("an expired key is refused", func(t *testing.T) {
		created := time.Now().Add(-48 * time.Hour)
		old := signingtest.NewKeyWith(t, namespace, signingtest.Options{Algorithm: signingtest.Ed25519, Created: created, Lifetime: 24 * time.Hour})
		res := srv.cli(t, srv.AdminToken, "key", "add", namespace, "--file", writeFile(t, t.TempDir(), "old.asc", []byte(old.ArmoredPublic)))
		if res.Code == 0 || !strings.Contains(res.Stderr, "expired on") || !strings.Contains(res.Stderr, "gpg --quick-set-expire") {
			t.Errorf("trove key add of an expired key: exit %d\nstderr: %s\nwant a failure saying that it expired and how to extend it", res.Code, res.Stderr)
		}
	})

	// A key that expires shortly after it signed the release.
	const lifetime = 25 * time.Second
	key := signingtest.NewKeyWith(t, namespace, signingtest.Options{Algorithm: signingtest.Ed25519, Lifetime: lifetime})
	expiry := key.Entity.PrimaryKey.CreationTime.Add(lifetime)
	srv.mustCLI(t, srv.AdminToken, "key", "add", namespace, "--file", writeFile(t, t.TempDir(), "key.asc", []byte(key.ArmoredPublic)))
	rel := packageRelease(t, key, releaseSpec{Version: "1.0.0", Platforms: []string{hostPlatform}})
	late := packageRelease(t, key, releaseSpec{Version: "1.1.0", Platforms: []string{hostPlatform}}) // signed now, published after the expiry
	publish(t, srv, publishToken, rel)
	if !time.Now().Before(expiry) {
		t.Fatalf("setting up took longer than the key's lifetime of %s; the scenario needs the publish before the expiry", lifetime)
	}
	// OpenPGP counts whole seconds, and a key is expired only after its
	// last second.
	wait := time.Until(expiry.Add(1500 * time.Millisecond))
	t.Logf("waiting %s for key %s to expire", wait.Round(time.Second), key.KeyID)
	time.Sleep(wait)

	t.Run("a release signed before the expiry is refused after it", func(t *testing.T) {
		before := storedBlobs(t, srv.DataDir)
		status, body := rawPublish(t, srv, publishToken, late.Version, late, late.sumsName(), late.sigName(), late.manifestName(), late.zipName(hostPlatform))
		want := "signed by key " + key.KeyID + ", which has expired"
		if status != http.StatusBadRequest || !strings.Contains(body, want) {
			t.Errorf("publish signed by the expired key: %d %s; want 400 saying %q", status, body, want)
		}
		if _, ok := getVersions(t, srv).platforms()[late.Version]; ok {
			t.Errorf("%s is listed although its publish was refused", late.Version)
		}
		if after := storedBlobs(t, srv.DataDir); len(after) != len(before) {
			t.Errorf("the refused publish stored blobs: %d before, %d after", len(before), len(after))
		}
	})

	t.Run("the key listing shows the expiry", func(t *testing.T) {
		var list apispec.SigningKeyList
		if r := srv.getJSON(t, srv.Addr+"/api/v1/namespaces/"+namespace+"/keys", srv.AdminToken, &list); r.Status != http.StatusOK {
			t.Fatalf("key list: %d %s", r.Status, r.Body)
		}
		if len(list.Keys) != 1 || list.Keys[0].ExpiresAt == nil || !list.Keys[0].ExpiresAt.Equal(expiry) || list.Keys[0].ExpiresAt.After(time.Now()) {
			raw, _ := json.Marshal(list)
			t.Errorf("key list %s; want key %s with expires_at %s, in the past", raw, key.KeyID, expiry.UTC().Format(time.RFC3339))
		}
	})

	forEachClient(t, func(t *testing.T, client string) {
		tf := newClient(t, client, srv, "")
		dir := writeProject(t, srv, rel.Version, "after-expiry")
		res := tf.mustRun(t, dir, "init", "-input=false")
		source := fmt.Sprintf("%s/%s/%s", srv.Host, namespace, providerType)
		if want := tf.installedLine(source, rel.Version, key.KeyID); !strings.Contains(res.Flat, want) {
			t.Errorf("%s init output lacks %q:\n%s", client, want, res.Output)
		}
		warning := fmt.Sprintf("[WARN] Provider %s/%s (%s) gpg key expired, this will fail in future versions of OpenTofu", namespace, providerType, srv.Host)
		switch warned := strings.Contains(res.Flat, warning); {
		case client == clientTofu && !warned:
			t.Errorf("tofu init output lacks the expired-key warning %q:\n%s", warning, res.Output)
		case client == clientTerraform && strings.Contains(strings.ToLower(res.Flat), "expired"):
			t.Errorf("terraform init mentions an expiry; Terraform tolerates expired keys silently:\n%s", res.Output)
		}
		t.Logf("%s init:\n%s", client, res.Output)

		if client == clientTofu {
			// The warning's "will fail": OpenTofu's opt-in to that future.
			tf.env = append(tf.env, "OPENTOFU_ENFORCE_GPG_EXPIRATION=true")
			res := tf.run(t, writeProject(t, srv, rel.Version, "enforced"), "init", "-input=false")
			if res.Code == 0 || !strings.Contains(res.Flat, "not signed with a valid signing key") {
				t.Errorf("tofu init with OPENTOFU_ENFORCE_GPG_EXPIRATION=true: exit %d, want a refusal of the expired key:\n%s", res.Code, res.Output)
			}
			t.Logf("tofu init with OPENTOFU_ENFORCE_GPG_EXPIRATION=true:\n%s", res.Output)
		}
	})
}

// storedBlobs lists the blobs of the server's filesystem blob store.
func storedBlobs(t *testing.T, dataDir string) []string {
	t.Helper()
	var blobs []string
	root := filepath.Join(dataDir, "blobs", "sha256")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			blobs = append(blobs, d.Name())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return blobs
}

// TestCrashWhileStoringBlob kills the server (SIGKILL) while it copies a
// verified archive into a blob directory on another filesystem, which
// goes through a temporary file in the blob store's tmp/, restarts it and
// checks that the partial file is gone at once, that the version is
// absent, and that publishing again succeeds.
func TestCrashWhileStoringBlob(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	blobDir := otherFilesystemDir(t, dataDir)
	srv := startTrove(t, dataDir, "--fs-blob-dir", blobDir)
	key, publishToken := setupNamespace(t, srv)
	rel := packageRelease(t, key, releaseSpec{
		Version:   "2.0.0",
		Platforms: []string{hostPlatform},
		Extra:     []zipEntry{{Name: "payload.bin", Random: crashPayload}},
	})

	done := make(chan cliResult, 1)
	go func() {
		res, err := srv.runCLI(t.Context(), t.TempDir(), publishToken, "publish", "--namespace", namespace, rel.Dir)
		if err != nil {
			res.Stderr += err.Error()
			res.Code = -1
		}
		done <- res
	}()
	partial := waitForBlobTemp(t, blobDir, done)
	srv.kill()
	res := <-done
	t.Logf("killed the server while %s was being written; trove publish exit %d", partial, res.Code)

	srv2 := startTrove(t, dataDir, "--fs-blob-dir", blobDir)
	srv2.AdminToken = srv.AdminToken
	if left := blobTempFiles(t, blobDir); len(left) > 0 {
		t.Errorf("temporary blob files left after the restart: %q", left)
	}
	if left := stagedFiles(t, dataDir); len(left) > 0 {
		t.Errorf("staged uploads left after the restart: %q", left)
	}
	if checkAllOrNothing(t, srv2, rel) && res.Code != 0 {
		t.Errorf("%s is present although its publish failed", rel.Version)
	}
	publish(t, srv2, publishToken, rel)
	if !checkAllOrNothing(t, srv2, rel) {
		t.Errorf("%s is not served after publishing it again", rel.Version)
	}
	if left := blobTempFiles(t, blobDir); len(left) > 0 {
		t.Errorf("temporary blob files left after a successful publish: %q", left)
	}
}

// otherFilesystemDir returns a new directory on a filesystem other than
// the one of near (tmpfs at /dev/shm), removed when the test ends; it
// skips the test if there is none.
func otherFilesystemDir(t *testing.T, near string) string {
	t.Helper()
	if err := os.MkdirAll(near, 0o700); err != nil {
		t.Fatal(err)
	}
	var a, b syscall.Stat_t
	if syscall.Stat(near, &a) != nil || syscall.Stat("/dev/shm", &b) != nil || a.Dev == b.Dev {
		t.Skip("no second filesystem (/dev/shm) to put the blob directory on")
	}
	dir, err := os.MkdirTemp("/dev/shm", "trove-e2e-blobs-")
	if err != nil {
		t.Skipf("cannot use /dev/shm: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// waitForBlobTemp waits until a temporary file with content appears in
// the blob store's tmp/ and returns its name; it fails the test if the
// publish ends first.
func waitForBlobTemp(t *testing.T, blobDir string, done <-chan cliResult) string {
	t.Helper()
	deadline := time.After(commandTimeout)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, name := range blobTempFiles(t, blobDir) {
			if info, err := os.Stat(filepath.Join(blobDir, "tmp", name)); err == nil && info.Size() > 0 {
				return name
			}
		}
		select {
		case res := <-done:
			t.Fatalf("the publish ended (exit %d) before a temporary blob file was seen:\n%s", res.Code, res.Stderr)
		case <-deadline:
			t.Fatalf("no temporary blob file appeared in %s/tmp within %s", blobDir, commandTimeout)
		case <-tick.C:
		}
	}
}

// blobTempFiles lists the files in a blob directory's tmp/ and its
// per-process directories, but for their lock files.
func blobTempFiles(t *testing.T, blobDir string) []string {
	t.Helper()
	tmp := filepath.Join(blobDir, "tmp")
	var names []string
	err := filepath.WalkDir(tmp, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed meanwhile
		}
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(tmp, path); !d.IsDir() && !(d.Name() == "lock" && strings.HasPrefix(rel, "proc-")) {
			names = append(names, rel)
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return names
}

// TestOneServerPerDataDirectory starts a second `trove serve` on the data
// directory of a running one: it must refuse to start, since start-up
// removes the uploads staged in that directory, which would be the first
// server's uploads in flight. Once the first is killed, a server starts.
func TestOneServerPerDataDirectory(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	srv := startTrove(t, dataDir)

	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, troveBin, "serve", "--data-dir", dataDir, "--listen", fmt.Sprintf("localhost:%d", freePort(t)))
	cmd.Env = baseEnv(t.TempDir())
	out, err := cmd.CombinedOutput()
	want := "another trove serve uses the data directory " + dataDir
	if err == nil || !strings.Contains(string(out), want) {
		t.Errorf("a second trove serve on the same data directory: %v\n%s\nwant a refusal saying %q", err, out, want)
	}
	if r := srv.get(t, "/healthz"); r.Status != http.StatusOK {
		t.Errorf("the first server after the second one's attempt: /healthz %d", r.Status)
	}

	srv.kill()
	again := startTrove(t, dataDir)
	if r := again.get(t, "/healthz"); r.Status != http.StatusOK {
		t.Errorf("a server on the data directory of a killed one: /healthz %d", r.Status)
	}
}
