// Package login makes Trove an OAuth 2.0 authorization server for the
// Terraform and OpenTofu CLIs (the login.v1 service of `terraform login`).
//
// The flow is the authorization code grant with PKCE (S256 only) for one
// public client (no client secret):
//
//  1. The CLI opens GET /oauth/authorize?response_type=code&client_id=..&
//     redirect_uri=http://localhost:<port>/login&state=..&code_challenge=..&
//     code_challenge_method=S256 in the user's browser. The redirect URI
//     must be exactly that, with <port> in the advertised range; any
//     invalid request shows an error page and never redirects.
//  2. The page is a server-rendered login and consent form. Its POST is
//     protected against cross-site request forgery by a token bound to a
//     cookie (HMAC of the cookie's random value with a key shared by all
//     replicas; the cookie is SameSite=Strict). The password is checked
//     against its argon2id hash; attempts are rate limited per account and
//     per source address (token buckets in this process's memory).
//  3. On success the browser is redirected to the CLI's local listener
//     with a single-use code (only its hash is stored, in the index, so
//     any replica can redeem it) that expires after a short time, and the
//     state echoed.
//  4. The CLI posts the code with its PKCE verifier to POST /oauth/token
//     and receives a personal Trove token of the user: listed, revocable,
//     expiring. A code presented twice is refused and the token issued
//     for it is revoked.
//
// Passwords, codes and tokens never appear in logs, audit events or error
// messages. Login successes and failures are audited.
package login

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"trove.dev/trove/internal/audit"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/route"
	"trove.dev/trove/internal/store"
)

// Paths of the OAuth endpoints, relative to the server root.
const (
	AuthorizePath = "/oauth/authorize"
	TokenPath     = "/oauth/token"
)

// ServiceID is the service identifier in service discovery.
const ServiceID = "login.v1"

// Defaults of Options.
const (
	DefaultClientID = "terraform-cli"
	DefaultMinPort  = 10000
	DefaultMaxPort  = 10010
	// DefaultTokenTTL is the lifetime of a token issued by a login.
	DefaultTokenTTL = 30 * 24 * time.Hour
	// DefaultCodeTTL is how long an authorization code can be redeemed.
	DefaultCodeTTL = 2 * time.Minute
	// Login attempts: per account a burst of 5, then one every 30 s; per
	// source address a burst of 20, then one every 3 s.
	DefaultAccountBurst = auth.DefaultAccountBurst
	DefaultAccountEvery = auth.DefaultAccountEvery
	DefaultAddressBurst = auth.DefaultAddressBurst
	DefaultAddressEvery = auth.DefaultAddressEvery
)

// csrfKeyName is the index secret that keys the CSRF tokens, shared by
// every replica so that a form served by one can be posted to another.
const csrfKeyName = "login-csrf-key"

// csrfCookie is the name of the cookie a login form is bound to. The
// __Host- prefix makes browsers insist on Secure, Path=/ and no Domain.
const csrfCookie = "__Host-trove-login"

// maxFormBytes bounds a login or token request body.
const maxFormBytes = 16 << 10

// Index is the part of the index the login service uses: it checks
// users, stores authorization codes and the tokens they are exchanged
// for, records logins, and keeps its CSRF key among the server secrets.
// A store.Index is one.
type Index interface {
	store.Users
	store.AuthCodes
	store.DeviceCodes
	store.Tokens
	store.AuditLog
	store.Secrets
}

// Options configures the login service.
type Options struct {
	// Index stores users, authorization codes, tokens and the audit log.
	Index Index
	// Audit records logins; nil records into Index's audit log.
	Audit *audit.Recorder
	// Operations mints and revokes the tokens of sign-ins
	// (operations.IssueSignInToken, RevokeReplayedSignIn); pass the
	// server's. nil means operations on Index (which must then be an
	// operations.Index) with this Audit, TokenTTL and Now.
	Operations *operations.Operations
	// Authenticator, if set, shares the limits of password checks below:
	// New installs the service's auth.PasswordLimiter in it, so that the
	// management API's password checks count against the same buckets as
	// the login page's.
	Authenticator *auth.Authenticator
	Logger        *slog.Logger
	// ClientID is the OAuth client the CLIs identify as (DefaultClientID).
	ClientID string
	// MinPort and MaxPort bound the port of the CLI's redirect URI; both
	// 0 means DefaultMinPort and DefaultMaxPort.
	MinPort, MaxPort int
	TokenTTL         time.Duration // DefaultTokenTTL if 0
	CodeTTL          time.Duration // DefaultCodeTTL if 0
	AccountBurst     int           // DefaultAccountBurst if 0
	AccountEvery     time.Duration // DefaultAccountEvery if 0
	AddressBurst     int           // DefaultAddressBurst if 0
	AddressEvery     time.Duration // DefaultAddressEvery if 0
	// HashSlots bounds the password verifications running at once (each
	// takes 19 MiB of memory); 0 means 4.
	HashSlots int
	Now       func() time.Time
	// NoLocalPasswords refuses every password login (the local
	// accounts' passwords are switched off): people log in through an
	// identity provider (Providers) instead.
	NoLocalPasswords bool
	// Providers, if set, lists the identity providers the login page
	// offers (single sign-on, package sso).
	Providers func(ctx context.Context) []Provider
	// PublicURL is where browsers reach this registry: the device grant's
	// verification page is under it ("" means the request's host).
	PublicURL string
	// DeviceCodeTTL is how long a device login waits for a decision
	// (DefaultDeviceCodeTTL if 0); DeviceInterval the least time between
	// two polls (DefaultDeviceInterval if 0).
	DeviceCodeTTL, DeviceInterval time.Duration
	// DeviceBurst and DeviceEvery limit the device logins started per
	// source address (DefaultDeviceBurst, DefaultDeviceEvery if 0).
	DeviceBurst int
	DeviceEvery time.Duration
}

// Provider is an identity provider offered on the login page: its
// button posts the login form to ProviderStartPath(Name).
type Provider struct {
	Name  string
	Label string
}

// ProviderStartPath returns the path that starts a sign-in through the
// identity provider name (served by package sso).
func ProviderStartPath(name string) string { return "/oauth/sso/" + name + "/start" }

// PasswordsOffMessage is what a password login is answered when local
// passwords are switched off.
const PasswordsOffMessage = "Password login is switched off on this registry: log in with your organization's identity provider instead."

// Service serves login.v1. Create it with New.
type Service struct {
	opt      Options
	key      []byte
	attempts *auth.PasswordLimiter
	devices  *auth.AddressLimiter
	slots    chan struct{}
}

// New returns the login service. It reads (or creates) the CSRF key in
// the index.
func New(ctx context.Context, opt Options) (*Service, error) {
	if opt.Index == nil {
		return nil, registry.Errorf(registry.Invalid, "login: no index")
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Audit == nil {
		opt.Audit = audit.New(opt.Index, opt.Logger)
	}
	if opt.ClientID == "" {
		opt.ClientID = DefaultClientID
	}
	if opt.MinPort == 0 && opt.MaxPort == 0 {
		opt.MinPort, opt.MaxPort = DefaultMinPort, DefaultMaxPort
	}
	if opt.MinPort < 1024 || opt.MaxPort > 65535 || opt.MaxPort <= opt.MinPort {
		return nil, registry.Errorf(registry.Invalid, "login: the port range %d-%d must lie within 1024-65535 and hold at least two ports (the CLIs draw a port below the maximum)", opt.MinPort, opt.MaxPort)
	}
	if opt.TokenTTL <= 0 {
		opt.TokenTTL = DefaultTokenTTL
	}
	if opt.CodeTTL <= 0 {
		opt.CodeTTL = DefaultCodeTTL
	}
	if opt.HashSlots <= 0 {
		opt.HashSlots = 4
	}
	if opt.DeviceCodeTTL <= 0 {
		opt.DeviceCodeTTL = DefaultDeviceCodeTTL
	}
	if opt.DeviceInterval <= 0 {
		opt.DeviceInterval = DefaultDeviceInterval
	}
	if opt.DeviceBurst <= 0 {
		opt.DeviceBurst = DefaultDeviceBurst
	}
	if opt.DeviceEvery <= 0 {
		opt.DeviceEvery = DefaultDeviceEvery
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Operations == nil {
		idx, ok := opt.Index.(operations.Index)
		if !ok {
			return nil, registry.Errorf(registry.Invalid, "login: no operations, and the index cannot hold them")
		}
		opt.Operations = operations.New(operations.Options{Index: idx, Audit: opt.Audit, SignInTokenTTL: opt.TokenTTL,
			Logger: opt.Logger, Now: opt.Now})
	}
	key, err := opt.Index.Secret(ctx, csrfKeyName, func() ([]byte, error) {
		b := make([]byte, 32)
		_, err := rand.Read(b)
		return b, err
	})
	if err != nil {
		return nil, err
	}
	attempts := auth.NewPasswordLimiter(auth.PasswordLimits{
		AccountBurst: opt.AccountBurst, AccountEvery: opt.AccountEvery, AddressBurst: opt.AddressBurst, AddressEvery: opt.AddressEvery,
	})
	if opt.Authenticator != nil {
		opt.Authenticator.SetPasswordLimiter(attempts)
	}
	return &Service{opt: opt, key: key, attempts: attempts, devices: auth.NewAddressLimiter(opt.DeviceBurst, opt.DeviceEvery),
		slots: make(chan struct{}, opt.HashSlots)}, nil
}

// Discovery returns the login.v1 value of the discovery document.
func (s *Service) Discovery() map[string]any {
	return map[string]any{
		"client":      s.opt.ClientID,
		"grant_types": []string{"authz_code"},
		"authz":       AuthorizePath,
		"token":       TokenPath,
		"ports":       []int{s.opt.MinPort, s.opt.MaxPort},
	}
}

// Register mounts the OAuth endpoints on mux.
func (s *Service) Register(mux route.Registrar) {
	mux.HandleFunc("GET "+AuthorizePath, s.showForm)
	mux.HandleFunc("POST "+AuthorizePath, s.submitForm)
	mux.HandleFunc("POST "+TokenPath, s.token)
	mux.HandleFunc("POST "+DevicePath, s.deviceAuthorize)
}

// authzRequest is a validated authorization request.
type authzRequest struct {
	ClientID    string
	RedirectURI string
	State       string
	Challenge   string
}

// params returns the request as the hidden fields of the form.
func (a authzRequest) params() url.Values {
	return url.Values{
		"response_type": {"code"}, "client_id": {a.ClientID}, "redirect_uri": {a.RedirectURI},
		"state": {a.State}, "code_challenge": {a.Challenge}, "code_challenge_method": {"S256"},
	}
}

// parseAuthz validates the parameters of an authorization request. Its
// errors are shown on an error page; nothing is ever redirected to an
// unvalidated redirect URI.
func (s *Service) parseAuthz(q url.Values) (authzRequest, error) {
	single := func(name string) (string, error) {
		vs := q[name]
		if len(vs) > 1 {
			return "", registry.Errorf(registry.Invalid, "the parameter %s is repeated", name)
		}
		if len(vs) == 0 || vs[0] == "" {
			return "", registry.Errorf(registry.Invalid, "the parameter %s is missing", name)
		}
		return vs[0], nil
	}
	var a authzRequest
	var err error
	if a.ClientID, err = single("client_id"); err != nil {
		return a, err
	}
	if a.ClientID != s.opt.ClientID {
		return a, registry.Errorf(registry.Invalid, "unknown client_id: this server only logs in the client %q", s.opt.ClientID)
	}
	if a.RedirectURI, err = single("redirect_uri"); err != nil {
		return a, err
	}
	if err := s.checkRedirect(a.RedirectURI); err != nil {
		return a, err
	}
	rt, err := single("response_type")
	if err != nil {
		return a, err
	}
	if rt != "code" {
		return a, registry.Errorf(registry.Invalid, "unsupported response_type: only \"code\" (the authorization code grant) is supported")
	}
	if a.State, err = single("state"); err != nil {
		return a, err
	}
	if len(a.State) > 512 {
		return a, registry.Errorf(registry.Invalid, "the parameter state is longer than 512 characters")
	}
	method, err := single("code_challenge_method")
	if err != nil {
		return a, registry.Errorf(registry.Invalid, "PKCE is required: the parameter code_challenge_method is missing")
	}
	if method != "S256" {
		return a, registry.Errorf(registry.Invalid, "unsupported code_challenge_method: only S256 is supported")
	}
	if a.Challenge, err = single("code_challenge"); err != nil {
		return a, registry.Errorf(registry.Invalid, "PKCE is required: the parameter code_challenge is missing")
	}
	if b, err := base64.RawURLEncoding.DecodeString(a.Challenge); err != nil || len(b) != sha256.Size {
		return a, registry.Errorf(registry.Invalid, "the code_challenge is not a base64url-encoded SHA-256 digest")
	}
	return a, nil
}

// checkRedirect accepts only http://localhost:<port>/login with <port>
// within the advertised range: the listener the CLIs start.
func (s *Service) checkRedirect(raw string) error {
	bad := registry.Errorf(registry.Invalid, "the redirect_uri is not allowed: it must be http://localhost:<port>/login with a port from %d to %d", s.opt.MinPort, s.opt.MaxPort)
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Opaque != "" || u.User != nil || u.RawQuery != "" || u.ForceQuery ||
		u.Fragment != "" || strings.Contains(raw, "#") || u.Hostname() != "localhost" || u.Path != "/login" || u.RawPath != "" {
		return bad
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil || port < s.opt.MinPort || port > s.opt.MaxPort || strconv.Itoa(port) != u.Port() {
		return bad
	}
	return nil
}

// csrfToken returns the form token bound to a cookie value.
func (s *Service) csrfToken(cookie string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("trove-login-csrf-v1\n" + cookie))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// randomString returns n random bytes, base64url-encoded.
func randomString(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func (s *Service) showForm(w http.ResponseWriter, r *http.Request) {
	a, err := s.parseAuthz(r.URL.Query())
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, registry.Message(err))
		return
	}
	cookie := ""
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 43 {
		cookie = c.Value
	} else if cookie, err = randomString(32); err != nil {
		s.errorPage(w, r, http.StatusInternalServerError, "internal error")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: cookie, Path: "/", MaxAge: 3600,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	s.formPage(w, r, http.StatusOK, a, "", "")
}

func (s *Service) submitForm(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		s.errorPage(w, r, http.StatusBadRequest, "the login form could not be read")
		return
	}
	form := r.PostForm
	c, err := r.Cookie(csrfCookie)
	if err != nil || c.Value == "" || subtle.ConstantTimeCompare([]byte(form.Get("csrf")), []byte(s.csrfToken(c.Value))) != 1 {
		s.errorPage(w, r, http.StatusForbidden, "the login form was not sent by this site's login page, or it expired: go back to the terminal and run the login command again")
		return
	}
	a, err := s.parseAuthz(form)
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, registry.Message(err))
		return
	}
	if form.Get("action") == "deny" {
		s.redirect(w, r, a, url.Values{"error": {"access_denied"}, "error_description": {"the user denied the request"}})
		return
	}
	access := form.Get("access")
	if access == "" {
		access = "read"
	}
	if access != "read" && access != "full" {
		s.errorPage(w, r, http.StatusBadRequest, "unknown access level: choose read or full")
		return
	}
	if s.opt.NoLocalPasswords {
		s.fail(w, r, a, http.StatusForbidden, 0, strings.ToLower(sanitize(strings.TrimSpace(form.Get("username")))), "local passwords are switched off", PasswordsOffMessage)
		return
	}
	name := strings.TrimSpace(form.Get("username"))
	password := form.Get("password")
	source := audit.SourceAddr(r)
	now := s.opt.Now()
	account := strings.ToLower(name)
	if len(account) > 64 {
		account = account[:64]
	}
	if ok, wait, limit := s.attempts.Take(account, source, now); !ok {
		message := "Too many login attempts for this account. Try again in " + waitText(wait) + "."
		if limit == "source address" {
			message = "Too many login attempts from your address. Try again in " + waitText(wait) + "."
		}
		s.fail(w, r, a, http.StatusTooManyRequests, wait, account, "rate limited ("+limit+")", message)
		return
	}
	user, reason := s.verify(r.Context(), name, password)
	switch reason {
	case "":
	case "disabled":
		s.fail(w, r, a, http.StatusForbidden, 0, account, "account disabled", "This account is disabled. Ask an administrator of this registry.")
		return
	default:
		s.fail(w, r, a, http.StatusUnauthorized, 0, account, reason, "Wrong user name or password.")
		return
	}
	s.issueCode(w, r, a, access, user, "")
}

// issueCode stores an authorization code for user and the request a
// (with access "read" or "full"), audits the login and sends the browser
// back to the CLI with the code. via names the identity provider of a
// single sign-on, "" for a password login.
func (s *Service) issueCode(w http.ResponseWriter, r *http.Request, a authzRequest, access string, user registry.User, via string) {
	now := s.opt.Now()
	scopes := []registry.Scope{registry.ScopeRead}
	if access == "full" {
		scopes = []registry.Scope{registry.ScopeAdmin}
	}
	code, err := randomString(32)
	if err != nil {
		s.errorPage(w, r, http.StatusInternalServerError, "internal error")
		return
	}
	tokenID, err := auth.NewID()
	if err != nil {
		s.errorPage(w, r, http.StatusInternalServerError, "internal error")
		return
	}
	details := "authorization code for " + a.ClientID + " (" + access + " access) to " + a.RedirectURI
	if via != "" {
		details += " through identity provider " + via
	}
	fx := s.opt.Audit.Effects(r, registry.AuditEvent{Action: registry.AuditLoginSuccess, Actor: "user:" + user.Name,
		Target: tokenID, Details: details})
	err = s.opt.Index.CreateAuthCode(store.WithEffects(r.Context(), fx), registry.AuthCode{
		Hash: hashCode(code), ClientID: a.ClientID, RedirectURI: a.RedirectURI, Challenge: a.Challenge,
		User: user.Name, Scopes: scopes, TokenID: tokenID, CreatedAt: now.UTC(), ExpiresAt: now.Add(s.opt.CodeTTL).UTC(),
	})
	if err != nil {
		s.opt.Logger.ErrorContext(r.Context(), "login: storing an authorization code failed", "user", user.Name, "err", err)
		s.errorPage(w, r, http.StatusServiceUnavailable, "the registry could not complete the login; try again")
		return
	}
	// Codes are redeemed within minutes; drop those long expired.
	if _, err := s.opt.Index.DeleteAuthCodes(r.Context(), now.Add(-time.Hour)); err != nil {
		s.opt.Logger.WarnContext(r.Context(), "login: deleting expired authorization codes failed", "err", err)
	}
	s.opt.Audit.Done(r.Context(), fx)
	s.redirect(w, r, a, url.Values{"code": {code}})
}

// Pending is a validated authorization request of a CLI waiting for a
// sign-in through an identity provider (package sso keeps it, signed,
// across the round trip to the provider).
type Pending struct {
	ClientID    string `json:"client_id"`
	RedirectURI string `json:"redirect_uri"`
	State       string `json:"state"`
	Challenge   string `json:"code_challenge"`
	Access      string `json:"access"` // "read" or "full"
}

// PendingForm checks a login form posted by this service's login page
// to another handler (an identity provider's button): its CSRF token and
// its authorization request. Its errors are safe to show.
func (s *Service) PendingForm(r *http.Request) (Pending, error) {
	r.Body = http.MaxBytesReader(nil, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		return Pending{}, registry.Errorf(registry.Invalid, "the login form could not be read")
	}
	form := r.PostForm
	c, err := r.Cookie(csrfCookie)
	if err != nil || c.Value == "" || subtle.ConstantTimeCompare([]byte(form.Get("csrf")), []byte(s.csrfToken(c.Value))) != 1 {
		return Pending{}, registry.Errorf(registry.Forbidden, "the login form was not sent by this site's login page, or it expired: go back to the terminal and run the login command again")
	}
	a, err := s.parseAuthz(form)
	if err != nil {
		return Pending{}, err
	}
	access := form.Get("access")
	if access == "" {
		access = "read"
	}
	if access != "read" && access != "full" {
		return Pending{}, registry.Errorf(registry.Invalid, "unknown access level: choose read or full")
	}
	return Pending{ClientID: a.ClientID, RedirectURI: a.RedirectURI, State: a.State, Challenge: a.Challenge, Access: access}, nil
}

// Complete finishes the login of p for user, who signed in through the
// identity provider via: it issues the authorization code and redirects
// the browser to the CLI, as a password login does. p is validated again.
func (s *Service) Complete(w http.ResponseWriter, r *http.Request, p Pending, user registry.User, via string) {
	a, err := s.parseAuthz(Pending.values(p))
	if err == nil && p.Access != "read" && p.Access != "full" {
		err = registry.Errorf(registry.Invalid, "unknown access level: choose read or full")
	}
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, registry.Message(err))
		return
	}
	s.issueCode(w, r, a, p.Access, user, via)
}

// Deny sends the browser back to the CLI of p with access_denied, after
// the identity provider refused the sign-in.
func (s *Service) Deny(w http.ResponseWriter, r *http.Request, p Pending, description string) {
	a, err := s.parseAuthz(Pending.values(p))
	if err != nil {
		s.errorPage(w, r, http.StatusBadRequest, registry.Message(err))
		return
	}
	s.redirect(w, r, a, url.Values{"error": {"access_denied"}, "error_description": {description}})
}

// ErrorPage shows message on the login service's error page, which
// offers no way back to the CLI.
func (s *Service) ErrorPage(w http.ResponseWriter, r *http.Request, status int, message string) {
	s.errorPage(w, r, status, message)
}

func (p Pending) values() url.Values {
	return authzRequest{ClientID: p.ClientID, RedirectURI: p.RedirectURI, State: p.State, Challenge: p.Challenge}.params()
}

// Allow takes one attempt from the rate limits of logins for account
// (a user name) and the request's source address, the buckets password
// logins use. It reports the wait when the attempt is refused.
func (s *Service) Allow(r *http.Request, account string) (ok bool, wait time.Duration) {
	ok, wait, _ = s.attempts.Take(account, audit.SourceAddr(r), s.opt.Now())
	return ok, wait
}

// verify checks a user name and password. reason is "" on success and
// says why otherwise (for the audit log, never for the user).
func (s *Service) verify(ctx context.Context, name, password string) (registry.User, string) {
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	case <-ctx.Done():
		return registry.User{}, "request cancelled"
	}
	norm, err := registry.ParseUserName(name)
	if err != nil {
		auth.VerifyNoPassword(password)
		return registry.User{}, "invalid user name"
	}
	u, err := s.opt.Index.GetUser(ctx, norm)
	if err != nil {
		auth.VerifyNoPassword(password)
		if registry.IsKind(err, registry.NotFound) {
			return registry.User{}, "unknown user"
		}
		return registry.User{}, "user lookup failed: " + registry.Message(err)
	}
	if !auth.VerifyPassword(u.PasswordHash, password) {
		return registry.User{}, "wrong password"
	}
	if u.Disabled {
		return registry.User{}, "disabled"
	}
	return u, ""
}

// fail audits a failed login and shows the form again with a message.
// The caller is not authenticated, so the actor is "anonymous" and the
// name tried is the target: a typed name such as "user:bob" must not
// pass for an actor of the audit log.
func (s *Service) fail(w http.ResponseWriter, r *http.Request, a authzRequest, status int, retry time.Duration, account, reason, message string) {
	target := account
	if target == "" {
		target = "(no user name)"
	}
	s.opt.Audit.Record(r.Context(), r, registry.AuditEvent{Action: registry.AuditLoginFailure, Actor: auth.Principal{}.Actor(),
		Target: sanitize(target), Details: reason})
	if retry > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(retry/time.Second)+1))
	}
	s.formPage(w, r, status, a, message, account)
}

// redirect sends the browser back to the CLI's listener with params and
// the state.
func (s *Service) redirect(w http.ResponseWriter, r *http.Request, a authzRequest, params url.Values) {
	params.Set("state", a.State)
	u, _ := url.Parse(a.RedirectURI) // validated by parseAuthz
	u.RawQuery = params.Encode()
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Location", u.String())
	w.WriteHeader(http.StatusFound)
}

func hashCode(code string) string {
	sum := sha256.Sum256([]byte(code))
	return hex.EncodeToString(sum[:])
}

// waitText says a wait in whole seconds for people.
func waitText(d time.Duration) string {
	n := int(d/time.Second) + 1
	if n == 1 {
		return "1 second"
	}
	return strconv.Itoa(n) + " seconds"
}

// sanitize makes a user-supplied name safe for the audit log: printable
// characters only, at most 64 bytes.
func sanitize(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return '?'
		}
		return r
	}, s)
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

// tokenResponse is the successful answer of the token endpoint.
type tokenResponse struct {
	AccessToken string `json:"access_token"`
	TokenType   string `json:"token_type"`
	ExpiresIn   int64  `json:"expires_in"`
}

// oauthError is an error answer of the token endpoint (RFC 6749 5.2).
type oauthError struct {
	status      int
	Code        string `json:"error"`
	Description string `json:"error_description"`
}

func (e *oauthError) Error() string { return e.Code + ": " + e.Description }

// singleValued refuses a form that repeats a parameter: RFC 6749 (3.1,
// 3.2) forbids it, and a repeated one is ambiguous (which grant_type,
// which code?).
func singleValued(f url.Values) error {
	for name, vs := range f {
		if len(vs) > 1 {
			return &oauthError{status: http.StatusBadRequest, Code: "invalid_request", Description: "the parameter " + strconv.Quote(registry.Elide(name)) + " is repeated"}
		}
	}
	return nil
}

func grantError(desc string) error {
	return &oauthError{status: http.StatusBadRequest, Code: "invalid_grant", Description: desc}
}

func (s *Service) token(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	resp, err := s.exchange(w, r)
	if err != nil {
		var oe *oauthError
		if !errors.As(err, &oe) {
			s.opt.Logger.ErrorContext(r.Context(), "login: token exchange failed", "err", err)
			oe = &oauthError{status: http.StatusServiceUnavailable, Code: "temporarily_unavailable", Description: "the registry could not issue a token; try again"}
		}
		writeJSON(w, oe.status, oe)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// exchange redeems an authorization code for a token.
func (s *Service) exchange(w http.ResponseWriter, r *http.Request) (tokenResponse, error) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		return tokenResponse{}, &oauthError{status: http.StatusBadRequest, Code: "invalid_request", Description: "the request body is not a form"}
	}
	f := r.PostForm
	if err := singleValued(f); err != nil {
		return tokenResponse{}, err
	}
	switch f.Get("grant_type") {
	case "authorization_code":
	case DeviceGrantType:
		return s.deviceToken(r)
	default:
		return tokenResponse{}, &oauthError{status: http.StatusBadRequest, Code: "unsupported_grant_type", Description: "only authorization_code and " + DeviceGrantType + " are supported"}
	}
	if f.Get("client_id") != s.opt.ClientID {
		return tokenResponse{}, &oauthError{status: http.StatusUnauthorized, Code: "invalid_client", Description: "unknown client_id"}
	}
	code, redirect, verifier := f.Get("code"), f.Get("redirect_uri"), f.Get("code_verifier")
	if code == "" || redirect == "" || verifier == "" {
		return tokenResponse{}, &oauthError{status: http.StatusBadRequest, Code: "invalid_request", Description: "code, redirect_uri and code_verifier are required"}
	}
	if !validVerifier(verifier) {
		return tokenResponse{}, &oauthError{status: http.StatusBadRequest, Code: "invalid_request", Description: "the code_verifier must be 43 to 128 characters of A-Z, a-z, 0-9, '-', '.', '_' and '~'"}
	}
	now := s.opt.Now()
	c, err := s.opt.Index.UseAuthCode(r.Context(), hashCode(code), now.UTC())
	if registry.IsKind(err, registry.NotFound) {
		return tokenResponse{}, grantError("the authorization code is not valid")
	}
	if err != nil {
		return tokenResponse{}, err
	}
	if !c.UsedAt.IsZero() {
		// A replayed code: someone else may hold it. Revoke what it gave.
		if err := s.revokeIssued(r, c, "an authorization code was presented a second time; the token issued for it was revoked", now); err != nil {
			return tokenResponse{}, err
		}
		return tokenResponse{}, grantError("the authorization code was used already")
	}
	if !now.Before(c.ExpiresAt) {
		return tokenResponse{}, grantError("the authorization code expired: run the login command again")
	}
	if c.ClientID != f.Get("client_id") || c.RedirectURI != redirect {
		return tokenResponse{}, grantError("the authorization code was issued to another client or redirect_uri")
	}
	sum := sha256.Sum256([]byte(verifier))
	if subtle.ConstantTimeCompare([]byte(base64.RawURLEncoding.EncodeToString(sum[:])), []byte(c.Challenge)) != 1 {
		return tokenResponse{}, grantError("the code_verifier does not match the code_challenge")
	}
	u, err := s.opt.Index.GetUser(r.Context(), c.User)
	if err != nil && !registry.IsKind(err, registry.NotFound) {
		return tokenResponse{}, err
	}
	if err != nil || u.Disabled {
		return tokenResponse{}, grantError("the user cannot log in")
	}
	return s.mint(r, u, c, "login", now)
}

// mint issues the token of code c for user u, who signed in (a login.v1
// code or an approved device code, what says which), through the one
// sign-in operation (operations.IssueSignInToken: the token policy, the
// token and its audit entry in one transaction) and returns the answer.
func (s *Service) mint(r *http.Request, u registry.User, c registry.AuthCode, what string, now time.Time) (tokenResponse, error) {
	_, secret, err := s.opt.Operations.IssueSignInToken(r.Context(), s.grant(r, u, c, what, now))
	switch {
	case registry.IsKind(err, registry.Conflict):
		// A replay of the code stored the revoked token first.
		return tokenResponse{}, grantError("the authorization code was used already")
	case registry.IsKind(err, registry.Invalid) || registry.IsKind(err, registry.Forbidden):
		return tokenResponse{}, grantError(registry.Message(err))
	case err != nil:
		return tokenResponse{}, err
	}
	return tokenResponse{AccessToken: secret, TokenType: "bearer", ExpiresIn: int64(s.opt.TokenTTL / time.Second)}, nil
}

// grant is the sign-in grant of code c for user u.
func (s *Service) grant(r *http.Request, u registry.User, c registry.AuthCode, what string, now time.Time) operations.SignInGrant {
	return operations.SignInGrant{User: u, TokenID: c.TokenID, ClientID: c.ClientID, Scopes: c.Scopes, Via: what,
		Addr: r.RemoteAddr, At: now, Life: s.opt.TokenTTL}
}

// revokeIssued revokes the token of the replayed code c and audits the
// replay with details (operations.RevokeReplayedSignIn).
func (s *Service) revokeIssued(r *http.Request, c registry.AuthCode, details string, now time.Time) error {
	return s.opt.Operations.RevokeReplayedSignIn(r.Context(), s.grant(r, registry.User{Name: c.User}, c, "login", now), details)
}

// validVerifier checks a PKCE code verifier (RFC 7636 4.1).
func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

// SignIn checks a user name and password typed into another login form
// of this registry (the web UI's), under the same rate limits and
// password-check slots as the login.v1 page, and audits a failure as that
// page does (the caller audits what it makes of a success). It returns the
// user, or an error safe to show: TooLarge with retry > 0 when rate
// limited, Forbidden for a disabled account, Unauthenticated otherwise.
func (s *Service) SignIn(r *http.Request, name, password string) (user registry.User, retry time.Duration, err error) {
	name = strings.TrimSpace(name)
	account := strings.ToLower(name)
	if len(account) > 64 {
		account = account[:64]
	}
	target := account
	if target == "" {
		target = "(no user name)"
	}
	failure := func(reason string) {
		s.opt.Audit.Record(r.Context(), r, registry.AuditEvent{Action: registry.AuditLoginFailure, Actor: auth.Principal{}.Actor(),
			Target: sanitize(target), Details: reason + " (web sign-in)"})
	}
	if s.opt.NoLocalPasswords {
		failure("local passwords are switched off")
		return registry.User{}, 0, registry.Errorf(registry.Forbidden, "%s", PasswordsOffMessage)
	}
	if ok, wait, limit := s.attempts.Take(account, audit.SourceAddr(r), s.opt.Now()); !ok {
		failure("rate limited (" + limit + ")")
		who := "this account"
		if limit == "source address" {
			who = "your address"
		}
		return registry.User{}, wait, registry.Errorf(registry.TooLarge, "Too many sign-in attempts from %s. Try again in %s.", who, waitText(wait))
	}
	user, reason := s.verify(r.Context(), name, password)
	switch reason {
	case "":
		return user, 0, nil
	case "disabled":
		failure("account disabled")
		return registry.User{}, 0, registry.Errorf(registry.Forbidden, "This account is disabled. Ask an administrator of this registry.")
	}
	failure(reason)
	return registry.User{}, 0, registry.Errorf(registry.Unauthenticated, "Wrong user name or password.")
}

// Providers returns the identity providers people may sign in with, for
// other login forms of this registry (the web UI's); none without
// Options.Providers.
func (s *Service) Providers(ctx context.Context) []Provider {
	if s.opt.Providers == nil {
		return nil
	}
	return s.opt.Providers(ctx)
}

// LocalPasswords reports whether people may log in with the passwords
// of local accounts (Options.NoLocalPasswords unset).
func (s *Service) LocalPasswords() bool { return !s.opt.NoLocalPasswords }
