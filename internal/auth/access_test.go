package auth

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/sqlite"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

func TestPrincipalAllows(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	alice := registry.User{Name: "alice"}
	root := registry.User{Name: "root", Admin: true}
	off := registry.User{Name: "off", Admin: true, Disabled: true}
	roles := map[string]registry.Role{"acme": registry.RolePublisher, "docs": registry.RoleReader}
	personal := func(u registry.User, ns string, scope registry.Scope) Principal {
		var set []string
		if ns != "" {
			set = strings.Split(ns, ",")
		}
		return Principal{Token: registry.Token{ID: "tok", User: u.Name, Namespaces: set, Scopes: []registry.Scope{scope}}, User: u, Roles: roles}
	}
	service := Principal{Token: registry.Token{ID: "svc", Namespaces: []string{"acme"}, Scopes: []registry.Scope{registry.ScopePublish}}}
	services := Principal{Token: registry.Token{ID: "svc2", Namespaces: []string{"acme", "docs"}, Scopes: []registry.Scope{registry.ScopePublish}}}
	tests := map[string]struct {
		p     Principal
		scope registry.Scope
		ns    string
		want  bool
	}{
		"anonymous reads":                            {Principal{}, registry.ScopeRead, "acme", false},
		"service token within its scope":             {service, registry.ScopePublish, "acme", true},
		"service token beyond its scope":             {service, registry.ScopeAdmin, "acme", false},
		"service token on another namespace":         {service, registry.ScopeRead, "docs", false},
		"service token on the first of its set":      {services, registry.ScopePublish, "acme", true},
		"service token on the second of its set":     {services, registry.ScopePublish, "docs", true},
		"service token outside its set":              {services, registry.ScopeRead, "other", false},
		"service token of a set has no global right": {services, registry.ScopeRead, "", false},
		"token set narrows the role":                 {personal(alice, "acme,other", registry.ScopeAdmin), registry.ScopeRead, "docs", false},
		"token set does not widen the role":          {personal(alice, "acme,docs", registry.ScopeAdmin), registry.ScopePublish, "docs", false},
		"token set keeps a role in it":               {personal(alice, "acme,docs", registry.ScopeAdmin), registry.ScopePublish, "acme", true},
		"token set grants no non-membership":         {personal(alice, "acme,other", registry.ScopeAdmin), registry.ScopeRead, "other", false},
		"global admin narrowed to a set":             {personal(root, "acme,docs", registry.ScopeAdmin), registry.ScopeAdmin, "other", false},
		"global admin keeps a set's namespaces":      {personal(root, "acme,docs", registry.ScopeAdmin), registry.ScopeAdmin, "docs", true},
		"publisher member publishes":                 {personal(alice, "", registry.ScopeAdmin), registry.ScopePublish, "acme", true},
		"publisher member is no admin":               {personal(alice, "", registry.ScopeAdmin), registry.ScopeAdmin, "acme", false},
		"reader member reads":                        {personal(alice, "", registry.ScopeAdmin), registry.ScopeRead, "docs", true},
		"reader member does not publish":             {personal(alice, "", registry.ScopeAdmin), registry.ScopePublish, "docs", false},
		"non-member reads nothing":                   {personal(alice, "", registry.ScopeAdmin), registry.ScopeRead, "other", false},
		"member has no global right":                 {personal(alice, "", registry.ScopeAdmin), registry.ScopeRead, "", false},
		"token scope narrows the role":               {personal(alice, "", registry.ScopeRead), registry.ScopePublish, "acme", false},
		"token namespace narrows the role":           {personal(alice, "docs", registry.ScopeAdmin), registry.ScopeRead, "acme", false},
		"global admin user has every right":          {personal(root, "", registry.ScopeAdmin), registry.ScopeAdmin, "", true},
		"global admin narrowed to read":              {personal(root, "", registry.ScopeRead), registry.ScopePublish, "x", false},
		"global admin narrowed to a namespace":       {personal(root, "acme", registry.ScopeAdmin), registry.ScopeAdmin, "", false},
		"disabled admin has none":                    {personal(off, "", registry.ScopeAdmin), registry.ScopeRead, "acme", false},
		"user record of another user grants none":    {Principal{Token: registry.Token{ID: "t", User: "alice", Scopes: []registry.Scope{registry.ScopeAdmin}}, User: root}, registry.ScopeRead, "acme", false},
		"expired personal token grants none":         {Principal{Token: registry.Token{ID: "t", User: "root", Scopes: []registry.Scope{registry.ScopeAdmin}, ExpiresAt: now}, User: root}, registry.ScopeRead, "acme", false},
		"unknown scope is never granted":             {personal(root, "", registry.ScopeAdmin), registry.Scope("root"), "acme", false},
		"membership of the empty namespace is moot":  {Principal{Token: registry.Token{ID: "t", User: "alice", Scopes: []registry.Scope{registry.ScopeAdmin}}, User: alice, Roles: map[string]registry.Role{"": registry.RoleAdmin}}, registry.ScopeAdmin, "", false},
	}
	for name, tt := range tests {
		if got := tt.p.Allows(tt.scope, tt.ns, now); got != tt.want {
			t.Errorf("%s: Allows(%s, %q) = %v, want %v", name, tt.scope, tt.ns, got, tt.want)
		}
	}
}

func TestPasswordHash(t *testing.T) {
	h, err := HashPassword("correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") || strings.Contains(h, "correct") {
		t.Fatalf("hash %q is not an argon2id PHC string with the default parameters", h)
	}
	h2, _ := HashPassword("correct horse battery")
	if h == h2 {
		t.Fatal("two hashes of one password are equal: the salt is not random")
	}
	parts := strings.Split(h, "$")
	tests := map[string]struct {
		hash, password string
		want           bool
	}{
		"right password":     {h, "correct horse battery", true},
		"wrong password":     {h, "correct horse batterY", false},
		"empty password":     {h, "", false},
		"empty hash":         {"", "", false},
		"other algorithm":    {strings.Replace(h, "argon2id", "argon2i", 1), "correct horse battery", false},
		"other version":      {strings.Replace(h, "v=19", "v=16", 1), "correct horse battery", false},
		"huge memory":        {strings.Replace(h, "m=19456", "m=4194304", 1), "correct horse battery", false},
		"many passes":        {strings.Replace(h, "t=2", "t=1000", 1), "correct horse battery", false},
		"truncated key":      {strings.Join(append(parts[:5:5], parts[5][:8]), "$"), "correct horse battery", false},
		"bad base64 salt":    {strings.Join(append(append(parts[:4:4], "!!!!!!!!!!!!"), parts[5]), "$"), "correct horse battery", false},
		"missing field":      {strings.Join(parts[:5], "$"), "correct horse battery", false},
		"over-long password": {h, strings.Repeat("x", MaxPasswordBytes+1), false},
	}
	for name, tt := range tests {
		if got := VerifyPassword(tt.hash, tt.password); got != tt.want {
			t.Errorf("%s: VerifyPassword = %v, want %v", name, got, tt.want)
		}
	}
	if VerifyNoPassword("correct horse battery") {
		t.Error("VerifyNoPassword returned true")
	}
}

// accessFixture is a real SQLite index with namespaces, users and tokens.
type accessFixture struct {
	idx    *sqlite.Index
	access *Access
	now    time.Time
	tokens map[string]string // name -> secret
}

func newAccessFixture(t *testing.T) *accessFixture {
	t.Helper()
	ctx := context.Background()
	idx := sqlitetest.NewIndex(t)
	f := &accessFixture{idx: idx, now: time.Now().UTC(), tokens: map[string]string{}}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(idx.CreateNamespace(ctx, registry.Namespace{Name: "open", Visibility: registry.VisibilityPublic, CreatedAt: f.now}))
	must(idx.CreateNamespace(ctx, registry.Namespace{Name: "secret", Visibility: registry.VisibilityPrivate, CreatedAt: f.now}))
	must(idx.CreateNamespace(ctx, registry.Namespace{Name: "other", Visibility: registry.VisibilityPrivate, CreatedAt: f.now}))
	for _, u := range []registry.User{{Name: "reader"}, {Name: "stranger"}, {Name: "off", Disabled: true}} {
		u.CreatedAt = f.now
		must(idx.CreateUser(ctx, u))
	}
	must(idx.SetMembership(ctx, registry.Membership{User: "reader", Namespace: "secret", Role: registry.RoleReader, CreatedAt: f.now}))
	must(idx.SetMembership(ctx, registry.Membership{User: "stranger", Namespace: "other", Role: registry.RoleAdmin, CreatedAt: f.now}))
	must(idx.SetMembership(ctx, registry.Membership{User: "off", Namespace: "secret", Role: registry.RoleAdmin, CreatedAt: f.now}))
	mint := func(name string, tk registry.Token) {
		secret, hash, err := NewToken()
		must(err)
		tk.ID, tk.Hash, tk.CreatedAt = "tok_"+name, hash, f.now
		if tk.Scopes == nil {
			tk.Scopes = []registry.Scope{registry.ScopeAdmin}
		}
		must(idx.CreateToken(ctx, tk))
		f.tokens[name] = secret
	}
	mint("reader", registry.Token{User: "reader"})
	mint("stranger", registry.Token{User: "stranger"})
	mint("disabled", registry.Token{User: "off"})
	mint("service", registry.Token{Namespaces: []string{"secret"}, Scopes: []registry.Scope{registry.ScopeRead}})
	mint("expired", registry.Token{User: "reader", ExpiresAt: f.now.Add(-time.Minute)})
	mint("revoked", registry.Token{User: "reader", RevokedAt: f.now.Add(-time.Minute)})
	f.access = NewAccess(NewAuthenticator(idx), idx)
	return f
}

func TestProtocolRead(t *testing.T) {
	f := newAccessFixture(t)
	type want struct {
		kind     registry.Kind // -1 stands for "allowed"
		private  bool
		consumer string // of an allowed request
	}
	allowed := func(private bool, consumer string) want { return want{kind: -1, private: private, consumer: consumer} }
	cases := []struct {
		token string // name in f.tokens, "" for none, or a raw header value after "raw:"
		ns    string
		want  want
	}{
		{"", "open", allowed(false, registry.AnonymousConsumer)},
		{"raw:", "open", allowed(false, registry.AnonymousConsumer)}, // an empty header is no token
		{"", "secret", want{kind: registry.Unauthenticated, private: true}},
		{"", "nosuch", want{kind: registry.Unauthenticated, private: true}},
		{"reader", "open", allowed(false, "user:reader")},
		{"reader", "secret", allowed(true, "user:reader")},
		{"reader", "other", want{kind: registry.NotFound, private: true}},
		{"reader", "nosuch", want{kind: registry.NotFound, private: true}},
		{"stranger", "secret", want{kind: registry.NotFound, private: true}},
		{"service", "secret", allowed(true, "token:tok_service")},
		{"service", "other", want{kind: registry.NotFound, private: true}},
		{"disabled", "secret", want{kind: registry.Unauthenticated, private: false}},
		{"disabled", "open", want{kind: registry.Unauthenticated, private: false}},
		{"expired", "secret", want{kind: registry.Unauthenticated, private: false}},
		{"expired", "open", want{kind: registry.Unauthenticated, private: false}},
		{"revoked", "open", want{kind: registry.Unauthenticated, private: false}},
		{"raw:Bearer trove_unknown", "open", want{kind: registry.Unauthenticated, private: false}},
		{"raw:Basic dXNlcjpwYXNz", "secret", want{kind: registry.Unauthenticated, private: false}},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/v1/providers/"+c.ns+"/x/versions", nil)
		switch raw, isRaw := strings.CutPrefix(c.token, "raw:"); {
		case isRaw:
			r.Header.Set("Authorization", raw)
		case c.token != "":
			r.Header.Set("Authorization", "Bearer "+f.tokens[c.token])
		}
		// Twice: the second answer comes from the caches.
		for round := range 2 {
			rd, err := f.access.ProtocolRead(r, c.ns)
			switch {
			case c.want.kind == -1 && err != nil:
				t.Errorf("round %d: token %q reading %s: %v, want allowed", round, c.token, c.ns, err)
			case c.want.kind != -1 && !registry.IsKind(err, c.want.kind):
				t.Errorf("round %d: token %q reading %s: error %v, want kind %s", round, c.token, c.ns, err, c.want.kind)
			case err == nil && (rd.Private != c.want.private || rd.Consumer != c.want.consumer):
				t.Errorf("round %d: token %q reading %s: %+v, want private %v, consumer %q", round, c.token, c.ns, rd, c.want.private, c.want.consumer)
			}
			if secret := f.tokens[c.token]; err != nil && secret != "" && strings.Contains(err.Error(), secret) {
				t.Errorf("error %q echoes the token", err)
			}
		}
	}
}

// TestProtocolReadDoesNotAllocate checks that a request the caches
// decide, with a token or without, costs no allocation: the consumer's
// name is made once per token lookup, not per request.
func TestProtocolReadDoesNotAllocate(t *testing.T) {
	f := newAccessFixture(t)
	for _, c := range []struct{ token, ns string }{{"", "open"}, {"reader", "open"}, {"reader", "secret"}, {"service", "secret"}} {
		r := httptest.NewRequest("GET", "/v1/providers/"+c.ns+"/x/versions", nil)
		if c.token != "" {
			r.Header.Set("Authorization", "Bearer "+f.tokens[c.token])
		}
		if _, err := f.access.ProtocolRead(r, c.ns); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { _, _ = f.access.ProtocolRead(r, c.ns) }); n != 0 {
			t.Errorf("token %q reading %s allocates %v times, want 0", c.token, c.ns, n)
		}
	}
}

// TestMirrorRead: a mirror that is not public needs a valid token; an
// empty Authorization header is anonymous, not a token.
func TestMirrorRead(t *testing.T) {
	f := newAccessFixture(t)
	for _, public := range []bool{false, true} {
		f.access.SetMirrorPublic(public)
		for _, c := range []struct {
			header string // "-" for none
			want   registry.Kind
		}{
			{"-", registry.Unauthenticated},
			{"", registry.Unauthenticated},
			{"Bearer " + f.tokens["reader"], -1},
			{"Bearer trove_unknown", registry.Unauthenticated},
			{"Bearer ", registry.Unauthenticated},
		} {
			r := httptest.NewRequest("GET", "/v1/mirror/x.example/a/b/index.json", nil)
			if c.header != "-" {
				r.Header["Authorization"] = []string{c.header}
			}
			err := f.access.MirrorRead(r)
			want := c.want
			if public && (c.header == "-" || c.header == "") {
				want = -1
			}
			if want == -1 && err != nil || want != -1 && !registry.IsKind(err, want) {
				t.Errorf("public %v, Authorization %.20q: %v, want kind %d (-1: allowed)", public, c.header, err, want)
			}
		}
	}
}

// TestCachesInvalidate checks that changes through this process apply at
// once despite the caches.
func TestCachesInvalidate(t *testing.T) {
	f := newAccessFixture(t)
	ctx := context.Background()
	read := func(token, ns string) error {
		r := httptest.NewRequest("GET", "/", nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+f.tokens[token])
		}
		_, err := f.access.ProtocolRead(r, ns)
		return err
	}
	if err := read("stranger", "secret"); !registry.IsKind(err, registry.NotFound) {
		t.Fatalf("stranger reading secret: %v, want not found", err)
	}
	if err := f.idx.SetMembership(ctx, registry.Membership{User: "stranger", Namespace: "secret", Role: registry.RoleReader, CreatedAt: f.now}); err != nil {
		t.Fatal(err)
	}
	f.access.Invalidate()
	if err := read("stranger", "secret"); err != nil {
		t.Fatalf("stranger reading secret after becoming a member: %v", err)
	}
	if err := f.idx.RevokeToken(ctx, "tok_stranger", f.now); err != nil {
		t.Fatal(err)
	}
	f.access.Authenticator().Invalidate()
	if err := read("stranger", "secret"); !registry.IsKind(err, registry.Unauthenticated) {
		t.Fatalf("revoked token: %v, want unauthenticated", err)
	}

	if err := read("", "secret"); !registry.IsKind(err, registry.Unauthenticated) {
		t.Fatalf("anonymous reading secret: %v, want unauthenticated", err)
	}
	if err := f.idx.UpdateNamespace(ctx, registry.Namespace{Name: "secret", Visibility: registry.VisibilityPublic}); err != nil {
		t.Fatal(err)
	}
	f.access.InvalidateNamespace("secret")
	if err := read("", "secret"); err != nil {
		t.Fatalf("anonymous reading secret after it became public: %v", err)
	}
}

func TestAuthenticateFresh(t *testing.T) {
	f := newAccessFixture(t)
	a := f.access.Authenticator()
	get := func(token string) (Principal, error) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "Bearer "+f.tokens[token])
		return a.Authenticate(r)
	}
	p, err := get("reader")
	if err != nil || p.User.Name != "reader" || p.Roles["secret"] != registry.RoleReader || p.Actor() != "user:reader" {
		t.Fatalf("reader: %+v, %v", p, err)
	}
	p, err = get("service")
	if err != nil || p.User.Name != "" || p.Actor() != "token:tok_service" {
		t.Fatalf("service: %+v, %v", p, err)
	}
	for name, want := range map[string]string{"disabled": "disabled", "expired": "expired", "revoked": "revoked"} {
		if _, err := get(name); !registry.IsKind(err, registry.Unauthenticated) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s token: %v, want unauthenticated saying %q", name, err, want)
		}
	}
	// Authenticate reads the index every time: a revoke shows at once.
	if err := f.idx.RevokeToken(context.Background(), "tok_reader", f.now); err != nil {
		t.Fatal(err)
	}
	if _, err := get("reader"); !registry.IsKind(err, registry.Unauthenticated) {
		t.Errorf("revoked reader token: %v", err)
	}
}

// failingNamespaces wraps a store.Namespaces; with down set, GetNamespace
// fails as an unreachable index does.
type failingNamespaces struct {
	store.Namespaces
	down bool
}

func (f *failingNamespaces) GetNamespace(ctx context.Context, name string) (registry.Namespace, error) {
	if f.down {
		return registry.Namespace{}, registry.Errorf(registry.Unavailable, "the index is not reachable")
	}
	return f.Namespaces.GetNamespace(ctx, name)
}

// TestVisibilityThroughIndexOutage: a namespace's visibility read before
// the index became unreachable keeps answering for a minute past its
// TTL, so cached documents stay served; one never read, or read too
// long ago, fails with the index's error.
func TestVisibilityThroughIndexOutage(t *testing.T) {
	f := newAccessFixture(t)
	ns := &failingNamespaces{Namespaces: f.idx}
	authn := NewAuthenticator(f.idx)
	now := f.now
	authn.SetClock(func() time.Time { return now })
	authn.SetCacheTTL(5 * time.Second)
	access := NewAccess(authn, ns)
	read := func(namespace string) error {
		_, err := access.ProtocolRead(httptest.NewRequest("GET", "/", nil), namespace)
		return err
	}
	if err := read("open"); err != nil {
		t.Fatalf("reading open: %v", err)
	}
	ns.down = true
	now = now.Add(30 * time.Second) // past the TTL, within the stale minute
	if err := read("open"); err != nil {
		t.Errorf("reading open 30 s into an outage: %v, want the visibility read before it", err)
	}
	if err := read("secret"); !registry.IsKind(err, registry.Unavailable) {
		t.Errorf("reading a namespace never read, during the outage: %v, want unavailable", err)
	}
	now = now.Add(time.Minute)
	if err := read("open"); !registry.IsKind(err, registry.Unavailable) {
		t.Errorf("reading open 90 s into an outage: %v, want unavailable", err)
	}
	ns.down = false
	if err := read("open"); err != nil {
		t.Errorf("reading open after the outage: %v", err)
	}
}

// TestProtocolReadAt: a request is judged at the time handed down (when
// it arrived), token expiry included, unless the Authenticator's clock
// was set, which then wins.
func TestProtocolReadAt(t *testing.T) {
	f := newAccessFixture(t)
	secret, hash, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	expires := f.now.Add(time.Hour)
	err = f.idx.CreateToken(context.Background(), registry.Token{ID: "tok_soon", Hash: hash, User: "reader",
		Scopes: []registry.Scope{registry.ScopeRead}, CreatedAt: f.now, ExpiresAt: expires})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/v1/providers/secret/x/versions", nil)
	r.Header.Set("Authorization", "Bearer "+secret)
	if rd, err := f.access.ProtocolReadAt(r, "secret", f.now); err != nil || !rd.Private || rd.Consumer != "user:reader" {
		t.Fatalf("before expiry: %+v, %v; want allowed", rd, err)
	}
	if _, err := f.access.ProtocolReadAt(r, "secret", expires.Add(time.Hour)); !registry.IsKind(err, registry.Unauthenticated) {
		t.Errorf("a request arriving after expiry: %v, want Unauthenticated", err)
	}
	authn := NewAuthenticator(f.idx)
	authn.SetClock(func() time.Time { return expires.Add(time.Hour) })
	if _, err := NewAccess(authn, f.idx).ProtocolReadAt(r, "secret", f.now); !registry.IsKind(err, registry.Unauthenticated) {
		t.Errorf("with a clock set after expiry: %v, want Unauthenticated (the set clock wins)", err)
	}
}
