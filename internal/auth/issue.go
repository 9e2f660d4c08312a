package auth

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
)

// The token policy. Every token Trove hands out is minted by Issue under
// a Parent, the credential that asks for it, and Issue gives a token
// nothing its parent does not hold:
//
//   - it never outlives the parent: its expiry is at most the parent's
//     (a token asked for without an expiry gets the parent's);
//   - it never out-scopes the parent: its scopes are included in the
//     parent's, its namespaces are some of the parent's (a bound parent
//     mints no global token);
//   - the parent's role allows the kind of token: a personal token of
//     another user needs a global admin, a service token admin on each
//     of its namespaces (a global one a global admin), a keyless
//     exchange mints only what its trust policy says, and a web session
//     comes only from a sign-in.
//
// The parents are an operator with the index in hand (the first admin
// token at start-up, `trove admin token`), a sign-in (the login.v1 code
// exchange, the web UI's password form and single sign-on), a token
// calling the management API (`trove token create`, the Terraform
// provider, and the web UI's forms, which call it as the session), and a
// trust policy (keyless publishing).

// MaxTokenLifetime bounds an explicit expiry: a token that should never
// expire is created without one.
const MaxTokenLifetime = 100 * 365 * 24 * time.Hour

// SessionDescription is the description of every web session's token;
// no other token may carry it, so that token lists can tell sessions.
const SessionDescription = "web session"

type parentKind int

const (
	parentOperator parentKind = iota + 1
	parentSignIn
	parentToken
	parentTrust
)

// Parent is the credential a new token is minted under. Make one with
// OperatorParent, SignInParent, TokenParent or TrustParent; the zero
// Parent mints nothing.
type Parent struct {
	kind parentKind
	p    Principal            // parentToken
	user registry.User        // parentSignIn
	pol  registry.TrustPolicy // parentTrust
	// until is the latest expiry the parent gives, zero for none; ttl is
	// the lifetime it was counted from (for messages), zero for a token.
	until time.Time
	ttl   time.Duration
}

// OperatorParent is whoever holds the index itself: the first admin
// token created at start-up and `trove admin token`. Only the rules
// every token follows bound it.
func OperatorParent() Parent { return Parent{kind: parentOperator} }

// SignInParent is user having just signed in (password or single
// sign-on): it mints tokens of user alone, living at most ttl from now
// (--login-token-ttl), and it alone mints web sessions.
func SignInParent(user registry.User, ttl time.Duration, now time.Time) Parent {
	return Parent{kind: parentSignIn, user: user, until: now.Add(ttl), ttl: ttl}
}

// TokenParent is the token p calls the management API with. A web
// session (p.Session) stands for the sign-in that opened it: its tokens
// live at most signInTTL from now, as a sign-in's do. Any other token's
// live at most as long as it.
func TokenParent(p Principal, signInTTL time.Duration, now time.Time) Parent {
	if p.Session {
		return Parent{kind: parentToken, p: p, until: now.Add(signInTTL), ttl: signInTTL}
	}
	return Parent{kind: parentToken, p: p, until: p.Token.ExpiresAt}
}

// TrustParent is a trust policy of keyless publishing that accepted an
// ID token: it mints service tokens of its namespace with at most its
// scope (never admin), living at most its TokenTTL from now.
func TrustParent(pol registry.TrustPolicy, now time.Time) Parent {
	return Parent{kind: parentTrust, pol: pol, until: now.Add(pol.TokenTTL), ttl: pol.TokenTTL}
}

// Request is a token asked of Issue.
type Request struct {
	// ID fixes the token's ID (login.v1 fixes it when the code is
	// issued); empty means a new one.
	ID string
	// User makes a personal token of that user; empty a service token.
	User string
	// Namespaces bind the token; none makes a global token.
	Namespaces []string
	Scopes     []registry.Scope
	// Description says what the token is for; a session's is always
	// SessionDescription.
	Description string
	// ExpiresAt is when the token stops working; zero means as long as
	// the parent allows (never, under a parent that does not expire).
	ExpiresAt time.Time
	// Session asks for a web session: a token whose secret starts with
	// SessionPrefix, which only the web UI's cookie takes.
	Session bool
}

// Issue checks req against the token policy under parent at now and
// returns the token to store, with its ID, hash, creation and expiry
// set, and its secret (to show once). A refusal is Invalid for a
// malformed request and Forbidden for one the parent may not make, with
// a message naming the rule. Issue stores nothing: the caller stores
// the token (store.Tokens.CreateToken) and audits it.
func Issue(parent Parent, req Request, now time.Time) (registry.Token, string, error) {
	t, err := parent.check(req, now)
	if err != nil {
		return registry.Token{}, "", err
	}
	newSecret := NewToken
	if req.Session {
		newSecret = NewSessionToken
	}
	secret, hash, err := newSecret()
	if err != nil {
		return registry.Token{}, "", registry.Wrap(registry.Internal, err, "creating a token")
	}
	if t.ID == "" {
		if t.ID, err = NewID(); err != nil {
			return registry.Token{}, "", registry.Wrap(registry.Internal, err, "creating a token")
		}
	}
	t.Hash = hash
	return t, secret, nil
}

// check applies the policy: the rules of every token, then those of the
// parent, then the parent's expiry.
func (pa Parent) check(req Request, now time.Time) (registry.Token, error) {
	t, err := shape(req, now)
	if err != nil {
		return registry.Token{}, err
	}
	switch pa.kind {
	case parentOperator:
		err = pa.operator(t, req)
	case parentSignIn:
		err = pa.signIn(t, req)
	case parentToken:
		err = pa.token(t, req, now)
	case parentTrust:
		err = pa.trust(t, req)
	default:
		err = registry.Errorf(registry.Internal, "a token needs a parent credential")
	}
	if err != nil {
		return registry.Token{}, err
	}
	if !pa.until.IsZero() {
		switch {
		case t.ExpiresAt.IsZero():
			t.ExpiresAt = pa.until.UTC()
		case t.ExpiresAt.After(pa.until):
			return registry.Token{}, registry.Errorf(registry.Forbidden, "%s: the new token cannot outlive it (asked for %s)",
				pa.lifeText(), t.ExpiresAt.Format(time.RFC3339))
		}
	}
	return t, nil
}

// shape checks what every token must be, whoever mints it, and returns
// the token normalized: scopes known and without duplicates, namespaces
// parsed, sorted and at most MaxTokenNamespaces, an expiry in the future
// and within MaxTokenLifetime.
func shape(req Request, now time.Time) (registry.Token, error) {
	t := registry.Token{ID: req.ID, Description: req.Description, CreatedAt: now.UTC()}
	if len(req.Scopes) == 0 {
		return t, registry.Errorf(registry.Invalid, "a token needs at least one scope: read, publish or admin")
	}
	for _, s := range req.Scopes {
		scope, err := registry.ParseScope(string(s))
		if err != nil {
			return t, err
		}
		if !slices.Contains(t.Scopes, scope) {
			t.Scopes = append(t.Scopes, scope)
		}
	}
	var err error
	if t.Namespaces, err = registry.ParseNamespaces(req.Namespaces); err != nil {
		return t, err
	}
	if len(t.Namespaces) > registry.MaxTokenNamespaces {
		return t, registry.Errorf(registry.Invalid, "a token is bound to at most %d namespaces, not %d: make it global, or use several tokens",
			registry.MaxTokenNamespaces, len(t.Namespaces))
	}
	if req.User != "" {
		if t.User, err = registry.ParseUserName(req.User); err != nil {
			return t, err
		}
	}
	if err := registry.DescriptionLimit.Check(req.Description); err != nil {
		return t, err
	}
	if req.Session {
		t.Description = SessionDescription
	} else if strings.TrimSpace(req.Description) == SessionDescription {
		return t, registry.Errorf(registry.Invalid, "the description %q is kept for web sessions: describe the token otherwise", SessionDescription)
	}
	if !req.ExpiresAt.IsZero() {
		t.ExpiresAt = req.ExpiresAt.UTC()
		if !t.ExpiresAt.After(now) {
			return t, registry.Errorf(registry.Invalid, "expires_at %s is not in the future", t.ExpiresAt.Format(time.RFC3339))
		}
		if t.ExpiresAt.After(now.Add(MaxTokenLifetime)) {
			return t, registry.Errorf(registry.Invalid, "expires_at %s is more than %s ahead: leave the expiry out for a token that does not expire",
				t.ExpiresAt.Format(time.RFC3339), lifetimeText(MaxTokenLifetime))
		}
	}
	return t, nil
}

func (pa Parent) operator(_ registry.Token, req Request) error {
	if req.Session {
		return errSessionFromSignIn
	}
	return nil
}

var errSessionFromSignIn = registry.Errorf(registry.Forbidden,
	"a web session comes only from a sign-in (the sign-in page's password form or single sign-on), never from a token")

func (pa Parent) signIn(t registry.Token, req Request) error {
	if pa.user.Disabled {
		return registry.Errorf(registry.Forbidden, "user %s is disabled", pa.user.Name)
	}
	if t.User != pa.user.Name {
		return registry.Errorf(registry.Forbidden, "a sign-in of user %s gives tokens of user %s only", pa.user.Name, pa.user.Name)
	}
	if req.Session && (!t.Global() || len(t.Scopes) != 1 || t.Scopes[0] != registry.ScopeAdmin || req.ExpiresAt.IsZero()) {
		return registry.Errorf(registry.Invalid, "a web session carries all of its user's rights and an expiry")
	}
	return nil
}

func (pa Parent) token(t registry.Token, req Request, now time.Time) error {
	p := pa.p
	if p.Anonymous() {
		return registry.Errorf(registry.Unauthenticated, "creating a token needs a token: pass one with \"Authorization: Bearer <token>\" (TROVE_TOKEN for the CLI)")
	}
	if err := active(p.Token, now); err != nil {
		return err
	}
	if req.Session {
		return errSessionFromSignIn
	}
	// The role: who may mint this kind of token at all.
	switch {
	case t.User != "" && !p.Allows(registry.ScopeAdmin, "", now):
		if p.Token.User == "" {
			return registry.Errorf(registry.Forbidden, "only global admins create personal tokens for users; a user creates their own with a personal token")
		}
		if p.Token.User != t.User {
			return registry.Errorf(registry.Forbidden, "user %s cannot create tokens for user %s: only global admins can", p.Token.User, t.User)
		}
	case t.User == "" && t.Global():
		// A global service token: global admins only.
		if err := p.Require(registry.ScopeAdmin, "", now); err != nil {
			return err
		}
	case t.User == "":
		// A service token bound to namespaces: admin on every one.
		for _, ns := range t.Namespaces {
			if err := p.Require(registry.ScopeAdmin, ns, now); err != nil {
				return err
			}
		}
	}
	// The scopes: none wider than the parent's.
	top := widest(p.Token.Scopes)
	for _, s := range t.Scopes {
		if !top.Includes(s) {
			return registry.Errorf(registry.Forbidden, "token %s grants at most %s: it cannot create a token with %s", p.Token.ID, top, s)
		}
	}
	// The namespaces: some of the parent's.
	if !p.Token.Global() {
		if t.Global() {
			return registry.Errorf(registry.Forbidden, "token %s is bound to namespaces %s: the new token must be bound to some of them too",
				p.Token.ID, strings.Join(p.Token.Namespaces, ","))
		}
		for _, ns := range t.Namespaces {
			if !p.Token.Covers(ns) {
				return registry.Errorf(registry.Forbidden, "token %s is bound to namespaces %s: the new token cannot be bound to %s",
					p.Token.ID, strings.Join(p.Token.Namespaces, ","), ns)
			}
		}
	}
	return nil
}

func (pa Parent) trust(t registry.Token, req Request) error {
	if req.Session {
		return errSessionFromSignIn
	}
	if t.User != "" {
		return registry.Errorf(registry.Forbidden, "trust policy %s gives service tokens only", pa.pol.ID)
	}
	if len(t.Namespaces) != 1 || t.Namespaces[0] != pa.pol.Namespace {
		return registry.Errorf(registry.Forbidden, "trust policy %s gives tokens of namespace %s only", pa.pol.ID, pa.pol.Namespace)
	}
	for _, s := range t.Scopes {
		if s == registry.ScopeAdmin || !pa.pol.Scope.Includes(s) {
			return registry.Errorf(registry.Forbidden, "trust policy %s gives at most %s (never admin): not %s", pa.pol.ID, pa.pol.Scope, s)
		}
	}
	return nil
}

// lifeText says what bounds the parent's tokens' expiry.
func (pa Parent) lifeText() string {
	until := pa.until.UTC().Format(time.RFC3339)
	switch {
	case pa.kind == parentToken && pa.ttl > 0:
		return "a token created in a web session lives at most " + lifetimeText(pa.ttl) + ", as one of a sign-in (--login-token-ttl): until " + until
	case pa.kind == parentToken:
		return "token " + pa.p.Token.ID + " expires at " + until
	case pa.kind == parentSignIn:
		return "a sign-in gives tokens of at most " + lifetimeText(pa.ttl) + " (--login-token-ttl): until " + until
	case pa.kind == parentTrust:
		return "trust policy " + pa.pol.ID + " gives tokens of at most " + lifetimeText(pa.ttl) + ": until " + until
	}
	return "the parent credential expires at " + until
}

// widest returns the widest of scopes ("" for none).
func widest(scopes []registry.Scope) registry.Scope {
	var top registry.Scope
	for _, s := range scopes {
		if top == "" || s.Includes(top) {
			top = s
		}
	}
	return top
}

// lifetimeText says a duration for people: whole days, else Go's form.
func lifetimeText(d time.Duration) string {
	const day = 24 * time.Hour
	plural := func(n int, unit string) string {
		if n == 1 {
			return "1 " + unit
		}
		return strconv.Itoa(n) + " " + unit + "s"
	}
	switch {
	case d >= 365*day && d%(365*day) == 0:
		return plural(int(d/(365*day)), "year")
	case d >= day && d%day == 0:
		return plural(int(d/day), "day")
	}
	return d.String()
}
