package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	"trove.dev/trove/internal/mirror"
	"trove.dev/trove/internal/protocol/modules"
	"trove.dev/trove/internal/protocol/oci"
	"trove.dev/trove/internal/protocol/providers"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/store/fsblob"
	"trove.dev/trove/internal/store/sqlite"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
	"trove.dev/trove/internal/trovetest/testarchive"
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
// index. ModuleVersions, ModuleDownload: modules.v1 (a 204 with
// X-Terraform-Get, counted); MirroredModuleVersions and
// MirroredModuleDownload: the same in a namespace mirroring an upstream
// module registry (on loopback), every version held already (the load
// harness's warm path); OCIModuleManifest: a module's OCI manifest by
// tag. Each sub-benchmark draws from 300 distinct documents, like the
// load harness's realistic mix, so a per-document cost (a map or lock per
// provider) shows. Compare allocs/op with BenchmarkMiddlewareVersions30:
// every allocation the defaults add is one the load harness pays per
// request.
func BenchmarkServeDefaults(b *testing.B) {
	ctx := context.Background()
	st := sqlitetest.New(b)
	x, blobs := st.Index, st.Blobs
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
	modVersions, modDownloads, mirVersions, mirDownloads, ociManifests := benchModules(b, x, blobs)
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
		ModuleOptions:   []modules.Option{modules.WithDownloadCounter(counter), modules.WithMirror(benchModuleMirror(b, x))},
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
		{"ModuleVersions", modVersions, nil},
		{"ModuleDownload", modDownloads, nil},
		{"MirroredModuleVersions", mirVersions, nil},
		{"MirroredModuleDownload", mirDownloads, nil},
		{"OCIModuleManifest", ociManifests, http.Header{"Accept": {oci.MediaTypeIndex + ", " + oci.MediaTypeManifest}}},
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
				if w.status != http.StatusOK && w.status != http.StatusNoContent {
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
			if w.status != http.StatusOK && w.status != http.StatusNoContent {
				b.Fatalf("status %d", w.status)
			}
		})
	}
}

// benchModules seeds 30 modules of 10 versions each in the public
// namespace open and again in tfmods (the module mirror's namespace), all
// of one real tar.gz archive, and returns the request paths of their
// versions documents, downloads, mirrored versions documents, mirrored
// downloads and OCI manifests by tag.
func benchModules(b *testing.B, x *sqlite.Index, blobs *fsblob.Store) (versions, downloads, mirVersions, mirDownloads, manifests []string) {
	ctx := b.Context()
	if err := x.CreateNamespace(ctx, registry.Namespace{Name: "tfmods", Visibility: registry.VisibilityPublic, CreatedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	archive := testarchive.TarGz(b, map[string]string{"main.tf": "variable \"cidr\" {}\n"})
	sum := sha256.Sum256(archive)
	arch := hex.EncodeToString(sum[:])
	if err := blobs.Put(ctx, arch, int64(len(archive)), bytes.NewReader(archive)); err != nil {
		b.Fatal(err)
	}
	for m := range 30 {
		name := fmt.Sprintf("m%03d", m)
		for _, ns := range []string{"open", "tfmods"} {
			base := "/v1/modules/" + ns + "/" + name + "/aws/"
			if ns == "open" {
				versions = append(versions, base+"versions")
			} else {
				mirVersions = append(mirVersions, base+"versions")
			}
			for i := range 10 {
				v := fmt.Sprintf("1.0.%d", i)
				mv := registry.ModuleVersion{Namespace: ns, Name: name, System: "aws", Version: v,
					ArchiveDigest: arch, ArchiveFormat: "tar.gz", ArchiveSize: int64(len(archive)), PublishedAt: time.Now()}
				if ns == "tfmods" {
					mv.Origin = "mirrored from upstream.test/acme/" + name + "/aws " + v
				}
				if err := x.CreateModuleVersion(ctx, mv); err != nil {
					b.Fatal(err)
				}
				if ns == "open" {
					downloads = append(downloads, base+v+"/download")
					manifests = append(manifests, "/v2/open/modules/"+name+"/aws/manifests/"+oci.TagOf(v))
				} else {
					mirDownloads = append(mirDownloads, base+v+"/download")
				}
			}
		}
	}
	return versions, downloads, mirVersions, mirDownloads, manifests
}

// benchModuleMirror returns the module mirror of namespace tfmods onto
// acme of a modules.v1 registry on loopback that lists versions 1.0.0 to
// 1.0.9 of every module (those benchModules seeds as held).
func benchModuleMirror(b *testing.B, x *sqlite.Index) *mirror.Modules {
	listed := []map[string]string{}
	for i := range 10 {
		listed = append(listed, map[string]string{"version": fmt.Sprintf("1.0.%d", i)})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/terraform.json", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"modules.v1": "/v1/modules/"})
	})
	mux.HandleFunc("GET /v1/modules/acme/{name}/aws/versions", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"modules": []any{map[string]any{"versions": listed}}})
	})
	up := httptest.NewServer(mux)
	b.Cleanup(up.Close)
	ctx := b.Context()
	if err := x.PutMirrorUpstream(ctx, registry.MirrorUpstream{Host: "upstream.test", ServiceURL: up.URL + "/v1/providers/",
		Allow: []registry.MirrorRule{{Provider: "acme/*"}}, CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	m, err := mirror.New(mirror.Options{Index: x, TempDir: filepath.Join(b.TempDir(), "tmp")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(m.Close)
	mp, err := mirror.ParseModuleMapping("tfmods=upstream.test/acme")
	if err != nil {
		b.Fatal(err)
	}
	return m.Modules(mirror.ModuleOptions{Mappings: []mirror.ModuleMapping{mp}, Index: x})
}
