package operations

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// TokenRequest is a token to create, as an entrance received it.
type TokenRequest struct {
	// User makes a personal token of that user; "" a service token.
	User string
	// Namespaces binds the token; none makes a global token.
	Namespaces []string
	// Scopes as written ("read", "publish", "admin").
	Scopes      []string
	Description string
	// ExpiresAt is when the token stops working; zero for never (which
	// the token policy may refuse).
	ExpiresAt time.Time
}

// CreateToken creates a token under a's own credential: never longer
// lived nor wider than it (auth.Issue under auth.TokenParent). A personal
// token's user must exist; each namespace must exist, and one a user may
// not read answers as absent. It returns the token and its secret, which
// is shown once and never stored.
func (o *Operations) CreateToken(ctx context.Context, a Actor, req TokenRequest) (registry.Token, string, error) {
	if err := registry.DescriptionLimit.CheckText(req.Description); err != nil {
		return registry.Token{}, "", err
	}
	tr := auth.Request{User: req.User, Namespaces: req.Namespaces, Description: req.Description, ExpiresAt: req.ExpiresAt}
	for _, s := range req.Scopes {
		scope, err := registry.ParseScope(s)
		if err != nil {
			return registry.Token{}, "", err
		}
		tr.Scopes = append(tr.Scopes, scope)
	}
	p := a.Principal
	now := o.opt.Now()
	t, secret, err := auth.Issue(auth.TokenParent(p, o.opt.SignInTokenTTL, now), tr, now)
	if err != nil {
		return registry.Token{}, "", err
	}
	if t.User != "" {
		if !p.Allows(registry.ScopeAdmin, "", now) {
			// A namespace the user may not read answers as one that does
			// not exist, so that binding tokens does not reveal private
			// namespaces.
			for _, ns := range t.Namespaces {
				if ok, err := o.opt.Access.CanRead(ctx, p, ns); err != nil || !ok {
					if err != nil {
						return registry.Token{}, "", err
					}
					return registry.Token{}, "", registry.Errorf(registry.NotFound, "namespace %q not found", ns)
				}
			}
		}
		if _, err := o.opt.Index.GetUser(ctx, t.User); err != nil {
			return registry.Token{}, "", err
		}
	}
	for _, ns := range t.Namespaces {
		if _, err := o.opt.Index.GetNamespace(ctx, ns); err != nil {
			return registry.Token{}, "", err
		}
	}
	fx := o.tokenEffects(a, registry.AuditTokenCreate, t, describeToken(t))
	if err := o.opt.Index.CreateToken(store.WithEffects(ctx, fx), t); err != nil {
		return registry.Token{}, "", err
	}
	o.done(ctx, fx)
	return t, secret, nil
}

// OperatorToken creates a global admin token for the operator of a data
// directory (a.Operator, `trove admin token`), audited as made by the
// operator from origin ("by root on host db1"). expires <= 0 makes a
// token that never expires.
func (o *Operations) OperatorToken(ctx context.Context, a Actor, description, origin string, expires time.Duration) (registry.Token, string, error) {
	if a.Operator == "" {
		return registry.Token{}, "", registry.Errorf(registry.Forbidden, "only the operator of the data directory creates admin tokens this way")
	}
	if err := registry.DescriptionLimit.CheckText(description); err != nil {
		return registry.Token{}, "", err
	}
	now := o.opt.Now()
	req := auth.Request{Scopes: []registry.Scope{registry.ScopeAdmin}, Description: description}
	if req.Description == "" {
		req.Description = "created with trove admin token " + origin
	}
	if expires > 0 {
		req.ExpiresAt = now.Add(expires).Truncate(time.Second)
	}
	t, secret, err := auth.Issue(auth.OperatorParent(), req, now)
	if err != nil {
		return registry.Token{}, "", err
	}
	details := "global admin token (admin on every namespace) created with trove admin token " + origin
	if !t.ExpiresAt.IsZero() {
		details += ", expires " + t.ExpiresAt.Format(time.RFC3339)
	}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Time: now.UTC(), Action: registry.AuditTokenCreate, Target: t.ID, Details: details}})
	if err := o.opt.Index.CreateToken(store.WithEffects(ctx, fx), t); err != nil {
		return registry.Token{}, "", fmt.Errorf("storing the token: %w", err)
	}
	o.done(ctx, fx)
	return t, secret, nil
}

// Session is a web session to open for a user who has just signed in.
type Session struct {
	User registry.User
	// Via names the identity provider of a single sign-on; "" for the
	// password form.
	Via string
	// Life is how long the session lasts; never longer than a sign-in's
	// tokens (SignInTokenTTL).
	Life time.Duration
	// Addr is the browser's remote address.
	Addr string
}

// OpenSession mints the token of a web session (auth.Issue under
// auth.SignInParent: only a sign-in makes sessions) and audits the
// sign-in. It returns the token and its secret, the session cookie.
func (o *Operations) OpenSession(ctx context.Context, s Session) (registry.Token, string, error) {
	now := o.opt.Now()
	life := min(s.Life, o.opt.SignInTokenTTL)
	t, secret, err := auth.Issue(auth.SignInParent(s.User, o.opt.SignInTokenTTL, now), auth.Request{
		User: s.User.Name, Scopes: []registry.Scope{registry.ScopeAdmin}, ExpiresAt: now.Add(life), Session: true,
	}, now)
	if err != nil {
		return registry.Token{}, "", err
	}
	details := "web session for " + LifetimeText(life)
	if s.Via != "" {
		details += " through identity provider " + s.Via
	}
	fx := o.effects(ctx, Actor{Addr: s.Addr}, []registry.AuditEvent{{Action: registry.AuditLoginSuccess,
		Actor: "user:" + s.User.Name, Target: t.ID, Details: details}})
	if err := o.opt.Index.CreateToken(store.WithEffects(ctx, fx), t); err != nil {
		return registry.Token{}, "", err
	}
	o.done(ctx, fx)
	return t, secret, nil
}

// SignOut revokes the web session a acts as.
func (o *Operations) SignOut(ctx context.Context, a Actor) error {
	if !a.Principal.Session {
		return registry.Errorf(registry.Invalid, "only a web session signs out; revoke a token instead")
	}
	id := a.Principal.Token.ID
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditTokenRevoke, Target: id, Details: "signed out of the web UI"}})
	if err := o.opt.Index.RevokeToken(store.WithEffects(ctx, fx), id, o.opt.Now().UTC()); err != nil {
		return err
	}
	o.done(ctx, fx)
	return nil
}

// Tokens lists the tokens bound to namespace ("" for every token), for
// its admins (global admins for ""), or the personal tokens of user, for
// that user and global admins.
func (o *Operations) Tokens(ctx context.Context, a Actor, namespace, user string) ([]registry.Token, error) {
	switch {
	case namespace != "" && user != "":
		return nil, registry.Errorf(registry.Invalid, "list tokens by namespace or by user, not both")
	case user != "":
		name, err := registry.ParseUserName(user)
		if err != nil {
			return nil, err
		}
		if err := o.RequireSelfOrAdmin(a, name); err != nil {
			return nil, err
		}
		return o.opt.Index.ListUserTokens(ctx, name)
	}
	if namespace != "" {
		ns, err := registry.ParseNamespace(namespace)
		if err != nil {
			return nil, err
		}
		namespace = ns
	}
	if err := o.require(a, registry.ScopeAdmin, namespace); err != nil {
		return nil, err
	}
	return o.opt.Index.ListTokens(ctx, namespace)
}

// RequireSelfOrAdmin allows global admins, and the user name acting with
// a personal token.
func (o *Operations) RequireSelfOrAdmin(a Actor, name string) error {
	if a.Principal.Token.User == name {
		return nil
	}
	if err := o.require(a, registry.ScopeAdmin, ""); err != nil {
		return registry.Errorf(registry.Forbidden, "only global admins and user %s may do this", name)
	}
	return nil
}

// Token returns the token id if a may manage it: a global admin, an
// admin of one of the token's namespaces, the token itself, or the user
// of a personal token. Actors who may read none of its namespaces get
// NotFound. Entrances call it before they read a request's body, and
// every operation on a token calls it again.
func (o *Operations) Token(ctx context.Context, a Actor, id string) (registry.Token, error) {
	p := a.Principal
	notFound := registry.Errorf(registry.NotFound, "token %q not found", id)
	tokens, err := o.opt.Index.ListTokens(ctx, "")
	if err != nil {
		return registry.Token{}, err
	}
	for _, t := range tokens {
		if t.ID != id {
			continue
		}
		if p.Token.ID == t.ID || t.User != "" && p.Token.User == t.User ||
			t.Global() && o.require(a, registry.ScopeAdmin, "") == nil {
			return t, nil
		}
		readable := ""
		for _, ns := range t.Namespaces {
			if o.require(a, registry.ScopeAdmin, ns) == nil {
				return t, nil
			}
			if readable == "" && o.require(a, registry.ScopeRead, ns) == nil {
				readable = ns
			}
		}
		if readable == "" {
			return registry.Token{}, notFound
		}
		return registry.Token{}, o.require(a, registry.ScopeAdmin, readable)
	}
	return registry.Token{}, notFound
}

// RevokeToken revokes token id, which a must be allowed to manage (see
// Token). It returns the token as it was.
func (o *Operations) RevokeToken(ctx context.Context, a Actor, id string) (registry.Token, error) {
	t, err := o.Token(ctx, a, id)
	if err != nil {
		return registry.Token{}, err
	}
	fx := o.tokenEffects(a, registry.AuditTokenRevoke, t, describeToken(t))
	if err := o.opt.Index.RevokeToken(store.WithEffects(ctx, fx), t.ID, o.opt.Now().UTC()); err != nil {
		return registry.Token{}, err
	}
	o.done(ctx, fx)
	return t, nil
}

// ExpireToken moves the expiry of token id earlier, to at; a must be
// allowed to manage it (see Token). A zero at is refused, as is an
// expiry later than the token's. It returns the token as it is now.
func (o *Operations) ExpireToken(ctx context.Context, a Actor, id string, at time.Time) (registry.Token, error) {
	t, err := o.Token(ctx, a, id)
	if err != nil {
		return registry.Token{}, err
	}
	if at.IsZero() {
		return registry.Token{}, registry.Errorf(registry.Invalid, "expires_at is missing: send the time the token should stop working")
	}
	at = at.UTC()
	if !t.ExpiresAt.IsZero() && at.After(t.ExpiresAt) {
		return registry.Token{}, registry.Errorf(registry.Invalid, "token %s expires at %s already: an expiry can be moved earlier, never later",
			t.ID, t.ExpiresAt.UTC().Format(time.RFC3339))
	}
	fx := o.tokenEffects(a, registry.AuditTokenExpire, t, "expires "+at.Format(time.RFC3339))
	if err := o.opt.Index.ExpireToken(store.WithEffects(ctx, fx), t.ID, at); err != nil {
		return registry.Token{}, err
	}
	t.ExpiresAt = at
	o.done(ctx, fx)
	return t, nil
}

// VisibleNamespaces splits the namespaces of t into those a may read,
// which may be named to a, and the number of the others, which may not:
// managing a token in one namespace does not reveal the private names of
// the others.
func (o *Operations) VisibleNamespaces(ctx context.Context, a Actor, t registry.Token) (shown []string, hidden int) {
	for _, ns := range t.Namespaces {
		// An error counts as not readable: the name stays hidden.
		if ok, err := o.opt.Access.CanRead(ctx, a.Principal, ns); ok && err == nil {
			shown = append(shown, ns)
		} else {
			hidden++
		}
	}
	return shown, hidden
}

// tokenEffects returns the effects of a change of token t: an audit
// event once for each of its namespaces, so that the audit log of every
// one of them shows it, or once without a namespace for a global token.
func (o *Operations) tokenEffects(a Actor, action string, t registry.Token, details string) *store.Effects {
	fx := &store.Effects{}
	if t.Global() {
		o.addAudit(fx, a, registry.AuditEvent{Action: action, Target: t.ID, Details: details})
		return fx
	}
	// Each namespace's log names that namespace only: its admins may not
	// be allowed to know the others.
	others := ""
	switch n := len(t.Namespaces) - 1; {
	case n == 1:
		others = " and 1 other namespace"
	case n > 1:
		others = fmt.Sprintf(" and %d other namespaces", n)
	}
	for _, ns := range t.Namespaces {
		d := details + "; bound to " + ns + others
		o.addAudit(fx, a, registry.AuditEvent{Action: action, Namespace: ns, Target: t.ID, Details: d})
	}
	return fx
}

// describeToken says what a token grants, for the audit log.
func describeToken(t registry.Token) string {
	scopes := make([]string, len(t.Scopes))
	for i, s := range t.Scopes {
		scopes[i] = string(s)
	}
	s := strings.Join(scopes, ",")
	if t.User != "" {
		s = "personal token of " + t.User + ", " + s
	}
	if !t.ExpiresAt.IsZero() {
		s += ", expires " + t.ExpiresAt.UTC().Format(time.RFC3339)
	}
	return s
}

// LifetimeText says a duration for people: "12 hours", "30 days".
func LifetimeText(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return strconv.Itoa(int(d/(24*time.Hour))) + " days"
	case d >= 2*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + " hours"
	}
	return strconv.Itoa(max(1, int(d/time.Minute))) + " minutes"
}
