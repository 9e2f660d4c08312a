package providers

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signedurl"
)

// guarded is a fixture whose Service reads through a real auth.Access:
// acme is private (as newIndex creates it), open is public.
type guarded struct {
	*fixture
	private *signedurl.Signer
	tokens  map[string]string // name -> "Bearer <secret>"
}

const privateTTL = 2 * time.Minute

func newGuarded(t testing.TB) *guarded {
	t.Helper()
	idx := newIndex(t, version("1.0.0", "linux_amd64", "darwin_arm64"))
	ctx := context.Background()
	if err := idx.CreateNamespace(ctx, registry.Namespace{Name: "open", Visibility: registry.VisibilityPublic, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := idx.CreateNamespace(ctx, registry.Namespace{Name: "other", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	pub := version("1.0.0", "linux_amd64")
	pub.Namespace, pub.SigningKey.Namespace = "open", "open"
	idx.put(t, pub)
	tokens := map[string]string{}
	for name, ns := range map[string]string{"reader": "acme", "stranger": "other"} {
		secret, hash, err := auth.NewToken()
		if err != nil {
			t.Fatal(err)
		}
		tok := registry.Token{ID: "tok_" + name, Hash: hash, Namespaces: []string{ns}, Scopes: []registry.Scope{registry.ScopeRead}, CreatedAt: time.Now()}
		if err := idx.CreateToken(ctx, tok); err != nil {
			t.Fatal(err)
		}
		tokens[name] = "Bearer " + secret
	}
	access := auth.NewAccess(auth.NewAuthenticator(idx.Index), idx.Index)
	g := &guarded{tokens: tokens}
	// The private signer shares the key and the clock of the fixture's.
	var clockNow func() time.Time
	g.fixture = newFixture(t, idx, func(s *Service) {
		clockNow = s.clock
		g.private = signedurl.New([]byte("test key"), privateTTL).WithClock(func() time.Time { return clockNow() })
		WithGuard(access, g.private)(s)
	})
	return g
}

func (g *guarded) get(t testing.TB, path, who string) response {
	t.Helper()
	if who == "" {
		return g.do(t, http.MethodGet, path)
	}
	return g.do(t, http.MethodGet, path, "Authorization", g.tokens[who])
}

// TestGuardAnswers checks who gets what on a private and a public
// namespace, before and after the documents are cached.
func TestGuardAnswers(t *testing.T) {
	g := newGuarded(t)
	paths := map[string]string{
		"versions": "/v1/providers/%s/widget/versions",
		"download": "/v1/providers/%s/widget/1.0.0/download/linux/amd64",
	}
	cases := []struct {
		ns, who string
		want    int
	}{
		{"acme", "", http.StatusUnauthorized},
		{"acme", "stranger", http.StatusNotFound},
		{"acme", "reader", http.StatusOK},
		{"nosuch", "", http.StatusUnauthorized},
		{"nosuch", "reader", http.StatusNotFound},
		{"open", "", http.StatusOK},
		{"open", "stranger", http.StatusOK},
	}
	for round, when := range []string{"cold", "cached"} {
		for _, pattern := range paths {
			for _, c := range cases {
				path := strings.Replace(pattern, "%s", c.ns, 1)
				r := g.get(t, path, c.who)
				if r.status != c.want {
					t.Errorf("%s: GET %s as %q = %d %s, want %d", when, path, c.who, r.status, r.body, c.want)
				}
				if r.status == http.StatusUnauthorized && r.header.Get("WWW-Authenticate") == "" {
					t.Errorf("%s: GET %s as %q: 401 without WWW-Authenticate", when, path, c.who)
				}
				if c.who != "" && bytes.Contains(r.body, []byte(strings.TrimPrefix(g.tokens[c.who], "Bearer "))) {
					t.Errorf("GET %s echoes the token", path)
				}
			}
		}
		if round == 0 && g.idx.reads.Load() == 0 {
			t.Fatal("nothing was read from the index")
		}
	}
}

// TestGuardRefusalIsIndistinguishable checks that a token that may not
// read a private namespace gets, byte for byte, the answer it gets for a
// provider that does not exist in a namespace it may read (other), and
// for a namespace that does not exist.
func TestGuardRefusalIsIndistinguishable(t *testing.T) {
	g := newGuarded(t)
	g.get(t, "/v1/providers/acme/widget/versions", "reader") // cache the private documents
	g.get(t, "/v1/providers/acme/widget/1.0.0/download/linux/amd64", "reader")
	paths := []string{
		"/v1/providers/%s/widget/versions",
		"/v1/providers/%s/widget/1.0.0/download/linux/amd64",
		"/v1/providers/%s/widget/1.0.0/download/plan9/amd64",
		"/v1/providers/%s/widget/9.9.9/download/linux/amd64",
		"/v1/providers/%s/widget/v1.0.0/download/linux/amd64",
		"/v1/providers/%s/widget/1.0.0/download/Linux/amd64",
		"/v1/providers/%s/nosuchtype/versions",
		"/v1/providers/%s/ACME/versions",
	}
	for _, p := range paths {
		private := g.get(t, strings.Replace(p, "%s", "acme", 1), "stranger")
		for _, other := range []string{"other", "zzzz"} {
			missing := g.get(t, strings.Replace(p, "%s", other, 1), "stranger")
			if private.status != http.StatusNotFound || missing.status != private.status {
				t.Errorf("%s: status %d for the private namespace, %d in %s; want both 404", p, private.status, missing.status, other)
			}
			if want := bytes.ReplaceAll(missing.body, []byte(other), []byte("acme")); !bytes.Equal(private.body, want) {
				t.Errorf("%s: bodies differ:\n private %s\n %s %s", p, private.body, other, missing.body)
			}
			for _, h := range []string{"Content-Type", "Cache-Control", "Etag", "Www-Authenticate"} {
				if private.header.Get(h) != missing.header.Get(h) {
					t.Errorf("%s: header %s is %q for the private namespace, %q in %s", p, h, private.header.Get(h), missing.header.Get(h), other)
				}
			}
		}
	}
}

// TestGuardPrivateURLs checks that private download documents carry URLs
// of the private signer and are marked private, public ones not.
func TestGuardPrivateURLs(t *testing.T) {
	g := newGuarded(t)
	now := g.clock.Now()
	for _, c := range []struct {
		ns, who, cacheControl string
		ttl                   time.Duration
	}{
		{"acme", "reader", "private, no-cache", privateTTL},
		{"open", "", "no-cache", 10 * time.Minute},
	} {
		for range 2 { // cold, then cached
			r := g.get(t, "/v1/providers/"+c.ns+"/widget/1.0.0/download/linux/amd64", c.who)
			if r.status != http.StatusOK {
				t.Fatalf("%s: %d %s", c.ns, r.status, r.body)
			}
			if got := r.header.Get("Cache-Control"); got != c.cacheControl {
				t.Errorf("%s: Cache-Control %q, want %q", c.ns, got, c.cacheControl)
			}
			doc := decodeObject(t, r.body)
			for _, field := range []string{"download_url", "shasums_url", "shasums_signature_url"} {
				u, err := url.Parse(unmarshal[string](t, doc[field]))
				if err != nil {
					t.Fatal(err)
				}
				exp, _ := strconv.ParseInt(u.Query().Get("expires"), 10, 64)
				left := time.Unix(exp, 0).Sub(now)
				if left < c.ttl/2 || left > c.ttl {
					t.Errorf("%s: %s expires in %s, want between %s and %s", c.ns, field, left, c.ttl/2, c.ttl)
				}
				if _, _, err := g.private.Verify(u.Path, u.Query()); err != nil {
					t.Errorf("%s: %s does not verify: %v", c.ns, field, err)
				}
			}
			vr := g.get(t, "/v1/providers/"+c.ns+"/widget/versions", c.who)
			if got := vr.header.Get("Cache-Control"); got != c.cacheControl {
				t.Errorf("%s versions: Cache-Control %q, want %q", c.ns, got, c.cacheControl)
			}
		}
	}
}

// BenchmarkGuarded measures the cache-hit path behind the guard:
// anonymous reads of a public namespace, and token reads of a private
// one. Compare with BenchmarkVersions30 and BenchmarkDownload.
func BenchmarkGuarded(b *testing.B) {
	g := newGuarded(b)
	mux := http.NewServeMux()
	g.svc.Register(mux)
	for _, c := range []struct {
		name, path, who string
	}{
		{"VersionsPublicAnonymous", "/v1/providers/open/widget/versions", ""},
		{"VersionsPrivateToken", "/v1/providers/acme/widget/versions", "reader"},
		{"DownloadPrivateToken", "/v1/providers/acme/widget/1.0.0/download/linux/amd64", "reader"},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, c.path, nil)
			if c.who != "" {
				req.Header.Set("Authorization", g.tokens[c.who])
			}
			w := &discardWriter{h: http.Header{}}
			mux.ServeHTTP(w, req)
			if w.status != http.StatusOK {
				b.Fatalf("status %d", w.status)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				w.reset()
				mux.ServeHTTP(w, req)
			}
		})
	}
}

// TestGuardMirror checks the access rules of the network mirror: an own
// provider's documents follow its namespace's rules, as providers.v1;
// other registries' providers need any valid token unless the mirror is
// public.
func TestGuardMirror(t *testing.T) {
	g := newGuarded(t)
	src := &fakeSource{}
	src.versions.Store(&[]string{"3.0.0"})
	g.svc.mirror = src
	own := "/v1/mirror/trove.example:8443/%s/widget/index.json"
	other := "/v1/mirror/registry.example.com/hashicorp/random/index.json"
	for _, c := range []struct {
		path, who string
		want      int
	}{
		{fmt.Sprintf(own, "acme"), "", http.StatusUnauthorized},
		{fmt.Sprintf(own, "acme"), "stranger", http.StatusNotFound},
		{fmt.Sprintf(own, "acme"), "reader", http.StatusOK},
		{fmt.Sprintf(own, "open"), "", http.StatusOK},
		{other, "", http.StatusUnauthorized},
		{other, "stranger", http.StatusOK},
		{other, "reader", http.StatusOK},
	} {
		r := g.get(t, c.path, c.who)
		if r.status != c.want {
			t.Errorf("GET %s as %q = %d %s, want %d", c.path, c.who, r.status, r.body, c.want)
		}
		if r.status == http.StatusUnauthorized && r.header.Get("WWW-Authenticate") == "" {
			t.Errorf("GET %s as %q: 401 without WWW-Authenticate", c.path, c.who)
		}
	}
	if r := g.do(t, http.MethodGet, other, "Authorization", "Bearer trove_bogus"); r.status != http.StatusUnauthorized {
		t.Errorf("GET %s with an invalid token = %d, want 401", other, r.status)
	}
	g.svc.guard.(*auth.Access).SetMirrorPublic(true)
	if r := g.get(t, other, ""); r.status != http.StatusOK {
		t.Errorf("GET %s anonymously with a public mirror = %d %s, want 200", other, r.status, r.body)
	}
	if r := g.get(t, fmt.Sprintf(own, "acme"), ""); r.status != http.StatusUnauthorized {
		t.Errorf("a public mirror opened a private namespace: %d", r.status)
	}
}
