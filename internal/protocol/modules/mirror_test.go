package modules_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	protocol "trove.dev/trove/internal/protocol/modules"
	"trove.dev/trove/internal/registry"
)

// stubMirror stands in for the module mirror: the Service's merging of
// upstream and stored versions is what is tested here (the mirror itself
// is tested in internal/mirror, the whole in internal/e2e).
type stubMirror struct {
	mu       sync.Mutex
	upstream []string
	down     bool
	fetched  []string
	fetch    func(version string) (registry.ModuleVersion, error)
}

func (m *stubMirror) Mirrored(ns string) bool { return ns == "acme" }

func (m *stubMirror) ModuleVersions(ctx context.Context, ns, name, system string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.down {
		return nil, registry.Errorf(registry.Unavailable, "upstream registry.example.com is unreachable")
	}
	return slices.Clone(m.upstream), nil
}

func (m *stubMirror) FetchModule(ctx context.Context, ns, name, system, version string) (registry.ModuleVersion, error) {
	m.mu.Lock()
	m.fetched = append(m.fetched, version)
	m.mu.Unlock()
	return m.fetch(version)
}

func TestMirroredNamespace(t *testing.T) {
	e := setup(t)
	m := &stubMirror{upstream: []string{"1.0.0", "2.0.0-rc.1"}}
	m.fetch = func(version string) (registry.ModuleVersion, error) {
		e.publish(t, "acme/network/aws", version, mainTF(version))
		return e.srv.Index.GetModuleVersion(t.Context(), "acme", "network", "aws", version)
	}
	svc := protocol.New(e.srv.Index, e.srv.Signer, mustURL(e.srv.URL), nil, protocol.WithMaxAge(time.Hour), protocol.WithMirror(m))
	mux := http.NewServeMux()
	svc.Register(mux)
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	versions := func() []string {
		rec := get("/v1/modules/acme/network/aws/versions")
		if rec.Code != http.StatusOK {
			t.Fatalf("versions: %d %s", rec.Code, rec.Body)
		}
		var doc struct {
			Modules []struct {
				Versions []struct{ Version string } `json:"versions"`
			} `json:"modules"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, v := range doc.Modules[0].Versions {
			out = append(out, v.Version)
		}
		slices.Sort(out)
		return out
	}
	if got := versions(); !slices.Equal(got, []string{"1.0.0", "2.0.0-rc.1"}) {
		t.Fatalf("versions of a module Trove holds nothing of: %v", got)
	}
	if rec := get("/v1/modules/acme/network/aws/download"); rec.Code != http.StatusFound || rec.Header().Get("Location") != e.srv.URL+"/v1/modules/acme/network/aws/1.0.0/download" {
		t.Errorf("latest download: %d %q, want a redirect to 1.0.0", rec.Code, rec.Header().Get("Location"))
	}
	if rec := get("/v1/modules/acme/network/aws/1.0.0"); rec.Code != http.StatusNotFound {
		t.Errorf("details of a version not held: %d, want 404", rec.Code)
	}
	if rec := get("/v1/modules/acme/network/aws/3.0.0/download"); rec.Code != http.StatusNotFound || len(m.fetched) != 0 {
		t.Errorf("download of a version the upstream does not list: %d, fetched %v; want 404 and no fetch", rec.Code, m.fetched)
	}
	rec := get("/v1/modules/acme/network/aws/1.0.0/download")
	if rec.Code != http.StatusNoContent || rec.Header().Get("X-Terraform-Get") == "" || !slices.Equal(m.fetched, []string{"1.0.0"}) {
		t.Fatalf("first download: %d %q, fetched %v", rec.Code, rec.Header().Get("X-Terraform-Get"), m.fetched)
	}
	svc.Invalidate("acme", "network", "aws") // what the publish does through the app's wiring
	if rec := get("/v1/modules/acme/network/aws/1.0.0/download"); rec.Code != http.StatusNoContent || len(m.fetched) != 1 {
		t.Errorf("second download: %d, fetched %v; want it served from the store", rec.Code, m.fetched)
	}

	// Upstream down: the versions held, alone.
	m.mu.Lock()
	m.down = true
	m.mu.Unlock()
	svc.Invalidate("acme", "network", "aws")
	if got := versions(); !slices.Equal(got, []string{"1.0.0"}) {
		t.Errorf("versions with the upstream down: %v, want those held", got)
	}
	if rec := get("/v1/modules/acme/network/aws/1.0.0/download"); rec.Code != http.StatusNoContent {
		t.Errorf("held version with the upstream down: %d", rec.Code)
	}
	if rec := get("/v1/modules/acme/other/aws/versions"); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("a module held in no version, upstream down: %d %s, want 503", rec.Code, rec.Body)
	}
}
