package providers

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"trove.dev/trove/internal/registry"
)

// archivesOf decodes a mirror version document into platform -> archive.
func archivesOf(t *testing.T, body []byte) map[string]mirrorArchive {
	t.Helper()
	doc := decodeObject(t, body)
	wantKeys(t, "mirror version document", doc, "archives")
	return unmarshal[map[string]mirrorArchive](t, doc["archives"])
}

func TestMirrorOwnProvider(t *testing.T) {
	v12 := version("1.2.0", "linux_amd64", "darwin_arm64")
	v12.Platforms[0].H1 = "h1:" + strings.Repeat("A", 43) + "="
	f := newFixture(t, newIndex(t, v12, version("1.3.0", "linux_amd64")))

	for _, host := range []string{"trove.example:8443", "TROVE.Example:8443"} {
		resp := f.do(t, http.MethodGet, "/v1/mirror/"+host+"/acme/widget/index.json")
		if resp.status != http.StatusOK || resp.header.Get("Content-Type") != "application/json" {
			t.Fatalf("index.json on %s: status %d, Content-Type %q: %s", host, resp.status, resp.header.Get("Content-Type"), resp.body)
		}
		doc := decodeObject(t, resp.body)
		wantKeys(t, "mirror index", doc, "versions")
		if vs := unmarshal[map[string]map[string]any](t, doc["versions"]); len(vs) != 2 || vs["1.2.0"] == nil || vs["1.3.0"] == nil {
			t.Errorf("index.json on %s lists %s, want 1.2.0 and 1.3.0", host, doc["versions"])
		}
	}

	resp := f.do(t, http.MethodGet, "/v1/mirror/trove.example:8443/ACME/Widget/1.2.0.json")
	if resp.status != http.StatusOK {
		t.Fatalf("1.2.0.json: status %d: %s", resp.status, resp.body)
	}
	archives := archivesOf(t, resp.body)
	if len(archives) != 2 {
		t.Fatalf("archives %v, want linux_amd64 and darwin_arm64", archives)
	}
	for _, p := range v12.Platforms {
		a, ok := archives[p.OS+"_"+p.Arch]
		if !ok {
			t.Fatalf("no archive for %s_%s", p.OS, p.Arch)
		}
		u, err := url.Parse(a.URL)
		if err != nil || u.Scheme != "https" || u.Host != "trove.example:8443" {
			t.Fatalf("url %q: want an absolute URL on the public base", a.URL)
		}
		if digest, name, origin, err := f.signer.VerifyOrigin(u.Path, u.Query()); err != nil || digest != p.SHA256 || name != p.Filename || origin != "" {
			t.Errorf("url %q verifies as %q %q origin %q %v, want %s %s and no origin (Trove's own provider)", a.URL, digest, name, origin, err, p.SHA256, p.Filename)
		}
		want := []string{"zh:" + p.SHA256}
		if p.H1 != "" {
			want = append([]string{p.H1}, want...)
		}
		if !slices.Equal(a.Hashes, want) {
			t.Errorf("%s_%s hashes %v, want %v", p.OS, p.Arch, a.Hashes, want)
		}
	}

	for path, want := range map[string]string{
		"/v1/mirror/trove.example:8443/acme/widget/9.9.9.json":   "has no version 9.9.9",
		"/v1/mirror/trove.example:8443/acme/gadget/index.json":   "acme/gadget not found",
		"/v1/mirror/trove.example:8443/acme/widget/1.2.0.txt":    "one JSON document per version",
		"/v1/mirror/trove.example:8443/acme/widget/one.json":     "has no version",
		"/v1/mirror/registry.example.com/acme/widget/index.json": "mirrors no other registries",
		"/v1/mirror/bad_host!/acme/widget/index.json":            "not a registry host name",
	} {
		resp := f.do(t, http.MethodGet, path)
		if resp.status != http.StatusNotFound || !strings.Contains(string(resp.body), want) {
			t.Errorf("GET %s: status %d %s, want 404 saying %q", path, resp.status, resp.body, want)
		}
	}

	// A publish shows at once in the mirror index, as in providers.v1.
	f.idx.put(t, version("1.4.0", "linux_amd64"))
	f.svc.Invalidate("acme", "widget")
	resp = f.do(t, http.MethodGet, "/v1/mirror/trove.example:8443/acme/widget/index.json")
	if !strings.Contains(string(resp.body), `"1.4.0"`) {
		t.Errorf("index.json after a publish and Invalidate: %s, want 1.4.0 listed", resp.body)
	}
}

// TestMirrorOwnProviderAsTroveLocalhost: a Trove on localhost is
// trove.localhost to the clients (the banner's host block), and its
// mirror routes answer that name as its own, like the public URL's host.
func TestMirrorOwnProviderAsTroveLocalhost(t *testing.T) {
	f := newFixtureAt(t, "https://localhost:8443", newIndex(t, version("1.2.0", "linux_amd64")))
	for _, host := range []string{"trove.localhost", "Trove.Localhost", "localhost:8443"} {
		resp := f.do(t, http.MethodGet, "/v1/mirror/"+host+"/acme/widget/index.json")
		if resp.status != http.StatusOK || !strings.Contains(string(resp.body), `"1.2.0"`) {
			t.Errorf("index.json on %s: status %d %s, want Trove's own acme/widget", host, resp.status, resp.body)
		}
		resp = f.do(t, http.MethodGet, "/v1/mirror/"+host+"/acme/widget/1.2.0.json")
		if resp.status != http.StatusOK || len(archivesOf(t, resp.body)) != 1 {
			t.Errorf("1.2.0.json on %s: status %d %s, want its one archive", host, resp.status, resp.body)
		}
	}
	if resp := f.do(t, http.MethodGet, "/v1/mirror/other.localhost/acme/widget/index.json"); resp.status != http.StatusNotFound {
		t.Errorf("another .localhost name: status %d %s, want 404", resp.status, resp.body)
	}
}

// fakeSource is a MirrorSource with one provider, counting its calls.
type fakeSource struct {
	versions atomic.Pointer[[]string]
	calls    atomic.Int64
}

func (s *fakeSource) MirroredVersions(_ context.Context, host, ns, typ string) ([]string, error) {
	s.calls.Add(1)
	if host != "registry.example.com" || ns != "hashicorp" || typ != "random" {
		return nil, registry.Errorf(registry.NotFound, "provider %s/%s/%s is not mirrored", host, ns, typ)
	}
	return *s.versions.Load(), nil
}

func (s *fakeSource) MirroredVersion(ctx context.Context, host, ns, typ, v string) (registry.ProviderVersion, error) {
	vs, err := s.MirroredVersions(ctx, host, ns, typ)
	if err != nil {
		return registry.ProviderVersion{}, err
	}
	if !slices.Contains(vs, v) {
		return registry.ProviderVersion{}, registry.Errorf(registry.NotFound, "no version %s", v)
	}
	pv := version(v, "linux_amd64", "windows_386")
	pv.Namespace, pv.Type = ns, typ
	pv.Platforms[1].H1, pv.Platforms[1].Size = "h1:held=", 5
	return pv, nil
}

func TestMirrorOtherHosts(t *testing.T) {
	src := &fakeSource{}
	src.versions.Store(&[]string{"3.0.0"})
	f := newFixture(t, newIndex(t), WithMirror(src))

	index := func() string {
		t.Helper()
		resp := f.do(t, http.MethodGet, "/v1/mirror/Registry.Example.com/HashiCorp/random/index.json")
		if resp.status != http.StatusOK {
			t.Fatalf("index.json: status %d: %s", resp.status, resp.body)
		}
		return string(resp.body)
	}
	if got := index(); got != `{"versions":{"3.0.0":{}}}` {
		t.Fatalf("index.json = %s", got)
	}
	calls := src.calls.Load()
	src.versions.Store(&[]string{"3.0.0", "3.1.0"})
	if got := index(); got != `{"versions":{"3.0.0":{}}}` || src.calls.Load() != calls {
		t.Errorf("second index.json = %s after %d more calls: want the cached document", got, src.calls.Load()-calls)
	}
	f.svc.InvalidateMirrored("registry.example.com", "hashicorp", "random")
	if got := index(); got != `{"versions":{"3.0.0":{},"3.1.0":{}}}` {
		t.Errorf("index.json after InvalidateMirrored = %s, want both versions", got)
	}

	resp := f.do(t, http.MethodGet, "/v1/mirror/registry.example.com/hashicorp/random/3.1.0.json")
	if resp.status != http.StatusOK {
		t.Fatalf("3.1.0.json: status %d: %s", resp.status, resp.body)
	}
	archives := archivesOf(t, resp.body)
	if a := archives["windows_386"]; len(a.Hashes) != 2 || a.Hashes[0] != "h1:held=" || !strings.HasPrefix(a.Hashes[1], "zh:") {
		t.Errorf("windows_386 hashes %v, want the h1 of the held package and its zh", a.Hashes)
	}
	if a := archives["linux_amd64"]; len(a.Hashes) != 1 || !strings.HasPrefix(a.Hashes[0], "zh:") || !strings.Contains(a.URL, "/v1/files/") {
		t.Errorf("linux_amd64 %+v, want its zh alone and a signed file URL", a)
	}
	// The package URLs name the provider they were listed for, so that
	// the mirror fetches each from that provider's upstream.
	for platform, a := range archives {
		u, err := url.Parse(a.URL)
		if err != nil {
			t.Fatal(err)
		}
		want := "registry.example.com/hashicorp/random/3.1.0/" + platform
		if _, _, origin, err := f.signer.VerifyOrigin(u.Path, u.Query()); err != nil || origin != want {
			t.Errorf("%s URL %q: origin %q, %v; want %q, signed", platform, a.URL, origin, err, want)
		}
	}

	for path, want := range map[string]string{
		"/v1/mirror/registry.example.com/hashicorp/other/index.json":  "is not mirrored",
		"/v1/mirror/registry.example.com/hashicorp/random/9.0.0.json": "no version 9.0.0",
	} {
		if resp := f.do(t, http.MethodGet, path); resp.status != http.StatusNotFound || !strings.Contains(string(resp.body), want) {
			t.Errorf("GET %s: status %d %s, want 404 saying %q", path, resp.status, resp.body, want)
		}
	}
}
