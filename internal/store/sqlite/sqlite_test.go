package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/sqlstore"
	"trove.dev/trove/internal/store/storetest"
)

func open(t testing.TB, path string) *Index {
	t.Helper()
	x, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

func TestConformance(t *testing.T) {
	storetest.TestIndex(t, func(t *testing.T) store.Index {
		return open(t, filepath.Join(t.TempDir(), "index.db"))
	})
}

func TestOpenTwiceKeepsDataAndSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "dir", "index.db")
	ctx := t.Context()
	first := open(t, path)
	if err := first.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	// A second Index on the same file, while the first is open, then a
	// third after both are closed: migrations apply once.
	second := open(t, path)
	if _, err := second.GetNamespace(ctx, "acme"); err != nil {
		t.Errorf("second Open: GetNamespace: %v", err)
	}
	first.Close()
	second.Close()
	third := open(t, path)
	if _, err := third.GetNamespace(ctx, "acme"); err != nil {
		t.Errorf("third Open: GetNamespace: %v", err)
	}
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	var rows, maxVersion int
	if err := third.r.QueryRowContext(ctx, `SELECT count(*), max(version) FROM schema_migrations`).Scan(&rows, &maxVersion); err != nil {
		t.Fatal(err)
	}
	if rows != len(ms) || maxVersion != sqlstore.Newest(ms) {
		t.Errorf("schema_migrations has %d rows up to version %d, want %d up to %d", rows, maxVersion, len(ms), sqlstore.Newest(ms))
	}
	var mode string
	if err := third.r.QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Errorf("index file mode = %v, want 0600 (it holds secrets)", perm)
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	x := open(t, path)
	if _, err := x.w.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'future', 0)`); err != nil {
		t.Fatal(err)
	}
	x.Close()
	_, err := Open(t.Context(), path)
	if err == nil || !strings.Contains(err.Error(), "newer Trove") {
		t.Errorf("Open of a database from a newer Trove = %v, want a refusal naming the cause", err)
	}
}

func TestOpenRejects(t *testing.T) {
	notADB := filepath.Join(t.TempDir(), "garbage.db")
	if err := os.WriteFile(notADB, []byte(strings.Repeat("this is not a database ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{
		"empty": "", "memory": ":memory:", "URI": "file:index.db?mode=memory", "not a database": notADB,
	} {
		t.Run(name, func(t *testing.T) {
			x, err := Open(t.Context(), path)
			if err == nil {
				x.Close()
				t.Fatalf("Open(%q) succeeded", path)
			}
		})
	}
}

func TestPathWithURISpecialCharacters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a?b#c%20d")
	path := filepath.Join(dir, "index.db")
	x := open(t, path)
	if err := x.CreateNamespace(t.Context(), registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the database is not at the given path: %v", err)
	}
}

func TestClosed(t *testing.T) {
	x := open(t, filepath.Join(t.TempDir(), "index.db"))
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
	if err := x.Ping(t.Context()); !registry.IsKind(err, registry.Unavailable) {
		t.Errorf("Ping after Close = %v, want kind unavailable", err)
	}
	_, err := x.GetNamespace(t.Context(), "acme")
	if !registry.IsKind(err, registry.Unavailable) {
		t.Errorf("GetNamespace after Close = %v, want kind unavailable", err)
	}
}

func TestCanceledContextIsUnavailable(t *testing.T) {
	x := open(t, filepath.Join(t.TempDir(), "index.db"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := x.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: time.Now()})
	if !registry.IsKind(err, registry.Unavailable) {
		t.Errorf("CreateNamespace with a canceled context = %v, want kind unavailable", err)
	}
}

func TestInvalidInput(t *testing.T) {
	x := open(t, filepath.Join(t.TempDir(), "index.db"))
	ctx := t.Context()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := x.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	good := testVersion("acme", "cloud", "1.0.0", 2, now)
	tests := map[string]func() error{
		"version not semver": func() error {
			v := good
			v.Version = "v1"
			return x.CreateProviderVersion(ctx, v)
		},
		"platform twice": func() error {
			v := good
			v.Platforms = append(v.Platforms, v.Platforms[0])
			return x.CreateProviderVersion(ctx, v)
		},
		"publication year 10000": func() error {
			v := good
			v.PublishedAt = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
			return x.CreateProviderVersion(ctx, v)
		},
		"namespace created in year 0": func() error {
			return x.CreateNamespace(ctx, registry.Namespace{Name: "old", CreatedAt: time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)})
		},
		"revocation without time": func() error {
			return x.RevokeToken(ctx, "tok1", time.Time{})
		},
	}
	for name, call := range tests {
		t.Run(name, func(t *testing.T) {
			if err := call(); !registry.IsKind(err, registry.Invalid) {
				t.Errorf("error = %v, want kind invalid", err)
			}
		})
	}
	if _, err := x.GetProviderVersion(ctx, "acme", "cloud", "1.0.0"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("a refused version was stored: GetProviderVersion = %v", err)
	}
}

// TestSigningKeyStoredOnce checks that versions signed by one key share
// its snapshot row, and that deleting the namespace removes snapshots.
func TestSigningKeyStoredOnce(t *testing.T) {
	x := open(t, filepath.Join(t.TempDir(), "index.db"))
	ctx := t.Context()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, ns := range []string{"acme", "other"} {
		if err := x.CreateNamespace(ctx, registry.Namespace{Name: ns, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	seed(t, x, "acme", "cloud", 50, 2, 3, now)
	seed(t, x, "other", "cloud", 5, 2, 1, now)
	count := func(where string) int {
		var n int
		if err := x.r.QueryRowContext(ctx, `SELECT count(*) FROM signing_key_snapshots WHERE `+where).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count("namespace = 'acme'"); n != 3 {
		t.Errorf("50 versions signed by 3 keys made %d snapshots, want 3", n)
	}
	// Remove other's version so that the namespace can be deleted.
	if _, err := x.w.ExecContext(ctx, `DELETE FROM provider_versions WHERE namespace = 'other'`); err != nil {
		t.Fatal(err)
	}
	if _, err := x.w.ExecContext(ctx, `DELETE FROM providers WHERE namespace = 'other'`); err != nil {
		t.Fatal(err)
	}
	if err := x.DeleteNamespace(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	if n := count("namespace = 'other'"); n != 0 {
		t.Errorf("%d snapshots of the deleted namespace remain", n)
	}
}

// TestManyVersions holds 100,000 versions across 50 providers and reads
// them back through every read path. The rows are inserted by one SQL
// statement per table, the last version through CreateProviderVersion.
func TestManyVersions(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("stores 100,000 versions: too slow under -short and -race")
	}
	x := open(t, filepath.Join(t.TempDir(), "index.db"))
	ctx := t.Context()
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := x.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	const providers, perProvider = 50, 2000
	// The first version makes the key snapshot the others share.
	if err := x.CreateProviderVersion(ctx, testVersion("acme", "p00", "0.0.0", 1, now)); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`WITH RECURSIVE n(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM n WHERE k < 49)
		INSERT INTO providers (namespace, type, version_count, latest_version, updated_at)
		SELECT 'acme', printf('p%02d', k), CASE k WHEN 49 THEN 1999 ELSE 2000 END,
			CASE k WHEN 49 THEN '1998.0.0' ELSE '1999.0.0' END, ? + min(k * 2000 + 1999, 99998)
		FROM n`,
		`UPDATE providers SET version_count = 2000, latest_version = '1999.0.0', updated_at = ? + 1999 WHERE type = 'p00'`,
		`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 99998)
		INSERT INTO provider_versions (namespace, type, version, protocols, shasums_digest, shasums_signature_digest, signing_key_snapshot, published_at)
		SELECT 'acme', printf('p%02d', i / 2000), (i % 2000) || '.0.0', '["5.0"]', 'a', 'b', (SELECT min(id) FROM signing_key_snapshots), ? + i
		FROM n`,
		`INSERT INTO provider_platforms (version_id, os, arch, filename, sha256, size)
		SELECT id, os, 'amd64', 'f.zip', 'c', ? FROM provider_versions, (SELECT 'linux' AS os UNION ALL SELECT 'darwin')
		WHERE id > 1`,
	} {
		if _, err := x.w.ExecContext(ctx, q, now.UnixMicro()); err != nil {
			t.Fatal(err)
		}
	}
	last := testVersion("acme", "p49", "2000.0.0", 1, now.Add(time.Hour))
	if err := x.CreateProviderVersion(ctx, last); err != nil {
		t.Fatal(err)
	}
	var total int
	if err := x.r.QueryRowContext(ctx, `SELECT count(*) FROM provider_versions`).Scan(&total); err != nil || total != providers*perProvider {
		t.Fatalf("the index holds %d versions (%v), want %d", total, err, providers*perProvider)
	}

	ps, err := x.ListProviders(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != providers {
		t.Fatalf("ListProviders returned %d providers, want %d", len(ps), providers)
	}
	if p := ps[providers-1]; p.Type != "p49" || p.VersionCount != perProvider || p.LatestVersion != "2000.0.0" || !p.UpdatedAt.Equal(last.PublishedAt) {
		t.Errorf("ListProviders: last provider = %+v, want p49 with %d versions, latest 2000.0.0 at %v", p, perProvider, last.PublishedAt)
	}
	for _, typ := range []string{"p00", "p17", "p49"} {
		vs, err := x.ListProviderVersions(ctx, "acme", typ)
		if err != nil {
			t.Fatal(err)
		}
		if len(vs) != perProvider {
			t.Errorf("ListProviderVersions(%s) returned %d versions, want %d", typ, len(vs), perProvider)
		}
		for _, v := range vs {
			if len(v.Platforms) < 2 || v.SigningKey.KeyID != fmt.Sprintf("%016X", 1) {
				t.Fatalf("version %s of %s has %d platforms and key %q", v.Version, typ, len(v.Platforms), v.SigningKey.KeyID)
			}
		}
	}
	v, err := x.GetProviderVersion(ctx, "acme", "p49", "2000.0.0")
	if err != nil || len(v.Platforms) != 3 {
		t.Errorf("GetProviderVersion = %d platforms, %v; want 3", len(v.Platforms), err)
	}
	if err := x.CreateProviderVersion(ctx, testVersion("acme", "p31", "1234.0.0", 0, now)); !registry.IsKind(err, registry.Conflict) {
		t.Errorf("CreateProviderVersion of an existing version among 100,000 = %v, want conflict", err)
	}
}

// TestQueryPlansUseIndexes checks that no read or write path scans a
// whole table that grows with the number of versions or tokens.
func TestQueryPlansUseIndexes(t *testing.T) {
	// as sqlstore reads them
	const versionColumns = `v.id, v.version, v.protocols, v.shasums_digest, v.shasums_signature_digest, v.published_at`
	x := open(t, filepath.Join(t.TempDir(), "index.db"))
	queries := map[string]string{
		"version exists": `SELECT EXISTS (SELECT 1 FROM provider_versions WHERE namespace = 'a' AND type = 'b' AND version = 'c')`,
		// with whether the version has provenance (a primary key lookup)
		"get version": `SELECT ` + versionColumns + `, k.key_namespace, k.key_id, k.fingerprint, k.ascii_armor, k.created_at, k.expires_at,
			p.os, p.arch, pp.version_id IS NOT NULL
			FROM provider_versions v JOIN signing_key_snapshots k ON k.id = v.signing_key_snapshot
			LEFT JOIN provider_platforms p ON p.version_id = v.id
			LEFT JOIN provider_provenance pp ON pp.version_id = v.id
			WHERE v.namespace = 'a' AND v.type = 'b' AND v.version = 'c'`,
		"version platforms": `SELECT os, arch, filename, sha256, size FROM provider_platforms WHERE version_id = 1 ORDER BY os, arch`,
		"list versions": `SELECT ` + versionColumns + `, v.signing_key_snapshot,
			(SELECT version_count FROM providers WHERE namespace = 'a' AND type = 'b'), pp.version_id
			FROM provider_versions v LEFT JOIN provider_provenance pp ON pp.version_id = v.id
			WHERE v.namespace = 'a' AND v.type = 'b'`,
		"list platforms": `SELECT v.id, p.os, p.arch, p.filename, p.sha256, p.size, p.h1
			FROM provider_versions v LEFT JOIN provider_platforms p ON p.version_id = v.id
			WHERE v.namespace = 'a' AND v.type = 'b'`,
		// as a publish checks that no version of the same precedence exists
		"precedence check": `SELECT version FROM provider_versions WHERE namespace = 'a' AND type = 'b'
			AND version >= '1.0.0' AND version < '1.0.0,' AND (version = '1.0.0' OR substr(version, 1, 6) = '1.0.0+') LIMIT 1`,
		"module precedence check": `SELECT version FROM module_versions
			WHERE namespace = 'a' AND name = 'b' AND system = 'c' AND version >= '1.0.0' AND version < '1.0.0,'
			AND (version = '1.0.0' OR substr(version, 1, 6) = '1.0.0+') LIMIT 1`,
		"list keys": `SELECT k.id FROM signing_key_snapshots k
			WHERE k.id IN (SELECT signing_key_snapshot FROM provider_versions WHERE namespace = 'a' AND type = 'b')`,
		// as ListMirroredVersions reads a provider's versions with whether
		// each has provenance (sqlstore's mirroredColumns)
		"list mirrored": `SELECT v.id, k.key_id, p.os, p.arch, pv.version_id IS NOT NULL
			FROM mirrored_versions v JOIN mirrored_signing_keys k ON k.id = v.signing_key
			JOIN mirrored_platforms p ON p.version_id = v.id
			LEFT JOIN mirrored_provenance pv ON pv.version_id = v.id
			WHERE v.host = 'h' AND v.namespace = 'a' AND v.type = 'b'
			ORDER BY v.host, v.namespace, v.type, v.version, p.os, p.arch`,
		"providers":       `SELECT type FROM providers WHERE namespace = 'a' ORDER BY type`,
		"token by hash":   `SELECT id FROM tokens WHERE hash = 'h'`,
		"tokens of ns":    `SELECT id FROM tokens WHERE namespace = 'a' ORDER BY created_at, id`,
		"all tokens":      `SELECT id FROM tokens ORDER BY created_at, id`,
		"snapshot digest": `SELECT id FROM signing_key_snapshots WHERE digest = 'd'`,
		// as the garbage collector and every release ask it (migration 0015)
		"blob referenced": `SELECT EXISTS (SELECT 1 FROM provider_versions WHERE shasums_digest = 'd')
			OR EXISTS (SELECT 1 FROM provider_versions WHERE shasums_signature_digest = 'd')
			OR EXISTS (SELECT 1 FROM provider_versions WHERE docs_digest = 'd')
			OR EXISTS (SELECT 1 FROM provider_platforms WHERE sha256 = 'd')
			OR EXISTS (SELECT 1 FROM module_versions WHERE archive_digest = 'd')
			OR EXISTS (SELECT 1 FROM mirrored_versions WHERE shasums_digest = 'd')
			OR EXISTS (SELECT 1 FROM mirrored_versions WHERE shasums_signature_digest = 'd')
			OR EXISTS (SELECT 1 FROM mirrored_platforms WHERE sha256 = 'd'),
			(SELECT released_at FROM released_blobs WHERE digest = 'd')`,
	}
	// Lookups that must be a range of the index, not a read of every
	// version of the provider or module.
	ranges := map[string]string{
		"precedence check":        "version>? AND version<?",
		"module precedence check": "version>? AND version<?",
	}
	for name, q := range queries {
		t.Run(name, func(t *testing.T) {
			rows, err := x.r.QueryContext(t.Context(), `EXPLAIN QUERY PLAN `+q)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
					t.Fatal(err)
				}
				plan = append(plan, detail)
			}
			for _, step := range plan {
				// "SCAN x USING [COVERING] INDEX" walks an index in order: fine.
				if strings.HasPrefix(step, "SCAN ") && !strings.Contains(step, "USING") && step != "SCAN CONSTANT ROW" ||
					strings.Contains(step, "TEMP B-TREE") {
					t.Errorf("plan step %q in %q", step, plan)
				}
			}
			if want := ranges[name]; want != "" && !strings.Contains(strings.Join(plan, "\n"), want) {
				t.Errorf("plan %q is not a range (%s) of an index", plan, want)
			}
		})
	}
}

// testVersion returns a version with two platforms signed by key number k.
func testVersion(ns, typ, ver string, k int, published time.Time) registry.ProviderVersion {
	v := registry.ProviderVersion{
		Namespace: ns, Type: typ, Version: ver, Protocols: []string{"5.0"},
		SHASumsDigest: strings.Repeat("a", 64), SHASumsSignatureDigest: strings.Repeat("b", 64),
		SigningKey: registry.SigningKey{
			Namespace: ns, KeyID: fmt.Sprintf("%016X", k), Fingerprint: fmt.Sprintf("%040X", k),
			ASCIIArmor: strings.Repeat(fmt.Sprintf("key %d armor line\n", k), 100),
			CreatedAt:  time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC),
		},
		PublishedAt: published,
	}
	for _, osArch := range [][2]string{{"linux", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"}} {
		v.Platforms = append(v.Platforms, registry.Platform{
			OS: osArch[0], Arch: osArch[1], Filename: "terraform-provider-" + typ + "_" + ver + "_" + osArch[0] + "_" + osArch[1] + ".zip",
			SHA256: strings.Repeat("c", 64), Size: 12345678,
		})
	}
	return v
}

// seed stores versions 0.0.0 to n-1.0.0 of a provider, each with the given
// number of platforms, signed round-robin by keys keys.
func seed(t testing.TB, x *Index, ns, typ string, n, platforms, keys int, published time.Time) {
	t.Helper()
	for i := range n {
		v := testVersion(ns, typ, fmt.Sprintf("%d.0.0", i), i%keys, published.Add(time.Duration(i)*time.Second))
		v.Platforms = v.Platforms[:platforms]
		if err := x.CreateProviderVersion(t.Context(), v); err != nil {
			t.Fatalf("seeding %d versions of %s/%s: %v", n, ns, typ, err)
		}
	}
}

// benchIndex returns an index with one provider of 2,000 versions, six
// platforms each, signed by three keys.
func benchIndex(b *testing.B) *Index {
	x := open(b, filepath.Join(b.TempDir(), "index.db"))
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := x.CreateNamespace(b.Context(), registry.Namespace{Name: "acme", CreatedAt: now}); err != nil {
		b.Fatal(err)
	}
	for i := range 2000 {
		v := testVersion("acme", "cloud", fmt.Sprintf("%d.%d.%d", i/100, i/10%10, i%10), i%3, now)
		for _, osArch := range [][2]string{{"linux", "arm64"}, {"darwin", "amd64"}, {"freebsd", "amd64"}} {
			p := v.Platforms[0]
			p.OS, p.Arch = osArch[0], osArch[1]
			v.Platforms = append(v.Platforms, p)
		}
		if err := x.CreateProviderVersion(b.Context(), v); err != nil {
			b.Fatal(err)
		}
	}
	return x
}

func BenchmarkListProviderVersions(b *testing.B) {
	x := benchIndex(b)
	for b.Loop() {
		vs, err := x.ListProviderVersions(b.Context(), "acme", "cloud")
		if err != nil || len(vs) != 2000 {
			b.Fatalf("ListProviderVersions = %d versions, %v", len(vs), err)
		}
	}
}

// BenchmarkListProviderVersionSummaries is what a network mirror
// index.json render reads.
func BenchmarkListProviderVersionSummaries(b *testing.B) {
	x := benchIndex(b)
	b.ReportAllocs()
	for b.Loop() {
		vs, err := x.ListProviderVersionSummaries(b.Context(), "acme", "cloud")
		if err != nil || len(vs) != 2000 {
			b.Fatalf("ListProviderVersionSummaries = %d versions, %v", len(vs), err)
		}
	}
}

func BenchmarkGetProviderVersion(b *testing.B) {
	x := benchIndex(b)
	for b.Loop() {
		v, err := x.GetProviderVersion(b.Context(), "acme", "cloud", "12.3.4")
		if err != nil || len(v.Platforms) != 6 {
			b.Fatalf("GetProviderVersion = %d platforms, %v", len(v.Platforms), err)
		}
	}
}

func TestChangeFeed(t *testing.T) {
	storetest.TestChangeFeed(t, func(t *testing.T) (store.Index, store.ChangeFeed) {
		x := open(t, filepath.Join(t.TempDir(), "index.db"))
		return x, x
	})
}

// TestReaderCacheSize checks the page cache of every read connection is
// the small one (readerCacheSize) and the writer keeps SQLite's default:
// the page caches are resident memory outside the Go heap.
func TestReaderCacheSize(t *testing.T) {
	x := open(t, filepath.Join(t.TempDir(), "index.db"))
	ctx := t.Context()
	cacheSize := func(db *sql.DB, n int) []int {
		var sizes []int
		var conns []*sql.Conn
		for range n {
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
			var size int
			if err := c.QueryRowContext(ctx, "PRAGMA cache_size").Scan(&size); err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, size)
		}
		for _, c := range conns {
			c.Close()
		}
		return sizes
	}
	readers := max(4, runtime.GOMAXPROCS(0))
	for i, size := range cacheSize(x.r, readers) {
		if size != -512 {
			t.Errorf("reader connection %d of %d: cache_size %d, want -512 (512 KiB)", i+1, readers, size)
		}
	}
	if got := cacheSize(x.w, 1); got[0] != -2000 {
		t.Errorf("writer: cache_size %d, want SQLite's default -2000", got[0])
	}
}

// The SQLite index is its file's only writer (the data directory's lock
// keeps other processes out): its hook sees every change.
func TestSoleWriter(t *testing.T) {
	if x := open(t, filepath.Join(t.TempDir(), "index.db")); !x.SoleWriter() {
		t.Error("the SQLite index does not report being its file's sole writer")
	}
}
