package e2e

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/semver"
)

// moduleName and moduleSystem name the module the backup tests publish.
const (
	moduleName   = "labels"
	moduleSystem = "null"
)

// publishedLog records, in order, the versions a publishing goroutine
// got a success for.
type publishedLog struct {
	mu        sync.Mutex
	providers []string
	modules   []string
}

func (l *publishedLog) counts() (int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.providers), len(l.modules)
}

// runTroveCmd runs a trove command that talks to no server (backup,
// restore) in a fresh environment.
func runTroveCmd(t *testing.T, args ...string) cliResult {
	t.Helper()
	var none troveServer // no address: the command needs none
	res, err := none.runCLI(t.Context(), t.TempDir(), "", args...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestBackupUnderPublishLoad takes backups of a running Trove on the
// embedded store while a client publishes provider and module versions
// in a loop, restores one into a new data directory and starts a second
// Trove on it. The restored registry must list a consistent prefix of
// what was published (every version published before the backup began,
// possibly the ones in flight, nothing skipped), every listed version's
// archives must download and match their digests, and terraform and
// tofu must install the newest listed provider and module.
func TestBackupUnderPublishLoad(t *testing.T) {
	requireTerraform(t)
	requireTofu(t)
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	key, token := setupNamespace(t, srv)

	// Everything is packaged before the load starts, so that the
	// publishing goroutine only runs the trove client.
	const loadVersions = 8
	var releases []*dist
	var moduleDirs []string
	for i := range loadVersions + 1 {
		v := fmt.Sprintf("1.0.%d", i)
		releases = append(releases, packageRelease(t, key, releaseSpec{Version: v, Platforms: []string{hostPlatform}}))
		moduleDirs = append(moduleDirs, writeModuleDir(t, moduleName, v, ""))
	}
	moduleAddr := namespace + "/" + moduleName + "/" + moduleSystem
	publish(t, srv, token, releases[0])
	srv.mustCLI(t, token, "module", "publish", moduleAddr, "1.0.0", moduleDirs[0])
	published := &publishedLog{providers: []string{"1.0.0"}, modules: []string{"1.0.0"}}

	stop := make(chan struct{})
	loadDone := make(chan error, 1)
	go func() {
		loadDone <- func() error {
			for i := 1; i <= loadVersions; i++ {
				select {
				case <-stop:
					return nil
				default:
				}
				v := releases[i].Version
				res, err := srv.runCLI(t.Context(), t.TempDir(), token, "publish", "--namespace", namespace, releases[i].Dir)
				if err != nil || res.Code != 0 {
					return fmt.Errorf("publishing provider %s: %v %+v", v, err, res)
				}
				published.mu.Lock()
				published.providers = append(published.providers, v)
				published.mu.Unlock()
				res, err = srv.runCLI(t.Context(), t.TempDir(), token, "module", "publish", moduleAddr, v, moduleDirs[i])
				if err != nil || res.Code != 0 {
					return fmt.Errorf("publishing module %s: %v %+v", v, err, res)
				}
				published.mu.Lock()
				published.modules = append(published.modules, v)
				published.mu.Unlock()
			}
			return nil
		}()
	}()
	// Backups while the load runs: after the first publishes, and again
	// a little later.
	for {
		if p, _ := published.counts(); p >= 3 {
			break
		}
		select {
		case err := <-loadDone:
			t.Fatalf("the publishing loop ended before the backup: %v", err)
		case <-time.After(20 * time.Millisecond):
		}
	}
	work := t.TempDir()
	var backups []string
	var before [][2]int // published counts when each backup began
	for i := range 2 {
		out := filepath.Join(work, fmt.Sprintf("backup-%d.tar.gz", i))
		p, m := published.counts()
		before = append(before, [2]int{p, m})
		res := runTroveCmd(t, "backup", "--data-dir", srv.DataDir, "--out", out)
		if res.Code != 0 {
			t.Fatalf("trove backup under load: exit %d\nstdout: %s\nstderr: %s", res.Code, res.Stdout, res.Stderr)
		}
		if !strings.Contains(res.Stderr, "taking a snapshot of the index") || !strings.Contains(res.Stderr, "backup complete") {
			t.Errorf("trove backup printed no progress on stderr:\n%s", res.Stderr)
		}
		if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("backup file %s: %v, mode %v; want mode 0600", out, err, fi.Mode())
		}
		backups = append(backups, out)
		time.Sleep(500 * time.Millisecond)
	}
	close(stop)
	if err := <-loadDone; err != nil {
		t.Fatal(err)
	}
	p, m := published.counts()
	t.Logf("published %d provider and %d module versions; backups began after %v", p, m, before)
	if p == before[len(before)-1][0] {
		t.Logf("no publish completed after the last backup began: the load ended early")
	}

	for _, b := range backups {
		if res := runTroveCmd(t, "backup", "verify", b); res.Code != 0 || !strings.Contains(res.Stdout, "a complete, intact backup") {
			t.Fatalf("trove backup verify %s: exit %d\n%s\n%s", b, res.Code, res.Stdout, res.Stderr)
		}
	}

	restoredDir := filepath.Join(t.TempDir(), "restored")
	res := runTroveCmd(t, "restore", "--data-dir", restoredDir, backups[0])
	if res.Code != 0 {
		t.Fatalf("trove restore: exit %d\n%s\n%s", res.Code, res.Stdout, res.Stderr)
	}
	if _, err := os.Stat(filepath.Join(restoredDir, ".restore-tmp")); !os.IsNotExist(err) {
		t.Errorf("the restore left its staging directory behind: %v", err)
	}
	restored := startTrove(t, restoredDir)
	restored.AdminToken = srv.AdminToken // tokens are in the restored index

	// Providers: the listed versions are the first k published, k at least
	// the count when the backup began; every one is whole.
	listed := getVersions(t, restored).platforms()
	k := len(listed)
	if k < before[0][0] || k > p {
		t.Fatalf("the restored registry lists %d provider versions (%v); %d were published when the backup began, %d in all", k, listed, before[0][0], p)
	}
	published.mu.Lock()
	wantProviders := slices.Clone(published.providers[:k])
	wantModules := slices.Clone(published.modules)
	published.mu.Unlock()
	for _, v := range wantProviders {
		if _, ok := listed[v]; !ok {
			t.Errorf("the restored registry lists %v: not a prefix of the publishing order %v (%s missing)", listed, wantProviders, v)
		}
	}
	for i, d := range releases {
		if present := checkAllOrNothing(t, restored, d); present != (i < k) {
			t.Errorf("provider %s present = %v after the restore; the first %d versions are listed", d.Version, present, k)
		}
	}

	// Modules: likewise, each archive the restored server hands out is the
	// one the original server hands out.
	modVersions := moduleVersions(t, restored, moduleAddr)
	km := len(modVersions)
	if km < before[0][1] || km > len(wantModules) || !slices.Equal(modVersions, sortedVersions(wantModules[:km])) {
		t.Fatalf("the restored registry lists module versions %v; published in order %v, %d when the backup began", modVersions, wantModules, before[0][1])
	}
	for _, v := range modVersions {
		got := moduleArchive(t, restored, moduleAddr, v)
		want := moduleArchive(t, srv, moduleAddr, v)
		if sha256Hex(got) != sha256Hex(want) {
			t.Errorf("module %s %s: the restored archive's SHA-256 is %s, the original's %s", moduleAddr, v, sha256Hex(got), sha256Hex(want))
		}
	}

	newestProvider := wantProviders[k-1]
	newestModule := modVersions[len(modVersions)-1]
	forEachClient(t, func(t *testing.T, client string) {
		tf := newClient(t, client, restored, "")
		addModuleHost(t, tf, restored)
		dir := writeProject(t, restored, newestProvider, "restored-"+client)
		writeFile(t, dir, "module.tf", []byte(fmt.Sprintf("module \"labels\" {\n  source  = \"%s/%s\"\n  version = %q\n}\n\noutput \"labels\" {\n  value = module.labels.text\n}\n", moduleHost, moduleAddr, newestModule)))
		res := tf.mustRun(t, dir, "init", "-input=false")
		if want := tf.installedLine(restored.Host+"/"+namespace+"/"+providerType, newestProvider, key.KeyID); !strings.Contains(res.Flat, want) {
			t.Errorf("%s init output lacks %q:\n%s", client, want, res.Output)
		}
		if got := readModulesManifest(t, dir)["labels"]; got != newestModule {
			t.Errorf("%s installed module version %q, want %s", client, got, newestModule)
		}
		applyAndCheck(t, tf, dir, "restored-"+client)
	})
}

// sortedVersions sorts versions by semantic version precedence, oldest
// first.
func sortedVersions(vs []string) []string {
	out := slices.Clone(vs)
	slices.SortFunc(out, func(a, b string) int { return semver.Compare("v"+a, "v"+b) })
	return out
}

// modulesBase returns the modules.v1 base URL from service discovery.
func (s *troveServer) modulesBase(t *testing.T) string {
	t.Helper()
	var disco map[string]any
	r := s.getJSON(t, "/.well-known/terraform.json", "", &disco)
	modules, _ := disco["modules.v1"].(string)
	base, err := r.URL.Parse(modules)
	if err != nil || modules == "" {
		t.Fatalf("discovery document %s has no usable modules.v1: %v", r.Body, err)
	}
	return base.String()
}

// moduleVersions returns the versions of the module at addr the
// modules.v1 protocol lists, sorted as sortedVersions does.
func moduleVersions(t *testing.T, s *troveServer, addr string) []string {
	t.Helper()
	var doc struct {
		Modules []struct {
			Versions []struct {
				Version string `json:"version"`
			} `json:"versions"`
		} `json:"modules"`
	}
	r := s.get(t, s.modulesBase(t)+addr+"/versions")
	if r.Status == http.StatusNotFound {
		return nil
	}
	if r.Status != http.StatusOK {
		t.Fatalf("module versions of %s: status %d: %s", addr, r.Status, r.Body)
	}
	if err := json.Unmarshal(r.Body, &doc); err != nil {
		t.Fatalf("module versions %s: %v", r.Body, err)
	}
	var vs []string
	for _, m := range doc.Modules {
		for _, v := range m.Versions {
			vs = append(vs, v.Version)
		}
	}
	return sortedVersions(vs)
}

// moduleArchive downloads a module version's archive as the clients do:
// the download endpoint's X-Terraform-Get, then that URL.
func moduleArchive(t *testing.T, s *troveServer, addr, version string) []byte {
	t.Helper()
	r := s.get(t, s.modulesBase(t)+addr+"/"+version+"/download")
	get := r.Header.Get("X-Terraform-Get")
	if r.Status != http.StatusNoContent || get == "" {
		t.Fatalf("module download of %s %s: status %d, X-Terraform-Get %q: %s", addr, version, r.Status, get, r.Body)
	}
	a := s.get(t, r.resolve(t, get))
	if a.Status != http.StatusOK || len(a.Body) == 0 {
		t.Fatalf("module archive of %s %s: status %d", addr, version, a.Status)
	}
	return a.Body
}

// treeDigest describes every file under dir (path, mode, SHA-256), for
// checking that a refused command changed nothing.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := d.Info()
		if err != nil {
			return err
		}
		sum := ""
		if d.Type().IsRegular() {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			h := sha256.Sum256(data)
			sum = hex.EncodeToString(h[:])
		}
		fmt.Fprintf(&b, "%s %v %s\n", rel, info.Mode(), sum)
		return nil
	})
	if os.IsNotExist(err) {
		return "(absent)"
	}
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// tarEntries reads the entries of an uncompressed backup, with the
// offset of each entry's content in the file.
type tarEntry struct {
	Name   string
	Offset int64
	Data   []byte
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func readTar(t *testing.T, path string) []tarEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cr := &countingReader{r: f}
	tr := tar.NewReader(cr)
	var out []tarEntry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("reading %s: %v", path, err)
		}
		off := cr.n
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tarEntry{Name: h.Name, Offset: off, Data: data})
	}
}

func writeTar(t *testing.T, path string, entries []tarEntry) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e.Name, Size: int64(len(e.Data)), Mode: 0o600}); err != nil {
			t.Fatal(err)
		}
		tw.Write(e.Data)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestBackupRefusesDamage damages backups in the ways storage and people
// do (a flipped byte in a blob, a file cut short, the manifest of another
// backup) and checks that `trove backup verify` reports each and `trove
// restore` refuses each, leaving the target data directory exactly as it
// was, new or not; and that restore refuses a data directory a server
// runs on, and one that is not empty without --force.
func TestBackupRefusesDamage(t *testing.T) {
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	key, token := setupNamespace(t, srv)
	publish(t, srv, token, packageRelease(t, key, releaseSpec{Version: "1.0.0", Platforms: []string{hostPlatform}}))
	work := t.TempDir()
	older := filepath.Join(work, "older.tar")
	if res := runTroveCmd(t, "backup", "--data-dir", srv.DataDir, "--out", older); res.Code != 0 {
		t.Fatalf("trove backup: exit %d\n%s", res.Code, res.Stderr)
	}
	srv.mustCLI(t, token, "module", "publish", namespace+"/"+moduleName+"/"+moduleSystem, "1.0.0", writeModuleDir(t, moduleName, "1.0.0", ""))
	good := filepath.Join(work, "good.tar")
	if res := runTroveCmd(t, "backup", "--data-dir", srv.DataDir, "--out", good); res.Code != 0 {
		t.Fatalf("trove backup: exit %d\n%s", res.Code, res.Stderr)
	}
	entries := readTar(t, good)
	if len(entries) < 3 || entries[0].Name != "manifest.json" || entries[1].Name != "index/trove.db" {
		t.Fatalf("backup entries start with %v, want manifest.json, index/trove.db and blobs", entries)
	}

	goodBytes, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	damaged := map[string]func() []byte{
		"a flipped byte in a blob": func() []byte {
			b := slices.Clone(goodBytes)
			last := entries[len(entries)-1] // a blob
			if !strings.HasPrefix(last.Name, "blobs/sha256/") || len(last.Data) == 0 {
				t.Fatalf("last entry is %s", last.Name)
			}
			b[last.Offset+int64(len(last.Data))/2] ^= 0x01
			return b
		},
		"a flipped byte in the index": func() []byte {
			b := slices.Clone(goodBytes)
			b[entries[1].Offset+int64(len(entries[1].Data))-100] ^= 0x01
			return b
		},
		"cut short": func() []byte { return goodBytes[:len(goodBytes)/2] },
		"the manifest of another backup": func() []byte {
			other := readTar(t, older)
			mixed := append([]tarEntry{entries[0]}, other[1:]...)
			p := filepath.Join(t.TempDir(), "mixed.tar")
			writeTar(t, p, mixed)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			return b
		},
	}
	// A data directory holding a restored registry, which a refused
	// restore --force must leave as it is.
	existing := filepath.Join(t.TempDir(), "existing")
	if res := runTroveCmd(t, "restore", "--data-dir", existing, older); res.Code != 0 {
		t.Fatalf("trove restore of the older backup: exit %d\n%s", res.Code, res.Stderr)
	}
	for name, damage := range damaged {
		t.Run(name, func(t *testing.T) {
			bad := filepath.Join(t.TempDir(), "bad.tar")
			if err := os.WriteFile(bad, damage(), 0o600); err != nil {
				t.Fatal(err)
			}
			res := runTroveCmd(t, "backup", "verify", bad)
			if res.Code != 1 || !strings.Contains(res.Stderr, "damaged") {
				t.Errorf("trove backup verify of a backup with %s: exit %d, want 1 with the damage named\n%s%s", name, res.Code, res.Stdout, res.Stderr)
			}
			t.Logf("verify: %s", strings.TrimSpace(res.Stderr))

			fresh := filepath.Join(t.TempDir(), "fresh")
			if res := runTroveCmd(t, "restore", "--data-dir", fresh, bad); res.Code != 1 {
				t.Errorf("trove restore of a backup with %s into a new directory: exit %d, want 1\n%s%s", name, res.Code, res.Stdout, res.Stderr)
			}
			if _, err := os.Stat(fresh); !os.IsNotExist(err) {
				t.Errorf("the refused restore left %s behind: %s", fresh, treeDigest(t, fresh))
			}
			beforeTree := treeDigest(t, existing)
			if res := runTroveCmd(t, "restore", "--force", "--data-dir", existing, bad); res.Code != 1 {
				t.Errorf("trove restore --force of a backup with %s: exit %d, want 1\n%s%s", name, res.Code, res.Stdout, res.Stderr)
			}
			if after := treeDigest(t, existing); after != beforeTree {
				t.Errorf("the refused restore --force changed the data directory:\nbefore:\n%s\nafter:\n%s", beforeTree, after)
			}
		})
	}

	t.Run("a running server's data directory", func(t *testing.T) {
		blobsBefore := treeDigest(t, filepath.Join(srv.DataDir, "blobs", "sha256"))
		dbBefore, err := os.Stat(filepath.Join(srv.DataDir, "trove.db"))
		if err != nil {
			t.Fatal(err)
		}
		res := runTroveCmd(t, "restore", "--force", "--data-dir", srv.DataDir, good)
		if res.Code != 1 || !strings.Contains(res.Stderr, "trove serve is running on the data directory") {
			t.Errorf("trove restore into a running server's data directory: exit %d, want 1 naming the server\n%s", res.Code, res.Stderr)
		}
		dbAfter, err := os.Stat(filepath.Join(srv.DataDir, "trove.db"))
		if err != nil || !os.SameFile(dbBefore, dbAfter) || treeDigest(t, filepath.Join(srv.DataDir, "blobs", "sha256")) != blobsBefore {
			t.Errorf("the refused restore replaced the running server's index or blobs (%v)", err)
		}
		for _, name := range []string{".restore-tmp"} {
			if _, err := os.Stat(filepath.Join(srv.DataDir, name)); !os.IsNotExist(err) {
				t.Errorf("the refused restore left %s: %v", name, err)
			}
		}
		// The server is unaffected.
		if got := getVersions(t, srv).platforms(); len(got) != 1 {
			t.Errorf("the server lists %v after the refused restore", got)
		}
	})

	t.Run("a data directory that is not empty", func(t *testing.T) {
		beforeTree := treeDigest(t, existing)
		res := runTroveCmd(t, "restore", "--data-dir", existing, good)
		if res.Code != 1 || !strings.Contains(res.Stderr, "is not empty") || !strings.Contains(res.Stderr, "--force") {
			t.Errorf("trove restore into a data directory that is not empty: exit %d, want 1 suggesting --force\n%s", res.Code, res.Stderr)
		}
		if after := treeDigest(t, existing); after != beforeTree {
			t.Errorf("the refused restore changed the data directory")
		}
		// With --force it replaces the registry, keeping the old one aside.
		res = runTroveCmd(t, "restore", "--force", "--data-dir", existing, good)
		if res.Code != 0 || !strings.Contains(res.Stdout, ".pre-restore-") {
			t.Fatalf("trove restore --force: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
		}
		restored := startTrove(t, existing)
		restored.AdminToken = srv.AdminToken
		if got := moduleVersions(t, restored, namespace+"/"+moduleName+"/"+moduleSystem); !slices.Equal(got, []string{"1.0.0"}) {
			t.Errorf("after restore --force of the newer backup the module versions are %v, want [1.0.0]", got)
		}
	})
}
