package e2e

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // ageReleases writes the server's index
)

// blobPath is where the embedded blob store of s keeps a blob.
func blobPath(s *troveServer, digest string) string {
	return filepath.Join(s.DataDir, "blobs", "sha256", digest[:2], digest)
}

// ageBlobs sets the modification time of every stored blob of s back by
// d, as if the blobs had been stored that long ago: the garbage
// collector's grace period (at least a minute through the CLI) then no
// longer keeps them.
func ageBlobs(t *testing.T, s *troveServer, d time.Duration) {
	t.Helper()
	past := time.Now().Add(-d)
	err := filepath.WalkDir(filepath.Join(s.DataDir, "blobs", "sha256"), func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		return os.Chtimes(path, past, past)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// ageReleases moves the releases of s's blobs (the times their last
// versions were deleted, which the collector's grace period also counts
// from; docs/lifecycle.md) back by d, in the running server's index, as
// if the deletes had been made that long ago.
func ageReleases(t *testing.T, s *troveServer, d time.Duration) {
	t.Helper()
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(filepath.Join(s.DataDir, "trove.db")), RawQuery: "_pragma=busy_timeout(10000)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.ExecContext(t.Context(), `UPDATE released_blobs SET released_at = released_at - ?`, d.Microseconds())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		t.Fatalf("aging the releases of blobs changed %d rows (%v); want those of the deleted versions", n, err)
	}
}

func blobStored(t *testing.T, s *troveServer, digest string) bool {
	t.Helper()
	_, err := os.Stat(blobPath(s, digest))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

// TestDeleteAndCollect deletes a provider version and a whole module
// with the real trove CLI, lists what a garbage collection would reclaim
// (`trove gc --dry-run`) and runs it (`trove gc`): the deleted versions'
// files go, terraform and tofu init still install the remaining version, no
// longer see the deleted one (a lock file pinning it stops installing,
// see docs/lifecycle.md), and the deleted module no longer resolves.
func TestDeleteAndCollect(t *testing.T) {
	requireTerraform(t)
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	key, publishToken := setupNamespace(t, srv)
	for _, v := range []string{"1.0.0", "1.1.0"} {
		publish(t, srv, publishToken, packageRelease(t, key, releaseSpec{Version: v, Platforms: []string{hostPlatform}}))
		srv.mustCLI(t, publishToken, "module", "publish", namespace+"/labels/null", v, writeModuleDir(t, "labels", v, ""))
	}
	source := fmt.Sprintf("%s/%s/%s", srv.Host, namespace, providerType)
	type providerVersion struct {
		SHASumsDigest string `json:"shasums_digest"`
		Platforms     []struct {
			SHA256 string `json:"shasum"`
		} `json:"platforms"`
	}
	digestsOf := func(v string) []string {
		var doc providerVersion
		srv.getJSON(t, fmt.Sprintf("/api/v1/namespaces/%s/providers/%s/versions/%s", namespace, providerType, v), srv.AdminToken, &doc)
		out := []string{doc.SHASumsDigest}
		for _, p := range doc.Platforms {
			out = append(out, p.SHA256)
		}
		if len(out) != 2 || out[0] == "" || out[1] == "" {
			t.Fatalf("version %s document names digests %v", v, out)
		}
		return out
	}
	kept, gone := digestsOf("1.0.0"), digestsOf("1.1.0")
	var module struct {
		ArchiveDigest string `json:"archive_sha256"`
	}
	var moduleDigests []string
	for _, v := range []string{"1.0.0", "1.1.0"} {
		srv.getJSON(t, "/api/v1/namespaces/"+namespace+"/modules/labels/null/versions/"+v, srv.AdminToken, &module)
		moduleDigests = append(moduleDigests, module.ArchiveDigest)
	}
	gone = append(gone, moduleDigests...)

	// A project per client, locked to 1.1.0 before the delete.
	tfs, locked := map[string]*terraformCLI{}, map[string]string{}
	for _, client := range clients {
		tfs[client] = newClient(t, client, srv, "")
		locked[client] = writeProject(t, srv, "~> 1.0", "locked")
		tfs[client].mustRun(t, locked[client], "init", "-input=false")
		if lock := readLock(t, srv, locked[client]); lock.Version != "1.1.0" {
			t.Fatalf("%s locked %q, want 1.1.0", client, lock.Version)
		}
	}

	// Deleting needs --confirm and admin rights.
	if r := srv.cli(t, srv.AdminToken, "provider", "delete", namespace+"/"+providerType, "1.1.0"); r.Code != 2 || !strings.Contains(r.Stderr, "--confirm") {
		t.Errorf("delete without --confirm: exit %d %s, want a usage error asking for --confirm", r.Code, r.Stderr)
	}
	if r := srv.cli(t, publishToken, "provider", "delete", namespace+"/"+providerType, "1.1.0", "--confirm"); r.Code == 0 || !strings.Contains(r.Stderr, "admin") {
		t.Errorf("delete with a publish token: exit %d %s, want a refusal naming the admin scope", r.Code, r.Stderr)
	}
	// terraform and tofu just installed 1.1.0 (without a token): the
	// delete says so, naming the consumer and its clients' downloads, and
	// deletes nothing until told it is meant (docs/consumers.md).
	if r := srv.cli(t, srv.AdminToken, "provider", "delete", namespace+"/"+providerType, "1.1.0", "--confirm"); r.Code != 1 ||
		!strings.Contains(r.Stderr, "1 consumers downloaded "+namespace+"/"+providerType+" 1.1.0") || !strings.Contains(r.Stderr, "anonymous") ||
		!strings.Contains(r.Stderr, "--in-use") {
		t.Errorf("delete of a version terraform and tofu installed: exit %d\n%s", r.Code, r.Stderr)
	}
	if out := srv.mustCLI(t, srv.AdminToken, "provider", "delete", namespace+"/"+providerType, "1.1.0", "--confirm", "--in-use"); !strings.Contains(out, "Deleted") {
		t.Errorf("trove provider delete printed %q", out)
	}
	if out := srv.mustCLI(t, srv.AdminToken, "module", "delete", namespace+"/labels/null", "--confirm", "--in-use"); !strings.Contains(out, "(2 versions)") {
		t.Errorf("trove module delete printed %q", out)
	}
	// Deletes remove no file.
	for _, d := range append(append([]string{}, kept...), gone...) {
		if !blobStored(t, srv, d) {
			t.Errorf("blob %s was removed by a delete; only the garbage collector removes files", d)
		}
	}

	// Files written or released within the grace period are kept; those
	// written and released before it are not.
	out := srv.mustCLI(t, srv.AdminToken, "gc", "--dry-run")
	if !strings.Contains(out, "Would reclaim 0 files") {
		t.Errorf("dry run with every file younger than the grace period printed:\n%s", out)
	}
	ageBlobs(t, srv, 2*time.Hour)
	out = srv.mustCLI(t, srv.AdminToken, "gc", "--dry-run")
	if !strings.Contains(out, "Would reclaim 0 files") {
		t.Errorf("dry run with every file written long ago but released within the grace period printed:\n%s", out)
	}
	ageReleases(t, srv, 2*time.Hour)
	// The deleted versions' files: those above and the signature of 1.1.0's
	// SHA256SUMS (which the API does not name).
	reclaim := len(unique(gone)) + 1
	out = srv.mustCLI(t, srv.AdminToken, "gc", "--dry-run")
	if !strings.Contains(out, fmt.Sprintf("Would reclaim %d files", reclaim)) {
		t.Errorf("dry run printed:\n%s\nwant %d files", out, reclaim)
	}
	for _, d := range gone {
		if !strings.Contains(out, d) || !blobStored(t, srv, d) {
			t.Errorf("dry run: %s listed %v, still stored %v", d, strings.Contains(out, d), blobStored(t, srv, d))
		}
	}
	if r := srv.cli(t, publishToken, "gc"); r.Code == 0 {
		t.Errorf("gc with a namespace publish token: exit 0, want a refusal")
	}
	out = srv.mustCLI(t, srv.AdminToken, "gc")
	if !strings.Contains(out, fmt.Sprintf("Reclaimed %d files", reclaim)) {
		t.Errorf("gc printed:\n%s", out)
	}
	for _, d := range gone {
		if blobStored(t, srv, d) {
			t.Errorf("blob %s of a deleted version survived the collection", d)
		}
	}
	for _, d := range kept {
		if !blobStored(t, srv, d) {
			t.Errorf("blob %s of the remaining version 1.0.0 was collected", d)
		}
	}

	t.Run("the remaining version installs", func(t *testing.T) {
		forEachClient(t, func(t *testing.T, client string) {
			tf := tfs[client]
			dir := writeProject(t, srv, "~> 1.0", "fresh")
			res := tf.mustRun(t, dir, "init", "-input=false")
			if !strings.Contains(res.Flat, tf.installedLine(source, "1.0.0", key.KeyID)) {
				t.Errorf("%s init with ~> 1.0 after deleting 1.1.0:\n%s", client, res.Output)
			}
		})
	})
	t.Run("the deleted version is not seen", func(t *testing.T) {
		forEachClient(t, func(t *testing.T, client string) {
			tf := tfs[client]
			dir := writeProject(t, srv, "1.1.0", "exact")
			if res := tf.run(t, dir, "init", "-input=false"); res.Code == 0 {
				t.Errorf("%s init pinning the deleted 1.1.0 succeeded:\n%s", client, res.Output)
			}
			res := tf.run(t, locked[client], "init", "-input=false")
			if res.Code == 0 || !strings.Contains(res.Flat, "the previously-selected version 1.1.0 is no longer available") {
				t.Errorf("%s init with a lock file pinning the deleted 1.1.0: exit %d\n%s", client, res.Code, res.Output)
			}
		})
	})
	t.Run("the deleted module is not found", func(t *testing.T) {
		forEachClient(t, func(t *testing.T, client string) {
			mtf := newClient(t, client, srv, "")
			addModuleHost(t, mtf, srv)
			if res := mtf.run(t, writeLabelsRoot(t, "~> 1.0"), "init", "-input=false"); res.Code == 0 {
				t.Errorf("%s init of the deleted module succeeded:\n%s", client, res.Output)
			}
		})
	})

	t.Run("a retention rule", func(t *testing.T) {
		for _, v := range []string{"2.0.0", "2.1.0", "2.2.0"} {
			srv.mustCLI(t, publishToken, "module", "publish", namespace+"/labels/null", v, writeModuleDir(t, "labels", v, ""))
		}
		if r := srv.cli(t, publishToken, "retention", "set", namespace, "--keep-last", "1"); r.Code == 0 {
			t.Errorf("retention set with a publish token: exit 0, want a refusal")
		}
		if r := srv.cli(t, srv.AdminToken, "retention", "set", namespace, "--keep-within", "1h"); r.Code != 2 {
			t.Errorf("retention set --keep-within 1h: exit %d %s, want a usage error", r.Code, r.Stderr)
		}
		out := srv.mustCLI(t, srv.AdminToken, "retention", "set", namespace, "--keep-last", "1", "--pin", "~> 1.0")
		if !strings.Contains(out, "keep the last 1 versions, versions matching ~> 1.0") {
			t.Errorf("retention set printed %q", out)
		}
		out = srv.mustCLI(t, srv.AdminToken, "gc", "--dry-run")
		for _, v := range []string{"2.1.0", "2.0.0"} {
			if !strings.Contains(out, "Would delete module "+namespace+"/labels/null "+v+" (retention rule of "+namespace+")") {
				t.Errorf("dry run does not announce the deletion of %s:\n%s", v, out)
			}
		}
		if strings.Contains(out, "2.2.0") || strings.Contains(out, "Would delete provider") {
			t.Errorf("dry run would delete the newest module version or the provider's only version:\n%s", out)
		}
		out = srv.mustCLI(t, srv.AdminToken, "gc")
		if !strings.Contains(out, "Deleted module "+namespace+"/labels/null 2.0.0") {
			t.Errorf("gc printed:\n%s", out)
		}
		mtf := newClient(t, clientTerraform, srv, "")
		addModuleHost(t, mtf, srv)
		res := mtf.mustRun(t, writeLabelsRoot(t, "~> 2.0"), "init", "-input=false")
		if !strings.Contains(res.Flat, "Downloading "+moduleHost+"/"+namespace+"/labels/null 2.2.0") {
			t.Errorf("init with ~> 2.0 after retention:\n%s", res.Output)
		}
		if res := mtf.run(t, writeLabelsRoot(t, "2.1.0"), "init", "-input=false"); res.Code == 0 {
			t.Errorf("init pinning 2.1.0, which retention deleted, succeeded:\n%s", res.Output)
		}
		srv.mustCLI(t, srv.AdminToken, "retention", "delete", namespace)
	})
}

// unique returns s without repeats.
func unique(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
