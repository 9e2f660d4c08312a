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
	rows, err := tx.Query(ctx, `EXPLAIN SELECT v.id, k.key_id, p.os, p.arch, pv.version_id IS NOT NULL
		FROM mirrored_versions v JOIN mirrored_signing_keys k ON k.id = v.signing_key
		JOIN mirrored_platforms p ON p.version_id = v.id
		LEFT JOIN mirrored_provenance pv ON pv.version_id = v.id
		WHERE v.host = $1 AND v.namespace = $2 AND v.type = $3
		ORDER BY v.host, v.namespace, v.type, v.version, p.os, p.arch`, "upstream.example", "hashicorp", "aws")
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
		t.Errorf("the mirrored versions list reads a whole table:\n%s", plan.String())
	}
}
