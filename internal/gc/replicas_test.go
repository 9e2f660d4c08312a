package gc_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"trove.dev/trove/internal/gc"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/postgres"
	"trove.dev/trove/internal/store/postgres/pgtest"
	"trove.dev/trove/internal/store/s3blob"
	"trove.dev/trove/internal/store/s3blob/s3test"
)

// replica is what one Trove replica holds of the shared backends: its own
// connection pool to PostgreSQL and its own S3 client.
type replica struct {
	idx   *postgres.Index
	blobs *s3blob.Store
}

func openReplica(t *testing.T, dsn string, bucket s3blob.Options) replica {
	t.Helper()
	idx, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	blobs, err := s3blob.Open(t.Context(), bucket)
	if err != nil {
		t.Fatal(err)
	}
	idx.GuardBlobs(store.BlobsPresent(blobs))
	return replica{idx: idx, blobs: blobs}
}

// moduleArchives packs n distinct module archives.
func moduleArchives(t *testing.T, n int) [][]byte {
	t.Helper()
	var out [][]byte
	for i := range n {
		out = append(out, moduleArchive(t, i))
	}
	return out
}

// moduleArchive packs module archive number i.
func moduleArchive(t *testing.T, i int) []byte {
	t.Helper()
	dir := t.TempDir()
	tf := fmt.Sprintf("variable \"cidr\" {\n  default = \"10.%d.0.0/16\"\n}\n", i)
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(tf), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := modules.PackArchive(&buf, dir); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// publishProvider publishes a provider version as the publish package
// does: the blobs first, then one index transaction. Its package and
// signature reuse the bytes of earlier versions (k picks them), so that a
// publish often names a blob a deleted version left for the collector.
func publishProvider(t *testing.T, r replica, version string, k int) error {
	ctx := t.Context()
	zip := []byte(fmt.Sprintf("zip of build %d", k%4))
	sig := []byte(fmt.Sprintf("signature %d", k%3))
	sums := []byte(fmt.Sprintf("%s  terraform-provider-cloud_%s_linux_amd64.zip\n", digest(zip), version))
	for _, b := range [][]byte{zip, sig, sums} {
		if err := r.blobs.Put(ctx, digest(b), int64(len(b)), bytes.NewReader(b)); err != nil {
			return err
		}
	}
	return r.idx.CreateProviderVersion(ctx, registry.ProviderVersion{
		Namespace: "acme", Type: "cloud", Version: version, Protocols: []string{"5.0"},
		SHASumsDigest: digest(sums), SHASumsSignatureDigest: digest(sig),
		SigningKey:  registry.SigningKey{Namespace: "acme", KeyID: "0123456789ABCDEF", CreatedAt: time.Now()},
		PublishedAt: time.Now(),
		Platforms: []registry.Platform{{OS: "linux", Arch: "amd64", Filename: "terraform-provider-cloud_" + version + "_linux_amd64.zip",
			SHA256: digest(zip), Size: int64(len(zip))}},
	})
}

// providerBlobs and moduleBlobs are the blobs a listed version names.
func providerBlobs(v registry.ProviderVersion) []string {
	out := []string{v.SHASumsDigest, v.SHASumsSignatureDigest}
	for _, p := range v.Platforms {
		out = append(out, p.SHA256)
	}
	return out
}

// TestTwoReplicasPublishWhileCollecting runs two replicas on one
// PostgreSQL index and one S3 bucket: replica A publishes provider and
// module versions in a loop (reusing the bytes of earlier versions, which
// B may be deleting), while replica B deletes versions and runs the
// garbage collector over and over with a grace period of seconds. After
// both stop, every blob of every listed version is present with its
// content, and a final collection leaves only referenced blobs.
func TestTwoReplicasPublishWhileCollecting(t *testing.T) {
	dsn := pgtest.NewSchema(t)
	bucket := s3test.NewBucket(t)
	a, b := openReplica(t, dsn, bucket), openReplica(t, dsn, bucket)
	ctx := t.Context()
	if err := a.idx.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	pub := modules.NewPublisher(modules.Options{Index: a.idx, Blobs: a.blobs, TempDir: t.TempDir()})
	archives := moduleArchives(t, 3)
	// The grace period must exceed a publish (its blobs' Put to its
	// commit), which takes milliseconds here.
	const grace = 2 * time.Second
	collector, err := gc.New(gc.Options{Index: b.idx, Blobs: b.blobs, AllowShortGrace: true})
	if err != nil {
		t.Fatal(err)
	}

	// A publishes at least minVersions versions of each kind, and goes on
	// until B's collections have reclaimed blobs while it published (so
	// that the test covers collections racing publishes), at most
	// maxVersions.
	const minVersions, maxVersions = 60, 2000
	done := make(chan struct{})
	var wg sync.WaitGroup
	var publishErr, collectErr error
	var runs, deleted int
	var reclaimed atomic.Int64
	versions := 0
	wg.Add(2)
	go func() { // replica A
		defer wg.Done()
		defer close(done)
		for i := 0; i < maxVersions && (i < minVersions || reclaimed.Load() == 0); i++ {
			versions++
			v := fmt.Sprintf("1.%d.0", i)
			if publishErr = publishProvider(t, a, v, i); publishErr != nil {
				return
			}
			if _, publishErr = pub.Publish(ctx, modules.Upload{Namespace: "acme", Name: "net", System: "aws", Version: v,
				Archive: bytes.NewReader(archives[i%len(archives)])}); publishErr != nil {
				return
			}
		}
	}()
	go func() { // replica B
		defer wg.Done()
		rng := rand.New(rand.NewPCG(1, 2))
		for {
			select {
			case <-done:
				return
			default:
			}
			if pvs, err := b.idx.ListProviderVersions(ctx, "acme", "cloud"); err == nil && len(pvs) > 1 {
				if err := b.idx.DeleteProviderVersion(ctx, "acme", "cloud", pvs[rng.IntN(len(pvs))].Version); err == nil {
					deleted++
				}
			}
			if mvs, err := b.idx.ListModuleVersions(ctx, "acme", "net", "aws"); err == nil && len(mvs) > 1 {
				if err := b.idx.DeleteModuleVersion(ctx, "acme", "net", "aws", mvs[rng.IntN(len(mvs))].Version); err == nil {
					deleted++
				}
			}
			rep, err := collector.Run(ctx, gc.Run{Grace: grace})
			if err != nil {
				collectErr = err
				return
			}
			runs++
			reclaimed.Add(int64(len(rep.Reclaimed)))
		}
	}()
	wg.Wait()
	if publishErr != nil || collectErr != nil {
		t.Fatalf("publishing: %v; collecting: %v", publishErr, collectErr)
	}
	t.Logf("%d versions published, %d deleted, %d collections reclaimed %d blobs meanwhile", 2*versions, deleted, runs, reclaimed.Load())
	if reclaimed.Load() == 0 {
		t.Fatalf("no collection reclaimed anything in %d publishes: the test did not race them", versions)
	}

	// Every listed version's every blob is there, with its content.
	check := func(what string, digests []string) {
		t.Helper()
		for _, d := range digests {
			blob, err := a.blobs.Open(ctx, d)
			if err != nil {
				t.Errorf("%s: blob %s: %v", what, d, err)
				continue
			}
			h := sha256.New()
			_, err = io.Copy(h, blob.Content)
			blob.Close()
			if err != nil || hex.EncodeToString(h.Sum(nil)) != d {
				t.Errorf("%s: blob %s does not read back (%v)", what, d, err)
			}
		}
	}
	pvs, err := a.idx.ListProviderVersions(ctx, "acme", "cloud")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range pvs {
		check("provider "+v.Version, providerBlobs(v))
	}
	mvs, err := a.idx.ListModuleVersions(ctx, "acme", "net", "aws")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range mvs {
		check("module "+v.Version, []string{v.ArchiveDigest})
	}
	if len(pvs)+len(mvs)+deleted != 2*versions {
		t.Errorf("%d provider and %d module versions listed and %d deleted, want %d in all", len(pvs), len(mvs), deleted, 2*versions)
	}

	// A final collection, once every blob is past the grace period,
	// leaves exactly the referenced blobs.
	final, err := gc.New(gc.Options{Index: b.idx, Blobs: b.blobs, Now: func() time.Time { return time.Now().Add(time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := final.Run(ctx, gc.Run{}); err != nil {
		t.Fatal(err)
	}
	referenced := map[string]bool{}
	if err := a.idx.ReferencedBlobs(ctx, func(d string) error { referenced[d] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	stored := 0
	if err := a.blobs.Walk(ctx, func(d string, _ int64) error {
		stored++
		if !referenced[d] {
			t.Errorf("blob %s survived the final collection although no version names it", d)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if stored != len(referenced) {
		t.Errorf("%d blobs stored after the final collection, %d referenced", stored, len(referenced))
	}
	var _ store.Blobs = a.blobs
}
