package server_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/trovetest"
)

// Principals of the protocol matrix.
const (
	pNone        = "no token"
	pWrong       = "wrong token"
	pExpired     = "expired token"
	pRevoked     = "revoked token"
	pOtherReader = "reader of another namespace"
	pReader      = "reader"
	pPublisher   = "publisher"
	pAdmin       = "admin"
	pService     = "service token (publish)"
	pGlobalAdmin = "global admin"
)

var protocolPrincipals = []string{pNone, pWrong, pExpired, pRevoked, pOtherReader, pReader, pPublisher, pAdmin, pService, pGlobalAdmin}

// blob stores content as a blob and returns its digest.
func blob(t *testing.T, s *trovetest.Server, content string) string {
	t.Helper()
	sum := sha256.Sum256([]byte(content))
	digest := hex.EncodeToString(sum[:])
	if err := s.Blobs.Put(context.Background(), digest, int64(len(content)), strings.NewReader(content)); err != nil {
		t.Fatal(err)
	}
	return digest
}

// moduleArchive is the content of the module archive of the fixture.
const moduleArchive = "gzip bytes of the net module"

// accessFixture is a Trove with a private namespace (acme), a public one
// (open), one (other) whose reader serves as the stranger, the same
// provider version and module version in acme and open, and a token per
// principal and namespace. Readers, publishers and admins are users with
// that role in the namespace; the global admin is a user with the admin
// flag; the service token is bound to the namespace with scope publish.
type accessFixture struct {
	srv    *trovetest.Server
	tokens map[string]map[string]string // namespace -> principal -> Authorization header
	files  map[string]string            // file name -> content
	client *http.Client                 // does not follow redirects
}

func newAccessFixture(t *testing.T) *accessFixture {
	t.Helper()
	s := trovetest.Start(t)
	ctx := context.Background()
	acc := s.Index.(store.Access)
	client := *s.HTTPClient()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	f := &accessFixture{srv: s, tokens: map[string]map[string]string{}, files: map[string]string{}, client: &client}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	for ns, vis := range map[string]registry.Visibility{"acme": registry.VisibilityPrivate, "open": registry.VisibilityPublic, "other": registry.VisibilityPrivate} {
		must(s.Index.CreateNamespace(ctx, registry.Namespace{Name: ns, Visibility: vis, CreatedAt: now}))
	}
	f.files["terraform-provider-widget_1.0.0_linux_amd64.zip"] = "PK zip bytes of widget"
	f.files["terraform-provider-widget_1.0.0_SHA256SUMS"] = "sums of widget"
	f.files["terraform-provider-widget_1.0.0_SHA256SUMS.sig"] = "signature of widget"
	for _, ns := range []string{"acme", "open"} {
		must(s.Index.CreateProviderVersion(ctx, registry.ProviderVersion{
			Namespace: ns, Type: "widget", Version: "1.0.0", Protocols: []string{"5.0"},
			SHASumsDigest:          blob(t, s, f.files["terraform-provider-widget_1.0.0_SHA256SUMS"]),
			SHASumsSignatureDigest: blob(t, s, f.files["terraform-provider-widget_1.0.0_SHA256SUMS.sig"]),
			SigningKey: registry.SigningKey{Namespace: ns, KeyID: "0123456789ABCDEF", Fingerprint: strings.Repeat("C", 40),
				ASCIIArmor: "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nx\n-----END PGP PUBLIC KEY BLOCK-----\n", CreatedAt: now},
			Platforms: []registry.Platform{{OS: "linux", Arch: "amd64", Filename: "terraform-provider-widget_1.0.0_linux_amd64.zip",
				SHA256: blob(t, s, f.files["terraform-provider-widget_1.0.0_linux_amd64.zip"]), Size: 22}},
			PublishedAt: now,
		}))
		must(s.Index.CreateModuleVersion(ctx, registry.ModuleVersion{
			Namespace: ns, Name: "net", System: "aws", Version: "1.0.0",
			ArchiveDigest: blob(t, s, moduleArchive), ArchiveFormat: "tar.gz", ArchiveSize: int64(len(moduleArchive)),
			Description: "A network", PublishedAt: now,
		}))
	}
	mint := func(tk registry.Token) string {
		secret, hash, err := auth.NewToken()
		must(err)
		id, _ := auth.NewID()
		tk.ID, tk.Hash, tk.CreatedAt = id, hash, now
		must(s.Index.CreateToken(ctx, tk))
		return "Bearer " + secret
	}
	admin := []registry.Scope{registry.ScopeAdmin}
	must(acc.CreateUser(ctx, registry.User{Name: "root", Admin: true, CreatedAt: now}))
	globalAdmin := mint(registry.Token{User: "root", Scopes: admin})
	for _, ns := range []string{"acme", "open", "other"} {
		roles := map[string]registry.Role{"reader-" + ns: registry.RoleReader, "publisher-" + ns: registry.RolePublisher, "admin-" + ns: registry.RoleAdmin}
		for u, role := range roles {
			must(acc.CreateUser(ctx, registry.User{Name: u, CreatedAt: now}))
			must(acc.SetMembership(ctx, registry.Membership{User: u, Namespace: ns, Role: role, CreatedAt: now}))
		}
		// Personal tokens carry scope admin: their rights are their
		// user's role.
		f.tokens[ns] = map[string]string{
			pNone:        "",
			pWrong:       "Bearer " + auth.TokenPrefix + strings.Repeat("A", 43),
			pExpired:     mint(registry.Token{User: "reader-" + ns, Scopes: admin, ExpiresAt: now.Add(-time.Minute)}),
			pRevoked:     mint(registry.Token{Namespaces: []string{ns}, Scopes: admin, RevokedAt: now.Add(-time.Minute)}),
			pReader:      mint(registry.Token{User: "reader-" + ns, Scopes: admin}),
			pPublisher:   mint(registry.Token{User: "publisher-" + ns, Scopes: admin}),
			pAdmin:       mint(registry.Token{User: "admin-" + ns, Scopes: admin}),
			pService:     mint(registry.Token{Namespaces: []string{ns}, Scopes: []registry.Scope{registry.ScopePublish}}),
			pGlobalAdmin: globalAdmin,
		}
	}
	for _, ns := range []string{"acme", "open"} {
		f.tokens[ns][pOtherReader] = f.tokens["other"][pReader]
	}
	return f
}

type answer struct {
	status int
	header http.Header
	body   []byte
}

func (f *accessFixture) get(t *testing.T, rawURL, authz string) answer {
	t.Helper()
	if !strings.HasPrefix(rawURL, "https://") {
		rawURL = f.srv.URL + rawURL
	}
	req, _ := http.NewRequest("GET", rawURL, nil)
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: body}
}

// downloadDoc fetches the download document of ns as its admin.
func (f *accessFixture) downloadDoc(t *testing.T, ns string) map[string]any {
	t.Helper()
	a := f.get(t, "/v1/providers/"+ns+"/widget/1.0.0/download/linux/amd64", f.tokens[ns][pAdmin])
	if a.status != http.StatusOK {
		t.Fatalf("download document of %s: %d %s", ns, a.status, a.body)
	}
	var doc map[string]any
	if err := json.Unmarshal(a.body, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// protocolEndpoint is a protocol route of one namespace (%s in path).
type protocolEndpoint struct {
	path string
	ok   int // the status of a caller who may read the namespace
	// listing: a caller who may not read the namespace gets an empty
	// listing (200), as for a namespace without modules, rather than 404.
	listing bool
	// cache is the Cache-Control of an answer for a private namespace
	// ("" means the same as for a public one: no-cache).
	cache string
}

// protocolEndpoints are every protocol route that names a namespace.
var protocolEndpoints = map[string]protocolEndpoint{
	"provider versions":           {path: "/v1/providers/%s/widget/versions", ok: 200, cache: "private, no-cache"},
	"provider download":           {path: "/v1/providers/%s/widget/1.0.0/download/linux/amd64", ok: 200, cache: "private, no-cache"},
	"module versions":             {path: "/v1/modules/%s/net/aws/versions", ok: 200, cache: "private, no-cache"},
	"module download":             {path: "/v1/modules/%s/net/aws/1.0.0/download", ok: 204},
	"module download latest":      {path: "/v1/modules/%s/net/aws/download", ok: 302},
	"module latest details":       {path: "/v1/modules/%s/net/aws", ok: 200, cache: "private, no-cache"},
	"module version details":      {path: "/v1/modules/%s/net/aws/1.0.0", ok: 200, cache: "private, no-cache"},
	"module namespace listing":    {path: "/v1/modules/%s", ok: 200, listing: true},
	"module listing by namespace": {path: "/v1/modules?namespace=%s", ok: 200, listing: true},
	"module search in namespace":  {path: "/v1/modules/search?q=net&namespace=%s", ok: 200, listing: true},
}

// mayRead reports whether principal p may read namespace ns of the fixture.
func mayRead(ns, p string) bool {
	switch p {
	case pReader, pPublisher, pAdmin, pService, pGlobalAdmin:
		return true
	case pNone, pOtherReader:
		return ns == "open"
	}
	return false // tokens that are not valid
}

// TestProtocolMatrix asserts the answer of every protocol endpoint and
// download URL for every kind of caller, on a private and a public
// namespace, and that refusals leak nothing: a refused answer is, byte
// for byte and names aside, the answer for a namespace that does not
// exist.
func TestProtocolMatrix(t *testing.T) {
	f := newAccessFixture(t)
	for _, ns := range []string{"acme", "open"} {
		for name, ep := range protocolEndpoints {
			for _, p := range protocolPrincipals {
				path := strings.Replace(ep.path, "%s", ns, 1)
				want := ep.ok
				switch {
				case p == pWrong || p == pExpired || p == pRevoked:
					want = 401
				case mayRead(ns, p):
				case p == pNone:
					want = 401
				case !ep.listing:
					want = 404
				}
				t.Run(ns+"/"+name+"/"+p, func(t *testing.T) {
					authz := f.tokens[ns][p]
					a := f.get(t, path, authz)
					if a.status != want {
						t.Fatalf("GET %s as %s = %d %s, want %d", path, p, a.status, a.body, want)
					}
					if secret := strings.TrimPrefix(authz, "Bearer "); secret != "" && bytes.Contains(a.body, []byte(secret)) {
						t.Fatal("the answer echoes the token")
					}
					readable := mayRead(ns, p) && a.status < 400
					if readable {
						wantCC := "no-cache"
						switch {
						case ep.ok == 204 || ep.ok == 302:
							wantCC = "no-store"
						case ns == "acme" && ep.cache != "":
							wantCC = ep.cache
						}
						if cc := a.header.Get("Cache-Control"); cc != wantCC {
							t.Errorf("Cache-Control %q, want %q", cc, wantCC)
						}
						if ep.listing && !bytes.Contains(a.body, []byte(`"id":"`+ns+`/net/aws/1.0.0"`)) {
							t.Errorf("the listing lacks %s/net/aws: %s", ns, a.body)
						}
						return
					}
					// A refusal must be the very answer a namespace that
					// does not exist gets, names aside.
					missing := f.get(t, strings.Replace(ep.path, "%s", "zzzz", 1), authz)
					if missing.status != a.status || !bytes.Equal(bytes.ReplaceAll(missing.body, []byte("zzzz"), []byte(ns)), a.body) {
						t.Errorf("refusal differs from a missing namespace:\n %d %s\n %d %s", a.status, a.body, missing.status, missing.body)
					}
					for _, h := range []string{"Content-Type", "Cache-Control", "Www-Authenticate", "Etag", "X-Terraform-Get", "Location"} {
						if a.header.Get(h) != missing.header.Get(h) {
							t.Errorf("header %s: %q, missing namespace %q", h, a.header.Get(h), missing.header.Get(h))
						}
					}
				})
			}
		}
		// The files behind the download URLs: the URL is the credential.
		// Clients fetch them without a token; a token sent anyway changes
		// nothing.
		doc := f.downloadDoc(t, ns)
		urls := map[string]string{}
		for _, field := range []string{"download_url", "shasums_url", "shasums_signature_url"} {
			urls[field] = doc[field].(string)
		}
		urls["module archive"] = f.moduleArchiveURL(t, ns)
		for field, u := range urls {
			name := u[strings.LastIndex(strings.Split(u, "?")[0], "/")+1 : strings.Index(u, "?")]
			content, ok := f.files[name]
			if field == "module archive" {
				content, ok = moduleArchive, name == "net-aws-1.0.0.tar.gz"
			}
			if !ok {
				t.Fatalf("%s %s names an unknown file: %s", ns, field, u)
			}
			for _, p := range protocolPrincipals {
				a := f.get(t, u, f.tokens[ns][p])
				if a.status != 200 || string(a.body) != content {
					t.Errorf("%s %s as %s = %d %q, want 200 and the file", ns, field, p, a.status, a.body)
				}
			}
		}
	}
}

// moduleArchiveURL returns the signed archive URL of ns's module, as its
// admin gets it.
func (f *accessFixture) moduleArchiveURL(t *testing.T, ns string) string {
	t.Helper()
	a := f.get(t, "/v1/modules/"+ns+"/net/aws/1.0.0/download", f.tokens[ns][pAdmin])
	u := a.header.Get("X-Terraform-Get")
	if a.status != http.StatusNoContent || !strings.HasPrefix(u, "https://") {
		t.Fatalf("module download of %s: %d, X-Terraform-Get %q", ns, a.status, u)
	}
	return u
}

// TestProtocolListingsMatrix asserts the listings and searches across all
// namespaces, and discovery, for every kind of caller: invalid tokens are
// refused as everywhere, and a listing shows the modules of the
// namespaces the caller may read and no other.
func TestProtocolListingsMatrix(t *testing.T) {
	f := newAccessFixture(t)
	anonymousDiscovery := f.get(t, "/.well-known/terraform.json", "")
	if anonymousDiscovery.status != 200 {
		t.Fatalf("discovery = %d %s", anonymousDiscovery.status, anonymousDiscovery.body)
	}
	paths := map[string]string{
		"list":             "/v1/modules",
		"search":           "/v1/modules/search?q=net",
		"search, no match": "/v1/modules/search?q=nomatch",
	}
	for _, p := range protocolPrincipals {
		authz := f.tokens["acme"][p]
		t.Run("discovery/"+p, func(t *testing.T) {
			// Discovery holds nothing secret: the same document for all.
			a := f.get(t, "/.well-known/terraform.json", authz)
			if a.status != 200 || !bytes.Equal(a.body, anonymousDiscovery.body) {
				t.Errorf("discovery as %s = %d %s, want 200 and the anonymous document", p, a.status, a.body)
			}
		})
		for name, path := range paths {
			t.Run(name+"/"+p, func(t *testing.T) {
				a := f.get(t, path, authz)
				if p == pWrong || p == pExpired || p == pRevoked {
					if a.status != 401 {
						t.Fatalf("GET %s as %s = %d %s, want 401", path, p, a.status, a.body)
					}
					return
				}
				if a.status != 200 {
					t.Fatalf("GET %s as %s = %d %s, want 200", path, p, a.status, a.body)
				}
				match := name != "search, no match"
				if has := bytes.Contains(a.body, []byte(`"id":"open/net/aws/1.0.0"`)); has != match {
					t.Errorf("the public module listed: %v, want %v: %s", has, match, a.body)
				}
				if has := bytes.Contains(a.body, []byte("acme")); has != (match && mayRead("acme", p)) {
					t.Errorf("the private namespace named: %v, want %v: %s", has, match && mayRead("acme", p), a.body)
				}
			})
		}
	}
}

// TestPrivateDownloadURLs checks the signed URLs of a private namespace:
// short-lived, and refused when expired, tampered or reused for another
// file.
func TestPrivateDownloadURLs(t *testing.T) {
	f := newAccessFixture(t)
	doc := f.downloadDoc(t, "acme")
	zipURL, err := url.Parse(doc["download_url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	sumsURL, _ := url.Parse(doc["shasums_url"].(string))
	exp, _ := strconv.ParseInt(zipURL.Query().Get("expires"), 10, 64)
	if left := time.Until(time.Unix(exp, 0)); left > 5*time.Minute || left < 2*time.Minute {
		t.Errorf("a private download URL lives %s more, want between 2.5 and 5 minutes", left)
	}
	publicDoc := f.downloadDoc(t, "open")
	publicURL, _ := url.Parse(publicDoc["download_url"].(string))
	pexp, _ := strconv.ParseInt(publicURL.Query().Get("expires"), 10, 64)
	if pexp <= exp {
		t.Errorf("the public URL expires at %d, not later than the private one (%d)", pexp, exp)
	}
	modURL, _ := url.Parse(f.moduleArchiveURL(t, "acme"))
	if mexp, _ := strconv.ParseInt(modURL.Query().Get("expires"), 10, 64); mexp >= pexp {
		t.Errorf("the private module archive URL expires at %d, not earlier than a public URL (%d)", mexp, pexp)
	}

	expiredPath := f.srv.PrivateSigner.WithClock(func() time.Time { return time.Now().Add(-time.Hour) }).
		Path(doc["shasum"].(string), "terraform-provider-widget_1.0.0_linux_amd64.zip")
	refused := map[string]string{
		"expired": f.srv.URL + expiredPath,
		"tampered signature": func() string {
			u := *zipURL
			q := u.Query()
			sig := []byte(q.Get("signature"))
			sig[len(sig)/2] ^= 1
			q.Set("signature", string(sig))
			u.RawQuery = q.Encode()
			return u.String()
		}(),
		"extended expiry": func() string {
			u := *zipURL
			q := u.Query()
			q.Set("expires", strconv.FormatInt(exp+3600, 10))
			u.RawQuery = q.Encode()
			return u.String()
		}(),
		"signature reused for another archive": func() string {
			u := *sumsURL
			u.RawQuery = zipURL.RawQuery
			return u.String()
		}(),
		"another file name": func() string {
			u := *zipURL
			u.Path = strings.Replace(u.Path, "linux_amd64.zip", "darwin_arm64.zip", 1)
			return u.String()
		}(),
		"no signature": func() string {
			u := *zipURL
			u.RawQuery = ""
			return u.String()
		}(),
	}
	for name, u := range refused {
		for _, p := range []string{pNone, pAdmin} {
			a := f.get(t, u, f.tokens["acme"][p])
			if a.status != http.StatusForbidden || bytes.Contains(a.body, []byte(f.files["terraform-provider-widget_1.0.0_linux_amd64.zip"])) {
				t.Errorf("%s URL as %s = %d %s, want 403", name, p, a.status, a.body)
			}
		}
	}
}
