package sqlite

import (
	"path/filepath"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
)

// TestIdentitiesMigrationKeepsUsers opens an index of schema version 7
// (the newest before 0011 on this branch) holding a user with a
// membership, and checks that migration 0011 keeps them as they were:
// existing users have no identity and no granted roles, so single
// sign-on never removes a membership they had.
func TestIdentitiesMigrationKeepsUsers(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "index.db")
	db := migratedUntil(t, path, "identities")
	for _, q := range []string{
		`INSERT INTO namespaces (name, description, created_at, visibility) VALUES ('acme', '', 0, 'private')`,
		`INSERT INTO users (name, password_hash, admin, disabled, created_at) VALUES ('alice', 'x', 1, 0, 0)`,
		`INSERT INTO memberships (user_name, namespace, role, created_at) VALUES ('alice', 'acme', 'publisher', 0)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	x := open(t, path)
	changes, err := x.ReconcileRoles(ctx, "alice", nil, false, time.Unix(1700000000, 0))
	if err != nil || len(changes) != 0 {
		t.Errorf("ReconcileRoles of a user from before the migration: %+v, %v; want no change", changes, err)
	}
	u, err := x.GetUser(ctx, "alice")
	if err != nil || !u.Admin || u.PasswordHash != "x" {
		t.Errorf("user after migration = %+v, %v", u, err)
	}
	ms, err := x.ListMemberships(ctx, "alice", "")
	if err != nil || len(ms) != 1 || ms[0].Role != registry.RolePublisher {
		t.Errorf("memberships after migration = %+v, %v", ms, err)
	}
	ps, err := x.ListIdentityProviders(ctx)
	if err != nil || len(ps) != 0 {
		t.Errorf("identity providers after migration = %+v, %v", ps, err)
	}
}
