package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/postgres/pgtest"
)

// Shape of the seeded registries: providers of versionsPerProvider
// versions each, with platformsPerVersion packages, spread over
// growthNamespaces namespaces with one signing key each.
const (
	versionsPerProvider = 30
	platformsPerVersion = 4
	growthNamespaces    = 100
	// hugeShare: besides the providers of 30 versions, one provider
	// (ns0/huge) holds 1/hugeShare of the versions: 500 of 10k, 50,000 of
	// 1M, the shape of a large company's most published provider, where
	// a scan of one provider's rows costs the most.
	hugeShare = 20
)

// growthSizes returns the numbers of stored versions to benchmark:
// TROVE_BENCH_GROWTH_SIZES (comma-separated), default 10k, 100k and 1M.
func growthSizes(b *testing.B) []int {
	spec := os.Getenv("TROVE_BENCH_GROWTH_SIZES")
	if spec == "" {
		return []int{10_000, 100_000, 1_000_000}
	}
	var sizes []int
	for _, f := range strings.Split(spec, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < versionsPerProvider*growthNamespaces {
			b.Fatalf("TROVE_BENCH_GROWTH_SIZES: %q is not a number of at least %d", f, versionsPerProvider*growthNamespaces)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

// BenchmarkGrowth measures a download lookup (GetProviderVersion), a
// versions lookup (ListProviderVersions of a provider with 30 versions)
// and a publish (CreateProviderVersion) in a database holding 10k, 100k
// and 1M provider versions. Each size is seeded once, in SQL, into a
// fresh database.
func BenchmarkGrowth(b *testing.B) {
	for _, n := range growthSizes(b) {
		b.Run(fmt.Sprintf("versions=%d", n), func(b *testing.B) {
			x, providers := seedGrowth(b, n)
			ctx := context.Background()
			logPlans(b, x, n, providers)
			b.Run("GetProviderVersion", func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 2))
				b.ReportAllocs()
				for b.Loop() {
					p := rng.IntN(providers)
					v, err := x.GetProviderVersion(ctx, growthNamespace(p), growthType(p), fmt.Sprintf("1.%d.0", rng.IntN(versionsPerProvider)))
					if err != nil || len(v.Platforms) != platformsPerVersion {
						b.Fatalf("GetProviderVersion: %d platforms, %v", len(v.Platforms), err)
					}
				}
			})
			b.Run("ListProviderVersions30", func(b *testing.B) {
				rng := rand.New(rand.NewPCG(3, 4))
				b.ReportAllocs()
				for b.Loop() {
					p := rng.IntN(providers)
					vs, err := x.ListProviderVersions(ctx, growthNamespace(p), growthType(p))
					if err != nil || len(vs) != versionsPerProvider {
						b.Fatalf("ListProviderVersions: %d versions, %v", len(vs), err)
					}
				}
			})
			b.Run("ListProviderVersionsHuge", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					vs, err := x.ListProviderVersions(ctx, "ns0", "huge")
					if err != nil || len(vs) != n/hugeShare {
						b.Fatalf("ListProviderVersions: %d versions, %v", len(vs), err)
					}
				}
			})
			publish := func(b *testing.B, huge bool) {
				rng := rand.New(rand.NewPCG(5, 6))
				key := registry.SigningKey{Namespace: "ns0", KeyID: "0123456789ABCDEF", Fingerprint: strings.Repeat("AB", 20),
					ASCIIArmor: strings.Repeat("A", 1500), CreatedAt: time.Unix(1_700_000_000, 0)}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					p := rng.IntN(providers)
					typ := growthType(p)
					if huge {
						p, typ = 0, "huge"
					}
					v := registry.ProviderVersion{
						Namespace: growthNamespace(p), Type: typ, Version: fmt.Sprintf("2.%d.%d", time.Now().UnixNano(), i),
						Protocols: []string{"5.0"}, SHASumsDigest: strings.Repeat("a", 64), SHASumsSignatureDigest: strings.Repeat("b", 64),
						SigningKey: key, PublishedAt: time.Now(),
					}
					v.SigningKey.Namespace = v.Namespace
					for j, os := range []string{"linux", "darwin", "windows", "freebsd"}[:platformsPerVersion] {
						v.Platforms = append(v.Platforms, registry.Platform{OS: os, Arch: "amd64",
							Filename: fmt.Sprintf("terraform-provider-%s_%s_%s_amd64.zip", v.Type, v.Version, os),
							SHA256:   fmt.Sprintf("%064x", i*8+j), Size: 1 << 20})
					}
					if err := x.CreateProviderVersion(ctx, v); err != nil {
						b.Fatal(err)
					}
					i++
				}
			}
			b.Run("CreateProviderVersion", func(b *testing.B) { publish(b, false) })
			b.Run("CreateProviderVersionHuge", func(b *testing.B) { publish(b, true) })
		})
	}
}

// hotQueries are the index queries behind the protocol's hot paths, as
// sqlstore sends them (with the arguments logPlans fills in): the
// versions document (versions, their platforms, their keys), the
// download document, and a publish's precedence check and provider row.
// A query with a rangeCond must show it as an index condition: a range
// of the index, not a filter over every entry of the provider.
var hotQueries = []struct{ name, sql, rangeCond string }{
	{"versions list", `SELECT v.id, v.version, v.protocols, v.published_at, v.signing_key_snapshot,
			(SELECT version_count FROM providers WHERE namespace = $1 AND type = $2)
		FROM provider_versions v WHERE v.namespace = $1 AND v.type = $2`, ""},
	{"versions list: platforms", `SELECT v.id, p.os, p.arch, p.filename, p.sha256, p.size, p.h1
		FROM provider_versions v LEFT JOIN provider_platforms p ON p.version_id = v.id
		WHERE v.namespace = $1 AND v.type = $2`, ""},
	{"versions list: signing keys", `SELECT k.id, k.key_id FROM signing_key_snapshots k
		WHERE k.id IN (SELECT signing_key_snapshot FROM provider_versions WHERE namespace = $1 AND type = $2)`, ""},
	{"download lookup", `SELECT v.id, k.key_id, p.os, p.filename
		FROM provider_versions v JOIN signing_key_snapshots k ON k.id = v.signing_key_snapshot
		LEFT JOIN provider_platforms p ON p.version_id = v.id
		WHERE v.namespace = $1 AND v.type = $2 AND v.version = $3`, ""},
	{"publish: precedence check", `SELECT version FROM provider_versions WHERE namespace = $1 AND type = $2
		AND version >= $3 AND version < $4 AND (version = $3 OR substr(version, 1, $5) = $6) LIMIT 1`, "(version >= "},
	{"publish: provider row (latest, count)", `SELECT version_count, latest_version, updated_at FROM providers
		WHERE namespace = $1 AND type = $2 FOR UPDATE`, ""},
}

// logPlans logs EXPLAIN (ANALYZE, BUFFERS) of the hot queries for a
// provider of 30 versions and for the huge one, and, from 100,000
// versions on, fails when a plan reads a whole table of providers,
// versions or platforms (below that the planner rightly prefers
// reading the few pages of the providers table to an index), or when a
// lookup meant as a range of an index is not one.
func logPlans(b *testing.B, x *Index, n, providers int) {
	ctx := context.Background()
	for _, target := range []struct{ ns, typ, version string }{
		{growthNamespace(providers / 2), growthType(providers / 2), "1.7.0"},
		{"ns0", "huge", "1.7.0"},
	} {
		for _, q := range hotQueries {
			args := []any{target.ns, target.typ}
			switch strings.Count(q.sql, "$") {
			case 3:
				args = append(args, target.version)
			case 7: // $3 twice
				args = append(args, "9.9.9", "9.9.9,", len("9.9.9")+1, "9.9.9+")
			}
			rows, err := x.pool.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+q.sql, args...)
			if err != nil {
				b.Fatalf("%s: %v", q.name, err)
			}
			var plan strings.Builder
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					b.Fatal(err)
				}
				plan.WriteString("    " + line + "\n")
			}
			if err := rows.Err(); err != nil {
				b.Fatalf("%s: %v", q.name, err)
			}
			b.Logf("%s, %s/%s:\n%s", q.name, target.ns, target.typ, plan.String())
			if q.rangeCond != "" && !strings.Contains(plan.String(), "Index Cond: ") ||
				q.rangeCond != "" && !strings.Contains(plan.String(), q.rangeCond) {
				b.Errorf("%s is not a range of an index (%s):\n%s", q.name, q.rangeCond, plan.String())
			}
			for _, table := range []string{"provider_versions", "provider_platforms", "providers"} {
				if n >= 100_000 && strings.Contains(plan.String(), "Seq Scan on "+table+" ") {
					b.Errorf("%s reads all of %s:\n%s", q.name, table, plan.String())
				}
			}
		}
	}
}

func growthNamespace(p int) string { return "ns" + strconv.Itoa(p%growthNamespaces) }
func growthType(p int) string      { return "p" + strconv.Itoa(p) }

// seedGrowth creates a database holding n provider versions (rounded down
// to whole providers) and returns an index on it and its number of
// providers. The rows are those CreateProviderVersion would write,
// generated in SQL.
func seedGrowth(b testing.TB, n int) (*Index, int) {
	b.Helper()
	dsn := pgtest.NewDatabase(b)
	x := open(b, dsn)
	providers := n / versionsPerProvider
	start := time.Now()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	// The generated rows satisfy every foreign key by construction: skip
	// checking them row by row where the role may (a superuser's).
	if _, err := conn.Exec(ctx, `SET session_replication_role = replica`); err != nil {
		b.Logf("seeding with foreign key checks: %v", err)
	}
	args := pgx.NamedArgs{"namespaces": growthNamespaces, "providers": providers, "versions": versionsPerProvider, "huge": n / hugeShare}
	for _, q := range []string{
		`INSERT INTO namespaces (name, description, created_at)
			SELECT 'ns' || i, 'namespace ' || i, now() FROM generate_series(0, @namespaces - 1) i`,
		`INSERT INTO signing_key_snapshots (digest, namespace, key_namespace, key_id, fingerprint, ascii_armor, created_at)
			SELECT md5('key' || i) || md5('key' || i), 'ns' || i, 'ns' || i, '0123456789ABCDEF', repeat('AB', 20), repeat('A', 1500), now()
			FROM generate_series(0, @namespaces - 1) i`,
		`INSERT INTO providers (namespace, type, version_count, latest_version, updated_at)
			SELECT 'ns' || (p % @namespaces), 'p' || p, @versions, '1.' || (@versions - 1) || '.0', now()
			FROM generate_series(0, @providers - 1) p`,
		`INSERT INTO provider_versions (namespace, type, version, protocols, shasums_digest, shasums_signature_digest, signing_key_snapshot, published_at)
			SELECT 'ns' || (p % @namespaces), 'p' || p, '1.' || v || '.0', '{5.0,6.0}', md5(p || '/' || v) || md5(v || '/' || p),
				md5('sig' || p || '/' || v) || md5('sig'), k.id, now()
			FROM generate_series(0, @providers - 1) p CROSS JOIN generate_series(0, @versions - 1) v
			JOIN signing_key_snapshots k ON k.namespace = 'ns' || (p % @namespaces)
			ORDER BY p, v`,
		`INSERT INTO providers (namespace, type, version_count, latest_version, updated_at)
			VALUES ('ns0', 'huge', @huge, '1.' || (@huge - 1) || '.0', now())`,
		`INSERT INTO provider_versions (namespace, type, version, protocols, shasums_digest, shasums_signature_digest, signing_key_snapshot, published_at)
			SELECT 'ns0', 'huge', '1.' || v || '.0', '{5.0,6.0}', md5('huge/' || v) || md5(v || '/huge'), md5('sighuge' || v) || md5('sig'), k.id, now()
			FROM generate_series(0, @huge - 1) v JOIN signing_key_snapshots k ON k.namespace = 'ns0' ORDER BY v`,
		`INSERT INTO provider_platforms (version_id, os, arch, filename, sha256, size)
			SELECT v.id, pl.os, 'amd64', 'terraform-provider-' || v.type || '_' || v.version || '_' || pl.os || '_amd64.zip',
				md5(v.id || pl.os) || md5(pl.os || v.id), 1048576
			FROM provider_versions v CROSS JOIN (VALUES ('darwin'), ('freebsd'), ('linux'), ('windows')) pl(os)
			ORDER BY v.id, pl.os`,
		`ANALYZE`,
	} {
		if _, err := conn.Exec(ctx, q, args); err != nil {
			b.Fatalf("seeding %d versions: %v\n%s", n, err, q)
		}
	}
	took := time.Since(start).Round(time.Millisecond)
	var size string
	if err := conn.QueryRow(ctx, `SELECT pg_size_pretty(pg_database_size(current_database()))`).Scan(&size); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d versions (%d providers, %d platforms) in %s; database size %s", providers*versionsPerProvider, providers,
		providers*versionsPerProvider*platformsPerVersion, took, size)
	return x, providers
}
