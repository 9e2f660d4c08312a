package api_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

// TestVersionLifecycleAPI deprecates, undeprecates, revokes and restores
// a module version and a provider version through the API: the rights
// each needs, the refused inputs, the version documents, the audit log
// and the protocol documents, which change at once.
func TestVersionLifecycleAPI(t *testing.T) {
	s, tokens := setup(t)
	ctx := t.Context()
	pub, admin, reader := tokens[acmePublish], tokens[acmeAdmin], tokens[acmeRead]
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
	body := func(v any) *bytes.Reader {
		raw, _ := json.Marshal(v)
		return bytes.NewReader(raw)
	}
	for _, kind := range []struct {
		name, base, versions string
	}{
		{"module", "/api/v1/namespaces/acme/modules/network/aws/versions/1.1.0", "/v1/modules/acme/network/aws/versions"},
		{"provider", "/api/v1/namespaces/acme/providers/cloud/versions/1.1.0", "/v1/providers/acme/cloud/versions"},
	} {
		t.Run(kind.name, func(t *testing.T) {
			dep, rev := kind.base+"/deprecation", kind.base+"/revocation"
			req := apispec.DeprecateRequest{Reason: "use 2.x", Link: "https://example.com/upgrade"}
			if status, raw := apiDo(t, s, "PUT", dep, reader, "application/json", body(req)); status != 403 {
				t.Errorf("deprecate with a read token = %d %s, want 403", status, raw)
			}
			for _, bad := range []apispec.DeprecateRequest{{}, {Reason: "a\nb"}, {Reason: "r", Link: "http://example.com"}, {Reason: strings.Repeat("x", 501)}} {
				if status, raw := apiDo(t, s, "PUT", dep, pub, "application/json", body(bad)); status != 400 {
					t.Errorf("deprecate with %+v = %d %s, want 400", bad, status, raw)
				}
			}
			if status, raw := apiDo(t, s, "PUT", strings.Replace(dep, "1.1.0", "9.0.0", 1), pub, "application/json", body(req)); status != 404 {
				t.Errorf("deprecate a missing version = %d %s, want 404", status, raw)
			}
			status, raw := apiDo(t, s, "PUT", dep, pub, "application/json", body(req))
			var doc struct {
				Deprecation *apispec.Deprecation `json:"deprecation"`
				Revocation  *apispec.Revocation  `json:"revocation"`
			}
			if status != 200 || json.Unmarshal(raw, &doc) != nil || doc.Deprecation == nil || doc.Deprecation.Reason != req.Reason ||
				doc.Deprecation.Link != req.Link || doc.Deprecation.DeprecatedBy != actorOf(t, s, pub) || doc.Deprecation.DeprecatedAt.IsZero() {
				t.Fatalf("deprecate = %d %s", status, raw)
			}
			_, list := apiDo(t, s, "GET", kind.versions, admin, "", nil)
			if !strings.Contains(string(list), "use 2.x") {
				t.Errorf("protocol versions after deprecate: %s, want the reason at once", list)
			}
			if status, raw := apiDo(t, s, "PUT", rev, pub, "application/json", body(apispec.RevokeRequest{Reason: "broken"})); status != 403 {
				t.Errorf("revoke with a publish token = %d %s, want 403 (admin only)", status, raw)
			}
			if status, raw := apiDo(t, s, "PUT", rev, admin, "application/json", body(apispec.RevokeRequest{})); status != 400 {
				t.Errorf("revoke without a reason = %d %s, want 400", status, raw)
			}
			status, raw = apiDo(t, s, "PUT", rev, admin, "application/json", body(apispec.RevokeRequest{Reason: "broken"}))
			if status != 200 || json.Unmarshal(raw, &doc) != nil || doc.Revocation == nil || doc.Revocation.Reason != "broken" || doc.Deprecation == nil {
				t.Fatalf("revoke = %d %s", status, raw)
			}
			if _, list := apiDo(t, s, "GET", kind.versions, admin, "", nil); strings.Contains(string(list), `"1.1.0"`) || !strings.Contains(string(list), `"1.0.0"`) {
				t.Errorf("protocol versions after revoke: %s, want 1.0.0 only", list)
			}
			if status, raw := apiDo(t, s, "GET", kind.base, reader, "", nil); status != 200 || !strings.Contains(string(raw), `"revocation"`) {
				t.Errorf("GET of the revoked version = %d %s, want it with its revocation", status, raw)
			}
			for _, c := range []struct{ path, auth string }{{rev, admin}, {dep, pub}} {
				if status, raw := apiDo(t, s, "DELETE", c.path, c.auth, "", nil); status != 200 {
					t.Errorf("DELETE %s = %d %s", c.path, status, raw)
				}
			}
			_, raw = apiDo(t, s, "GET", kind.base, reader, "", nil)
			if doc = struct {
				Deprecation *apispec.Deprecation `json:"deprecation"`
				Revocation  *apispec.Revocation  `json:"revocation"`
			}{}; json.Unmarshal(raw, &doc) != nil || doc.Deprecation != nil || doc.Revocation != nil {
				t.Errorf("after restore and undeprecate: %s", raw)
			}
			if _, list := apiDo(t, s, "GET", kind.versions, admin, "", nil); !strings.Contains(string(list), `"1.1.0"`) || strings.Contains(string(list), "use 2.x") {
				t.Errorf("protocol versions after restore: %s", list)
			}
			for _, action := range []string{"deprecate", "undeprecate", "revoke", "restore"} {
				events := auditEvents(t, s, kind.name+"."+action)
				if len(events) != 1 || events[0].Namespace != "acme" || !strings.HasSuffix(events[0].Target, " 1.1.0") {
					t.Errorf("audit %s.%s = %+v, want one event on the version", kind.name, action, events)
				}
			}
		})
	}
}
