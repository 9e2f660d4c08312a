// Package auth owns API tokens: how they are generated and hashed, how a
// request's bearer token becomes a Principal, and the checks that a
// Principal may act on a namespace.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// TokenPrefix starts every Trove token, so that secret scanners and humans
// can recognise one.
const TokenPrefix = "trove_"

// NewToken returns a fresh token secret (256 random bits) and the hash
// under which it is stored.
func NewToken() (secret, hash string, err error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	secret = TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return secret, HashToken(secret), nil
}

// NewID returns a short random identifier for listing and revoking tokens.
func NewID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return "tok_" + hex.EncodeToString(b[:]), nil
}

// HashToken returns the hex SHA-256 of a token secret. Tokens carry 256
// random bits, so a fast hash is enough: there is nothing to brute-force.
func HashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// Principal is who a request acts as. The zero Principal is anonymous.
type Principal struct {
	Token registry.Token
}

// Anonymous reports whether no token was presented.
func (p Principal) Anonymous() bool { return p.Token.ID == "" }

// Require returns nil if p holds scope on namespace (namespace "" asks for
// a global right), Unauthenticated if p is anonymous, and Forbidden otherwise.
func (p Principal) Require(scope registry.Scope, namespace string, now time.Time) error {
	if p.Anonymous() {
		return registry.Errorf(registry.Unauthenticated, "this request needs a token: pass one with \"Authorization: Bearer <token>\" (TROVE_TOKEN for the CLI)")
	}
	if p.Token.Allows(scope, namespace, now) {
		return nil
	}
	where := "every namespace"
	if namespace != "" {
		where = "namespace " + namespace
	}
	return registry.Errorf(registry.Forbidden, "token %s does not grant %s on %s", p.Token.ID, scope, where)
}

// Authenticator turns bearer tokens into Principals.
type Authenticator struct {
	tokens store.Tokens
	now    func() time.Time
}

// NewAuthenticator returns an Authenticator backed by tokens.
func NewAuthenticator(tokens store.Tokens) *Authenticator {
	return &Authenticator{tokens: tokens, now: time.Now}
}

// Authenticate returns the Principal for r. No Authorization header gives
// the anonymous Principal; a malformed, unknown, revoked or expired token
// is an Unauthenticated error. The token is never logged or echoed.
func (a *Authenticator) Authenticate(r *http.Request) (Principal, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return Principal{}, nil
	}
	scheme, secret, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || !strings.HasPrefix(secret, TokenPrefix) || len(secret) > 128 {
		return Principal{}, registry.Errorf(registry.Unauthenticated, "malformed Authorization header: want \"Bearer trove_...\"")
	}
	hash := HashToken(secret)
	t, err := a.tokens.TokenByHash(r.Context(), hash)
	if registry.IsKind(err, registry.NotFound) {
		return Principal{}, registry.Errorf(registry.Unauthenticated, "the token is not valid")
	}
	if err != nil {
		return Principal{}, err
	}
	if subtle.ConstantTimeCompare([]byte(t.Hash), []byte(hash)) != 1 {
		return Principal{}, registry.Errorf(registry.Unauthenticated, "the token is not valid")
	}
	now := a.now()
	if !t.RevokedAt.IsZero() {
		return Principal{}, registry.Errorf(registry.Unauthenticated, "token %s has been revoked", t.ID)
	}
	if !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt) {
		return Principal{}, registry.Errorf(registry.Unauthenticated, "token %s expired at %s", t.ID, t.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return Principal{Token: t}, nil
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the Principal stored in ctx, or the anonymous one.
func FromContext(ctx context.Context) Principal {
	p, _ := ctx.Value(principalKey{}).(Principal)
	return p
}

// Bootstrap creates the first global admin token when the index holds no
// token at all, and returns its secret; it returns "" when tokens exist.
// The secret is shown to the operator once and only its hash is stored.
func Bootstrap(ctx context.Context, tokens store.Tokens, now time.Time) (string, error) {
	n, err := tokens.CountTokens(ctx)
	if err != nil || n > 0 {
		return "", err
	}
	secret, hash, err := NewToken()
	if err != nil {
		return "", err
	}
	id, err := NewID()
	if err != nil {
		return "", err
	}
	err = tokens.CreateToken(ctx, registry.Token{
		ID: id, Hash: hash, Scopes: []registry.Scope{registry.ScopeAdmin},
		Description: "first admin token, created at start-up", CreatedAt: now,
	})
	if err != nil {
		return "", err
	}
	return secret, nil
}
