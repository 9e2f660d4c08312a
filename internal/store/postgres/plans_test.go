package postgres

import (
	"strings"
	"testing"

	"trove.dev/trove/internal/store/postgres/pgtest"
)

// TestMirroredListUsesIndexes checks that ListMirroredVersions's query
// (sqlstore's mirroredColumns, with whether each version has provenance)
// can be answered from indexes alone: with sequential scans priced out,
// a table the plan still reads whole has no index for its lookup.
func TestMirroredListUsesIndexes(t *testing.T) {
	checkNoSeqScan(t, "the mirrored versions list", `SELECT v.id, k.key_id, p.os, p.arch, pv.version_id IS NOT NULL
		FROM mirrored_versions v JOIN mirrored_signing_keys k ON k.id = v.signing_key
		JOIN mirrored_platforms p ON p.version_id = v.id
		LEFT JOIN mirrored_provenance pv ON pv.version_id = v.id
		WHERE v.host = $1 AND v.namespace = $2 AND v.type = $3
		ORDER BY v.host, v.namespace, v.type, v.version, p.os, p.arch`, "upstream.example", "hashicorp", "aws")
}

// TestProviderListUsesIndexes checks the same of ListProviderVersions's
// and GetProviderVersion's reads of whether each version has provenance
// (sqlstore's providers.go): a lookup of provider_provenance's primary
// key per version, not a read of the table.
func TestProviderListUsesIndexes(t *testing.T) {
	checkNoSeqScan(t, "the provider versions list", `SELECT v.id, v.version, v.signing_key_snapshot,
			(SELECT version_count FROM providers WHERE namespace = $1 AND type = $2), pp.version_id
		FROM provider_versions v LEFT JOIN provider_provenance pp ON pp.version_id = v.id
		WHERE v.namespace = $1 AND v.type = $2`, "acme", "cloud")
	checkNoSeqScan(t, "a provider version's read", `SELECT v.id, k.key_id, p.os, p.arch, pp.version_id IS NOT NULL
		FROM provider_versions v JOIN signing_key_snapshots k ON k.id = v.signing_key_snapshot
		LEFT JOIN provider_platforms p ON p.version_id = v.id
		LEFT JOIN provider_provenance pp ON pp.version_id = v.id
		WHERE v.namespace = $1 AND v.type = $2 AND v.version = $3`, "acme", "cloud", "1.0.0")
}

// checkNoSeqScan fails t if the plan of query, with sequential scans
// priced out, still reads a table whole.
func checkNoSeqScan(t *testing.T, what, query string, args ...any) {
	t.Helper()
	x := open(t, pgtest.NewSchema(t))
	ctx := t.Context()
	tx, err := x.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // read only: nothing to keep
	if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, `EXPLAIN `+query, args...)
	if err != nil {
		t.Fatal(err)
	}
	var plan strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plan.String(), "Seq Scan") {
		t.Errorf("%s reads a whole table:\n%s", what, plan.String())
	}
}
