package gc_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"trove.dev/trove/internal/gc"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/fsblob"
	"trove.dev/trove/internal/store/postgres"
	"trove.dev/trove/internal/store/postgres/pgtest"
	"trove.dev/trove/internal/store/s3blob"
	"trove.dev/trove/internal/store/s3blob/s3test"
	"trove.dev/trove/internal/store/sqlite"
)

// backupBackend is a pair of backends and their backup tools, as
// docs/backup.md uses them.
type backupBackend struct {
	// open returns the live registry's index and blob store.
	open func(t *testing.T) side
	// snapshot takes a consistent snapshot of the live index now, and
	// returns what opens the index restored from it.
	snapshot func(t *testing.T) (restore func(t *testing.T) store.Index)
	// newBlobs returns an empty blob store: the copy of the live one.
	newBlobs func(t *testing.T) store.Blobs
}

func backupBackends() map[string]func(t *testing.T) backupBackend {
	return map[string]func(t *testing.T) backupBackend{
		// sqlite.Snapshot (what trove backup takes) and a copy of the
		// blob directory.
		"sqlite+fs": func(t *testing.T) backupBackend {
			dir := t.TempDir()
			path := filepath.Join(dir, "trove.db")
			newFS := func(t *testing.T) store.Blobs {
				b, err := fsblob.Open(filepath.Join(t.TempDir(), "blobs"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { b.Close() })
				return b
			}
			return backupBackend{
				open: func(t *testing.T) side {
					idx, err := sqlite.Open(t.Context(), path)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { idx.Close() })
					blobs := newFS(t)
					idx.GuardBlobs(store.BlobsPresent(blobs))
					return side{idx, blobs}
				},
				snapshot: func(t *testing.T) func(t *testing.T) store.Index {
					snap := filepath.Join(t.TempDir(), "snapshot.db")
					if err := sqlite.Snapshot(t.Context(), path, snap); err != nil {
						t.Fatal(err)
					}
					return func(t *testing.T) store.Index {
						idx, err := sqlite.Open(t.Context(), snap)
						if err != nil {
							t.Fatal(err)
						}
						t.Cleanup(func() { idx.Close() })
						return idx
					}
				},
				newBlobs: newFS,
			}
		},
		// pg_dump and pg_restore, and a copy of the bucket.
		"postgres+s3": func(t *testing.T) backupBackend {
			dsn := pgtest.NewDatabase(t)
			pgDump, pgRestore := postgresTool(t, "pg_dump"), postgresTool(t, "pg_restore")
			newBucket := func(t *testing.T) store.Blobs {
				b, err := s3blob.Open(t.Context(), s3test.NewBucket(t))
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			return backupBackend{
				open: func(t *testing.T) side {
					r := openReplica(t, dsn, s3test.NewBucket(t))
					return side{r.idx, r.blobs}
				},
				snapshot: func(t *testing.T) func(t *testing.T) store.Index {
					dump := filepath.Join(t.TempDir(), "trove.dump")
					runTool(t, pgDump, "--format=custom", "--file="+dump, "--dbname="+dsn)
					return func(t *testing.T) store.Index {
						restored := pgtest.NewDatabase(t)
						runTool(t, pgRestore, "--no-owner", "--no-privileges", "--exit-on-error", "--dbname="+restored, dump)
						idx, err := postgres.Open(t.Context(), restored)
						if err != nil {
							t.Fatal(err)
						}
						t.Cleanup(func() { idx.Close() })
						return idx
					}
				},
				newBlobs: newBucket,
			}
		},
	}
}

// postgresTool returns the path of a PostgreSQL client program of the
// test server's version: beside TROVE_TEST_PG_CTL, else on the PATH.
func postgresTool(t *testing.T, name string) string {
	t.Helper()
	if ctl := os.Getenv(pgtest.EnvPgCtl); ctl != "" {
		p := filepath.Join(filepath.Dir(ctl), name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not available (%v): the backup test runs the PostgreSQL client programs; source scripts/testenv/postgres.sh", name, err)
	}
	return p
}

// runTool runs a program that must succeed.
func runTool(t *testing.T, bin string, args ...string) {
	t.Helper()
	if out, err := exec.CommandContext(t.Context(), bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", filepath.Base(bin), err, out)
	}
}

// putBytes stores b and returns its digest.
func putBytes(t *testing.T, blobs store.Blobs, b []byte) string {
	t.Helper()
	d := digest(b)
	if err := blobs.Put(t.Context(), d, int64(len(b)), bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
	return d
}

// publishBoth publishes provider acme/cloud and module acme/net/aws
// version v as the publish packages do: blobs first, then the index.
// Every blob is the version's own.
func publishBoth(t *testing.T, s side, v string, now time.Time) {
	t.Helper()
	ctx := t.Context()
	zip := putBytes(t, s.blobs, []byte("zip of cloud "+v))
	pv := registry.ProviderVersion{
		Namespace: "acme", Type: "cloud", Version: v, Protocols: []string{"5.0"},
		SHASumsDigest:          putBytes(t, s.blobs, []byte(zip+"  terraform-provider-cloud_"+v+"_linux_amd64.zip\n")),
		SHASumsSignatureDigest: putBytes(t, s.blobs, []byte("signature of cloud "+v)),
		DocsDigest:             putBytes(t, s.blobs, []byte("docs of cloud "+v)), DocsSize: int64(len("docs of cloud " + v)),
		SigningKey:  registry.SigningKey{Namespace: "acme", KeyID: "0123456789ABCDEF", CreatedAt: now},
		PublishedAt: now,
		Platforms: []registry.Platform{{OS: "linux", Arch: "amd64", Filename: "terraform-provider-cloud_" + v + "_linux_amd64.zip",
			SHA256: zip, Size: int64(len("zip of cloud " + v))}},
	}
	if err := s.idx.CreateProviderVersion(ctx, pv); err != nil {
		t.Fatal(err)
	}
	archive := []byte("module archive of net/aws " + v)
	if err := s.idx.CreateModuleVersion(ctx, registry.ModuleVersion{Namespace: "acme", Name: "net", System: "aws", Version: v,
		ArchiveDigest: putBytes(t, s.blobs, archive), ArchiveFormat: "tar.gz", ArchiveSize: int64(len(archive)), PublishedAt: now}); err != nil {
		t.Fatal(err)
	}
}

// copyBlobs copies every blob of from into to, as a copy of the bucket
// (or the blob directory) does.
func copyBlobs(t *testing.T, from, to store.Blobs) {
	t.Helper()
	ctx := t.Context()
	err := from.Walk(ctx, func(d string, size int64) error {
		b, err := from.Open(ctx, d)
		if err != nil {
			return err
		}
		defer b.Close()
		return to.Put(ctx, d, size, b.Content)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// restorable lists every provider and module version of namespace acme
// that idx holds ("provider 1.0.0", "module 1.0.0"), and the blobs of
// theirs that blobs lacks or holds with other content: what a download of
// the version would fail on.
func restorable(t *testing.T, idx store.Index, blobs store.Blobs) (versions, broken []string) {
	t.Helper()
	ctx := t.Context()
	check := func(version string, digests ...string) {
		versions = append(versions, version)
		for _, d := range digests {
			b, err := blobs.Open(ctx, d)
			if registry.IsKind(err, registry.NotFound) {
				broken = append(broken, version+": "+d+" missing")
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.New()
			_, err = io.Copy(h, b.Content)
			b.Close()
			if err != nil {
				t.Fatal(err)
			}
			if got := hex.EncodeToString(h.Sum(nil)); got != d {
				broken = append(broken, fmt.Sprintf("%s: %s holds %s", version, d, got))
			}
		}
	}
	pvs, err := idx.ListProviderVersions(ctx, "acme", "cloud")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range pvs {
		check("provider "+v.Version, append(providerBlobs(v), v.DocsDigest)...)
	}
	mvs, err := idx.ListModuleVersions(ctx, "acme", "net", "aws")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range mvs {
		check("module "+v.Version, v.ArchiveDigest)
	}
	slices.Sort(versions)
	return versions, broken
}

// TestBackupWithinGracePeriod is the procedure of docs/backup.md run
// against the garbage collector: a snapshot of the index, then versions
// deleted and a collection (blobs whose last write is long past the grace
// period), then a copy of the blob store, within the grace period of the
// snapshot. The snapshot restored with the copy must serve every version
// it lists with every blob intact. A collection once the grace period has
// passed since the delete then removes blobs the snapshot names: the
// copy must be made within it.
func TestBackupWithinGracePeriod(t *testing.T) {
	for name, backend := range backupBackends() {
		t.Run(name, func(t *testing.T) {
			b := backend(t)
			live := b.open(t)
			ctx := t.Context()
			// The blobs below are written now; the clock of the index and
			// the collector starts past their grace period.
			clk := newClock(time.Now().Add(2 * gc.DefaultGrace))
			shareClock(t, live.idx, clk)
			if err := live.idx.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: clk.Now()}); err != nil {
				t.Fatal(err)
			}
			for _, v := range []string{"1.0.0", "1.1.0"} {
				publishBoth(t, live, v, clk.Now())
			}
			orphan := putBytes(t, live.blobs, []byte("left by a failed publish"))
			collector, err := gc.New(gc.Options{Index: live.idx, Blobs: live.blobs, Now: clk.Now})
			if err != nil {
				t.Fatal(err)
			}

			// 1. The snapshot of the index.
			restore := b.snapshot(t)
			// 2. Deletes and a collection, within the grace period.
			clk.Add(time.Minute)
			if err := live.idx.DeleteProviderVersion(ctx, "acme", "cloud", "1.0.0"); err != nil {
				t.Fatal(err)
			}
			if err := live.idx.DeleteModuleVersion(ctx, "acme", "net", "aws", "1.0.0"); err != nil {
				t.Fatal(err)
			}
			clk.Add(gc.DefaultGrace - 2*time.Minute)
			rep, err := collector.Run(ctx, gc.Run{})
			if err != nil {
				t.Fatal(err)
			}
			if r := reclaimedSet(rep); len(r) != 1 || !r[orphan] || rep.Young != 5 {
				t.Errorf("collection within the grace period of the deletes reclaimed %v (%d young); want only the orphan, the deleted versions' 5 blobs young", r, rep.Young)
			}
			// 3. The copy of the blob store.
			copied := b.newBlobs(t)
			copyBlobs(t, live.blobs, copied)

			// The restore: the snapshot's versions, each whole.
			restored := restore(t)
			versions, broken := restorable(t, restored, copied)
			if want := []string{"module 1.0.0", "module 1.1.0", "provider 1.0.0", "provider 1.1.0"}; !slices.Equal(versions, want) {
				t.Errorf("the restored index lists %v, want the snapshot's %v", versions, want)
			}
			if len(broken) > 0 {
				t.Errorf("versions the restored index lists cannot be downloaded from the copy: %v", broken)
			}

			// Past the grace period of the deletes, their blobs go: a copy
			// made now would miss blobs the snapshot names.
			clk.Add(2 * time.Minute)
			if rep, err = collector.Run(ctx, gc.Run{}); err != nil || len(rep.Reclaimed) != 5 {
				t.Fatalf("collection past the grace period of the deletes = %+v, %v; want the deleted versions' 5 blobs reclaimed", rep, err)
			}
			if _, broken := restorable(t, restored, live.blobs); len(broken) != 5 {
				t.Errorf("after that collection the live store lacks %v of the snapshot's blobs, want the deleted versions' 5", broken)
			}
			if _, broken := restorable(t, live.idx, live.blobs); len(broken) > 0 {
				t.Errorf("the live registry lost blobs of versions it lists: %v", broken)
			}
		})
	}
}
