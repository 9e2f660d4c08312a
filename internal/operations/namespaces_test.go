package operations_test

import (
	"context"
	"strings"
	"testing"

	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
)

// TestNamespacesRefused: only global admins create and delete
// namespaces, only a namespace's admins update it; hostile names,
// descriptions and visibilities are refused; nothing is stored.
func TestNamespacesRefused(t *testing.T) {
	e := newEnv(t)
	root, alice, bob, eve := e.user(t, "root"), e.user(t, "alice"), e.user(t, "bob"), e.user(t, "eve")
	acmeAdmin := e.service(t, registry.ScopeAdmin, "acme")
	globalPublisher := e.service(t, registry.ScopePublish)
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name                 string
		actor                operations.Actor
		ns, description, vis string
		want                 registry.Kind
	}{
		{"by a namespace admin", alice, "fresh", "", "", registry.Forbidden},
		{"by a namespace admin token", acmeAdmin, "fresh", "", "", registry.Forbidden},
		{"by a global publisher", globalPublisher, "fresh", "", "", registry.Forbidden},
		{"by a user without rights", eve, "fresh", "", "", registry.Forbidden},
		{"existing", root, "acme", "", "", registry.Conflict},
		{"existing in capitals", root, "ACME", "", "", registry.Conflict},
		{"path", root, "../fresh", "", "", registry.Invalid},
		{"NUL", root, "fresh\x00", "", "", registry.Invalid},
		{"empty", root, "", "", "", registry.Invalid},
		{"too long", root, strings.Repeat("n", 1000), "", "", registry.Invalid},
		{"description with escape", root, "fresh", "\x1b[31mred", "", registry.Invalid},
		{"description too long", root, "fresh", strings.Repeat("d", 100_000), "", registry.Invalid},
		{"unknown visibility", root, "fresh", "", "secret", registry.Invalid},
		{"visibility with newline", root, "fresh", "", "public\n", registry.Invalid},
	} {
		t.Run("create/"+tc.name, func(t *testing.T) {
			e.refused(t, tc.want, func(ctx context.Context) error {
				_, err := e.ops.CreateNamespace(ctx, tc.actor, tc.ns, tc.description, tc.vis)
				return err
			})
			if _, err := e.idx.GetNamespace(t.Context(), "fresh"); !registry.IsKind(err, registry.NotFound) {
				t.Errorf("namespace fresh: %v; want it absent", err)
			}
		})
	}
	for _, tc := range []struct {
		name        string
		actor       operations.Actor
		ns          string
		description *string
		vis         *string
		want        registry.Kind
	}{
		{"by a reader", bob, "acme", nil, str("public"), registry.Forbidden},
		{"by an outsider", eve, "acme", nil, str("public"), registry.NotFound},
		{"absent", root, "nope", nil, str("public"), registry.NotFound},
		{"unknown visibility", alice, "acme", nil, str("world"), registry.Invalid},
		{"description with NUL", alice, "acme", str("a\x00b"), nil, registry.Invalid},
		{"path", alice, "acme/../open", nil, str("public"), registry.Invalid},
	} {
		t.Run("update/"+tc.name, func(t *testing.T) {
			e.refused(t, tc.want, func(ctx context.Context) error {
				_, err := e.ops.UpdateNamespace(ctx, tc.actor, tc.ns, tc.description, tc.vis)
				return err
			})
		})
	}
	for _, tc := range []struct {
		name  string
		actor operations.Actor
		ns    string
		want  registry.Kind
	}{
		{"by its admin", alice, "open", registry.Forbidden},
		{"by its admin token", acmeAdmin, "acme", registry.Forbidden},
		{"holding versions", root, "acme", registry.Conflict},
		{"path", root, "../acme", registry.Invalid},
	} {
		t.Run("delete/"+tc.name, func(t *testing.T) {
			e.refused(t, tc.want, func(ctx context.Context) error { return e.ops.DeleteNamespace(ctx, tc.actor, tc.ns) })
		})
	}
}

// TestNamespaces: a global admin creates and deletes a namespace, its
// admin makes it public; each change is audited and readable at once.
func TestNamespaces(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	root, eve := e.user(t, "root"), e.user(t, "eve")
	ns, err := e.ops.CreateNamespace(ctx, root, "Fresh", "a new one", "")
	if err != nil || ns.Name != "fresh" || ns.Visibility != registry.VisibilityPrivate {
		t.Fatalf("create: %v %+v", err, ns)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditNamespaceCreate || a.Details != "visibility private" {
		t.Errorf("audited as %+v", a)
	}
	if _, err := e.ops.Namespace(ctx, eve, "fresh", registry.ScopeRead); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("eve reads the private namespace: %v", err)
	}
	public := "public"
	if _, err := e.ops.UpdateNamespace(ctx, root, "fresh", nil, &public); err != nil {
		t.Fatal(err)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditNamespaceUpdate || a.Details != "visibility private -> public" {
		t.Errorf("audited as %+v", a)
	}
	// The visibility cache was dropped: eve reads it at once.
	if _, err := e.ops.Namespace(ctx, eve, "fresh", registry.ScopeRead); err != nil {
		t.Errorf("eve reads the public namespace: %v", err)
	}
	if err := e.ops.DeleteNamespace(ctx, root, "fresh"); err != nil {
		t.Fatal(err)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditNamespaceDelete || a.Target != "fresh" {
		t.Errorf("audited as %+v", a)
	}
}
