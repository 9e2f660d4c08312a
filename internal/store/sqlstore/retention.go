package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"trove.dev/trove/internal/registry"
)

// PutRetentionRule upserts the rule row of the namespace.
func (x *Index) PutRetentionRule(ctx context.Context, r registry.RetentionRule) error {
	if err := registry.CheckRetentionRule(r); err != nil {
		return err
	}
	updated, err := x.time(r.UpdatedAt, "rule update time")
	if err != nil {
		return err
	}
	pins, err := json.Marshal(nonNil(r.Pin))
	if err != nil {
		return err
	}
	return x.write(ctx, "storing the retention rule of namespace "+r.Namespace, func(ctx context.Context, t tx) error {
		_, err := t.exec(ctx, `INSERT INTO retention_rules (namespace, keep_last, keep_within_seconds, pins, updated_at, updated_by)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (namespace) DO UPDATE SET keep_last = excluded.keep_last, keep_within_seconds = excluded.keep_within_seconds,
				pins = excluded.pins, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
			r.Namespace, r.KeepLast, int64(r.KeepWithin/time.Second), string(pins), updated, r.UpdatedBy)
		if x.is(err, FailForeignKey) {
			return notFoundNamespace(r.Namespace)
		}
		return err
	})
}

const retentionColumns = `namespace, keep_last, keep_within_seconds, pins, updated_at, updated_by`

func scanRetentionRule(s scanner) (registry.RetentionRule, error) {
	var r registry.RetentionRule
	var within int64
	var pins string
	if err := s.Scan(&r.Namespace, &r.KeepLast, &within, &pins, at(&r.UpdatedAt), &r.UpdatedBy); err != nil {
		return r, err
	}
	r.KeepWithin = time.Duration(within) * time.Second
	if err := json.Unmarshal([]byte(pins), &r.Pin); err != nil {
		return r, err
	}
	if len(r.Pin) == 0 {
		r.Pin = nil
	}
	return r, nil
}

// GetRetentionRule reads the rule row of the namespace.
func (x *Index) GetRetentionRule(ctx context.Context, namespace string) (registry.RetentionRule, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	r, err := scanRetentionRule(x.row(ctx, `SELECT `+retentionColumns+` FROM retention_rules WHERE namespace = $1`, namespace))
	if errors.Is(err, sql.ErrNoRows) {
		return r, registry.Errorf(registry.NotFound, "namespace %q has no retention rule", namespace)
	}
	return r, x.fail(err, "reading the retention rule of namespace "+namespace)
}

// ListRetentionRules reads every rule row.
func (x *Index) ListRetentionRules(ctx context.Context) ([]registry.RetentionRule, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	rows, err := x.query(ctx, `SELECT `+retentionColumns+` FROM retention_rules ORDER BY namespace`)
	rules, err := collect(rows, err, scanRetentionRule)
	return nonNil(rules), x.fail(err, "listing the retention rules")
}

// DeleteRetentionRule deletes the rule row of the namespace.
func (x *Index) DeleteRetentionRule(ctx context.Context, namespace string) error {
	missing := registry.Errorf(registry.NotFound, "namespace %q has no retention rule", namespace)
	return x.write(ctx, "deleting the retention rule of namespace "+namespace, func(ctx context.Context, t tx) error {
		res, err := t.exec(ctx, `DELETE FROM retention_rules WHERE namespace = $1`, namespace)
		return affected(res, err, missing)
	})
}
