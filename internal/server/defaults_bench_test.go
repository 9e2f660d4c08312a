package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/downloads"
	"trove.dev/trove/internal/protocol/providers"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/store/fsblob"
	"trove.dev/trove/internal/store/sqlite"
)

// BenchmarkServeDefaults serves cache hits of the two providers.v1
// documents a `terraform init` asks for most (and MirrorIndex,
// MirrorVersion: the network mirror's index.json and <version>.json of
// the same providers, which a mirror-configured init asks for instead),
// through the handler chain
// as `trove serve` builds it by default: access guard (anonymous reader
// of a public namespace; DownloadToken: a service token's, whose
// consumer is recorded), download counting with consumer records, the
// access log at info
// (AccessLog to io.Discard), metrics and security headers, on a SQLite
// index. Each sub-benchmark draws from 300 distinct documents, like the
// load harness's realistic mix, so a per-document cost (a map or lock per
// provider) shows. Compare allocs/op with BenchmarkMiddlewareVersions30:
// every allocation the defaults add is one the load harness pays per
// request.
func BenchmarkServeDefaults(b *testing.B) {
	ctx := context.Background()
	x, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "index.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	blobs, err := fsblob.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	const providersN, versionsN = 10, 30
	if err := x.CreateNamespace(ctx, registry.Namespace{Name: "open", Visibility: registry.VisibilityPublic, CreatedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	key := registry.SigningKey{Namespace: "open", KeyID: "0123456789ABCDEF", Fingerprint: "F", ASCIIArmor: "A", CreatedAt: time.Now()}
	var versionPaths, downloadPaths, mirrorIndexPaths, mirrorVersionPaths []string
	for p := range providersN {
		typ := fmt.Sprintf("widget%d", p)
		versionPaths = append(versionPaths, "/v1/providers/open/"+typ+"/versions")
		mirrorIndexPaths = append(mirrorIndexPaths, "/v1/mirror/localhost/open/"+typ+"/index.json")
		for i := range versionsN {
			v := fmt.Sprintf("1.%d.%d", i/10, i%10)
			err := x.CreateProviderVersion(ctx, registry.ProviderVersion{
				Namespace: "open", Type: typ, Version: v, Protocols: []string{"5.0"},
				SHASumsDigest: digest("s"), SHASumsSignatureDigest: digest("g"), PublishedAt: time.Now(), SigningKey: key,
				Platforms: []registry.Platform{{OS: "linux", Arch: "amd64", Filename: "f.zip", SHA256: digest("z"), Size: 1}},
			})
			if err != nil {
				b.Fatal(err)
			}
			downloadPaths = append(downloadPaths, "/v1/providers/open/"+typ+"/"+v+"/download/linux/amd64")
			mirrorVersionPaths = append(mirrorVersionPaths, "/v1/mirror/localhost/open/"+typ+"/"+v+".json")
		}
	}
	secret, hash, err := auth.NewToken()
	if err != nil {
		b.Fatal(err)
	}
	err = x.CreateToken(ctx, registry.Token{ID: "tok_ci", Hash: hash, Scopes: []registry.Scope{registry.ScopeRead}, CreatedAt: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	counter, err := downloads.New(downloads.Options{Store: x, Interval: time.Hour, Consumers: true})
	if err != nil {
		b.Fatal(err)
	}
	u, _ := url.Parse("https://localhost")
	srv, err := New(Options{
		Index: x, Blobs: blobs, Signer: signedurl.New([]byte("bench key"), 10*time.Minute), PublicURL: u,
		Logger:          discardLogger(),
		Access:          auth.NewAccess(auth.NewAuthenticator(x), x),
		PrivateSigner:   signedurl.New([]byte("bench key"), 5*time.Minute),
		AccessLog:       &AccessLog{W: io.Discard, Level: slog.LevelInfo},
		ProviderOptions: []providers.Option{providers.WithDownloadCounter(counter)},
	})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	for _, c := range []struct {
		name   string
		paths  []string
		header http.Header
	}{
		{"Versions", versionPaths, nil},
		{"Download", downloadPaths, nil},
		{"DownloadToken", downloadPaths, http.Header{"Authorization": {"Bearer " + secret}}},
		{"MirrorIndex", mirrorIndexPaths, nil},
		{"MirrorVersion", mirrorVersionPaths, nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			reqs := make([]*http.Request, len(c.paths))
			w := &discardWriter{h: http.Header{}}
			for i, p := range c.paths {
				reqs[i] = httptest.NewRequest(http.MethodGet, p, nil)
				reqs[i].Header["User-Agent"] = []string{"Terraform/1.9.5"}
				for k, v := range c.header {
					reqs[i].Header[k] = v
				}
				w.h, w.status = make(http.Header), 0
				h.ServeHTTP(w, reqs[i]) // fill the cache: the loop measures hits
				if w.status != http.StatusOK {
					b.Fatalf("%s: status %d", p, w.status)
				}
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				w.h, w.status = make(http.Header), 0
				h.ServeHTTP(w, reqs[i%len(reqs)])
				i++
			}
			if w.status != http.StatusOK {
				b.Fatalf("status %d", w.status)
			}
		})
	}
}
