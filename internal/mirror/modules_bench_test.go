package mirror

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

// benchModules returns the module mirror of namespace tfmods, mapped to
// acme of a modules.v1 registry on loopback listing 100 versions of
// acme/net/aws, with the given VersionsTTL.
func benchModules(b *testing.B, ttl time.Duration) *Modules {
	ctx := b.Context()
	dir := b.TempDir()
	idx := sqlitetest.NewIndex(b)
	var versions []map[string]string
	for i := range 100 {
		versions = append(versions, map[string]string{"version": fmt.Sprintf("%d.%d.%d", i/100, i/10%10, i%10)})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/terraform.json", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]string{"providers.v1": "/v1/providers/", "modules.v1": "/v1/modules/"})
	})
	mux.HandleFunc("GET /v1/modules/acme/net/aws/versions", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{"modules": []any{map[string]any{"versions": versions}}})
	})
	srv := httptest.NewServer(mux)
	b.Cleanup(srv.Close)
	if err := idx.PutMirrorUpstream(ctx, registry.MirrorUpstream{
		Host: upstreamHost, ServiceURL: srv.URL + "/v1/providers/", Allow: []registry.MirrorRule{{Provider: "acme/*"}}, CreatedAt: time.Now(), UpdatedAt: time.Now(),
	}); err != nil {
		b.Fatal(err)
	}
	m, err := New(Options{Index: idx, TempDir: filepath.Join(dir, "tmp"), VersionsTTL: ttl})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(m.Close)
	mp, err := ParseModuleMapping("tfmods=" + upstreamHost + "/acme")
	if err != nil {
		b.Fatal(err)
	}
	return m.Modules(ModuleOptions{Mappings: []ModuleMapping{mp}, Index: idx})
}

func benchModuleVersions(b *testing.B, mm *Modules) {
	ctx := context.Background()
	if vs, err := mm.ModuleVersions(ctx, "tfmods", "net", "aws"); err != nil || len(vs) != 100 {
		b.Fatalf("ModuleVersions: %d versions, %v", len(vs), err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := mm.ModuleVersions(ctx, "tfmods", "net", "aws"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkModuleVersionsCached is a mirrored module's upstream version
// list within VersionsTTL: what every render of its versions document
// but one a minute costs the mirror.
func BenchmarkModuleVersionsCached(b *testing.B) {
	benchModuleVersions(b, benchModules(b, time.Hour))
}

// BenchmarkModuleVersionsUpstream reads the version list from the
// upstream (plain HTTP on loopback) every time, as once a minute per
// module.
func BenchmarkModuleVersionsUpstream(b *testing.B) {
	benchModuleVersions(b, benchModules(b, time.Nanosecond))
}
