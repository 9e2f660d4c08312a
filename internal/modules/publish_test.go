package modules

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/fsblob"
	"trove.dev/trove/internal/store/sqlite"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
	"trove.dev/trove/internal/trovetest/testarchive"
)

type publishEnv struct {
	pub     *Publisher
	tempDir string
	blobs   *fsblob.Store
	idx     *sqlite.Index
	changes []string
	mu      sync.Mutex
}

func newPublishEnv(t *testing.T) *publishEnv {
	t.Helper()
	st := sqlitetest.New(t)
	dir, idx, blobs := st.Dir, st.Index, st.Blobs
	// "café" is a valid namespace (provider rules) that no module address
	// can name.
	for _, ns := range []string{"acme", "café"} {
		if err := idx.CreateNamespace(t.Context(), registry.Namespace{Name: ns, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	e := &publishEnv{tempDir: filepath.Join(dir, "tmp"), blobs: blobs, idx: idx}
	// What the index announces to this process's caches.
	idx.OnCommit(func(c store.Change) {
		if c.Kind != store.ChangeModule {
			return
		}
		e.mu.Lock()
		e.changes = append(e.changes, c.Namespace+"/"+c.Name+"/"+c.System)
		e.mu.Unlock()
	})
	e.pub = NewPublisher(Options{Index: idx, Blobs: blobs, TempDir: e.tempDir, MaxArchiveBytes: 1 << 20})
	return e
}

func packed(t *testing.T, files map[string]string) []byte {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, files)
	return pack(t, dir)
}

func TestPublish(t *testing.T) {
	e := newPublishEnv(t)
	ctx := t.Context()
	archive := packed(t, realisticModule)
	res, err := e.pub.Publish(ctx, Upload{Namespace: "Acme", Name: "Network", System: "aws", Version: "1.2.0", Origin: "git tag v1.2.0, commit abc", Archive: bytes.NewReader(archive)})
	if err != nil {
		t.Fatalf("Publish: %v", err)
	}
	v := res.Version
	if !res.Created || v.Namespace != "acme" || v.Name != "network" || v.ArchiveFormat != FormatTarGz || v.ArchiveSize != int64(len(archive)) {
		t.Errorf("result = %+v", res)
	}
	if v.Description != "Creates a VPC with public and private subnets." || v.Origin != "git tag v1.2.0, commit abc" {
		t.Errorf("description %q origin %q", v.Description, v.Origin)
	}
	if len(res.Warnings) == 0 {
		t.Error("no warnings for the broken example")
	}
	stored, err := e.idx.GetModuleVersion(ctx, "acme", "network", "aws", "1.2.0")
	if err != nil {
		t.Fatal(err)
	}
	var md Metadata
	if err := json.Unmarshal(stored.Metadata, &md); err != nil || len(md.Root.Inputs) != 4 {
		t.Errorf("stored metadata %s (%v), want 4 root inputs", stored.Metadata, err)
	}
	if size, err := e.blobs.Stat(ctx, v.ArchiveDigest); err != nil || size != v.ArchiveSize {
		t.Errorf("blob %s: size %d, %v", v.ArchiveDigest, size, err)
	}
	if got := strings.Join(e.changes, ","); got != "acme/network/aws" {
		t.Errorf("module changes announced = %q", got)
	}

	// The same bytes again: success without change.
	res, err = e.pub.Publish(ctx, Upload{Namespace: "acme", Name: "network", System: "aws", Version: "1.2.0", Archive: bytes.NewReader(archive)})
	if err != nil || res.Created || res.Version.Origin != "git tag v1.2.0, commit abc" {
		t.Errorf("re-publish of the same bytes: %+v, %v; want Created false and the first version", res, err)
	}
	// Other bytes: conflict.
	other := packed(t, map[string]string{"main.tf": mainTF})
	_, err = e.pub.Publish(ctx, Upload{Namespace: "acme", Name: "network", System: "aws", Version: "1.2.0", Archive: bytes.NewReader(other)})
	if !registry.IsKind(err, registry.Conflict) || !strings.Contains(err.Error(), "immutable") {
		t.Errorf("re-publish with other bytes: %v, want a Conflict", err)
	}
	// Equal but for build metadata: the clients could not tell them apart.
	_, err = e.pub.Publish(ctx, Upload{Namespace: "acme", Name: "network", System: "aws", Version: "1.2.0+other", Archive: bytes.NewReader(other)})
	if !registry.IsKind(err, registry.Conflict) || !strings.Contains(err.Error(), "same precedence as the published version 1.2.0") {
		t.Errorf("publish of 1.2.0+other: %v, want a precedence Conflict", err)
	}
	if _, err := e.blobs.Stat(ctx, fmt.Sprintf("%x", sha256.Sum256(other))); err == nil {
		t.Errorf("the refused archive was stored")
	}
	if left, _ := os.ReadDir(e.tempDir); len(left) != 0 {
		t.Errorf("staging directory keeps %d entries after the publishes", len(left))
	}
}

func TestPublishRefuses(t *testing.T) {
	e := newPublishEnv(t)
	good := packed(t, map[string]string{"main.tf": mainTF})
	tests := map[string]struct {
		up   Upload
		kind registry.Kind
	}{
		"v-prefixed version":              {Upload{Namespace: "acme", Name: "net", System: "aws", Version: "v1.0.0", Archive: bytes.NewReader(good)}, registry.Invalid},
		"partial version":                 {Upload{Namespace: "acme", Name: "net", System: "aws", Version: "1.0", Archive: bytes.NewReader(good)}, registry.Invalid},
		"upper-case system":               {Upload{Namespace: "acme", Name: "net", System: "AWS", Version: "1.0.0", Archive: bytes.NewReader(good)}, registry.Invalid},
		"bad name":                        {Upload{Namespace: "acme", Name: "-net", System: "aws", Version: "1.0.0", Archive: bytes.NewReader(good)}, registry.Invalid},
		"non-ASCII namespace":             {Upload{Namespace: "café", Name: "net", System: "aws", Version: "1.0.0", Archive: bytes.NewReader(good)}, registry.Invalid},
		"non-ASCII namespace, upper case": {Upload{Namespace: "CAFÉ", Name: "net", System: "aws", Version: "1.0.0", Archive: bytes.NewReader(good)}, registry.Invalid},
		"missing namespace":               {Upload{Namespace: "nope", Name: "net", System: "aws", Version: "1.0.0", Archive: bytes.NewReader(good)}, registry.NotFound},
		"origin with break":               {Upload{Namespace: "acme", Name: "net", System: "aws", Version: "1.0.0", Origin: "a\nb", Archive: bytes.NewReader(good)}, registry.Invalid},
		"empty archive":                   {Upload{Namespace: "acme", Name: "net", System: "aws", Version: "1.0.0", Archive: bytes.NewReader(nil)}, registry.Invalid},
		"too large":                       {Upload{Namespace: "acme", Name: "net", System: "aws", Version: "1.0.0", Archive: bytes.NewReader(make([]byte, 1<<20+1))}, registry.TooLarge},
		"no tf at root":                   {Upload{Namespace: "acme", Name: "net", System: "aws", Version: "1.0.0", Archive: bytes.NewReader(testarchive.TarGzOf(t, tent{Name: "x/main.tf", Body: mainTF}))}, registry.Invalid},
		"traversal":                       {Upload{Namespace: "acme", Name: "net", System: "aws", Version: "1.0.0", Archive: bytes.NewReader(testarchive.TarGzOf(t, tent{Name: "main.tf", Body: mainTF}, tent{Name: "../../x", Body: "x"}))}, registry.Invalid},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := e.pub.Publish(t.Context(), tt.up)
			if !registry.IsKind(err, tt.kind) {
				t.Fatalf("Publish error = %v (kind %v), want kind %v", err, registry.KindOf(err), tt.kind)
			}
			if strings.HasPrefix(name, "non-ASCII") && !strings.Contains(err.Error(), "Terraform and OpenTofu") {
				t.Errorf("Publish error = %v, want it to say the clients refuse the address", err)
			}
		})
	}
	if _, total, _ := e.idx.ListModules(t.Context(), registry.ModuleFilter{}); total != 0 {
		t.Errorf("%d modules stored after refused publishes", total)
	}
	if left, _ := os.ReadDir(e.tempDir); len(left) != 0 {
		t.Errorf("staging directory keeps %d entries", len(left))
	}
	// Only the blob of nothing: refused archives are never stored.
	n := 0
	e.blobs.Walk(t.Context(), func(string, int64) error { n++; return nil })
	if n != 0 {
		t.Errorf("%d blobs stored by refused publishes", n)
	}
}

func TestPublishConcurrentSameVersion(t *testing.T) {
	e := newPublishEnv(t)
	archives := [][]byte{packed(t, map[string]string{"main.tf": mainTF}), packed(t, map[string]string{"main.tf": mainTF + "# other\n"})}
	const n = 6
	errs := make([]error, n)
	created := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := e.pub.Publish(t.Context(), Upload{Namespace: "acme", Name: "net", System: "aws", Version: "1.0.0", Archive: bytes.NewReader(archives[i%2])})
			errs[i], created[i] = err, res.Created
		})
	}
	wg.Wait()
	winners := 0
	for i := range n {
		if created[i] {
			winners++
		}
		if errs[i] != nil && !registry.IsKind(errs[i], registry.Conflict) {
			t.Errorf("publish %d: %v", i, errs[i])
		}
	}
	if winners != 1 {
		t.Errorf("%d concurrent publishes created the version, want exactly 1", winners)
	}
}

// publishedMeanwhile is an index on which another publish commits right
// after the first lookup of a version (by running commit once), as a
// concurrent publish of that version may.
type publishedMeanwhile struct {
	*sqlite.Index
	once   sync.Once
	commit func()
}

func (x *publishedMeanwhile) GetModuleVersion(ctx context.Context, namespace, name, system, version string) (registry.ModuleVersion, error) {
	v, err := x.Index.GetModuleVersion(ctx, namespace, name, system, version)
	x.once.Do(x.commit)
	return v, err
}

// TestPublishedMeanwhile publishes an archive while another publish of
// the same version commits between the publisher's first lookup of the
// version and its precedence check: the same archive is an idempotent
// retry (Created false), another one a Conflict.
func TestPublishedMeanwhile(t *testing.T) {
	for _, c := range []struct {
		name     string
		winner   string
		conflict bool
	}{
		{"Identical", mainTF, false},
		{"Different", mainTF + "# other\n", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newPublishEnv(t)
			archive := packed(t, map[string]string{"main.tf": mainTF})
			winner := packed(t, map[string]string{"main.tf": c.winner})
			up := Upload{Namespace: "acme", Name: "net", System: "aws", Version: "1.0.0"}
			x := &publishedMeanwhile{Index: e.idx, commit: func() {
				up := up
				up.Archive = bytes.NewReader(winner)
				if res, err := e.pub.Publish(t.Context(), up); err != nil || !res.Created {
					t.Errorf("the concurrent publish = %+v, %v", res, err)
				}
			}}
			pub := NewPublisher(Options{Index: x, Blobs: e.blobs, TempDir: e.tempDir})
			up.Archive = bytes.NewReader(archive)
			res, err := pub.Publish(t.Context(), up)
			switch {
			case c.conflict && !registry.IsKind(err, registry.Conflict):
				t.Fatalf("publish of another archive = %+v, %v; want a Conflict", res, err)
			case !c.conflict && (err != nil || res.Created || res.Version.ArchiveDigest != fmt.Sprintf("%x", sha256.Sum256(archive))):
				t.Fatalf("publish of the same archive = %+v, %v; want the stored version, not created", res, err)
			}
		})
	}
}
