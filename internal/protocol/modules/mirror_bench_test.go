package modules

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"trove.dev/trove/internal/mirror"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

// benchMirrorService returns a Service whose namespace tfmods mirrors
// acme of a modules.v1 registry on loopback listing 30 versions of
// acme/net/aws, every one held by Trove already (the warm path of a
// mirror in use), with the mirror's default VersionsTTL.
func benchMirrorService(b *testing.B) *Service {
	ctx := b.Context()
	dir := b.TempDir()
	idx := sqlitetest.NewIndex(b)
	if err := idx.CreateNamespace(ctx, registry.Namespace{Name: "tfmods", Visibility: registry.VisibilityPublic, CreatedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	var listed []map[string]string
	for i := range 30 {
		ver := fmt.Sprintf("%d.%d.%d", i/100, i%100/10, i%10)
		listed = append(listed, map[string]string{"version": ver})
		if err := idx.CreateModuleVersion(ctx, registry.ModuleVersion{Namespace: "tfmods", Name: "net", System: "aws", Version: ver,
			ArchiveFormat: "tar.gz", ArchiveSize: 4096, ArchiveDigest: fmt.Sprintf("%064x", i), Origin: "mirrored from upstream.test/acme/net/aws " + ver,
			PublishedAt: time.Now()}); err != nil {
			b.Fatal(err)
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/terraform.json", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]string{"modules.v1": "/v1/modules/"})
	})
	mux.HandleFunc("GET /v1/modules/acme/net/aws/versions", func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"modules": []any{map[string]any{"versions": listed}}})
	})
	up := httptest.NewServer(mux)
	b.Cleanup(up.Close)
	if err := idx.PutMirrorUpstream(ctx, registry.MirrorUpstream{Host: "upstream.test", ServiceURL: up.URL + "/v1/providers/",
		Allow: []registry.MirrorRule{{Provider: "acme/*"}}, CreatedAt: time.Now(), UpdatedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	m, err := mirror.New(mirror.Options{Index: idx, TempDir: filepath.Join(dir, "tmp")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(m.Close)
	mp, err := mirror.ParseModuleMapping("tfmods=upstream.test/acme")
	if err != nil {
		b.Fatal(err)
	}
	mm := m.Modules(mirror.ModuleOptions{Mappings: []mirror.ModuleMapping{mp}, Index: idx})
	signer := signedurl.New([]byte("0123456789abcdef0123456789abcdef"), 15*time.Minute)
	return New(idx, signer, &url.URL{Scheme: "https", Host: "trove.test"}, nil, WithMirror(mm))
}

// BenchmarkMirroredVersions is a mirrored module's versions document
// from the cache.
func BenchmarkMirroredVersions(b *testing.B) {
	benchServe(b, benchMirrorService(b), "/v1/modules/tfmods/net/aws/versions", http.StatusOK, nil)
}

// BenchmarkMirroredVersionsUncached renders it on every request: the
// held versions from the index and the upstream's list from the
// mirror's memory (read from the upstream at most once a minute).
func BenchmarkMirroredVersionsUncached(b *testing.B) {
	s := benchMirrorService(b)
	benchServe(b, s, "/v1/modules/tfmods/net/aws/versions", http.StatusOK, func() { s.Invalidate("tfmods", "net", "aws") })
}

// BenchmarkMirroredDownload is the download location of a held mirrored
// version.
func BenchmarkMirroredDownload(b *testing.B) {
	benchServe(b, benchMirrorService(b), "/v1/modules/tfmods/net/aws/0.2.9/download", http.StatusNoContent, nil)
}
