package operations_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
)

// TestUsersRefused: only global admins create users and change their
// flags, never their own; users change their own password only with the
// current one, within the rate limits; hostile names and passwords are
// refused; nothing is stored.
func TestUsersRefused(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	root, alice, eve := e.user(t, "root"), e.user(t, "alice"), e.user(t, "eve")
	hash, err := auth.HashPassword("correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	u, err := e.idx.GetUser(ctx, "eve")
	if err != nil {
		t.Fatal(err)
	}
	u.PasswordHash = hash
	if err := e.idx.UpdateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	yes := true
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name     string
		actor    operations.Actor
		user     string
		password string
		want     registry.Kind
	}{
		{"by a namespace admin", alice, "mallory", "", registry.Forbidden},
		{"existing", root, "alice", "", registry.Conflict},
		{"existing in capitals", root, "ALICE", "", registry.Conflict},
		{"name with a slash", root, "a/b", "", registry.Invalid},
		{"name with NUL", root, "mal\x00lory", "", registry.Invalid},
		{"name too long", root, strings.Repeat("m", 1000), "", registry.Invalid},
		{"short password", root, "mallory", "short", registry.Invalid},
	} {
		t.Run("create/"+tc.name, func(t *testing.T) {
			e.refused(t, tc.want, func(ctx context.Context) error {
				_, err := e.ops.CreateUser(ctx, tc.actor, tc.user, tc.password, false)
				return err
			})
		})
	}
	for _, tc := range []struct {
		name   string
		actor  operations.Actor
		user   string
		change operations.UserChange
		want   registry.Kind
	}{
		{"another user's password", alice, "eve", operations.UserChange{Password: str("a new long password")}, registry.Forbidden},
		{"own admin flag", eve, "eve", operations.UserChange{Admin: &yes}, registry.Forbidden},
		{"an admin's own flags", root, "root", operations.UserChange{Disabled: &yes}, registry.Invalid},
		{"own password without the current one", eve, "eve", operations.UserChange{Password: str("a new long password")}, registry.Forbidden},
		{"own password with a wrong current one", eve, "eve", operations.UserChange{Password: str("a new long password"), CurrentPassword: str("guess")}, registry.Forbidden},
		{"own password too short", eve, "eve", operations.UserChange{Password: str("x"), CurrentPassword: str("correct horse battery staple")}, registry.Invalid},
		{"absent user", root, "nobody", operations.UserChange{Disabled: &yes}, registry.NotFound},
		{"hostile name", root, "../root", operations.UserChange{Disabled: &yes}, registry.Invalid},
	} {
		t.Run("update/"+tc.name, func(t *testing.T) {
			e.refused(t, tc.want, func(ctx context.Context) error {
				_, err := e.ops.UpdateUser(ctx, tc.actor, tc.user, tc.change)
				return err
			})
		})
	}
	// Guessing the current password runs into the rate limit.
	limited := false
	for range 50 {
		_, err := e.ops.UpdateUser(ctx, eve, "eve", operations.UserChange{Password: str("a new long password"), CurrentPassword: str("guess")})
		var rl *operations.RateLimited
		if errors.As(err, &rl) {
			limited = rl.Wait > 0 && strings.Contains(rl.Error(), "try again in")
			break
		}
	}
	if !limited {
		t.Error("50 wrong current passwords were never rate limited")
	}
	u, err = e.idx.GetUser(ctx, "eve")
	if err != nil || u.PasswordHash != hash {
		t.Errorf("eve's password changed: %v", err)
	}
	failures, err := e.idx.ListAudit(ctx, registry.AuditFilter{Action: registry.AuditLoginFailure})
	if err != nil || len(failures) == 0 || failures[0].SourceAddr != "192.0.2.7" {
		t.Errorf("failed password checks audited as %v %+v", err, failures)
	}
}

// TestUsers: a global admin creates and disables a user; a user changes
// their password with the current one; each change is audited.
func TestUsers(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	root := e.user(t, "root")
	u, err := e.ops.CreateUser(ctx, root, "Mallory", "a long first password", false)
	if err != nil || u.Name != "mallory" || u.PasswordHash == "" {
		t.Fatalf("create: %v %+v", err, u)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditUserCreate || a.Target != "mallory" || a.Details != "user" {
		t.Errorf("audited as %+v", a)
	}
	mallory := e.user(t, "mallory")
	cur, next := "a long first password", "a long second password"
	if _, err := e.ops.UpdateUser(ctx, mallory, "mallory", operations.UserChange{Password: &next, CurrentPassword: &cur}); err != nil {
		t.Fatal(err)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditPasswordChange || a.Actor != "user:mallory" {
		t.Errorf("audited as %+v", a)
	}
	yes := true
	if u, err = e.ops.UpdateUser(ctx, root, "mallory", operations.UserChange{Disabled: &yes}); err != nil || !u.Disabled {
		t.Fatalf("disable: %v %+v", err, u)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditUserUpdate || a.Details != "disabled=true" {
		t.Errorf("audited as %+v", a)
	}
	// A change of nothing writes nothing.
	before := e.state(t)
	no := false
	if _, err := e.ops.UpdateUser(ctx, root, "mallory", operations.UserChange{Admin: &no}); err != nil {
		t.Fatal(err)
	}
	if after := e.state(t); len(after.Audit) != len(before.Audit) {
		t.Error("a change of nothing was audited")
	}
}
