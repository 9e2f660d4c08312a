package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

// guardedRequest is a request of the guarded benchmarks: a cached
// versions document of 30 versions, anonymously from a public namespace
// and with a reader's token from a private one.
type guardedRequest struct{ name, path, authz string }

// guardedServer returns a server with access control on and the
// requests of the guarded benchmarks.
func guardedServer(b *testing.B) (*Server, []guardedRequest) {
	ctx := context.Background()
	st := sqlitetest.New(b)
	x, blobs := st.Index, st.Blobs
	for ns, vis := range map[string]registry.Visibility{"open": registry.VisibilityPublic, "acme": registry.VisibilityPrivate} {
		if err := x.CreateNamespace(ctx, registry.Namespace{Name: ns, Visibility: vis, CreatedAt: time.Now()}); err != nil {
			b.Fatal(err)
		}
		for i := range 30 {
			err := x.CreateProviderVersion(ctx, registry.ProviderVersion{
				Namespace: ns, Type: "widget", Version: fmt.Sprintf("%d.%d.%d", i/100, i%100/10, i%10), Protocols: []string{"5.0"},
				SHASumsDigest: digest("s"), SHASumsSignatureDigest: digest("g"), PublishedAt: time.Now(),
				SigningKey: registry.SigningKey{Namespace: ns, KeyID: "0123456789ABCDEF", Fingerprint: "F", ASCIIArmor: "A", CreatedAt: time.Now()},
				Platforms:  []registry.Platform{{OS: "linux", Arch: "amd64", Filename: "f.zip", SHA256: digest("z"), Size: 1}},
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	secret, hash, err := auth.NewToken()
	if err != nil {
		b.Fatal(err)
	}
	if err := x.CreateToken(ctx, registry.Token{ID: "tok_r", Hash: hash, Namespaces: []string{"acme"}, Scopes: []registry.Scope{registry.ScopeRead}, CreatedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	signer := signedurl.New([]byte("bench key"), 10*time.Minute)
	u, _ := url.Parse("https://localhost")
	access := auth.NewAccess(auth.NewAuthenticator(x), x)
	srv, err := New(Options{Index: x, Blobs: blobs, Signer: signer, PublicURL: u, Logger: discardLogger(),
		Access: access, PrivateSigner: signedurl.New([]byte("bench key"), 5*time.Minute)})
	if err != nil {
		b.Fatal(err)
	}
	return srv, []guardedRequest{
		{"PublicAnonymous", "/v1/providers/open/widget/versions", ""},
		{"PrivateToken", "/v1/providers/acme/widget/versions", "Bearer " + secret},
	}
}

// BenchmarkMiddlewareGuarded serves the guarded requests through the
// whole stack. Compare with BenchmarkMiddlewareVersions30 (no access
// control).
func BenchmarkMiddlewareGuarded(b *testing.B) {
	srv, requests := guardedServer(b)
	for _, c := range requests {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest(http.MethodGet, c.path, nil)
			if c.authz != "" {
				req.Header.Set("Authorization", c.authz)
			}
			w := &discardWriter{h: http.Header{}}
			srv.Handler().ServeHTTP(w, req)
			if w.status != http.StatusOK {
				b.Fatalf("status %d", w.status)
			}
			b.ReportAllocs()
			for b.Loop() {
				w.h = make(http.Header)
				w.status = 0
				srv.Handler().ServeHTTP(w, req)
			}
		})
	}
}

// BenchmarkEndToEndHTTP2Guarded serves the guarded requests over HTTPS
// with HTTP/2: a token's authentication is the deepest chain of the
// protocol routes, which growStack's room must cover.
func BenchmarkEndToEndHTTP2Guarded(b *testing.B) {
	srv, requests := guardedServer(b)
	srv.handler.(*middleware).access = &AccessLog{W: io.Discard}
	for _, c := range requests {
		b.Run(c.name, func(b *testing.B) {
			benchEndToEndHTTP2(b, srv.Handler(), c.path, c.authz)
		})
	}
}

// digest returns the hex SHA-256 of s.
func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
