package sso_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"trove.dev/trove/internal/protocol/login"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/sso"
	"trove.dev/trove/internal/store/sqlite"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

// issuer is a small OpenID provider for the refusal tests: discovery,
// keys and a token endpoint whose ID token each test shapes. (The
// end-to-end tests run a real provider, internal/e2e/testdata/oidcprovider.)
type issuer struct {
	srv    *httptest.Server
	key    *ecdsa.PrivateKey
	mu     sync.Mutex
	shape  func(claims map[string]any) // changes the claims of the next ID token
	info   map[string]any              // the userinfo answer; nil: no userinfo endpoint
	nonce  string                      // of the last authorization request
	tokens int
}

func newIssuer(t *testing.T) *issuer {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{key: key}
	mux := http.NewServeMux()
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		doc := map[string]any{
			"issuer": is.srv.URL, "authorization_endpoint": is.srv.URL + "/authorize", "token_endpoint": is.srv.URL + "/token",
			"jwks_uri": is.srv.URL + "/keys", "id_token_signing_alg_values_supported": []string{"ES256"},
		}
		is.mu.Lock()
		if is.info != nil {
			doc["userinfo_endpoint"] = is.srv.URL + "/userinfo"
		}
		is.mu.Unlock()
		json.NewEncoder(w).Encode(doc)
	})
	mux.HandleFunc("GET /userinfo", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer at" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		is.mu.Lock()
		defer is.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(is.info)
	})
	mux.HandleFunc("GET /keys", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "ES256", Use: "sig"}}})
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.PostForm.Get("code") != "good-code" || r.PostForm.Get("code_verifier") == "" {
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]string{"error": "invalid_grant"})
			return
		}
		is.mu.Lock()
		is.tokens++
		claims := map[string]any{
			"iss": is.srv.URL, "sub": "u-123", "aud": "trove", "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(),
			"nonce": is.nonce, "preferred_username": "Alice.Smith", "groups": []string{"platform"},
		}
		if is.shape != nil {
			is.shape(claims)
		}
		is.mu.Unlock()
		signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: "k1"}}, nil)
		if err != nil {
			t.Error(err)
			return
		}
		payload, _ := json.Marshal(claims)
		jws, err := signer.Sign(payload)
		if err != nil {
			t.Error(err)
			return
		}
		raw, _ := jws.CompactSerialize()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": "at", "token_type": "Bearer", "id_token": raw, "expires_in": 3600})
	})
	return is
}

// sessions records the web sessions started.
type sessions struct {
	mu    sync.Mutex
	users []string
}

func (s *sessions) StartSession(w http.ResponseWriter, r *http.Request, user registry.User, via, next string) error {
	s.mu.Lock()
	s.users = append(s.users, user.Name+" via "+via+" to "+next)
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type env struct {
	idx      *sqlite.Index
	is       *issuer
	sessions *sessions
	handler  http.Handler
}

func setup(t *testing.T) *env {
	t.Helper()
	ctx := t.Context()
	idx := sqlitetest.NewIndex(t)
	is := newIssuer(t)
	lg, err := login.New(ctx, login.Options{Index: idx})
	if err != nil {
		t.Fatal(err)
	}
	public, _ := url.Parse("https://trove.example.com")
	ss := &sessions{}
	svc, err := sso.New(ctx, sso.Options{Index: idx, Login: lg, Sessions: ss, PublicURL: public})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := idx.PutIdentityProvider(ctx, registry.IdentityProvider{Name: "corp", Issuer: is.srv.URL, ClientID: "trove",
		CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := idx.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := idx.CreateRoleMapping(ctx, registry.RoleMapping{Provider: "corp", Claim: "groups", Value: "platform",
		Namespace: "acme", Role: registry.RolePublisher, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	svc.Register(mux)
	return &env{idx: idx, is: is, sessions: ss, handler: mux}
}

// begin starts a web sign-in and returns the state cookie and the state.
func (e *env) begin(t *testing.T) (*http.Cookie, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, httptest.NewRequest("GET", "/oauth/sso/corp/start?next=/settings/tokens", nil))
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("start: %d %s", rec.Code, rec.Body)
	}
	loc, err := url.Parse(rec.Header().Get("Location"))
	if err != nil || !strings.HasPrefix(loc.String(), e.is.srv.URL+"/authorize") {
		t.Fatalf("start redirects to %q", rec.Header().Get("Location"))
	}
	q := loc.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("nonce") == "" || q.Get("client_id") != "trove" ||
		q.Get("redirect_uri") != "https://trove.example.com/oauth/sso/corp/callback" || !strings.Contains(q.Get("scope"), "openid") {
		t.Errorf("authorization request %v lacks PKCE, nonce, client or redirect URI", q)
	}
	e.is.mu.Lock()
	e.is.nonce = q.Get("nonce")
	e.is.mu.Unlock()
	var cookie *http.Cookie
	for _, c := range rec.Result().Cookies() {
		if c.Name == "__Host-trove-sso" {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || !cookie.Secure {
		t.Fatalf("start set no HttpOnly, Secure state cookie: %v", rec.Result().Cookies())
	}
	return cookie, q.Get("state")
}

func (e *env) callback(t *testing.T, path string, cookie *http.Cookie, params url.Values) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("GET", path+"?"+params.Encode(), nil)
	if cookie != nil {
		req.AddCookie(cookie)
	}
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	return rec
}

func (e *env) lastFailure(t *testing.T) string {
	t.Helper()
	es, err := e.idx.ListAudit(t.Context(), registry.AuditFilter{Action: registry.AuditLoginFailure, Limit: 1})
	if err != nil || len(es) == 0 {
		t.Fatalf("no login.failure audited (%v)", err)
	}
	return es[0].Details
}

func TestSignInCreatesUserAndAppliesMappings(t *testing.T) {
	e := setup(t)
	ctx := t.Context()
	// A local user of the same name exists: the new person gets another.
	if err := e.idx.CreateUser(ctx, registry.User{Name: "alice.smith", PasswordHash: "x", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	cookie, state := e.begin(t)
	rec := e.callback(t, "/oauth/sso/corp/callback", cookie, url.Values{"code": {"good-code"}, "state": {state}})
	if rec.Code != http.StatusNoContent || len(e.sessions.users) != 1 || e.sessions.users[0] != "alice.smith-2 via corp to /settings/tokens" {
		t.Fatalf("callback: %d %s; sessions %v", rec.Code, rec.Body, e.sessions.users)
	}
	u, err := e.idx.GetUser(ctx, "alice.smith-2")
	if err != nil || u.PasswordHash != "" {
		t.Errorf("user created at sign-in: %+v, %v; want no password", u, err)
	}
	ms, err := e.idx.ListMemberships(ctx, "alice.smith-2", "")
	if err != nil || len(ms) != 1 || ms[0].Namespace != "acme" || ms[0].Role != registry.RolePublisher {
		t.Errorf("memberships = %+v, %v; want publisher of acme", ms, err)
	}
	events, _ := e.idx.ListAudit(ctx, registry.AuditFilter{Action: registry.AuditMembershipSet})
	if len(events) != 1 || !strings.Contains(events[0].Details, "by role mapping") {
		t.Errorf("membership.set events = %+v", events)
	}
	// Removed from the group: the next sign-in removes the membership.
	e.is.shape = func(c map[string]any) { c["groups"] = []string{"other"} }
	cookie, state = e.begin(t)
	if rec := e.callback(t, "/oauth/sso/corp/callback", cookie, url.Values{"code": {"good-code"}, "state": {state}}); rec.Code != http.StatusNoContent {
		t.Fatalf("second callback: %d %s", rec.Code, rec.Body)
	}
	if ms, _ := e.idx.ListMemberships(ctx, "alice.smith-2", ""); len(ms) != 0 {
		t.Errorf("memberships after leaving the group = %+v", ms)
	}
	if len(e.sessions.users) != 2 || !strings.HasPrefix(e.sessions.users[1], "alice.smith-2 ") {
		t.Errorf("second sign-in linked another user: %v", e.sessions.users)
	}
}

func TestCallbackRefusals(t *testing.T) {
	tests := map[string]struct {
		shape  func(map[string]any)
		params func(state string) url.Values
		path   string
		status int
		reason string
	}{
		"bad state": {
			params: func(string) url.Values { return url.Values{"code": {"good-code"}, "state": {"forged"}} },
			status: http.StatusBadRequest, reason: "state does not match",
		},
		"missing nonce": {
			shape:  func(c map[string]any) { delete(c, "nonce") },
			status: http.StatusUnauthorized, reason: "nonce does not match",
		},
		"mismatched nonce": {
			shape:  func(c map[string]any) { c["nonce"] = "another" },
			status: http.StatusUnauthorized, reason: "nonce does not match",
		},
		"wrong audience": {
			shape:  func(c map[string]any) { c["aud"] = "someone-else" },
			status: http.StatusUnauthorized, reason: "ID token was refused",
		},
		"expired ID token": {
			shape:  func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() },
			status: http.StatusUnauthorized, reason: "ID token was refused",
		},
		"wrong issuer": {
			shape:  func(c map[string]any) { c["iss"] = "https://evil.example.com" },
			status: http.StatusUnauthorized, reason: "ID token was refused",
		},
		"error from the provider": {
			params: func(state string) url.Values {
				return url.Values{"error": {"access_denied"}, "error_description": {"no"}, "state": {state}}
			},
			status: http.StatusForbidden, reason: "answered access_denied",
		},
		"bad code": {
			params: func(state string) url.Values { return url.Values{"code": {"other"}, "state": {state}} },
			status: http.StatusBadGateway, reason: "code exchange failed",
		},
		"another provider's callback": {
			path:   "/oauth/sso/other/callback",
			status: http.StatusBadRequest, reason: "state does not match",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := setup(t)
			e.is.shape = tc.shape
			cookie, state := e.begin(t)
			params := url.Values{"code": {"good-code"}, "state": {state}}
			if tc.params != nil {
				params = tc.params(state)
			}
			path := "/oauth/sso/corp/callback"
			if tc.path != "" {
				path = tc.path
			}
			rec := e.callback(t, path, cookie, params)
			if rec.Code != tc.status {
				t.Errorf("status %d, want %d: %s", rec.Code, tc.status, rec.Body)
			}
			if got := e.lastFailure(t); !strings.Contains(got, tc.reason) {
				t.Errorf("audited %q, want it to say %q", got, tc.reason)
			}
			if len(e.sessions.users) != 0 {
				t.Errorf("a refused callback started sessions %v", e.sessions.users)
			}
			if users, _ := e.idx.ListUsers(context.Background()); len(users) != 0 {
				t.Errorf("a refused callback created users %+v", users)
			}
		})
	}
}

func TestReplayedCallbackIsRefused(t *testing.T) {
	e := setup(t)
	cookie, state := e.begin(t)
	params := url.Values{"code": {"good-code"}, "state": {state}}
	if rec := e.callback(t, "/oauth/sso/corp/callback", cookie, params); rec.Code != http.StatusNoContent {
		t.Fatalf("first callback: %d %s", rec.Code, rec.Body)
	}
	rec := e.callback(t, "/oauth/sso/corp/callback", cookie, params)
	if rec.Code != http.StatusBadRequest || !strings.Contains(e.lastFailure(t), "replayed") {
		t.Errorf("replayed callback: %d %s, audit %q", rec.Code, rec.Body, e.lastFailure(t))
	}
	if e.is.tokens != 1 || len(e.sessions.users) != 1 {
		t.Errorf("a replay reached the token endpoint (%d exchanges) or started a session (%v)", e.is.tokens, e.sessions.users)
	}
}

func TestCallbackWithoutCookieOrForUnknownProvider(t *testing.T) {
	e := setup(t)
	if rec := e.callback(t, "/oauth/sso/corp/callback", nil, url.Values{"code": {"good-code"}, "state": {"x"}}); rec.Code != http.StatusBadRequest {
		t.Errorf("callback without the state cookie: %d", rec.Code)
	}
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, httptest.NewRequest("GET", "/oauth/sso/nope/start", nil))
	if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "no identity provider") {
		t.Errorf("start of an unknown provider: %d %s", rec.Code, rec.Body)
	}
	// A provider deleted during the round trip.
	cookie, state := e.begin(t)
	if err := e.idx.DeleteIdentityProvider(t.Context(), "corp"); err != nil {
		t.Fatal(err)
	}
	rec = e.callback(t, "/oauth/sso/corp/callback", cookie, url.Values{"code": {"good-code"}, "state": {state}})
	if rec.Code != http.StatusNotFound || !strings.Contains(e.lastFailure(t), "unknown identity provider") {
		t.Errorf("callback of a deleted provider: %d %s", rec.Code, rec.Body)
	}
}

func TestGrants(t *testing.T) {
	ms := []registry.RoleMapping{
		{Claim: "groups", Value: "platform", Namespace: "acme", Role: registry.RolePublisher},
		{Claim: "groups", Value: "readers", Namespace: "acme", Role: registry.RoleReader},
		{Claim: "groups", Value: "ops", Namespace: "*", Role: registry.RoleAdmin},
		{Claim: "department", Value: "labs", Namespace: "labs", Role: registry.RoleAdmin},
		{Claim: "email_verified", Value: "true", Namespace: "all", Role: registry.RoleReader},
	}
	grants, admin := sso.Grants(ms, map[string]any{"groups": []any{"readers", "platform"}, "department": "labs", "email_verified": true})
	want := []registry.RoleGrant{{Namespace: "acme", Role: registry.RolePublisher}, {Namespace: "all", Role: registry.RoleReader}, {Namespace: "labs", Role: registry.RoleAdmin}}
	if admin || len(grants) != 3 || grants[0] != want[0] || grants[1] != want[1] || grants[2] != want[2] {
		t.Errorf("Grants = %+v, admin %v; want %+v, false", grants, admin, want)
	}
	if _, admin := sso.Grants(ms, map[string]any{"groups": "ops"}); !admin {
		t.Error("a string claim equal to the value does not grant")
	}
}

// TestClaimsFromUserInfo: a provider that puts profile and group claims
// only in its userinfo answer (ZITADEL's default) names the user and
// matches the role mappings all the same; the ID token's claims win, and a
// userinfo answer about another subject is refused.
func TestClaimsFromUserInfo(t *testing.T) {
	e := setup(t)
	ctx := t.Context()
	e.is.info = map[string]any{"sub": "u-123", "preferred_username": "Bob.Jones", "groups": []string{"platform"}, "email": "ignored@example.com"}
	e.is.shape = func(c map[string]any) {
		delete(c, "preferred_username")
		delete(c, "groups")
		c["email"] = "bob@example.com"
	}
	cookie, state := e.begin(t)
	rec := e.callback(t, "/oauth/sso/corp/callback", cookie, url.Values{"code": {"good-code"}, "state": {state}})
	if rec.Code != http.StatusNoContent || len(e.sessions.users) != 1 || !strings.HasPrefix(e.sessions.users[0], "bob.jones via corp") {
		t.Fatalf("callback: %d %s; sessions %v; want bob.jones from the userinfo answer", rec.Code, rec.Body, e.sessions.users)
	}
	ms, err := e.idx.ListMemberships(ctx, "bob.jones", "")
	if err != nil || len(ms) != 1 || ms[0].Namespace != "acme" || ms[0].Role != registry.RolePublisher {
		t.Errorf("memberships = %+v, %v; want publisher of acme through the userinfo groups", ms, err)
	}

	// Another subject's answer is not taken for this one's.
	e.is.mu.Lock()
	e.is.info = map[string]any{"sub": "someone-else", "preferred_username": "mallory", "groups": []string{"platform"}}
	e.is.mu.Unlock()
	cookie, state = e.begin(t)
	if rec := e.callback(t, "/oauth/sso/corp/callback", cookie, url.Values{"code": {"good-code"}, "state": {state}}); rec.Code != http.StatusBadGateway {
		t.Errorf("userinfo of another subject: %d %s, want 502", rec.Code, rec.Body)
	}
	if _, err := e.idx.GetUser(ctx, "mallory"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("a user was created from another subject's userinfo: %v", err)
	}
}
