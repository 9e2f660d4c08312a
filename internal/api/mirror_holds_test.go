package api_test

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest"
)

// troveUpstream starts a Trove with the public provider acme/widget
// 1.0.0, to be the upstream of another.
func troveUpstream(t *testing.T) *trovetest.Server {
	t.Helper()
	ctx := context.Background()
	up := trovetest.Start(t)
	c := adminClient(t, up)
	if _, err := c.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: "acme", Visibility: "public"}); err != nil {
		t.Fatal(err)
	}
	key := signingtest.NewKey(t, "acme")
	if _, err := c.AddSigningKey(ctx, "acme", apispec.AddSigningKeyRequest{ASCIIArmor: key.ArmoredPublic}); err != nil {
		t.Fatal(err)
	}
	rel := releasetest.Build(t, key, releasetest.Spec{Type: "widget", Version: "1.0.0", Platforms: []string{"linux_amd64"}, Protocols: []string{"5.0"}})
	var files []client.PublishFile
	for _, f := range rel.Files {
		files = append(files, client.PublishFile{Name: f.Name, Open: f.Open})
	}
	if _, err := c.PublishProvider(ctx, "acme", "widget", "1.0.0", files); err != nil {
		t.Fatal(err)
	}
	return up
}

// TestMirrorHoldsAPI: a rule with a minimum age of 7 days holds a new
// version of a second Trove back from the mirror's index.json; an
// approval through the API releases it at once, a denial takes it away
// again, and withdrawing both is possible; each change is audited with
// a webhook event, and the provider's report says why.
func TestMirrorHoldsAPI(t *testing.T) {
	ctx := context.Background()
	up := troveUpstream(t)
	s := trovetest.Start(t)
	admin := "Bearer " + s.AdminToken
	ca, err := os.ReadFile(up.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := json.Marshal(apispec.PutMirrorUpstreamRequest{ServiceURL: up.URL + "/v1/providers/", CACertificates: string(ca),
		Allow: []apispec.MirrorRule{{Provider: "acme/widget", MinAge: "1d12h"}}})
	created := upstreamAnswer(t, 201)(apiDo(t, s, "PUT", "/api/v1/mirror/upstreams/"+up.Host, admin, "application/json", strings.NewReader(string(body))))
	if len(created.Allow) != 1 || created.Allow[0].MinAge != "36h0m0s" {
		t.Fatalf("stored rule %+v, want min_age 36h0m0s", created.Allow)
	}
	body, _ = json.Marshal(apispec.PutMirrorUpstreamRequest{ServiceURL: up.URL + "/v1/providers/", CACertificates: string(ca),
		Allow: []apispec.MirrorRule{{Provider: "acme/widget", MinAge: "7d"}}})
	if r := upstreamAnswer(t, 200)(apiDo(t, s, "PUT", "/api/v1/mirror/upstreams/"+up.Host, admin, "application/json", strings.NewReader(string(body)))); r.Allow[0].MinAge != "7d" {
		t.Fatalf("stored rule %+v, want min_age 7d", r.Allow)
	}
	hook := registry.Webhook{ID: "wh_00000000000000c1", URL: "https://hooks.example/trove", Secret: "0123456789abcdef", Active: true, CreatedAt: time.Now()}
	if err := s.Index.CreateWebhook(ctx, hook); err != nil {
		t.Fatal(err)
	}

	provider := "/api/v1/mirror/providers/" + up.Host + "/acme/widget"
	index := "/v1/mirror/" + up.Host + "/acme/widget/index.json"
	report := func() apispec.MirrorProvider {
		t.Helper()
		status, raw := apiDo(t, s, "GET", provider, admin, "", nil)
		var p apispec.MirrorProvider
		if status != 200 || json.Unmarshal(raw, &p) != nil {
			t.Fatalf("GET %s = %d %s", provider, status, raw)
		}
		return p
	}
	p := report()
	if p.Rule == nil || p.Rule.MinAge != "7d" || len(p.Versions) != 1 || p.Versions[0].Status != apispec.MirrorHeld ||
		p.Versions[0].Until == nil || !strings.Contains(p.Versions[0].Reason, "minimum age of 7d") {
		t.Fatalf("report of a new version under a 7d rule = %+v", p)
	}
	if status, raw := apiDo(t, s, "GET", index, admin, "", nil); status != 404 || !strings.Contains(string(raw), "held back by a minimum age") {
		t.Fatalf("index.json of a held provider = %d %s, want 404 saying it is held", status, raw)
	}

	approval := provider + "/approvals/1.0.0"
	if status, raw := apiDo(t, s, "PUT", approval, admin, "application/json", strings.NewReader(`{"reason": "reviewed the diff"}`)); status != 201 {
		t.Fatalf("approve = %d %s", status, raw)
	}
	if status, raw := apiDo(t, s, "PUT", approval, admin, "application/json", strings.NewReader(`{"reason": "reviewed the diff again"}`)); status != 200 {
		t.Fatalf("approve again = %d %s, want 200", status, raw)
	}
	if status, raw := apiDo(t, s, "GET", index, admin, "", nil); status != 200 || !strings.Contains(string(raw), `"1.0.0"`) {
		t.Fatalf("index.json after the approval = %d %s, want 1.0.0 listed", status, raw)
	}
	if p := report(); p.Versions[0].Status != apispec.MirrorAvailable || !p.Versions[0].Approved || len(p.Decisions) != 1 ||
		p.Decisions[0].Reason != "reviewed the diff again" {
		t.Fatalf("report after the approval = %+v", p)
	}

	if status, raw := apiDo(t, s, "PUT", provider+"/denials", admin, "application/json", strings.NewReader(`{"versions": ">= 1.0.0, < 1.1.0", "reason": "compromised"}`)); status != 201 {
		t.Fatalf("deny = %d %s", status, raw)
	}
	if status, raw := apiDo(t, s, "GET", index, admin, "", nil); status != 404 || !strings.Contains(string(raw), "1 denied") {
		t.Fatalf("index.json after the denial = %d %s, want 404 saying it is denied", status, raw)
	}
	if status, raw := apiDo(t, s, "GET", "/v1/mirror/"+up.Host+"/acme/widget/1.0.0.json", admin, "", nil); status != 404 || !strings.Contains(string(raw), "compromised") {
		t.Fatalf("1.0.0.json after the denial = %d %s, want 404 with the reason", status, raw)
	}
	if p := report(); p.Versions[0].Status != apispec.MirrorDenied || !strings.Contains(p.Versions[0].Reason, "compromised") {
		t.Fatalf("report after the denial = %+v", p)
	}

	undeny := provider + "/denials?versions=" + url.QueryEscape(">= 1.0.0, < 1.1.0")
	if status, raw := apiDo(t, s, "DELETE", undeny, admin, "", nil); status != 204 {
		t.Fatalf("undeny = %d %s", status, raw)
	}
	if status, raw := apiDo(t, s, "DELETE", undeny, admin, "", nil); status != 404 {
		t.Fatalf("undeny again = %d %s, want 404", status, raw)
	}
	if status, raw := apiDo(t, s, "DELETE", approval, admin, "", nil); status != 204 {
		t.Fatalf("unapprove = %d %s", status, raw)
	}
	if status, _ := apiDo(t, s, "GET", index, admin, "", nil); status != 404 {
		t.Fatalf("index.json after withdrawing the approval = %d, want 404 (held again)", status)
	}

	for action, n := range map[string]int{registry.AuditMirrorApprove: 2, registry.AuditMirrorDeny: 1, registry.AuditMirrorUndeny: 1, registry.AuditMirrorUnapprove: 1} {
		if ev := auditEvents(t, s, action); len(ev) != n || !strings.Contains(ev[0].Target, up.Host+"/acme/widget") {
			t.Errorf("audit of %s: %+v, want %d entries", action, ev, n)
		}
	}
	ds, err := s.Index.ListWebhookDeliveries(ctx, hook.ID, 20)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, d := range ds {
		got[d.EventType]++
	}
	if got[registry.EventMirrorApproved] != 2 || got[registry.EventMirrorDenied] != 1 || got[registry.EventMirrorUndenied] != 1 || got[registry.EventMirrorUnapproved] != 1 {
		t.Errorf("webhook deliveries %v, want 2 approved, 1 denied, 1 undenied, 1 unapproved", got)
	}
}

// TestMirrorHoldsRefused: hostile and unauthorized decisions are refused
// with a JSON error, and nothing is stored or audited.
func TestMirrorHoldsRefused(t *testing.T) {
	s, tokens := setup(t)
	admin := "Bearer " + s.AdminToken
	base := "/api/v1/mirror/providers/registry.terraform.io/hashicorp/aws"
	for _, tc := range []struct {
		name, method, path, auth, body string
		status                         int
		want                           string
	}{
		{"no token", "PUT", base + "/approvals/1.0.0", "", `{}`, 401, ""},
		{"namespace admin", "PUT", base + "/approvals/1.0.0", tokens[acmeAdmin], `{}`, 403, ""},
		{"publisher", "PUT", base + "/denials", tokens[acmePublish], `{"versions": "1.0.0"}`, 403, ""},
		{"global reader lists", "GET", base, tokens[globalRead], ``, 403, ""},
		{"bad host", "PUT", "/api/v1/mirror/providers/a%20b/hashicorp/aws/approvals/1.0.0", admin, `{}`, 400, "is not a registry host name"},
		{"bad namespace", "PUT", "/api/v1/mirror/providers/registry.terraform.io/-x/aws/approvals/1.0.0", admin, `{}`, 400, "namespace"},
		{"wildcard namespace", "PUT", "/api/v1/mirror/providers/registry.terraform.io/*/aws/denials", admin, `{"versions": "1.0.0"}`, 400, "namespace"},
		{"bad type", "PUT", "/api/v1/mirror/providers/registry.terraform.io/hashicorp/a_b!/approvals/1.0.0", admin, `{}`, 400, "provider type"},
		{"approval of no version", "PUT", base + "/approvals/latest", admin, `{}`, 400, "an approval names one version"},
		{"approval of a partial version", "PUT", base + "/approvals/5.0", admin, `{}`, 400, "an approval names one version"},
		{"approval of a range", "PUT", base + "/approvals/%3E%3D1.0.0", admin, `{}`, 400, "an approval names one version"},
		{"approval with a NUL", "PUT", base + "/approvals/1.0.0%00", admin, `{}`, 400, ""},
		{"approval with unknown field", "PUT", base + "/approvals/1.0.0", admin, `{"versions": "1.0.0"}`, 400, "unknown field"},
		{"approval reason of two lines", "PUT", base + "/approvals/1.0.0", admin, `{"reason": "a\nb"}`, 400, "control character"},
		{"approval reason too long", "PUT", base + "/approvals/1.0.0", admin, `{"reason": "` + strings.Repeat("x", 5000) + `"}`, 400, "description"},
		{"approval without a body", "PUT", base + "/approvals/1.0.0", admin, ``, 400, "invalid JSON"},
		{"denial of nothing", "PUT", base + "/denials", admin, `{"versions": "  "}`, 400, "a denial names a version"},
		{"denial of garbage", "PUT", base + "/denials", admin, `{"versions": "the bad ones"}`, 400, "is not a version constraint"},
		{"denial of an injected constraint", "PUT", base + "/denials", admin, `{"versions": "1.0.0'; DROP TABLE mirror_decisions; --"}`, 400, "is not a version constraint"},
		{"denial constraint too long", "PUT", base + "/denials", admin, `{"versions": "` + strings.Repeat("1", 500) + `"}`, 400, "version constraint"},
		{"denial as an array", "PUT", base + "/denials", admin, `{"versions": ["1.0.0"]}`, 400, "invalid JSON"},
		{"undeny without versions", "DELETE", base + "/denials", admin, ``, 400, "?versions="},
		{"undeny of nothing stored", "DELETE", base + "/denials?versions=1.0.0", admin, ``, 404, "has no deny decision"},
		{"unapprove of nothing stored", "DELETE", base + "/approvals/1.0.0", admin, ``, 404, "has no approve decision"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body *strings.Reader
			if tc.body != "" || tc.method == "PUT" {
				body = strings.NewReader(tc.body)
			}
			var status int
			var raw []byte
			if body != nil {
				status, raw = apiDo(t, s, tc.method, tc.path, tc.auth, "application/json", body)
			} else {
				status, raw = apiDo(t, s, tc.method, tc.path, tc.auth, "", nil)
			}
			var doc struct{ Errors []string }
			if status != tc.status || json.Unmarshal(raw, &doc) != nil || len(doc.Errors) != 1 || !strings.Contains(doc.Errors[0], tc.want) {
				t.Fatalf("%s %s = %d %s, want %d with %q", tc.method, tc.path, status, raw, tc.status, tc.want)
			}
		})
	}
	for _, host := range []string{"registry.terraform.io", "a b"} {
		if ds, err := s.Index.ListMirrorDecisions(t.Context(), host, "", ""); err != nil || len(ds) != 0 {
			t.Errorf("refused decisions stored for %s: %+v, %v", host, ds, err)
		}
	}
	for _, action := range []string{registry.AuditMirrorApprove, registry.AuditMirrorDeny, registry.AuditMirrorUnapprove, registry.AuditMirrorUndeny} {
		if ev := auditEvents(t, s, action); len(ev) != 0 {
			t.Errorf("refused decisions audited as %s: %+v", action, ev)
		}
	}
}

// TestMirrorRuleMinAgeRefused: a rule's min_age is parsed strictly.
func TestMirrorRuleMinAgeRefused(t *testing.T) {
	s := trovetest.Start(t)
	admin := "Bearer " + s.AdminToken
	for _, age := range []string{"-1d", "soon", "1y", "366d", "7 d", "1h2d", strings.Repeat("9", 40)} {
		body := `{"allow": [{"provider": "*/*", "min_age": "` + age + `"}]}`
		status, raw := apiDo(t, s, "PUT", "/api/v1/mirror/upstreams/mirror.example", admin, "application/json", strings.NewReader(body))
		var doc struct{ Errors []string }
		if status != 400 || json.Unmarshal(raw, &doc) != nil || len(doc.Errors) != 1 || !strings.Contains(doc.Errors[0], "min age") {
			t.Errorf("min_age %q = %d %s, want 400 naming the min age", age, status, raw)
		}
	}
	if _, err := s.Index.GetMirrorUpstream(t.Context(), "mirror.example"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("a refused upstream was stored: %v", err)
	}
}
