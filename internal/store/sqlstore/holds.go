package sqlstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// maxSeenVersions bounds the versions of one SeeMirroredVersions call, as
// the mirror bounds an upstream's versions document.
const maxSeenVersions = 10_000

// seenBatch is the number of rows of one insert of first sights.
const seenBatch = 200

// SeeMirroredVersions reads the first sights of the provider; only when
// some of versions has none yet does it write, inserting those with at
// (a row inserted concurrently is kept: ON CONFLICT DO NOTHING), then
// reads them again.
func (x *Index) SeeMirroredVersions(ctx context.Context, host, namespace, typ string, versions []string, at time.Time) (map[string]time.Time, error) {
	what := fmt.Sprintf("recording the first sight of versions of mirrored provider %s/%s/%s", host, namespace, typ)
	if len(versions) > maxSeenVersions {
		return nil, registry.Errorf(registry.Invalid, "%s: at most %d versions at once, not %d", what, maxSeenVersions, len(versions))
	}
	stamp, err := x.time(at, "first-seen time")
	if err != nil {
		return nil, err
	}
	seen, err := x.firstSeen(ctx, host, namespace, typ)
	if err != nil {
		return nil, x.fail(err, what)
	}
	var missing []string
	for _, v := range versions {
		if _, ok := seen[v]; !ok && !contains(missing, v) {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		err := x.write(ctx, what, func(ctx context.Context, t tx) error {
			for start := 0; start < len(missing); start += seenBatch {
				batch := missing[start:min(start+seenBatch, len(missing))]
				var q strings.Builder
				q.WriteString(`INSERT INTO mirror_first_seen (host, namespace, type, version, first_seen) VALUES `)
				args := []any{host, namespace, typ, stamp}
				for i, v := range batch {
					if i > 0 {
						q.WriteString(", ")
					}
					fmt.Fprintf(&q, "($1, $2, $3, $%d, $4)", len(args)+1)
					args = append(args, v)
				}
				q.WriteString(` ON CONFLICT (host, namespace, type, version) DO NOTHING`)
				if _, err := t.exec(ctx, q.String(), args...); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		if seen, err = x.firstSeen(ctx, host, namespace, typ); err != nil {
			return nil, x.fail(err, what)
		}
	}
	out := make(map[string]time.Time, len(versions))
	for _, v := range versions {
		if t, ok := seen[v]; ok {
			out[v] = t
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// firstSeen reads every first sight recorded of a provider.
func (x *Index) firstSeen(ctx context.Context, host, namespace, typ string) (map[string]time.Time, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	type row struct {
		v string
		t time.Time
	}
	rows, err := x.query(ctx, `SELECT version, first_seen FROM mirror_first_seen WHERE host = $1 AND namespace = $2 AND type = $3`, host, namespace, typ)
	list, err := collect(rows, err, func(s scanner) (row, error) {
		var r row
		return r, s.Scan(&r.v, at(&r.t))
	})
	if err != nil {
		return nil, err
	}
	m := make(map[string]time.Time, len(list))
	for _, r := range list {
		m[r.v] = r.t
	}
	return m, nil
}

// PutMirrorDecision upserts the decision's row, refusing a new one when
// the provider has registry.MaxMirrorDecisions already.
func (x *Index) PutMirrorDecision(ctx context.Context, d registry.MirrorDecision) (bool, error) {
	what := fmt.Sprintf("storing a %s decision about mirrored provider %s/%s/%s %s", d.Kind, d.Host, d.Namespace, d.Type, registry.Elide(d.Versions))
	if d.Host == "" || d.CreatedAt.IsZero() {
		return false, registry.Errorf(registry.Invalid, "%s: a decision needs a host and a time", what)
	}
	if err := registry.CheckMirrorDecision(d); err != nil {
		return false, err
	}
	created, err := x.time(d.CreatedAt, "decision time")
	if err != nil {
		return false, err
	}
	isNew := false
	err = x.writeChange(ctx, what, &store.Change{Kind: store.ChangeMirrored, Host: d.Host, Namespace: d.Namespace, Name: d.Type}, func(ctx context.Context, t tx) error {
		exists, err := t.exists(ctx, `SELECT EXISTS (SELECT 1 FROM mirror_decisions
			WHERE host = $1 AND namespace = $2 AND type = $3 AND kind = $4 AND versions = $5)`,
			d.Host, d.Namespace, d.Type, string(d.Kind), d.Versions)
		if err != nil {
			return err
		}
		if !exists {
			var n int
			if err := t.row(ctx, `SELECT COUNT(*) FROM mirror_decisions WHERE host = $1 AND namespace = $2 AND type = $3`,
				d.Host, d.Namespace, d.Type).Scan(&n); err != nil {
				return err
			}
			if n >= registry.MaxMirrorDecisions {
				return registry.Errorf(registry.Invalid, "mirrored provider %s/%s/%s has %d approvals and denials already, the most it may have: remove some first (a constraint denies many versions at once)",
					d.Host, d.Namespace, d.Type, n)
			}
		}
		isNew = !exists
		_, err = t.exec(ctx, `INSERT INTO mirror_decisions (host, namespace, type, kind, versions, reason, created_by, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (host, namespace, type, kind, versions) DO UPDATE SET reason = excluded.reason,
				created_by = excluded.created_by, created_at = excluded.created_at`,
			d.Host, d.Namespace, d.Type, string(d.Kind), d.Versions, d.Reason, d.CreatedBy, created)
		return err
	})
	return isNew, err
}

// DeleteMirrorDecision deletes one decision's row.
func (x *Index) DeleteMirrorDecision(ctx context.Context, host, namespace, typ string, kind registry.MirrorDecisionKind, versions string) error {
	what := fmt.Sprintf("removing the %s decision about mirrored provider %s/%s/%s %s", kind, host, namespace, typ, registry.Elide(versions))
	missing := registry.Errorf(registry.NotFound, "mirrored provider %s/%s/%s has no %s decision about %q", host, namespace, typ, kind, registry.Elide(versions))
	return x.writeChange(ctx, what, &store.Change{Kind: store.ChangeMirrored, Host: host, Namespace: namespace, Name: typ}, func(ctx context.Context, t tx) error {
		res, err := t.exec(ctx, `DELETE FROM mirror_decisions WHERE host = $1 AND namespace = $2 AND type = $3 AND kind = $4 AND versions = $5`,
			host, namespace, typ, string(kind), versions)
		return affected(res, err, missing)
	})
}

// ListMirrorDecisions reads the decisions of one provider, or of a whole
// host when namespace and typ are "".
func (x *Index) ListMirrorDecisions(ctx context.Context, host, namespace, typ string) ([]registry.MirrorDecision, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	q := `SELECT host, namespace, type, kind, versions, reason, created_by, created_at FROM mirror_decisions WHERE host = $1`
	args := []any{host}
	if namespace != "" || typ != "" {
		q += ` AND namespace = $2 AND type = $3`
		args = append(args, namespace, typ)
	}
	rows, err := x.query(ctx, q+` ORDER BY namespace, type, kind, versions`, args...)
	out, err := collect(rows, err, func(s scanner) (registry.MirrorDecision, error) {
		var d registry.MirrorDecision
		var kind string
		err := s.Scan(&d.Host, &d.Namespace, &d.Type, &kind, &d.Versions, &d.Reason, &d.CreatedBy, at(&d.CreatedAt))
		d.Kind = registry.MirrorDecisionKind(kind)
		return d, err
	})
	return out, x.fail(err, "listing the mirror decisions of "+host)
}
