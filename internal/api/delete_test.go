package api_test

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/trovetest"
)

// wantErrors checks that an answer is status with a JSON {"errors":[...]}
// body.
func wantErrors(t *testing.T, what string, status int, raw []byte, want int) {
	t.Helper()
	var doc struct {
		Errors []string `json:"errors"`
	}
	if status != want || json.Unmarshal(raw, &doc) != nil || len(doc.Errors) == 0 || doc.Errors[0] == "" {
		t.Errorf("%s = %d %s, want %d with {\"errors\":[...]}", what, status, raw, want)
	}
}

// protocolVersions returns the version numbers of a providers.v1 or
// modules.v1 versions answer (none for a 404).
func protocolVersions(t *testing.T, s *trovetest.Server, path, auth string) []string {
	t.Helper()
	status, raw := apiDo(t, s, "GET", path, auth, "", nil)
	if status == 404 {
		return nil
	}
	var doc struct {
		Versions []struct{ Version string } `json:"versions"`
		Modules  []struct {
			Versions []struct{ Version string } `json:"versions"`
		} `json:"modules"`
	}
	if status != 200 || json.Unmarshal(raw, &doc) != nil {
		t.Fatalf("GET %s = %d %s", path, status, raw)
	}
	var out []string
	for _, v := range doc.Versions {
		out = append(out, v.Version)
	}
	for _, m := range doc.Modules {
		for _, v := range m.Versions {
			out = append(out, v.Version)
		}
	}
	return out
}

// TestDeleteAPI deletes a provider version, a whole provider and a whole
// module through the API: the rights each needs, the confirmation, hostile
// and absent addresses (refused, changing nothing), the audit log and the
// protocol documents, which change at once.
func TestDeleteAPI(t *testing.T) {
	s, tokens := setup(t)
	ctx := t.Context()
	pub, admin, reader, other, global := tokens[acmePublish], tokens[acmeAdmin], tokens[acmeRead], tokens[otherAdmin], tokens[globalAdmin]
	for _, v := range []string{"1.0.0", "1.1.0"} {
		if status, raw := apiDo(t, s, "POST", "/api/v1/namespaces/acme/modules/network/aws/versions/"+v, pub, apispec.ModuleArchiveTarGz,
			bytes.NewReader(moduleArchive(t, networkModule))); status != 201 {
			t.Fatalf("publish %s = %d %s", v, status, raw)
		}
		pv := registry.ProviderVersion{Namespace: "acme", Type: "cloud", Version: v, Protocols: []string{"5.0"},
			SigningKey: registry.SigningKey{Namespace: "acme", KeyID: "0123456789ABCDEF", CreatedAt: time.Now()}, PublishedAt: time.Now(),
			Platforms: []registry.Platform{{OS: "linux", Arch: "amd64", Filename: "terraform-provider-cloud_" + v + "_linux_amd64.zip", SHA256: stored(t, s, "a"), Size: 1}}}
		if err := s.Index.CreateProviderVersion(ctx, pv); err != nil {
			t.Fatal(err)
		}
	}
	const (
		version  = "/api/v1/namespaces/acme/providers/cloud/versions/1.1.0"
		provider = "/api/v1/namespaces/acme/providers/cloud"
		module   = "/api/v1/namespaces/acme/modules/network/aws"
		pvers    = "/v1/providers/acme/cloud/versions"
		mvers    = "/v1/modules/acme/network/aws/versions"
	)
	confirm := func(path, address string) string { return path + "?confirm=" + url.QueryEscape(address) }
	// Warm the protocol caches, so that the checks below see them dropped.
	if got := protocolVersions(t, s, pvers, admin); len(got) != 2 {
		t.Fatalf("provider versions before = %v", got)
	}
	protocolVersions(t, s, mvers, admin)

	refused := []struct {
		name, path, auth string
		status           int
	}{
		{"no token", confirm(version, "acme/cloud/1.1.0"), "", 401},
		{"read token", confirm(version, "acme/cloud/1.1.0"), reader, 403},
		{"publish token", confirm(version, "acme/cloud/1.1.0"), pub, 403},
		{"another namespace's admin", confirm(version, "acme/cloud/1.1.0"), other, 404},
		{"publish token, provider", confirm(provider, "acme/cloud"), pub, 403},
		{"publish token, module", confirm(module, "acme/network/aws"), pub, 403},
		{"no confirmation", version, admin, 400},
		{"confirmation of another version", confirm(version, "acme/cloud/1.0.0"), admin, 400},
		{"confirmation of the provider for a version", confirm(version, "acme/cloud"), admin, 400},
		{"confirmation of a version for the provider", confirm(provider, "acme/cloud/1.1.0"), admin, 400},
		{"confirmation with a traversal", confirm(version, "acme/cloud/1.1.0/../../other"), admin, 400},
		{"confirmation too long", confirm(version, strings.Repeat("a", 5000)), admin, 400},
		{"confirmation of another module", confirm(module, "acme/network/gcp"), admin, 400},
		{"invalid version", confirm("/api/v1/namespaces/acme/providers/cloud/versions/1.1.0;rm", "acme/cloud/1.1.0;rm"), admin, 400},
		{"invalid type", confirm("/api/v1/namespaces/acme/providers/c%20loud", "acme/c loud"), admin, 400},
		{"absent version", confirm("/api/v1/namespaces/acme/providers/cloud/versions/9.9.9", "acme/cloud/9.9.9"), admin, 404},
		{"absent provider", confirm("/api/v1/namespaces/acme/providers/nothing", "acme/nothing"), admin, 404},
		{"absent module", confirm("/api/v1/namespaces/acme/modules/network/gcp", "acme/network/gcp"), admin, 404},
		{"absent namespace", confirm("/api/v1/namespaces/nobody/providers/cloud", "nobody/cloud"), global, 404},
	}
	for _, c := range refused {
		status, raw := apiDo(t, s, "DELETE", c.path, c.auth, "", nil)
		wantErrors(t, c.name, status, raw, c.status)
	}
	if got := protocolVersions(t, s, pvers, admin); len(got) != 2 {
		t.Fatalf("provider versions after refused deletes = %v, want both", got)
	}
	if got := protocolVersions(t, s, mvers, admin); len(got) != 2 {
		t.Fatalf("module versions after refused deletes = %v, want both", got)
	}

	// One provider version (the address's case is normalized).
	if status, raw := apiDo(t, s, "DELETE", confirm(version, "ACME/cloud/1.1.0"), admin, "", nil); status != 204 {
		t.Fatalf("delete version = %d %s", status, raw)
	}
	if got := protocolVersions(t, s, pvers, admin); len(got) != 1 || got[0] != "1.0.0" {
		t.Errorf("provider versions after the delete = %v, want [1.0.0] at once", got)
	}
	if status, raw := apiDo(t, s, "DELETE", confirm(version, "acme/cloud/1.1.0"), admin, "", nil); status != 404 {
		t.Errorf("delete version again = %d %s, want 404", status, raw)
	}
	// The whole provider, then the whole module.
	status, raw := apiDo(t, s, "DELETE", confirm(provider, "acme/cloud"), admin, "", nil)
	var res apispec.DeleteResult
	if status != 200 || json.Unmarshal(raw, &res) != nil || res.Versions != 1 {
		t.Fatalf("delete provider = %d %s, want 200 with 1 version", status, raw)
	}
	if got := protocolVersions(t, s, pvers, admin); got != nil {
		t.Errorf("provider versions after deleting the provider = %v", got)
	}
	status, raw = apiDo(t, s, "DELETE", confirm(module, "acme/network/aws"), admin, "", nil)
	if status != 200 || json.Unmarshal(raw, &res) != nil || res.Versions != 2 {
		t.Fatalf("delete module = %d %s, want 200 with 2 versions", status, raw)
	}
	if got := protocolVersions(t, s, mvers, admin); got != nil {
		t.Errorf("module versions after deleting the module = %v", got)
	}
	// Deletes leave the blobs to the garbage collector.
	var kept int
	if err := s.Blobs.Walk(ctx, func(string, int64) error { kept++; return nil }); err != nil || kept == 0 {
		t.Errorf("blobs after the deletes: %d, %v; want the module archive still stored", kept, err)
	}
	for action, target := range map[string]string{"provider.delete": "acme/cloud 1.1.0", "provider.delete_all": "acme/cloud", "module.delete_all": "acme/network/aws"} {
		events := auditEvents(t, s, action)
		if len(events) != 1 || events[0].Target != target || events[0].Namespace != "acme" || events[0].Actor != actorOf(t, s, admin) {
			t.Errorf("audit %s = %+v, want one event on %s by the admin", action, events, target)
		}
	}
}

// TestGCAPI runs garbage collections through the API: global admins only,
// refused grace periods and bodies, and the report of a dry run (every
// blob here is younger than the grace period, so nothing is reclaimed;
// package gc tests what is).
func TestGCAPI(t *testing.T) {
	s, tokens := setup(t)
	if status, raw := apiDo(t, s, "POST", "/api/v1/namespaces/acme/modules/network/aws/versions/1.0.0", tokens[acmePublish],
		apispec.ModuleArchiveTarGz, bytes.NewReader(moduleArchive(t, networkModule))); status != 201 {
		t.Fatalf("publish = %d %s", status, raw)
	}
	if status, raw := apiDo(t, s, "DELETE", "/api/v1/namespaces/acme/modules/network/aws/versions/1.0.0?confirm=acme/network/aws/1.0.0",
		tokens[acmeAdmin], "", nil); status != 204 {
		t.Fatalf("delete = %d %s", status, raw)
	}
	post := func(auth, body string) (int, []byte) {
		return apiDo(t, s, "POST", "/api/v1/gc", auth, "application/json", strings.NewReader(body))
	}
	for _, c := range []struct {
		name, auth, body string
		status           int
	}{
		{"no token", "", `{"dry_run":true}`, 401},
		{"namespace admin", tokens[acmeAdmin], `{"dry_run":true}`, 403},
		{"global reader", tokens[globalRead], `{"dry_run":true}`, 403},
		{"read-only token of a global admin", tokens[userNarrow], `{"dry_run":true}`, 403},
		{"grace too short", tokens[globalAdmin], `{"grace":"1s"}`, 400},
		{"grace negative", tokens[globalAdmin], `{"grace":"-1h"}`, 400},
		{"grace not a duration", tokens[globalAdmin], `{"grace":"forever"}`, 400},
		{"grace too long a text", tokens[globalAdmin], `{"grace":"` + strings.Repeat("9", 100) + `h"}`, 400},
		{"unknown field", tokens[globalAdmin], `{"dry_run":true,"everything":true}`, 400},
		{"not JSON", tokens[globalAdmin], `dry run please`, 400},
	} {
		status, raw := post(c.auth, c.body)
		wantErrors(t, c.name, status, raw, c.status)
	}
	if events := auditEvents(t, s, "gc.run"); len(events) != 0 {
		t.Errorf("refused collections were audited: %+v", events)
	}
	status, raw := post(tokens[globalAdmin], `{"dry_run":true,"grace":"2h"}`)
	var rep apispec.GCReport
	if status != 200 || json.Unmarshal(raw, &rep) != nil || !rep.DryRun || rep.Grace != "2h0m0s" || rep.StoredBlobs == 0 ||
		rep.YoungBlobs != 1 || len(rep.Reclaimed) != 0 || rep.Reclaimed == nil {
		t.Fatalf("dry run = %d %s, want the deleted version's archive kept as young", status, raw)
	}
	if events := auditEvents(t, s, "gc.run"); len(events) != 0 {
		t.Errorf("a dry run was audited: %+v", events)
	}
	status, raw = post(tokens[globalAdmin], `{}`)
	if status != 200 || json.Unmarshal(raw, &rep) != nil || rep.DryRun || rep.Grace != "1h0m0s" {
		t.Fatalf("collection = %d %s", status, raw)
	}
	if events := auditEvents(t, s, "gc.run"); len(events) != 1 || !strings.Contains(events[0].Details, "reclaimed 0 blobs") {
		t.Errorf("audit gc.run = %+v, want one event", events)
	}
}
