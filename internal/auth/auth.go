// Package auth owns access control: how tokens are generated and hashed,
// how passwords are hashed (argon2id), how a request's bearer token
// becomes a Principal (a token, and for a personal token its user and
// their roles), and the one decision whether a Principal may act on a
// namespace (Principal.Allows, with public namespaces' open reads in
// Access).
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
	"sync"
	"sync/atomic"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/reqtime"
	"trove.dev/trove/internal/store"
)

// TokenPrefix starts every Trove token, so that secret scanners and humans
// can recognise one.
const TokenPrefix = "trove_"

// SessionPrefix starts the secret of every web session. It is not
// TokenPrefix: the management API and the protocols refuse a session's
// secret as a bearer token, and the web UI's cookie takes nothing else.
// The stored hash covers the prefix, so no bearer token's secret ever
// finds a session's row, nor a session's secret another token's row.
const SessionPrefix = "trovesession_"

// maxSecretLength bounds a presented secret before it is hashed.
const maxSecretLength = 128

// NewToken returns a fresh token secret (256 random bits) and the hash
// under which it is stored.
func NewToken() (secret, hash string, err error) { return newSecret(TokenPrefix) }

// NewSessionToken returns a fresh web session secret (SessionPrefix and
// 256 random bits) and the hash under which it is stored.
func NewSessionToken() (secret, hash string, err error) { return newSecret(SessionPrefix) }

func newSecret(prefix string) (secret, hash string, err error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", err
	}
	secret = prefix + base64.RawURLEncoding.EncodeToString(b[:])
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
	// User is the user a personal token acts for; zero for a service
	// token and for anonymous requests.
	User registry.User
	// Roles maps each namespace the user is a member of to their role.
	Roles map[string]registry.Role
	// Session reports a web session: the token was presented as a
	// session secret (SessionPrefix) by the web UI, never as a bearer
	// token. Only the Authenticator sets it.
	Session bool
}

// Anonymous reports whether no token was presented.
func (p Principal) Anonymous() bool { return p.Token.ID == "" }

// Actor names p for the audit log: "user:<name>" for a personal token,
// "token:<id>" for a service token, "anonymous" without one.
func (p Principal) Actor() string {
	switch {
	case p.Token.User != "":
		return "user:" + p.Token.User
	case p.Token.ID != "":
		return "token:" + p.Token.ID
	}
	return "anonymous"
}

// Allows reports whether p holds scope on namespace at now (namespace ""
// asks for a global right). This is the one place rights are decided:
// the token must allow it (its scopes, namespace binding and lifetime),
// and a personal token's user must hold it too: a global admin holds
// every right, any other user the scope of their role in the namespace.
// A disabled user holds none. Public namespaces are not special here; see
// Access.CanRead.
func (p Principal) Allows(scope registry.Scope, namespace string, now time.Time) bool {
	if p.Anonymous() || !p.Token.Allows(scope, namespace, now) {
		return false
	}
	if p.Token.User == "" {
		return true // a service token: its scopes are its rights
	}
	if p.User.Name != p.Token.User || p.User.Disabled {
		return false
	}
	if p.User.Admin {
		return true
	}
	role, ok := p.Roles[namespace]
	return ok && namespace != "" && role.Scope().Includes(scope)
}

// Require returns nil if p holds scope on namespace (namespace "" asks for
// a global right), Unauthenticated if p is anonymous, and Forbidden otherwise.
func (p Principal) Require(scope registry.Scope, namespace string, now time.Time) error {
	if p.Anonymous() {
		return registry.Errorf(registry.Unauthenticated, "this request needs a token: pass one with \"Authorization: Bearer <token>\" (TROVE_TOKEN for the CLI)")
	}
	if p.Allows(scope, namespace, now) {
		return nil
	}
	where := "every namespace"
	if namespace != "" {
		where = "namespace " + namespace
	}
	if p.Token.User != "" {
		return registry.Errorf(registry.Forbidden, "token %s of user %s does not grant %s on %s", p.Token.ID, p.Token.User, scope, where)
	}
	return registry.Errorf(registry.Forbidden, "token %s does not grant %s on %s", p.Token.ID, scope, where)
}

// DefaultCacheTTL is how long AuthenticateCached and Access reuse what
// they read from the index. Changes made through this process take effect
// at once (they invalidate the caches); changes made through another
// replica sharing the index take effect within this time.
const DefaultCacheTTL = 5 * time.Second

// maxCachedPrincipals bounds the principal cache; when it is full it is
// emptied, so that a flood of made-up tokens cannot grow it.
const maxCachedPrincipals = 10000

// Authenticator turns bearer tokens into Principals.
type Authenticator struct {
	tokens  store.Tokens
	users   store.Users       // nil if the index does not store users
	members store.Memberships // nil if the index does not store memberships
	clock   reqtime.Clock     // set by SetClock: it takes precedence over a request's time
	ttl     time.Duration

	mu    sync.RWMutex
	cache map[[sha256.Size]byte]cachedPrincipal

	passwords atomic.Pointer[PasswordLimiter]
}

type cachedPrincipal struct {
	p     Principal
	actor string // p.Actor(), made once per lookup
	err   error  // the token is unknown, or its user disabled
	until int64  // Unix nanoseconds
}

// NewAuthenticator returns an Authenticator backed by tokens. If tokens
// also implements store.Users and store.Memberships (as a store.Index
// does), personal tokens are resolved to their user's rights; otherwise
// they are refused.
func NewAuthenticator(tokens store.Tokens) *Authenticator {
	a := &Authenticator{tokens: tokens, ttl: DefaultCacheTTL, cache: map[[sha256.Size]byte]cachedPrincipal{}}
	a.users, _ = tokens.(store.Users)
	a.members, _ = tokens.(store.Memberships)
	a.passwords.Store(NewPasswordLimiter(PasswordLimits{}))
	return a
}

// PasswordLimiter returns the rate limiter of password checks that every
// user-facing check of this process shares (the login page and password
// changes through the API). It has the default limits unless
// SetPasswordLimiter replaced it.
func (a *Authenticator) PasswordLimiter() *PasswordLimiter { return a.passwords.Load() }

// SetPasswordLimiter replaces the limiter PasswordLimiter returns. Call it
// before serving (login.New does, with the login service's limits).
func (a *Authenticator) SetPasswordLimiter(l *PasswordLimiter) { a.passwords.Store(l) }

// SetCacheTTL changes how long AuthenticateCached reuses a lookup (0
// disables the cache). Call it before serving.
func (a *Authenticator) SetCacheTTL(ttl time.Duration) { a.ttl = max(ttl, 0) }

// SetClock makes the Authenticator read the time from now (for tests),
// also where it is handed the time a request arrived
// (Access.ProtocolReadAt). Call it before serving.
func (a *Authenticator) SetClock(now func() time.Time) { a.clock = reqtime.ClockFrom(now) }

// Now returns the Authenticator's current time.
func (a *Authenticator) Now() time.Time { return a.clock.Now() }

// bearer extracts the secret of r's bearer token: "" without an
// Authorization header, an Unauthenticated error for a malformed one.
func bearer(r *http.Request) (string, error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", nil
	}
	scheme, secret, ok := strings.Cut(h, " ")
	if ok && strings.HasPrefix(secret, SessionPrefix) {
		return "", registry.Errorf(registry.Unauthenticated, "a web session's cookie is no API token: create a token on the web UI's tokens page or with trove token create")
	}
	if !ok || !strings.EqualFold(scheme, "Bearer") || !strings.HasPrefix(secret, TokenPrefix) || len(secret) > maxSecretLength {
		return "", registry.Errorf(registry.Unauthenticated, "malformed Authorization header: want \"Bearer trove_...\"")
	}
	return secret, nil
}

// Authenticate returns the Principal for r, reading the index. No
// Authorization header gives the anonymous Principal; a malformed,
// unknown, revoked or expired token, or one of a disabled user, is an
// Unauthenticated error. The token is never logged or echoed.
func (a *Authenticator) Authenticate(r *http.Request) (Principal, error) {
	secret, err := bearer(r)
	if secret == "" || err != nil {
		return Principal{}, err
	}
	p, err := a.load(r.Context(), HashToken(secret))
	if err != nil {
		return Principal{}, err
	}
	return p, active(p.Token, a.clock.Now())
}

// AuthenticateCached is Authenticate reusing lookups of the same token for
// up to the cache TTL, for the protocol routes that clients call many
// times per command. Revocation, expiry and changes of users and
// memberships made through this process apply at once (see Invalidate);
// expiry is always checked against the current time.
func (a *Authenticator) AuthenticateCached(r *http.Request) (Principal, error) {
	secret, err := bearer(r)
	if secret == "" || err != nil {
		return Principal{}, err
	}
	return a.cached(r.Context(), secret)
}

// authenticateCachedActor is AuthenticateCached that also returns the
// principal's Actor, made once per cached lookup rather than per
// request (registry.AnonymousConsumer when r presents no token).
func (a *Authenticator) authenticateCachedActor(r *http.Request, now time.Time) (Principal, string, error) {
	secret, err := bearer(r)
	if secret == "" || err != nil {
		return Principal{}, registry.AnonymousConsumer, err
	}
	return a.cachedActorAt(r.Context(), secret, now)
}

// AuthenticateSession returns the Principal of a web session's secret
// (the web UI's cookie), reusing lookups as AuthenticateCached does.
// Only a session's secret (SessionPrefix), made by a sign-in, is taken:
// a bearer token placed in the cookie is Unauthenticated without a
// lookup, as is an unknown, revoked or expired session, or one of a
// disabled user.
func (a *Authenticator) AuthenticateSession(ctx context.Context, secret string) (Principal, error) {
	return a.session(ctx, secret, true)
}

// AuthenticateSessionNow is AuthenticateSession reading the index
// afresh, without the cache: the web UI's forms act with it, so that a
// right removed a moment ago, on any replica, counts.
func (a *Authenticator) AuthenticateSessionNow(ctx context.Context, secret string) (Principal, error) {
	return a.session(ctx, secret, false)
}

func (a *Authenticator) session(ctx context.Context, secret string, useCache bool) (Principal, error) {
	if !strings.HasPrefix(secret, SessionPrefix) || len(secret) > maxSecretLength {
		return Principal{}, registry.Errorf(registry.Unauthenticated, "the web session is not valid: sign in again")
	}
	var p Principal
	var err error
	if useCache {
		p, err = a.cached(ctx, secret)
	} else if p, err = a.load(ctx, HashToken(secret)); err == nil {
		err = active(p.Token, a.clock.Now())
	}
	if err != nil {
		return Principal{}, err
	}
	if p.Token.User == "" || p.Token.Description != SessionDescription {
		// Only Issue makes session secrets, always for a user's session.
		return Principal{}, registry.Errorf(registry.Unauthenticated, "the web session is not valid: sign in again")
	}
	p.Session = true
	return p, nil
}

// cached is AuthenticateCached for a secret already taken from its
// carrier.
func (a *Authenticator) cached(ctx context.Context, secret string) (Principal, error) {
	p, _, err := a.cachedActor(ctx, secret)
	return p, err
}

// cachedActor is cached that also returns the principal's Actor.
func (a *Authenticator) cachedActor(ctx context.Context, secret string) (Principal, string, error) {
	return a.cachedActorAt(ctx, secret, a.clock.Now())
}

// cachedActorAt is cachedActor at now (the current time, or the time
// the request arrived).
func (a *Authenticator) cachedActorAt(ctx context.Context, secret string, now time.Time) (Principal, string, error) {
	if len(secret) > maxSecretLength {
		return Principal{}, "", registry.Errorf(registry.Unauthenticated, "the token is not valid")
	}
	if a.ttl <= 0 {
		p, err := a.load(ctx, HashToken(secret))
		if err != nil {
			return Principal{}, "", err
		}
		return p, p.Actor(), active(p.Token, now)
	}
	// Hash from a stack buffer (bearer bounds the secret to 128 bytes):
	// the cache hit path does not allocate.
	var buf [128]byte
	key := sha256.Sum256(buf[:copy(buf[:], secret)])
	a.mu.RLock()
	c, ok := a.cache[key]
	a.mu.RUnlock()
	if !ok || now.UnixNano() >= c.until {
		p, err := a.load(ctx, hex.EncodeToString(key[:]))
		if err != nil && !registry.IsKind(err, registry.Unauthenticated) {
			return Principal{}, "", err // a failing index is not cached
		}
		c = cachedPrincipal{p: p, actor: p.Actor(), err: err, until: now.Add(a.ttl).UnixNano()}
		a.mu.Lock()
		if len(a.cache) >= maxCachedPrincipals {
			clear(a.cache)
		}
		a.cache[key] = c
		a.mu.Unlock()
	}
	if c.err != nil {
		return Principal{}, "", c.err
	}
	return c.p, c.actor, active(c.p.Token, now)
}

// Invalidate forgets every cached lookup. Call it after revoking or
// expiring a token, or changing a user or a membership.
func (a *Authenticator) Invalidate() {
	a.mu.Lock()
	clear(a.cache)
	a.mu.Unlock()
}

// load reads the token stored under hash and, for a personal token, its
// user and their memberships. It does not check the token's lifetime.
func (a *Authenticator) load(ctx context.Context, hash string) (Principal, error) {
	t, err := a.tokens.TokenByHash(ctx, hash)
	if registry.IsKind(err, registry.NotFound) {
		return Principal{}, registry.Errorf(registry.Unauthenticated, "the token is not valid")
	}
	if err != nil {
		return Principal{}, err
	}
	if subtle.ConstantTimeCompare([]byte(t.Hash), []byte(hash)) != 1 {
		return Principal{}, registry.Errorf(registry.Unauthenticated, "the token is not valid")
	}
	p := Principal{Token: t}
	if t.User == "" {
		return p, nil
	}
	if a.users == nil || a.members == nil {
		return Principal{}, registry.Errorf(registry.Unauthenticated, "token %s belongs to a user, but this index stores no users", t.ID)
	}
	if p.User, err = a.users.GetUser(ctx, t.User); err != nil {
		if registry.IsKind(err, registry.NotFound) {
			return Principal{}, registry.Errorf(registry.Unauthenticated, "the user of token %s no longer exists", t.ID)
		}
		return Principal{}, err
	}
	if p.User.Disabled {
		return Principal{}, registry.Errorf(registry.Unauthenticated, "user %s is disabled: token %s is refused", t.User, t.ID)
	}
	ms, err := a.members.ListMemberships(ctx, t.User, "")
	if err != nil {
		return Principal{}, err
	}
	p.Roles = make(map[string]registry.Role, len(ms))
	for _, m := range ms {
		p.Roles[m.Namespace] = m.Role
	}
	return p, nil
}

// active returns an Unauthenticated error if t is revoked or expired at now.
func active(t registry.Token, now time.Time) error {
	if !t.RevokedAt.IsZero() {
		return registry.Errorf(registry.Unauthenticated, "token %s has been revoked", t.ID)
	}
	if !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt) {
		return registry.Errorf(registry.Unauthenticated, "token %s expired at %s", t.ID, t.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return nil
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
	if n, err := tokens.CountTokens(ctx); err != nil || n > 0 {
		return "", err // the common case, without taking a lock
	}
	t, secret, err := Issue(OperatorParent(), Request{
		Scopes: []registry.Scope{registry.ScopeAdmin}, Description: "first admin token, created at start-up",
	}, now)
	if err != nil {
		return "", err
	}
	created, err := tokens.CreateFirstToken(ctx, t)
	if err != nil || !created {
		return "", err // another replica starting at the same time won
	}
	return secret, nil
}
