package operations_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
)

// TestDeletesRefused: only a namespace's admins delete its versions,
// providers and modules, and only with a confirmation naming what goes;
// hostile names are refused; nothing is deleted, audited or announced.
func TestDeletesRefused(t *testing.T) {
	e := newEnv(t)
	alice, pat, bob, eve := e.user(t, "alice"), e.user(t, "pat"), e.user(t, "bob"), e.user(t, "eve")
	publisher := e.service(t, registry.ScopePublish, "acme")
	otherAdmin := e.service(t, registry.ScopeAdmin, "open")
	type call struct{ ns, name, system, version, confirm string }
	for _, tc := range []struct {
		name  string
		actor operations.Actor
		// c names a provider version (system ""), the provider (version
		// "" too), a module version or the module.
		c    call
		want registry.Kind
	}{
		{"provider version by a publisher", pat, call{"acme", "widget", "", "1.0.0", "acme/widget/1.0.0"}, registry.Forbidden},
		{"provider version by a reader", bob, call{"acme", "widget", "", "1.0.0", "acme/widget/1.0.0"}, registry.Forbidden},
		{"provider version by a publish token", publisher, call{"acme", "widget", "", "1.0.0", "acme/widget/1.0.0"}, registry.Forbidden},
		{"provider version by another namespace's admin", otherAdmin, call{"acme", "widget", "", "1.0.0", "acme/widget/1.0.0"}, registry.NotFound},
		{"provider version by an outsider", eve, call{"acme", "widget", "", "1.0.0", "acme/widget/1.0.0"}, registry.NotFound},
		{"provider version unconfirmed", alice, call{"acme", "widget", "", "1.0.0", ""}, registry.Invalid},
		{"provider version confirmed as another", alice, call{"acme", "widget", "", "1.0.0", "acme/widget/1.0.1"}, registry.Invalid},
		{"provider version confirmed as the provider", alice, call{"acme", "widget", "", "1.0.0", "acme/widget"}, registry.Invalid},
		{"provider version confirmed with NUL", alice, call{"acme", "widget", "", "1.0.0", "acme/widget/1.0.0\x00"}, registry.Invalid},
		{"provider version confirmed with a path", alice, call{"acme", "widget", "", "1.0.0", "acme/../acme/widget/1.0.0"}, registry.Invalid},
		{"provider type path", alice, call{"acme", "../widget", "", "1.0.0", "acme/../widget/1.0.0"}, registry.Invalid},
		{"provider version no semver", alice, call{"acme", "widget", "", "1.0", "acme/widget/1.0"}, registry.Invalid},
		{"provider version with a newline", alice, call{"acme", "widget", "", "1.0.0\n", "acme/widget/1.0.0\n"}, registry.Invalid},
		{"absent provider version", alice, call{"acme", "widget", "", "2.0.0", "acme/widget/2.0.0"}, registry.NotFound},
		{"namespace with NUL", alice, call{"acme\x00", "widget", "", "1.0.0", "acme/widget/1.0.0"}, registry.Invalid},
		{"provider by a publisher", pat, call{"acme", "widget", "", "", "acme/widget"}, registry.Forbidden},
		{"provider by an outsider", eve, call{"acme", "widget", "", "", "acme/widget"}, registry.NotFound},
		{"provider unconfirmed", alice, call{"acme", "widget", "", "", ""}, registry.Invalid},
		{"provider confirmed as another", alice, call{"acme", "widget", "", "", "acme/gadget"}, registry.Invalid},
		{"provider confirmed as a version", alice, call{"acme", "widget", "", "", "acme/widget/1.0.0"}, registry.Invalid},
		{"provider type too long", alice, call{"acme", strings.Repeat("w", 10_000), "", "", "acme/" + strings.Repeat("w", 10_000)}, registry.Invalid},
		{"absent provider", alice, call{"acme", "gadget", "", "", "acme/gadget"}, registry.NotFound},
		{"module version by a publisher", pat, call{"acme", "net", "aws", "1.0.0", "acme/net/aws/1.0.0"}, registry.Forbidden},
		{"module version by a publish token", publisher, call{"acme", "net", "aws", "1.0.0", "acme/net/aws/1.0.0"}, registry.Forbidden},
		{"module version by an outsider", eve, call{"acme", "net", "aws", "1.0.0", "acme/net/aws/1.0.0"}, registry.NotFound},
		{"module version unconfirmed", alice, call{"acme", "net", "aws", "1.0.0", ""}, registry.Invalid},
		{"module version confirmed as another", alice, call{"acme", "net", "aws", "1.0.0", "acme/net/gcp/1.0.0"}, registry.Invalid},
		{"module version confirmed as the module", alice, call{"acme", "net", "aws", "1.0.0", "acme/net/aws"}, registry.Invalid},
		{"module name path", alice, call{"acme", "..", "aws", "1.0.0", "acme/../aws/1.0.0"}, registry.Invalid},
		{"module system with an escape", alice, call{"acme", "net", "aws\x1b", "1.0.0", "acme/net/aws\x1b/1.0.0"}, registry.Invalid},
		{"module version no semver", alice, call{"acme", "net", "aws", "latest", "acme/net/aws/latest"}, registry.Invalid},
		{"absent module version", alice, call{"acme", "net", "aws", "9.9.9", "acme/net/aws/9.9.9"}, registry.NotFound},
		{"module by a reader", bob, call{"acme", "net", "aws", "", "acme/net/aws"}, registry.Forbidden},
		{"module by another namespace's admin", otherAdmin, call{"acme", "net", "aws", "", "acme/net/aws"}, registry.NotFound},
		{"module unconfirmed", alice, call{"acme", "net", "aws", "", ""}, registry.Invalid},
		{"module confirmed as a version", alice, call{"acme", "net", "aws", "", "acme/net/aws/1.0.0"}, registry.Invalid},
		{"absent module", alice, call{"acme", "net", "gcp", "", "acme/net/gcp"}, registry.NotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			e.refusedAll(t, tc.want, func(ctx context.Context) error {
				var err error
				switch {
				case c.system == "" && c.version != "":
					err = e.ops.DeleteProviderVersion(ctx, tc.actor, c.ns, c.name, c.version, c.confirm, false)
				case c.system == "":
					_, err = e.ops.DeleteProvider(ctx, tc.actor, c.ns, c.name, c.confirm, false)
				case c.version != "":
					err = e.ops.DeleteModuleVersion(ctx, tc.actor, c.ns, c.name, c.system, c.version, c.confirm, false)
				default:
					_, err = e.ops.DeleteModule(ctx, tc.actor, c.ns, c.name, c.system, c.confirm, false)
				}
				return err
			})
		})
	}
}

// TestDeletes: an admin deletes a provider version and a whole module
// (confirmations compared after normalizing); each delete is audited and
// announced in its transaction and drops this process's cached documents.
func TestDeletes(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	alice := e.user(t, "alice")
	pv, err := e.idx.GetProviderVersion(ctx, "acme", "widget", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ops.DeleteProviderVersion(ctx, alice, "ACME", "Widget", "1.0.0", "Acme/WIDGET/1.0.0", false); err != nil {
		t.Fatal(err)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditProviderDelete || a.Namespace != "acme" || a.Target != "acme/widget 1.0.0" ||
		a.Details != "sha256sums "+pv.SHASumsDigest || a.Actor != "user:alice" || a.SourceAddr != "192.0.2.7" {
		t.Errorf("provider version delete audited as %+v", a)
	}
	if _, err := e.idx.GetProviderVersion(ctx, "acme", "widget", "1.0.0"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("the deleted version reads back: %v", err)
	}
	n, err := e.ops.DeleteModule(ctx, alice, "acme", "net", "aws", "acme/NET/aws", false)
	if err != nil || n != 1 {
		t.Fatalf("module delete: %v, %d versions", err, n)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditModuleDeleteAll || a.Target != "acme/net/aws" || a.Details != "1 versions" {
		t.Errorf("module delete audited as %+v", a)
	}
	if got, want := e.deliveries(t), []string{registry.EventProviderDeleted, registry.EventModuleDeleted}; !sameElements(got, want) {
		t.Errorf("webhook deliveries %q; want %q", got, want)
	}
	if len(e.changed) != 2 {
		t.Errorf("cache drops %q; want the provider's and the module's", e.changed)
	}
}

// TestDeleteModuleVersion: an admin deletes a module version and the
// audit entry names its archive's digest; the whole provider's delete
// counts its versions.
func TestDeleteModuleVersion(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	alice := e.user(t, "alice")
	mv, err := e.idx.GetModuleVersion(ctx, "acme", "net", "aws", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.ops.DeleteModuleVersion(ctx, alice, "acme", "Net", "aws", "1.0.0", "ACME/net/aws/1.0.0", false); err != nil {
		t.Fatal(err)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditModuleDelete || a.Target != "acme/net/aws 1.0.0" || a.Details != "sha256 "+mv.ArchiveDigest {
		t.Errorf("module version delete audited as %+v", a)
	}
	n, err := e.ops.DeleteProvider(ctx, alice, "acme", "widget", "acme/widget", false)
	if err != nil || n != 1 {
		t.Fatalf("provider delete: %v, %d versions", err, n)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditProviderDeleteAll || a.Target != "acme/widget" || a.Details != "1 versions" {
		t.Errorf("provider delete audited as %+v", a)
	}
	if got, want := e.deliveries(t), []string{registry.EventModuleDeleted, registry.EventProviderDeleted}; !sameElements(got, want) {
		t.Errorf("webhook deliveries %q; want %q", got, want)
	}

	// A version stored under a namespace that publishing now refuses
	// (from before that check) can still be deleted.
	if err := e.idx.CreateNamespace(ctx, registry.Namespace{Name: "café", Visibility: registry.VisibilityPublic, CreatedAt: e.now}); err != nil {
		t.Fatal(err)
	}
	legacy := registry.ModuleVersion{Namespace: "café", Name: "net", System: "aws", Version: "1.0.0",
		ArchiveDigest: strings.Repeat("0", 64), ArchiveFormat: "tar.gz", ArchiveSize: 1, PublishedAt: e.now}
	if err := e.idx.CreateModuleVersion(ctx, legacy); err != nil {
		t.Fatal(err)
	}
	if err := e.ops.DeleteModuleVersion(ctx, e.user(t, "root"), "CAFÉ", "net", "aws", "1.0.0", "CAFÉ/net/aws/1.0.0", false); err != nil {
		t.Errorf("delete of a version under a namespace publishing refuses: %v", err)
	}
	if _, err := e.idx.GetModuleVersion(ctx, "café", "net", "aws", "1.0.0"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("the legacy version reads back: %v", err)
	}
}

// TestDeletesInUse: a delete of what consumers downloaded in the last 30
// days is refused, storing nothing, until inUse says the break is meant.
func TestDeletesInUse(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	alice := e.user(t, "alice")
	today := registry.DayOf(time.Now())
	provider := registry.ProviderDownload("acme", "widget", "1.0.0", "linux", "amd64")
	provider.Day, provider.Consumer, provider.Client = today, "ci:acme/infra (deploy.yml)", registry.ClientOpenTofu
	module := registry.ModuleDownload("acme", "net", "aws", "1.0.0")
	module.Day, module.Consumer, module.Client = today, "user:bob", registry.ClientTerraform
	if err := e.idx.AddDownloads(ctx, []registry.DownloadCount{{DownloadKey: provider, Count: 2}, {DownloadKey: module, Count: 1}}); err != nil {
		t.Fatal(err)
	}
	e.refused(t, registry.Conflict, func(ctx context.Context) error {
		return e.ops.DeleteProviderVersion(ctx, alice, "acme", "widget", "1.0.0", "acme/widget/1.0.0", false)
	})
	e.refused(t, registry.Conflict, func(ctx context.Context) error {
		_, err := e.ops.DeleteProvider(ctx, alice, "acme", "widget", "acme/widget", false)
		return err
	})
	e.refused(t, registry.Conflict, func(ctx context.Context) error {
		return e.ops.DeleteModuleVersion(ctx, alice, "acme", "net", "aws", "1.0.0", "acme/net/aws/1.0.0", false)
	})
	e.refused(t, registry.Conflict, func(ctx context.Context) error {
		_, err := e.ops.DeleteModule(ctx, alice, "acme", "net", "aws", "acme/net/aws", false)
		return err
	})
	err := e.ops.DeleteProviderVersion(ctx, alice, "acme", "widget", "1.0.0", "acme/widget/1.0.0", false)
	if msg := registry.Message(err); !strings.Contains(msg, "1 consumers downloaded acme/widget 1.0.0 in the last 30 days (ci:acme/infra (deploy.yml))") ||
		!strings.Contains(msg, "in_use=true") || !strings.Contains(msg, "--in-use") {
		t.Errorf("refusal %q does not say who and what to add", msg)
	}
	if err := e.ops.DeleteProviderVersion(ctx, alice, "acme", "widget", "1.0.0", "acme/widget/1.0.0", true); err != nil {
		t.Fatalf("delete with inUse: %v", err)
	}
	if err := e.ops.DeleteModuleVersion(ctx, alice, "acme", "net", "aws", "1.0.0", "acme/net/aws/1.0.0", true); err != nil {
		t.Fatalf("module delete with inUse: %v", err)
	}
}
