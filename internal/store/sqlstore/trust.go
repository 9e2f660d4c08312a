package sqlstore

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"trove.dev/trove/internal/registry"
)

const trustPolicyColumns = `id, namespace, issuer, audience, conditions, scope, token_ttl_seconds, description, created_at`

// CreateTrustPolicy stores p; NotFound if its namespace does not exist,
// Conflict if its ID is taken.
func (x *Index) CreateTrustPolicy(ctx context.Context, p registry.TrustPolicy) error {
	created, err := x.time(p.CreatedAt, "trust policy creation time")
	if err != nil {
		return err
	}
	conditions, err := json.Marshal(nonNilMap(p.Conditions))
	if err != nil {
		return registry.Wrap(registry.Internal, err, "encoding the conditions of a trust policy")
	}
	return x.write(ctx, "creating trust policy "+p.ID, func(ctx context.Context, t tx) error {
		if err := namespaceExists(ctx, t, p.Namespace); err != nil {
			return err
		}
		_, err := t.exec(ctx, `INSERT INTO trust_policies (`+trustPolicyColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			p.ID, p.Namespace, p.Issuer, p.Audience, string(conditions), string(p.Scope), int64(p.TokenTTL/time.Second), p.Description, created)
		if x.is(err, FailUnique) {
			return registry.Errorf(registry.Conflict, "trust policy ID %q is taken", p.ID)
		}
		return err
	})
}

// GetTrustPolicy returns one policy of a namespace, or NotFound.
func (x *Index) GetTrustPolicy(ctx context.Context, namespace, id string) (registry.TrustPolicy, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	p, err := scanTrustPolicy(x.row(ctx, `SELECT `+trustPolicyColumns+` FROM trust_policies WHERE namespace = $1 AND id = $2`, namespace, id))
	if errors.Is(err, sql.ErrNoRows) {
		return registry.TrustPolicy{}, registry.Errorf(registry.NotFound, "namespace %s has no trust policy %s", namespace, id)
	}
	return p, x.fail(err, "reading trust policy "+id)
}

// ListTrustPolicies returns the policies of a namespace ordered by
// CreatedAt then ID.
func (x *Index) ListTrustPolicies(ctx context.Context, namespace string) ([]registry.TrustPolicy, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	rows, err := x.query(ctx, `SELECT `+trustPolicyColumns+` FROM trust_policies WHERE namespace = $1 ORDER BY created_at, id`, namespace)
	out, err := collect(rows, err, scanTrustPolicy)
	return out, x.fail(err, "listing the trust policies of namespace "+namespace)
}

// DeleteTrustPolicy removes one policy of a namespace; NotFound if there
// is none.
func (x *Index) DeleteTrustPolicy(ctx context.Context, namespace, id string) error {
	return x.write(ctx, "deleting trust policy "+id, func(ctx context.Context, t tx) error {
		res, err := t.exec(ctx, `DELETE FROM trust_policies WHERE namespace = $1 AND id = $2`, namespace, id)
		return affected(res, err, registry.Errorf(registry.NotFound, "namespace %s has no trust policy %s", namespace, id))
	})
}

func scanTrustPolicy(s scanner) (registry.TrustPolicy, error) {
	var p registry.TrustPolicy
	var conditions, scope string
	var ttl int64
	if err := s.Scan(&p.ID, &p.Namespace, &p.Issuer, &p.Audience, &conditions, &scope, &ttl, &p.Description, at(&p.CreatedAt)); err != nil {
		return registry.TrustPolicy{}, err
	}
	if err := json.Unmarshal([]byte(conditions), &p.Conditions); err != nil {
		return registry.TrustPolicy{}, registry.Wrap(registry.Internal, err, "decoding the conditions of trust policy "+p.ID)
	}
	p.Scope = registry.Scope(scope)
	p.TokenTTL = time.Duration(ttl) * time.Second
	return p, nil
}

// UseTokenID records issuer's token ID jti until expiresAt after removing
// the expired records; Conflict if it is recorded already.
func (x *Index) UseTokenID(ctx context.Context, issuer, jti string, expiresAt, now time.Time) error {
	if issuer == "" || jti == "" || expiresAt.IsZero() {
		return registry.Errorf(registry.Invalid, "recording a token ID: the issuer, the ID and its expiry are required")
	}
	exp, err := x.time(expiresAt, "token expiry")
	if err != nil {
		return err
	}
	cutoff, err := x.time(now, "current time")
	if err != nil {
		return err
	}
	sum := sha256.Sum256([]byte(issuer + "\x00" + jti))
	key := hex.EncodeToString(sum[:])
	replayed := registry.Errorf(registry.Conflict, "token ID %s of %s was used already", registry.Elide(jti), registry.Elide(issuer))
	return x.write(ctx, "recording a token ID", func(ctx context.Context, t tx) error {
		if _, err := t.exec(ctx, `DELETE FROM used_token_ids WHERE expires_at < $1`, cutoff); err != nil {
			return err
		}
		taken, err := t.exists(ctx, `SELECT EXISTS (SELECT 1 FROM used_token_ids WHERE key = $1)`, key)
		if err != nil {
			return err
		}
		if taken {
			return replayed
		}
		_, err = t.exec(ctx, `INSERT INTO used_token_ids (key, expires_at) VALUES ($1, $2)`, key, exp)
		if x.is(err, FailUnique) {
			return replayed
		}
		return err
	})
}

// nonNilMap returns m, or an empty map for nil, so that it encodes as {}.
func nonNilMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
