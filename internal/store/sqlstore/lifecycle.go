package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-version"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// lifecycleColumns are the lifecycle columns (migration 0012) of a
// provider or module version, each prefixed with prefix ("v." or "").
func lifecycleColumns(prefix string) string {
	return prefix + `deprecated_at, ` + prefix + `deprecation_reason, ` + prefix + `deprecation_link, ` + prefix + `deprecated_by, ` +
		prefix + `revoked_at, ` + prefix + `revocation_reason, ` + prefix + `revoked_by`
}

// lifecycleRow receives the lifecycleColumns of one row.
type lifecycleRow struct {
	deprecatedAt, revokedAt                    time.Time
	reason, link, deprecatedBy, revoked, revBy string
}

func (r *lifecycleRow) targets() []any {
	return []any{at(&r.deprecatedAt), &r.reason, &r.link, &r.deprecatedBy, at(&r.revokedAt), &r.revoked, &r.revBy}
}

// states returns the deprecation and revocation the row holds: nil where
// the time is NULL.
func (r *lifecycleRow) states() (*registry.Deprecation, *registry.Revocation) {
	var d *registry.Deprecation
	var rv *registry.Revocation
	if !r.deprecatedAt.IsZero() {
		d = &registry.Deprecation{Reason: r.reason, Link: r.link, At: r.deprecatedAt, By: r.deprecatedBy}
	}
	if !r.revokedAt.IsZero() {
		rv = &registry.Revocation{Reason: r.revoked, At: r.revokedAt, By: r.revBy}
	}
	return d, rv
}

// deprecationArgs checks d and returns the values of deprecated_at,
// deprecation_reason, deprecation_link and deprecated_by: NULL and empty
// strings for nil.
func (x *Index) deprecationArgs(d *registry.Deprecation) ([]any, error) {
	if d == nil {
		return []any{nil, "", "", ""}, nil
	}
	if err := registry.CheckDeprecation(*d); err != nil {
		return nil, err
	}
	if d.At.IsZero() {
		return nil, registry.Errorf(registry.Invalid, "a deprecation needs its time")
	}
	t, err := x.time(d.At, "deprecation time")
	if err != nil {
		return nil, err
	}
	return []any{t, d.Reason, d.Link, registry.LifecycleBy(d.By)}, nil
}

// revocationArgs checks r and returns the values of revoked_at,
// revocation_reason and revoked_by: NULL and empty strings for nil.
func (x *Index) revocationArgs(r *registry.Revocation) ([]any, error) {
	if r == nil {
		return []any{nil, "", ""}, nil
	}
	if err := registry.CheckLifecycleReason(r.Reason); err != nil {
		return nil, err
	}
	if r.At.IsZero() {
		return nil, registry.Errorf(registry.Invalid, "a revocation needs its time")
	}
	t, err := x.time(r.At, "revocation time")
	if err != nil {
		return nil, err
	}
	return []any{t, r.Reason, registry.LifecycleBy(r.By)}, nil
}

// setLifecycle runs one UPDATE of a version's lifecycle columns (set, with
// args then the key arguments) and reports change; missing when no row
// matched. then, if not nil, runs in the same transaction afterwards (a
// revocation rebuilds the summary's latest version).
func (x *Index) setLifecycle(ctx context.Context, what string, change store.Change, query string, args []any, missing error,
	then func(ctx context.Context, t tx) error) error {
	return x.writeChange(ctx, what, &change, func(ctx context.Context, t tx) error {
		res, err := t.exec(ctx, query, args...)
		if err := affected(res, err, missing); err != nil || then == nil {
			return err
		}
		return then(ctx, t)
	})
}

// relistProvider rebuilds the latest version of a provider's summary row:
// the highest version not revoked, or the highest of all when every one
// is revoked.
func (x *Index) relistProvider(ctx context.Context, t tx, namespace, typ string) error {
	type row struct {
		version string
		revoked time.Time
	}
	rows, err := t.query(ctx, `SELECT version, revoked_at FROM provider_versions WHERE namespace = $1 AND type = $2`, namespace, typ)
	vs, err := collect(rows, err, func(s scanner) (row, error) {
		var r row
		return r, s.Scan(&r.version, at(&r.revoked))
	})
	if err != nil {
		return err
	}
	var latest, latestAny string
	for _, r := range vs {
		sv, err := version.NewSemver(r.version)
		if err != nil {
			continue
		}
		if registry.NewerLatestProvider(sv, latestAny) {
			latestAny = r.version
		}
		if r.revoked.IsZero() && registry.NewerLatestProvider(sv, latest) {
			latest = r.version
		}
	}
	if latest == "" {
		latest = latestAny
	}
	_, err = t.exec(ctx, `UPDATE providers SET latest_version = $1 WHERE namespace = $2 AND type = $3`, latest, namespace, typ)
	return err
}

// SetProviderDeprecation sets (d != nil) or clears (nil) the deprecation
// of a provider version.
func (x *Index) SetProviderDeprecation(ctx context.Context, namespace, typ, version string, d *registry.Deprecation) error {
	args, err := x.deprecationArgs(d)
	if err != nil {
		return err
	}
	return x.setLifecycle(ctx, fmt.Sprintf("setting the deprecation of provider %s/%s version %s", namespace, typ, version),
		store.Change{Kind: store.ChangeProvider, Namespace: namespace, Name: typ},
		`UPDATE provider_versions SET deprecated_at = $1, deprecation_reason = $2, deprecation_link = $3, deprecated_by = $4
			WHERE namespace = $5 AND type = $6 AND version = $7`,
		append(args, namespace, typ, version), providerVersionMissing(namespace, typ, version), nil)
}

// SetProviderRevocation sets (r != nil) or clears (nil) the revocation
// of a provider version.
func (x *Index) SetProviderRevocation(ctx context.Context, namespace, typ, version string, r *registry.Revocation) error {
	args, err := x.revocationArgs(r)
	if err != nil {
		return err
	}
	return x.setLifecycle(ctx, fmt.Sprintf("setting the revocation of provider %s/%s version %s", namespace, typ, version),
		store.Change{Kind: store.ChangeProvider, Namespace: namespace, Name: typ},
		`UPDATE provider_versions SET revoked_at = $1, revocation_reason = $2, revoked_by = $3
			WHERE namespace = $4 AND type = $5 AND version = $6`,
		append(args, namespace, typ, version), providerVersionMissing(namespace, typ, version),
		func(ctx context.Context, t tx) error { return x.relistProvider(ctx, t, namespace, typ) })
}

// SetModuleDeprecation sets (d != nil) or clears (nil) the deprecation of
// a module version.
func (x *Index) SetModuleDeprecation(ctx context.Context, namespace, name, system, version string, d *registry.Deprecation) error {
	args, err := x.deprecationArgs(d)
	if err != nil {
		return err
	}
	return x.setLifecycle(ctx, fmt.Sprintf("setting the deprecation of module %s/%s/%s version %s", namespace, name, system, version),
		store.Change{Kind: store.ChangeModule, Namespace: namespace, Name: name, System: system},
		`UPDATE module_versions SET deprecated_at = $1, deprecation_reason = $2, deprecation_link = $3, deprecated_by = $4
			WHERE namespace = $5 AND name = $6 AND system = $7 AND version = $8`,
		append(args, namespace, name, system, version), moduleVersionMissing(namespace, name, system, version), nil)
}

// SetModuleRevocation sets (r != nil) or clears (nil) the revocation of a
// module version.
func (x *Index) SetModuleRevocation(ctx context.Context, namespace, name, system, version string, r *registry.Revocation) error {
	args, err := x.revocationArgs(r)
	if err != nil {
		return err
	}
	return x.setLifecycle(ctx, fmt.Sprintf("setting the revocation of module %s/%s/%s version %s", namespace, name, system, version),
		store.Change{Kind: store.ChangeModule, Namespace: namespace, Name: name, System: system},
		`UPDATE module_versions SET revoked_at = $1, revocation_reason = $2, revoked_by = $3
			WHERE namespace = $4 AND name = $5 AND system = $6 AND version = $7`,
		append(args, namespace, name, system, version), moduleVersionMissing(namespace, name, system, version),
		func(ctx context.Context, t tx) error { return x.recountModule(ctx, t, namespace, name, system) })
}

func providerVersionMissing(namespace, typ, version string) error {
	return registry.Errorf(registry.NotFound, "provider %s/%s has no version %s", namespace, typ, version)
}

func moduleVersionMissing(namespace, name, system, version string) error {
	return registry.Errorf(registry.NotFound, "module %s/%s/%s has no version %s", namespace, name, system, version)
}
