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
)

var protocolPrincipals = []string{pNone, pWrong, pExpired, pRevoked, pOtherReader, pReader, pPublisher, pAdmin}

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

// accessFixture is a Trove with a private namespace (acme), a public one
// (open), one (other) whose reader serves as the stranger, the same
// provider version in acme and open, and a token per principal and
// namespace.
type accessFixture struct {
	srv    *trovetest.Server
	tokens map[string]map[string]string // namespace -> principal -> Authorization header
	files  map[string]string            // file name -> content
}

func newAccessFixture(t *testing.T) *accessFixture {
	t.Helper()
	s := trovetest.Start(t)
	ctx := context.Background()
	acc := s.Index.(store.Access)
	f := &accessFixture{srv: s, tokens: map[string]map[string]string{}, files: map[string]string{}}
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
	for _, ns := range []string{"acme", "open", "other"} {
		reader, admn := "reader-"+ns, "admin-"+ns
		for _, u := range []string{reader, admn} {
			must(acc.CreateUser(ctx, registry.User{Name: u, CreatedAt: now}))
		}
		must(acc.SetMembership(ctx, registry.Membership{User: reader, Namespace: ns, Role: registry.RoleReader, CreatedAt: now}))
		must(acc.SetMembership(ctx, registry.Membership{User: admn, Namespace: ns, Role: registry.RoleAdmin, CreatedAt: now}))
		f.tokens[ns] = map[string]string{
			pNone:      "",
			pWrong:     "Bearer " + auth.TokenPrefix + strings.Repeat("A", 43),
			pExpired:   mint(registry.Token{User: reader, Scopes: admin, ExpiresAt: now.Add(-time.Minute)}),
			pRevoked:   mint(registry.Token{Namespace: ns, Scopes: admin, RevokedAt: now.Add(-time.Minute)}),
			pReader:    mint(registry.Token{User: reader, Scopes: admin}),
			pPublisher: mint(registry.Token{Namespace: ns, Scopes: []registry.Scope{registry.ScopePublish}}),
			pAdmin:     mint(registry.Token{User: admn, Scopes: admin}),
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
	resp, err := f.srv.HTTPClient().Do(req)
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

// TestProtocolMatrix asserts the answer of every protocol endpoint and
// download URL for every kind of caller, on a private and a public
// namespace, and that refusals leak nothing.
func TestProtocolMatrix(t *testing.T) {
	f := newAccessFixture(t)
	endpoints := map[string]string{
		"versions": "/v1/providers/%s/widget/versions",
		"download": "/v1/providers/%s/widget/1.0.0/download/linux/amd64",
	}
	want := map[string]map[string]int{
		"acme": {pNone: 401, pWrong: 401, pExpired: 401, pRevoked: 401, pOtherReader: 404, pReader: 200, pPublisher: 200, pAdmin: 200},
		"open": {pNone: 200, pWrong: 401, pExpired: 401, pRevoked: 401, pOtherReader: 200, pReader: 200, pPublisher: 200, pAdmin: 200},
	}
	for _, ns := range []string{"acme", "open"} {
		for name, pattern := range endpoints {
			for _, p := range protocolPrincipals {
				path := strings.Replace(pattern, "%s", ns, 1)
				t.Run(ns+"/"+name+"/"+p, func(t *testing.T) {
					authz := f.tokens[ns][p]
					a := f.get(t, path, authz)
					if a.status != want[ns][p] {
						t.Fatalf("GET %s as %s = %d %s, want %d", path, p, a.status, a.body, want[ns][p])
					}
					if secret := strings.TrimPrefix(authz, "Bearer "); secret != "" && bytes.Contains(a.body, []byte(secret)) {
						t.Fatal("the answer echoes the token")
					}
					switch a.status {
					case 200:
						wantCC := "no-cache"
						if ns == "acme" {
							wantCC = "private, no-cache"
						}
						if cc := a.header.Get("Cache-Control"); cc != wantCC {
							t.Errorf("Cache-Control %q, want %q", cc, wantCC)
						}
					case 401, 404:
						// A refusal must be the very answer a namespace that
						// does not exist gets, names aside.
						missing := f.get(t, strings.Replace(pattern, "%s", "zzzz", 1), authz)
						if missing.status != a.status || !bytes.Equal(bytes.ReplaceAll(missing.body, []byte("zzzz"), []byte(ns)), a.body) {
							t.Errorf("refusal differs from a missing namespace:\n %d %s\n %d %s", a.status, a.body, missing.status, missing.body)
						}
						for _, h := range []string{"Content-Type", "Cache-Control", "Www-Authenticate", "Etag"} {
							if a.header.Get(h) != missing.header.Get(h) {
								t.Errorf("header %s: %q, missing namespace %q", h, a.header.Get(h), missing.header.Get(h))
							}
						}
					}
				})
			}
		}
		// The files behind the download URLs: the URL is the credential.
		// Clients fetch them without a token; a token sent anyway changes
		// nothing.
		doc := f.downloadDoc(t, ns)
		for _, field := range []string{"download_url", "shasums_url", "shasums_signature_url"} {
			u := doc[field].(string)
			for _, p := range protocolPrincipals {
				a := f.get(t, u, f.tokens[ns][p])
				name := u[strings.LastIndex(strings.Split(u, "?")[0], "/")+1 : strings.Index(u, "?")]
				if a.status != 200 || string(a.body) != f.files[name] {
					t.Errorf("%s %s as %s = %d %q, want 200 and the file", ns, field, p, a.status, a.body)
				}
			}
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
