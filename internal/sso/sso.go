// Package sso signs people in through OpenID Connect identity providers
// (single sign-on), for the login page of `terraform login` (login.v1)
// and the web UI's sign-in page.
//
// The flow, for an identity provider stored in the index under a name:
//
//  1. GET /oauth/sso/<name>/start?next=<path> (the web UI's button), or
//     POST to it from the login.v1 page (its CSRF token and the CLI's
//     pending authorization request are checked by package login).
//     Trove sends the browser to the provider's authorization endpoint:
//     authorization code flow with PKCE S256, a random state and nonce.
//     What the callback needs (state, nonce, PKCE verifier, the CLI's
//     request or the web page to return to) travels in a short-lived
//     HttpOnly cookie, authenticated with an HMAC keyed by an index
//     secret shared by every replica.
//  2. GET /oauth/sso/<name>/callback?code=..&state=..: the state must
//     match the cookie's (constant time) and the cookie is used once
//     (cleared, and its state remembered by this replica until it
//     expires). The code is exchanged with golang.org/x/oauth2 (with the
//     PKCE verifier and, for a confidential client, the secret from the
//     environment variable the provider names), and the ID token is
//     verified with coreos/go-oidc against the issuer's published keys:
//     issuer, audience (the client ID), expiry, asymmetric signature
//     algorithms only, and the nonce.
//  3. The person is found by issuer and subject (never by name or
//     e-mail); at the first sign-in a user is created for them (just in
//     time) with a name derived from a claim, made unique with a suffix,
//     and no password. The provider's role mappings are evaluated and
//     applied (store.SSO.ReconcileRoles) at every sign-in, and every
//     change is audited.
//  4. The CLI gets an authorization code from package login (the same
//     personal token as a password login); the web UI starts a session
//     (web.Service.StartSession).
//
// Sign-ins take from the rate limits of password logins (per account and
// per source address). Successes and failures are audited with the
// provider's name; codes, tokens and cookies are never logged.
package sso

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"trove.dev/trove/internal/audit"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/protocol/login"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/route"
	"trove.dev/trove/internal/store"
)

// Paths of the sign-in endpoints; {idp} is the provider's name.
const (
	StartPath    = "/oauth/sso/{idp}/start"
	CallbackPath = "/oauth/sso/{idp}/callback"
)

// CallbackURL returns the redirect URI to register at the identity
// provider name for a Trove reached at publicURL.
func CallbackURL(publicURL *url.URL, name string) string {
	return strings.TrimSuffix(publicURL.String(), "/") + "/oauth/sso/" + name + "/callback"
}

const (
	stateCookie = "__Host-trove-sso"
	stateKey    = "sso-state-key"
	// stateTTL bounds the round trip to the identity provider.
	stateTTL = 10 * time.Minute
)

// signingAlgs are the ID token signature algorithms accepted: asymmetric
// only, so that a client secret can never sign an ID token.
var signingAlgs = []string{oidc.RS256, oidc.RS384, oidc.RS512, oidc.ES256, oidc.ES384, oidc.ES512, oidc.PS256, oidc.PS384, oidc.PS512, oidc.EdDSA}

// Index is the part of the index single sign-on uses.
type Index interface {
	store.SSO
	store.Users
	store.AuditLog
	store.Secrets
}

// Sessions starts web UI sessions (web.Service is one).
type Sessions interface {
	StartSession(w http.ResponseWriter, r *http.Request, user registry.User, via, next string) error
}

// Options configures the service.
type Options struct {
	Index Index
	// Login issues the CLI's authorization codes and holds the rate limits.
	Login *login.Service
	// Sessions starts web sessions; nil refuses web sign-ins.
	Sessions Sessions
	// PublicURL is where browsers reach Trove: the redirect URIs are
	// under it.
	PublicURL *url.URL
	// Audit records sign-ins and role changes; nil records into Index.
	Audit *audit.Recorder
	// HTTPClient talks to the identity providers (http.DefaultClient if nil).
	HTTPClient *http.Client
	// Getenv reads client secrets (os.Getenv if nil).
	Getenv func(string) string
	Logger *slog.Logger
	Now    func() time.Time
}

// Service serves the sign-in endpoints. Create it with New.
type Service struct {
	opt Options
	key []byte

	mu        sync.Mutex
	providers map[string]cachedProvider // by issuer
	used      map[string]time.Time      // states used, until they expire
}

type cachedProvider struct {
	p       *oidc.Provider
	fetched time.Time
}

// providerTTL is how long a provider's discovery document is reused.
const providerTTL = 10 * time.Minute

// New returns the service. It reads (or creates) the key of the state
// cookies in the index.
func New(ctx context.Context, opt Options) (*Service, error) {
	if opt.Index == nil || opt.Login == nil || opt.PublicURL == nil {
		return nil, registry.Errorf(registry.Invalid, "sso: index, login service and public URL are required")
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Audit == nil {
		opt.Audit = audit.New(opt.Index, opt.Logger)
	}
	if opt.HTTPClient == nil {
		opt.HTTPClient = http.DefaultClient
	}
	if opt.Getenv == nil {
		opt.Getenv = os.Getenv
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	key, err := opt.Index.Secret(ctx, stateKey, func() ([]byte, error) {
		b := make([]byte, 32)
		_, err := rand.Read(b)
		return b, err
	})
	if err != nil {
		return nil, err
	}
	return &Service{opt: opt, key: key, providers: map[string]cachedProvider{}, used: map[string]time.Time{}}, nil
}

// Register mounts the endpoints on mux.
func (s *Service) Register(mux route.Registrar) {
	mux.HandleFunc("GET "+StartPath, s.start)
	mux.HandleFunc("POST "+StartPath, s.start)
	mux.HandleFunc("GET "+CallbackPath, s.callback)
}

// Providers lists the identity providers for the sign-in pages (the
// login.Options.Providers hook). An index failure lists none.
func (s *Service) Providers(ctx context.Context) []login.Provider {
	ps, err := s.opt.Index.ListIdentityProviders(ctx)
	if err != nil {
		s.opt.Logger.WarnContext(ctx, "sso: listing identity providers failed", "err", err)
		return nil
	}
	out := make([]login.Provider, len(ps))
	for i, p := range ps {
		out[i] = login.Provider{Name: p.Name, Label: p.Label()}
	}
	return out
}

// flow is what the state cookie carries across the round trip.
type flow struct {
	Provider string         `json:"p"`
	State    string         `json:"s"`
	Nonce    string         `json:"n"`
	Verifier string         `json:"v"`
	Expires  int64          `json:"e"` // Unix seconds
	CLI      *login.Pending `json:"c,omitempty"`
	Next     string         `json:"x,omitempty"` // web sign-in
}

func (s *Service) mac(payload string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("trove-sso-state-v1\n" + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s *Service) encode(f flow) (string, error) {
	b, err := json.Marshal(f)
	if err != nil {
		return "", err
	}
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + s.mac(payload), nil
}

func (s *Service) decode(v string) (flow, bool) {
	payload, sum, ok := strings.Cut(v, ".")
	if !ok || subtle.ConstantTimeCompare([]byte(sum), []byte(s.mac(payload))) != 1 {
		return flow{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return flow{}, false
	}
	var f flow
	if json.Unmarshal(b, &f) != nil {
		return flow{}, false
	}
	return f, true
}

func random() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// oidcProvider returns the discovered provider of issuer, cached.
func (s *Service) oidcProvider(ctx context.Context, issuer string) (*oidc.Provider, error) {
	now := s.opt.Now()
	s.mu.Lock()
	c, ok := s.providers[issuer]
	s.mu.Unlock()
	if ok && now.Sub(c.fetched) < providerTTL {
		return c.p, nil
	}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, s.opt.HTTPClient), issuer)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.providers[issuer] = cachedProvider{p: p, fetched: now}
	s.mu.Unlock()
	return p, nil
}

func (s *Service) config(idp registry.IdentityProvider, p *oidc.Provider) *oauth2.Config {
	scopes := []string{oidc.ScopeOpenID}
	for _, sc := range idp.Scopes {
		if sc != oidc.ScopeOpenID {
			scopes = append(scopes, sc)
		}
	}
	secret := ""
	if idp.ClientSecretEnv != "" {
		secret = s.opt.Getenv(idp.ClientSecretEnv)
	}
	return &oauth2.Config{ClientID: idp.ClientID, ClientSecret: secret, Endpoint: p.Endpoint(),
		RedirectURL: CallbackURL(s.opt.PublicURL, idp.Name), Scopes: scopes}
}

// start sends the browser to the identity provider.
func (s *Service) start(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("idp")
	f := flow{Provider: name}
	if r.Method == http.MethodPost {
		p, err := s.opt.Login.PendingForm(r)
		if err != nil {
			s.opt.Login.ErrorPage(w, r, http.StatusBadRequest, registry.Message(err))
			return
		}
		f.CLI = &p
	} else {
		if s.opt.Sessions == nil {
			s.page(w, r, f, http.StatusNotFound, "This registry has no web sign-in.")
			return
		}
		f.Next = r.URL.Query().Get("next")
	}
	idp, err := s.opt.Index.GetIdentityProvider(r.Context(), name)
	if err != nil {
		s.failure(r, name, "", "start: "+registry.Message(err))
		s.page(w, r, f, http.StatusNotFound, "There is no identity provider "+strconv.Quote(name)+" on this registry.")
		return
	}
	p, err := s.oidcProvider(r.Context(), idp.Issuer)
	if err != nil {
		s.opt.Logger.ErrorContext(r.Context(), "sso: discovery failed", "provider", name, "err", err)
		s.failure(r, name, "", "the identity provider's discovery document could not be read")
		s.page(w, r, f, http.StatusBadGateway, "The identity provider "+idp.Label()+" cannot be reached. Try again later, or ask an administrator of this registry.")
		return
	}
	if f.State, err = random(); err == nil {
		if f.Nonce, err = random(); err == nil {
			f.Verifier = oauth2.GenerateVerifier()
		}
	}
	if err != nil {
		s.page(w, r, f, http.StatusInternalServerError, "internal error")
		return
	}
	f.Expires = s.opt.Now().Add(stateTTL).Unix()
	cookie, err := s.encode(f)
	if err != nil {
		s.page(w, r, f, http.StatusInternalServerError, "internal error")
		return
	}
	// SameSite=Lax: the callback is a top-level navigation from the
	// provider's site, which Strict would strip the cookie from.
	http.SetCookie(w, &http.Cookie{Name: stateCookie, Value: cookie, Path: "/", MaxAge: int(stateTTL / time.Second),
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	target := s.config(idp, p).AuthCodeURL(f.State, oidc.Nonce(f.Nonce), oauth2.S256ChallengeOption(f.Verifier))
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// refusal is a failed callback: what the audit log says and what the
// person sees.
type refusal struct {
	status  int
	reason  string // audit
	message string // page
}

func (e *refusal) Error() string { return e.reason }

func refuse(status int, reason, message string) error {
	return &refusal{status: status, reason: reason, message: message}
}

// callback completes a sign-in.
func (s *Service) callback(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("idp")
	http.SetCookie(w, &http.Cookie{Name: stateCookie, Value: "", Path: "/", MaxAge: -1, Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	w.Header().Set("Cache-Control", "no-store")
	f, user, err := s.signIn(r, name)
	if err != nil {
		var rf *refusal
		if !errors.As(err, &rf) {
			s.opt.Logger.ErrorContext(r.Context(), "sso: sign-in failed", "provider", name, "err", err)
			rf = &refusal{status: http.StatusServiceUnavailable, reason: "internal error: " + registry.Message(err),
				message: "The registry could not complete the sign-in; try again."}
		}
		account := ""
		if user.Name != "" {
			account = user.Name
		}
		s.failure(r, name, account, rf.reason)
		if f.CLI != nil && rf.status == http.StatusForbidden && strings.HasPrefix(rf.reason, "the identity provider answered") {
			s.opt.Login.Deny(w, r, *f.CLI, rf.message)
			return
		}
		s.page(w, r, f, rf.status, rf.message)
		return
	}
	if f.CLI != nil {
		s.opt.Login.Complete(w, r, *f.CLI, user, name)
		return
	}
	if err := s.opt.Sessions.StartSession(w, r, user, name, f.Next); err != nil {
		s.opt.Logger.ErrorContext(r.Context(), "sso: starting a web session failed", "err", err)
		s.page(w, r, f, http.StatusServiceUnavailable, "The registry could not complete the sign-in; try again.")
	}
}

// signIn checks the callback and returns the flow and the signed-in user.
func (s *Service) signIn(r *http.Request, name string) (flow, registry.User, error) {
	ctx := r.Context()
	now := s.opt.Now()
	c, err := r.Cookie(stateCookie)
	if err != nil {
		return flow{}, registry.User{}, refuse(http.StatusBadRequest, "no sign-in in progress (no state cookie)",
			"This sign-in was not started in this browser, or it took too long. Start it again.")
	}
	f, ok := s.decode(c.Value)
	if !ok {
		return flow{}, registry.User{}, refuse(http.StatusBadRequest, "invalid state cookie", "This sign-in is not valid. Start it again.")
	}
	if now.Unix() >= f.Expires {
		return f, registry.User{}, refuse(http.StatusBadRequest, "the sign-in expired", "This sign-in took too long. Start it again.")
	}
	q := r.URL.Query()
	if f.Provider != name || subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(f.State)) != 1 {
		return f, registry.User{}, refuse(http.StatusBadRequest, "the state does not match the sign-in in progress",
			"This answer of the identity provider does not belong to the sign-in in progress. Start it again.")
	}
	if !s.useState(f.State, time.Unix(f.Expires, 0)) {
		return f, registry.User{}, refuse(http.StatusBadRequest, "the callback was replayed", "This sign-in was completed already. Start it again.")
	}
	if e := q.Get("error"); e != "" {
		return f, registry.User{}, refuse(http.StatusForbidden, "the identity provider answered "+sanitize(e)+": "+sanitize(q.Get("error_description")),
			"The identity provider did not sign you in ("+sanitize(e)+").")
	}
	code := q.Get("code")
	if code == "" {
		return f, registry.User{}, refuse(http.StatusBadRequest, "no code in the callback", "The identity provider's answer holds no code. Start the sign-in again.")
	}
	idp, err := s.opt.Index.GetIdentityProvider(ctx, name)
	if registry.IsKind(err, registry.NotFound) {
		return f, registry.User{}, refuse(http.StatusNotFound, "unknown identity provider", "There is no identity provider "+strconv.Quote(name)+" on this registry.")
	}
	if err != nil {
		return f, registry.User{}, err
	}
	p, err := s.oidcProvider(ctx, idp.Issuer)
	if err != nil {
		s.opt.Logger.ErrorContext(ctx, "sso: discovery failed", "provider", name, "err", err)
		return f, registry.User{}, refuse(http.StatusBadGateway, "the identity provider's discovery document could not be read",
			"The identity provider cannot be reached. Try again later.")
	}
	hctx := oidc.ClientContext(ctx, s.opt.HTTPClient)
	tok, err := s.config(idp, p).Exchange(hctx, code, oauth2.VerifierOption(f.Verifier))
	if err != nil {
		s.opt.Logger.WarnContext(ctx, "sso: code exchange failed", "provider", name, "err", err)
		return f, registry.User{}, refuse(http.StatusBadGateway, "the code exchange failed", "The identity provider did not confirm the sign-in. Start it again.")
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return f, registry.User{}, refuse(http.StatusBadGateway, "the token response holds no ID token", "The identity provider sent no ID token: ask an administrator to check that the client uses OpenID Connect.")
	}
	verifier := p.VerifierContext(hctx, &oidc.Config{ClientID: idp.ClientID, SupportedSigningAlgs: signingAlgs, Now: s.opt.Now})
	idt, err := verifier.Verify(hctx, raw)
	if err != nil {
		return f, registry.User{}, refuse(http.StatusUnauthorized, "the ID token was refused: "+sanitize(err.Error()), "The identity provider's ID token is not valid. Start the sign-in again.")
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(f.Nonce)) != 1 {
		return f, registry.User{}, refuse(http.StatusUnauthorized, "the ID token's nonce does not match", "The identity provider's ID token is not valid. Start the sign-in again.")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return f, registry.User{}, refuse(http.StatusUnauthorized, "the ID token's claims cannot be read", "The identity provider's ID token is not valid.")
	}
	if claims, err = s.withUserInfo(hctx, p, tok, idt.Subject, name, claims); err != nil {
		return f, registry.User{}, err
	}
	user, err := s.link(ctx, idp, idt.Issuer, idt.Subject, claims)
	if err != nil {
		return f, registry.User{}, err
	}
	if ok, wait := s.opt.Login.Allow(r, user.Name); !ok {
		return f, user, refuse(http.StatusTooManyRequests, "rate limited", fmt.Sprintf("Too many sign-ins. Try again in %d seconds.", int(wait/time.Second)+1))
	}
	if user.Disabled {
		return f, user, refuse(http.StatusForbidden, "account disabled", "This account is disabled. Ask an administrator of this registry.")
	}
	if err := s.applyMappings(r, idp, user.Name, claims); err != nil {
		return f, user, err
	}
	if err := s.opt.Index.TouchIdentity(ctx, idt.Issuer, idt.Subject, now.UTC()); err != nil {
		return f, user, err
	}
	return f, user, nil
}

// withUserInfo adds to the ID token's claims those that the provider's
// userinfo endpoint answers and the ID token lacks: some providers (ZITADEL
// by default, among others) put profile and group claims only there. The
// ID token's claims win. Without a userinfo endpoint, or when it fails, the
// ID token's claims are all there is (the failure is logged); an answer
// about another subject is refused, as OpenID Connect requires.
func (s *Service) withUserInfo(ctx context.Context, p *oidc.Provider, tok *oauth2.Token, subject, idp string, claims map[string]any) (map[string]any, error) {
	if p.UserInfoEndpoint() == "" {
		return claims, nil
	}
	info, err := p.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil {
		s.opt.Logger.WarnContext(ctx, "sso: the userinfo endpoint failed; using the ID token's claims alone", "provider", idp, "err", err)
		return claims, nil
	}
	if info.Subject != subject {
		return nil, refuse(http.StatusBadGateway, "the userinfo answer is about another subject", "The identity provider's answers do not agree. Start the sign-in again.")
	}
	var more map[string]any
	if err := info.Claims(&more); err != nil {
		s.opt.Logger.WarnContext(ctx, "sso: the userinfo answer cannot be read; using the ID token's claims alone", "provider", idp, "err", err)
		return claims, nil
	}
	for k, v := range more {
		if _, ok := claims[k]; !ok {
			claims[k] = v
		}
	}
	return claims, nil
}

// useState marks a state used and reports whether it was unused. States
// are forgotten when they expire (then the cookie is refused anyway).
func (s *Service) useState(state string, expires time.Time) bool {
	now := s.opt.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, t := range s.used {
		if now.After(t) {
			delete(s.used, k)
		}
	}
	if _, ok := s.used[state]; ok {
		return false
	}
	s.used[state] = expires
	return true
}

// link returns the user of issuer and subject, creating it at the first
// sign-in.
func (s *Service) link(ctx context.Context, idp registry.IdentityProvider, issuer, subject string, claims map[string]any) (registry.User, error) {
	for attempt := 0; ; attempt++ {
		id, err := s.opt.Index.GetIdentity(ctx, issuer, subject)
		if err == nil {
			return s.opt.Index.GetUser(ctx, id.User)
		}
		if !registry.IsKind(err, registry.NotFound) {
			return registry.User{}, err
		}
		claim := idp.UsernameClaim
		if claim == "" {
			claim = registry.DefaultUsernameClaim
		}
		value, _ := claims[claim].(string)
		if value == "" {
			value, _ = claims["email"].(string)
		}
		base := registry.SSOUserName(value, "user")
		now := s.opt.Now().UTC()
		for n := 1; n <= 100; n++ {
			name := base
			if n > 1 {
				name = base + "-" + strconv.Itoa(n)
			}
			u := registry.User{Name: name, CreatedAt: now}
			fx := s.opt.Audit.Effects(nil, registry.AuditEvent{Action: registry.AuditUserCreate, Actor: "sso:" + idp.Name, Target: name,
				Details: "created at the first sign-in through identity provider " + idp.Name})
			err := s.opt.Index.CreateIdentityUser(store.WithEffects(ctx, fx), registry.Identity{Issuer: issuer, Subject: subject, Provider: idp.Name, CreatedAt: now, LastLoginAt: now}, u)
			if err == nil {
				s.opt.Audit.Done(ctx, fx)
				return u, nil
			}
			if !registry.IsKind(err, registry.Conflict) {
				return registry.User{}, err
			}
			if _, err := s.opt.Index.GetIdentity(ctx, issuer, subject); err == nil {
				break // linked by a concurrent sign-in
			}
		}
		if attempt > 0 {
			return registry.User{}, registry.Errorf(registry.Conflict, "no free user name for %q", base)
		}
	}
}

// Grants evaluates the role mappings against the claims of an ID token:
// the highest role per namespace, and whether the global admin flag is
// granted.
func Grants(mappings []registry.RoleMapping, claims map[string]any) ([]registry.RoleGrant, bool) {
	rank := map[registry.Role]int{registry.RoleReader: 1, registry.RolePublisher: 2, registry.RoleAdmin: 3}
	best := map[string]registry.Role{}
	admin := false
	for _, m := range mappings {
		if !claimHas(claims[m.Claim], m.Value) {
			continue
		}
		if m.Namespace == registry.GlobalAdminNamespace {
			admin = true
			continue
		}
		if rank[m.Role] > rank[best[m.Namespace]] {
			best[m.Namespace] = m.Role
		}
	}
	grants := make([]registry.RoleGrant, 0, len(best))
	for ns, role := range best {
		grants = append(grants, registry.RoleGrant{Namespace: ns, Role: role})
	}
	slices.SortFunc(grants, func(a, b registry.RoleGrant) int { return strings.Compare(a.Namespace, b.Namespace) })
	return grants, admin
}

// claimHas reports whether a claim is value or a list holding it (a
// boolean or number claim compares as its JSON text).
func claimHas(claim any, value string) bool {
	switch c := claim.(type) {
	case string:
		return c == value
	case []any:
		for _, v := range c {
			if claimHas(v, value) {
				return true
			}
		}
	case bool:
		return strconv.FormatBool(c) == value
	case float64:
		return strconv.FormatFloat(c, 'f', -1, 64) == value
	}
	return false
}

// applyMappings evaluates the provider's role mappings and applies them,
// auditing every change.
func (s *Service) applyMappings(r *http.Request, idp registry.IdentityProvider, user string, claims map[string]any) error {
	ctx := r.Context()
	ms, err := s.opt.Index.ListRoleMappings(ctx, idp.Name)
	if err != nil {
		return err
	}
	grants, admin := Grants(ms, claims)
	// The audit entries of the changes, known in the store's
	// transaction, commit with them.
	fx := &store.Effects{}
	fx.Bind = func(record any) {
		changes, ok := record.([]registry.RoleChange)
		if !ok {
			return
		}
		fx.Audit = nil
		for _, c := range changes {
			e := registry.AuditEvent{Actor: "sso:" + idp.Name, Target: user, Details: c.String() + " of identity provider " + idp.Name}
			switch {
			case c.Namespace == registry.GlobalAdminNamespace:
				e.Action = registry.AuditAdminSet
			case c.Removed:
				e.Action, e.Namespace = registry.AuditMembershipDelete, c.Namespace
			default:
				e.Action, e.Namespace = registry.AuditMembershipSet, c.Namespace
			}
			s.opt.Audit.Add(fx, r, e)
		}
	}
	// The index announces the change (store.ChangeAccess), which drops
	// the cached rights of the user's tokens.
	if _, err := s.opt.Index.ReconcileRoles(store.WithEffects(ctx, fx), user, grants, admin, s.opt.Now().UTC()); err != nil {
		return err
	}
	s.opt.Audit.Done(ctx, fx)
	return nil
}

// failure audits a failed sign-in.
func (s *Service) failure(r *http.Request, provider, user, reason string) {
	target := user
	if target == "" {
		target = "(identity provider " + sanitize(provider) + ")"
	}
	s.opt.Audit.Record(r.Context(), r, registry.AuditEvent{Action: registry.AuditLoginFailure, Actor: auth.Principal{}.Actor(),
		Target: target, Details: "sign-in through identity provider " + sanitize(provider) + ": " + reason})
}

// page shows a refusal: on the login service's error page for a CLI
// login, on a plain page otherwise.
func (s *Service) page(w http.ResponseWriter, r *http.Request, f flow, status int, message string) {
	if f.CLI != nil {
		s.opt.Login.ErrorPage(w, r, status, message)
		return
	}
	s.opt.Login.ErrorPage(w, r, status, message+" Go back to the sign-in page of the registry to try again.")
}

// sanitize keeps text from the identity provider safe for the audit log
// and pages: printable, at most 200 bytes.
func sanitize(s string) string {
	s = strings.Map(func(r rune) rune {
		if registry.IsControl(r) {
			return '?'
		}
		return r
	}, s)
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}
