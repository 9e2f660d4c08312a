package providers

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
)

// TestLifecycleVersionsDocument checks what deprecation and revocation do
// to the protocol documents: a revoked version leaves the versions
// document and the mirror index while its download documents stay; each
// deprecated version listed adds a "warnings" entry naming it, its reason
// and its link (what Terraform and OpenTofu print).
func TestLifecycleVersionsDocument(t *testing.T) {
	f := newFixture(t, newIndex(t, version("1.0.0", "linux_amd64"), version("1.1.0", "linux_amd64"), version("1.2.0", "linux_amd64")))
	ctx := t.Context()
	type doc struct {
		Versions []struct {
			Version string `json:"version"`
		} `json:"versions"`
		Warnings []string `json:"warnings"`
	}
	read := func() (versions, warnings []string, raw string) {
		t.Helper()
		resp := f.do(t, http.MethodGet, "/v1/providers/acme/widget/versions")
		var d doc
		if err := json.Unmarshal(resp.body, &d); err != nil || resp.status != http.StatusOK {
			t.Fatalf("versions: %d %s %v", resp.status, resp.body, err)
		}
		for _, v := range d.Versions {
			versions = append(versions, v.Version)
		}
		return versions, d.Warnings, string(resp.body)
	}
	if _, warnings, raw := read(); warnings != nil {
		t.Errorf("a provider without deprecations has warnings: %s", raw)
	}
	now := time.Now()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(f.idx.SetProviderDeprecation(ctx, "acme", "widget", "1.1.0", &registry.Deprecation{Reason: "CVE-2025-1234: upgrade to 1.2", Link: "https://example.com/advisory", At: now}))
	must(f.idx.SetProviderDeprecation(ctx, "acme", "widget", "1.0.0", &registry.Deprecation{Reason: "old", At: now}))
	must(f.idx.SetProviderRevocation(ctx, "acme", "widget", "1.2.0", &registry.Revocation{Reason: "broken packages", At: now}))
	f.svc.Invalidate("acme", "widget") // what the change feed does
	versions, warnings, raw := read()
	if want := []string{"1.1.0", "1.0.0"}; !slices.Equal(versions, want) {
		t.Errorf("versions = %q, want %q (the revoked 1.2.0 left out)", versions, want)
	}
	want := []string{
		"Version 1.1.0 of acme/widget is deprecated: CVE-2025-1234: upgrade to 1.2 (more: https://example.com/advisory)",
		"Version 1.0.0 of acme/widget is deprecated: old",
	}
	if !slices.Equal(warnings, want) {
		t.Errorf("warnings = %q, want %q\n%s", warnings, want, raw)
	}
	if dl := f.do(t, http.MethodGet, "/v1/providers/acme/widget/1.2.0/download/linux/amd64"); dl.status != http.StatusOK {
		t.Errorf("download document of the revoked version: %d %s, want 200 (lock files pin it)", dl.status, dl.body)
	}
	idx := f.do(t, http.MethodGet, "/v1/mirror/trove.example:8443/acme/widget/index.json")
	var mi struct {
		Versions map[string]json.RawMessage `json:"versions"`
	}
	if err := json.Unmarshal(idx.body, &mi); err != nil || len(mi.Versions) != 2 || mi.Versions["1.2.0"] != nil {
		t.Errorf("mirror index = %d %s, want 1.0.0 and 1.1.0 only", idx.status, idx.body)
	}

	must(f.idx.SetProviderRevocation(ctx, "acme", "widget", "1.2.0", nil))
	must(f.idx.SetProviderDeprecation(ctx, "acme", "widget", "1.1.0", nil))
	must(f.idx.SetProviderDeprecation(ctx, "acme", "widget", "1.0.0", nil))
	f.svc.Invalidate("acme", "widget")
	if versions, warnings, raw := read(); len(versions) != 3 || warnings != nil {
		t.Errorf("after restore and undeprecate: %s", raw)
	}
}
