package operations

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/downloads"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/webhook"
)

// Deletes of provider versions, whole providers, module versions and
// whole modules (docs/lifecycle.md). They need admin rights on the
// namespace and a confirmation naming what goes (confirm, the address
// "ns/type/version", "ns/type", "ns/name/system/version" or
// "ns/name/system"), since a delete breaks every configuration and lock
// file that uses what it deletes. They remove index rows only: the
// garbage collector reclaims the blobs. The versions a retention rule
// expires are deleted by the same path (ExpireVersion), audited and
// announced as a user's delete is.

// refuseUnconfirmed is the error of a delete whose confirmation does not
// name what it deletes.
func refuseUnconfirmed(what, cli, address string) error {
	return registry.Errorf(registry.Invalid,
		"deleting %s %s breaks every configuration and lock file that uses it; to delete it anyway, repeat the request with %s=%s (%s --confirm)",
		what, address, apispec.ConfirmParam, address, cli)
}

// confirmParts checks that confirm names want (parts of an address,
// compared after parse normalizes each), and refuses the delete with
// what to add otherwise.
func confirmParts(confirm, what, cli string, want []string, parse []func(string) (string, error)) error {
	refuse := refuseUnconfirmed(what, cli, strings.Join(want, "/"))
	got := strings.Split(confirm, "/")
	if len(got) != len(want) {
		return refuse
	}
	for i := range got {
		v, err := parse[i](got[i])
		if err != nil || v != want[i] {
			return refuse
		}
	}
	return nil
}

func parseVersion(v string) (string, error) {
	_, err := registry.ParseVersion(v)
	return v, err
}

// DeleteProviderVersion deletes version of provider namespace/typ, for
// admins of the namespace, confirmed by confirm "ns/type/version". It is
// audited (provider.delete, with the digest of its SHA256SUMS) and
// announced (provider.deleted) in its transaction.
//
// Unless inUse, a version that consumers downloaded in the last
// apispec.InUseDays days is not deleted: the Conflict names them.
func (o *Operations) DeleteProviderVersion(ctx context.Context, a Actor, namespace, typ, version, confirm string, inUse bool) error {
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopeAdmin)
	if err != nil {
		return err
	}
	if typ, err = registry.ParseProviderType(typ); err != nil {
		return err
	}
	if _, err := registry.ParseVersion(version); err != nil {
		return err
	}
	if err := confirmParts(confirm, "provider version", "trove provider delete", []string{ns, typ, version},
		[]func(string) (string, error){registry.ParseNamespace, registry.ParseProviderType, parseVersion}); err != nil {
		return err
	}
	if !inUse {
		q := registry.ConsumerQuery{Kind: registry.DownloadProvider, Namespace: ns, Name: typ}
		if err := o.refuseInUse(ctx, q, version, ns+"/"+typ+" "+version, "trove provider delete"); err != nil {
			return err
		}
	}
	return o.deleteVersion(ctx, a, VersionRef{Namespace: ns, Name: typ, Version: version}, false, "")
}

// DeleteModuleVersion deletes a module version, for admins of the
// namespace, confirmed by confirm "ns/name/system/version" (compared
// after normalizing each part). It is audited (module.delete, with the
// digest of its archive) and announced (module.deleted) in its
// transaction.
//
// Unless inUse, a version that consumers downloaded in the last
// apispec.InUseDays days is not deleted: the Conflict names them.
func (o *Operations) DeleteModuleVersion(ctx context.Context, a Actor, namespace, name, system, version, confirm string, inUse bool) error {
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopeAdmin)
	if err != nil {
		return err
	}
	want, err := modules.ParseStoredAddress(ns, name, system, version)
	if err != nil {
		return err
	}
	if !confirmedModule(confirm, want) {
		return registry.Errorf(registry.Invalid,
			"deleting a module version breaks every configuration that uses it; to delete it anyway, repeat the request with %s=%s (trove module delete --confirm)",
			apispec.ModuleConfirmParam, want.Namespace+"/"+want.Name+"/"+want.System+"/"+want.Version)
	}
	if !inUse {
		q := registry.ConsumerQuery{Kind: registry.DownloadModule, Namespace: want.Namespace, Name: want.Name, System: want.System}
		if err := o.refuseInUse(ctx, q, want.Version, want.Namespace+"/"+want.Name+"/"+want.System+" "+want.Version, "trove module delete"); err != nil {
			return err
		}
	}
	return o.deleteVersion(ctx, a, VersionRef{Namespace: want.Namespace, Name: want.Name, System: want.System, Version: want.Version}, true, "")
}

// confirmedModule reports whether confirm names the module version want.
func confirmedModule(confirm string, want registry.ModuleVersion) bool {
	parts := strings.Split(confirm, "/")
	if len(parts) != 4 {
		return false
	}
	got, err := modules.ParseStoredAddress(parts[0], parts[1], parts[2], parts[3])
	return err == nil && got.Namespace == want.Namespace && got.Name == want.Name && got.System == want.System && got.Version == want.Version
}

// refuseInUse refuses a delete of what q names (only version, unless
// "") that consumers downloaded in the last apispec.InUseDays days: the
// Conflict says how many, names the first few and what to add to delete
// it anyway. The versions a retention rule expires are not checked: the
// rule is the namespace admins' explicit decision (docs/consumers.md).
func (o *Operations) refuseInUse(ctx context.Context, q registry.ConsumerQuery, version, address, cli string) error {
	if o.opt.Consumers == nil {
		return nil
	}
	since, until, err := downloads.ConsumerWindow(o.opt.Now(), apispec.InUseDays)
	if err != nil {
		return err
	}
	q.Since = since
	records, err := o.opt.Consumers.ConsumerDownloads(ctx, q)
	if err != nil {
		return err
	}
	constraint := ""
	if version != "" {
		constraint = "= " + version
	}
	report, err := downloads.Report(records, since, until, constraint)
	if err != nil || len(report.Consumers) == 0 {
		return err
	}
	names := make([]string, 0, 4)
	for i, u := range report.Consumers {
		if i == 3 {
			names = append(names, fmt.Sprintf("%d more", len(report.Consumers)-3))
			break
		}
		names = append(names, u.Consumer)
	}
	see := strings.Replace(address, " ", " --versions '= ", 1)
	if version != "" {
		see += "'"
	}
	return registry.Errorf(registry.Conflict,
		"%d consumers downloaded %s in the last %d days (%s): deleting it breaks them; see who with trove consumers %s. To delete it anyway, repeat the request with %s=true (%s --in-use)",
		len(report.Consumers), address, apispec.InUseDays, strings.Join(names, ", "), see, apispec.InUseParam, cli)
}

// ExpiredVersion is a version a retention rule expires (gc.Expired).
type ExpiredVersion struct {
	// Module is true for a module version, false for a provider
	// version (Name is then the provider type).
	Module  bool
	Version VersionRef
}

// ExpireVersion deletes a version the retention rule of its namespace
// expired, for the garbage collector (gc.Run.Delete): by the path of a
// user's delete (DeleteProviderVersion, DeleteModuleVersion), audited
// (provider.delete, module.delete) and announced (provider.deleted,
// module.deleted, with the rule as the reason) in its transaction. a is
// who runs the collection: a global admin, or the operator (a scheduled
// collection). NotFound if the version is gone already.
func (o *Operations) ExpireVersion(ctx context.Context, a Actor, e ExpiredVersion) error {
	if err := o.require(a, registry.ScopeAdmin, ""); err != nil {
		return err
	}
	v := e.Version
	ns, err := registry.ParseNamespace(v.Namespace)
	if err != nil {
		return err
	}
	if e.Module {
		want, err := modules.ParseStoredAddress(ns, v.Name, v.System, v.Version)
		if err != nil {
			return err
		}
		v = VersionRef{Namespace: want.Namespace, Name: want.Name, System: want.System, Version: want.Version}
	} else {
		if v.Name, err = registry.ParseProviderType(v.Name); err != nil {
			return err
		}
		if _, err := registry.ParseVersion(v.Version); err != nil {
			return err
		}
		v.Namespace, v.System = ns, ""
	}
	return o.deleteVersion(ctx, a, v, e.Module, "retention rule of namespace "+v.Namespace)
}

// deleteVersion deletes provider (module false) or module version v with
// its audit entry and webhook event. why, when set, is why it goes (a
// retention rule): the details of the audit entry and the reason of the
// event; otherwise the details name the deleted version's digest.
func (o *Operations) deleteVersion(ctx context.Context, a Actor, v VersionRef, module bool, why string) error {
	action, event := registry.AuditProviderDelete, registry.EventProviderDeleted
	target := v.Namespace + "/" + v.Name + " " + v.Version
	details := why
	if module {
		action, event = registry.AuditModuleDelete, registry.EventModuleDeleted
		target = v.Namespace + "/" + v.Name + "/" + v.System + " " + v.Version
	}
	if why == "" {
		if module {
			stored, err := o.opt.Index.GetModuleVersion(ctx, v.Namespace, v.Name, v.System, v.Version)
			if err != nil {
				return err
			}
			details = "sha256 " + stored.ArchiveDigest
		} else {
			stored, err := o.opt.Index.GetProviderVersion(ctx, v.Namespace, v.Name, v.Version)
			if err != nil {
				return err
			}
			details = "sha256sums " + stored.SHASumsDigest
		}
	}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: action, Namespace: v.Namespace, Target: target, Details: details}},
		webhook.Event{Type: event, Namespace: v.Namespace, Name: v.Name, System: v.System, Version: v.Version, Reason: why})
	var err error
	if module {
		err = o.opt.Index.DeleteModuleVersion(store.WithEffects(ctx, fx), v.Namespace, v.Name, v.System, v.Version)
	} else {
		err = o.opt.Index.DeleteProviderVersion(store.WithEffects(ctx, fx), v.Namespace, v.Name, v.Version)
	}
	if err != nil {
		return err
	}
	o.done(ctx, fx)
	return nil
}

// DeleteProvider deletes every version of provider namespace/typ, for
// admins of the namespace, confirmed by confirm "ns/type", and returns
// how many versions it deleted. It is audited (provider.delete_all, with
// that number) and announced (provider.deleted without a version) in its
// transaction.
//
// Unless inUse, a provider any version of which consumers downloaded in
// the last apispec.InUseDays days is not deleted.
func (o *Operations) DeleteProvider(ctx context.Context, a Actor, namespace, typ, confirm string, inUse bool) (int, error) {
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopeAdmin)
	if err != nil {
		return 0, err
	}
	if typ, err = registry.ParseProviderType(typ); err != nil {
		return 0, err
	}
	if err := confirmParts(confirm, "provider", "trove provider delete", []string{ns, typ},
		[]func(string) (string, error){registry.ParseNamespace, registry.ParseProviderType}); err != nil {
		return 0, err
	}
	if !inUse {
		q := registry.ConsumerQuery{Kind: registry.DownloadProvider, Namespace: ns, Name: typ}
		if err := o.refuseInUse(ctx, q, "", ns+"/"+typ, "trove provider delete"); err != nil {
			return 0, err
		}
	}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditProviderDeleteAll, Namespace: ns, Target: ns + "/" + typ}},
		webhook.Event{Type: registry.EventProviderDeleted, Namespace: ns, Name: typ})
	fx.Bind = countVersions(fx)
	n, err := o.opt.Index.DeleteProvider(store.WithEffects(ctx, fx), ns, typ)
	if err != nil {
		return 0, err
	}
	o.done(ctx, fx)
	return n, nil
}

// DeleteModule deletes every version of module namespace/name/system,
// for admins of the namespace, confirmed by confirm "ns/name/system",
// and returns how many versions it deleted. It is audited
// (module.delete_all, with that number) and announced (module.deleted
// without a version) in its transaction.
//
// Unless inUse, a module any version of which consumers downloaded in the
// last apispec.InUseDays days is not deleted.
func (o *Operations) DeleteModule(ctx context.Context, a Actor, namespace, name, system, confirm string, inUse bool) (int, error) {
	ns, err := o.Namespace(ctx, a, namespace, registry.ScopeAdmin)
	if err != nil {
		return 0, err
	}
	if name, err = registry.ParseModuleName(name); err != nil {
		return 0, err
	}
	if system, err = registry.ParseModuleSystem(system); err != nil {
		return 0, err
	}
	if err := confirmParts(confirm, "module", "trove module delete", []string{ns, name, system},
		[]func(string) (string, error){registry.ParseNamespace, registry.ParseModuleName, registry.ParseModuleSystem}); err != nil {
		return 0, err
	}
	if !inUse {
		q := registry.ConsumerQuery{Kind: registry.DownloadModule, Namespace: ns, Name: name, System: system}
		if err := o.refuseInUse(ctx, q, "", ns+"/"+name+"/"+system, "trove module delete"); err != nil {
			return 0, err
		}
	}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditModuleDeleteAll, Namespace: ns, Target: ns + "/" + name + "/" + system}},
		webhook.Event{Type: registry.EventModuleDeleted, Namespace: ns, Name: name, System: system})
	fx.Bind = countVersions(fx)
	n, err := o.opt.Index.DeleteModule(store.WithEffects(ctx, fx), ns, name, system)
	if err != nil {
		return 0, err
	}
	o.done(ctx, fx)
	return n, nil
}

// countVersions returns an Effects.Bind that names the number of versions
// a whole delete removed in the details of its audit entry.
func countVersions(fx *store.Effects) func(any) {
	return func(record any) {
		if n, ok := record.(store.DeletedVersions); ok && len(fx.Audit) > 0 {
			fx.Audit[0].Details = strconv.Itoa(int(n)) + " versions"
		}
	}
}
