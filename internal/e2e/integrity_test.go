package e2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/apispec"
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
