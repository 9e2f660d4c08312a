package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
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
	keys := make([]policyKey, 0, len(p.ImportKeys))
	for _, k := range p.ImportKeys {
		keys = append(keys, policyKey{KeyID: k.KeyID, Fingerprint: k.Fingerprint, ASCIIArmor: k.ASCIIArmor})
	}
	importKeys, err := json.Marshal(keys)
	if err != nil {
		return err
	}
	return x.write(ctx, "storing the provenance policy of namespace "+p.Namespace, func(ctx context.Context, t tx) error {
		_, err := t.exec(ctx, `INSERT INTO provenance_policies (namespace, issuer, repository, refs, import_keys, updated_at, updated_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (namespace) DO UPDATE SET issuer = excluded.issuer, repository = excluded.repository, refs = excluded.refs,
				import_keys = excluded.import_keys, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
			p.Namespace, p.Issuer, p.Repository, p.Refs, string(importKeys), updated, p.UpdatedBy)
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
	var importKeys string
	err := x.row(ctx, `SELECT namespace, issuer, repository, refs, import_keys, updated_at, updated_by FROM provenance_policies WHERE namespace = $1`, namespace).
		Scan(&p.Namespace, &p.Issuer, &p.Repository, &p.Refs, &importKeys, at(&p.UpdatedAt), &p.UpdatedBy)
	if errors.Is(err, sql.ErrNoRows) {
		return p, registry.Errorf(registry.NotFound, "namespace %q has no provenance policy", namespace)
	}
	if err != nil {
		return p, x.fail(err, "reading the provenance policy of namespace "+namespace)
	}
	var keys []policyKey
	if err := json.Unmarshal([]byte(importKeys), &keys); err != nil {
		return p, x.fail(err, "decoding the import keys of the provenance policy of namespace "+namespace)
	}
	for _, k := range keys {
		p.ImportKeys = append(p.ImportKeys, registry.SigningKey{Namespace: p.Namespace, KeyID: k.KeyID, Fingerprint: k.Fingerprint, ASCIIArmor: k.ASCIIArmor})
	}
	return p, nil
}

// policyKey is an import key as provenance_policies.import_keys holds it.
type policyKey struct {
	KeyID       string `json:"key_id"`
	Fingerprint string `json:"fingerprint,omitempty"`
	ASCIIArmor  string `json:"ascii_armor"`
}

// DeleteProvenancePolicy deletes the policy row of the namespace.
func (x *Index) DeleteProvenancePolicy(ctx context.Context, namespace string) error {
	missing := registry.Errorf(registry.NotFound, "namespace %q has no provenance policy", namespace)
	return x.write(ctx, "deleting the provenance policy of namespace "+namespace, func(ctx context.Context, t tx) error {
		res, err := t.exec(ctx, `DELETE FROM provenance_policies WHERE namespace = $1`, namespace)
		return affected(res, err, missing)
	})
}
