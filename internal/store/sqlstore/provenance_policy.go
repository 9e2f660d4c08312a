package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"trove.dev/trove/internal/registry"
)

// PutProvenancePolicy upserts the policy row of the namespace.
func (x *Index) PutProvenancePolicy(ctx context.Context, p registry.ProvenancePolicy) error {
	if err := p.Validate(); err != nil {
		return err
	}
	updated, err := x.time(p.UpdatedAt, "policy update time")
	if err != nil {
		return err
	}
	return x.write(ctx, "storing the provenance policy of namespace "+p.Namespace, func(ctx context.Context, t tx) error {
		_, err := t.exec(ctx, `INSERT INTO provenance_policies (namespace, issuer, repository, refs, updated_at, updated_by)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (namespace) DO UPDATE SET issuer = excluded.issuer, repository = excluded.repository, refs = excluded.refs,
				updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
			p.Namespace, p.Issuer, p.Repository, p.Refs, updated, p.UpdatedBy)
		if x.is(err, FailForeignKey) {
			return notFoundNamespace(p.Namespace)
		}
		return err
	})
}

// GetProvenancePolicy reads the policy row of the namespace.
func (x *Index) GetProvenancePolicy(ctx context.Context, namespace string) (registry.ProvenancePolicy, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	var p registry.ProvenancePolicy
	err := x.row(ctx, `SELECT namespace, issuer, repository, refs, updated_at, updated_by FROM provenance_policies WHERE namespace = $1`, namespace).
		Scan(&p.Namespace, &p.Issuer, &p.Repository, &p.Refs, at(&p.UpdatedAt), &p.UpdatedBy)
	if errors.Is(err, sql.ErrNoRows) {
		return p, registry.Errorf(registry.NotFound, "namespace %q has no provenance policy", namespace)
	}
	return p, x.fail(err, "reading the provenance policy of namespace "+namespace)
}

// DeleteProvenancePolicy deletes the policy row of the namespace.
func (x *Index) DeleteProvenancePolicy(ctx context.Context, namespace string) error {
	missing := registry.Errorf(registry.NotFound, "namespace %q has no provenance policy", namespace)
	return x.write(ctx, "deleting the provenance policy of namespace "+namespace, func(ctx context.Context, t tx) error {
		res, err := t.exec(ctx, `DELETE FROM provenance_policies WHERE namespace = $1`, namespace)
		return affected(res, err, missing)
	})
}
