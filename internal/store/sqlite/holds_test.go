package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
)

// TestMigrateMirrorHolds opens an index of schema version 15 with an
// upstream whose rules were stored before rules had a minimum age,
// migrates it to version 16 (0016_mirror_holds) and checks that the
// rules read back without one, that nothing is held or decided yet, and
// that a rule with a minimum age round-trips.
func TestMigrateMirrorHolds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "index.db")
	ctx := t.Context()
	db := migratedUntil(t, path, "mirror_holds")
	if _, err := db.ExecContext(ctx, `INSERT INTO mirror_upstreams (host, service_url, ca_certificates, allow, description, created_at, updated_at)
		VALUES ('private.example', '', '', '[{"Provider":"acme/*","Versions":"~> 1.0"}]', '', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	x := open(t, path) // applies 0016
	u, err := x.GetMirrorUpstream(ctx, "private.example")
	if err != nil || len(u.Allow) != 1 || u.Allow[0] != (registry.MirrorRule{Provider: "acme/*", Versions: "~> 1.0"}) {
		t.Fatalf("upstream after the migration = %+v, %v", u, err)
	}
	if ds, err := x.ListMirrorDecisions(ctx, "private.example", "", ""); err != nil || len(ds) != 0 {
		t.Errorf("decisions after the migration = %+v, %v", ds, err)
	}
	u.Allow[0].MinAge = 7 * 24 * time.Hour
	if err := x.PutMirrorUpstream(ctx, u); err != nil {
		t.Fatal(err)
	}
	if got, err := x.GetMirrorUpstream(ctx, "private.example"); err != nil || got.Allow[0].MinAge != 7*24*time.Hour {
		t.Errorf("a rule's min age did not round-trip: %+v, %v", got.Allow, err)
	}
}
