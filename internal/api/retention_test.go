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

// TestRetentionAPI sets, reads and removes a namespace's retention rule:
// the rights each needs, refused rules that change nothing, the audit
// log, and a dry-run collection that reports the versions it expires.
func TestRetentionAPI(t *testing.T) {
	s, tokens := setup(t)
	ctx := t.Context()
	const path = "/api/v1/namespaces/acme/retention"
	admin, reader, pub := tokens[acmeAdmin], tokens[acmeRead], tokens[acmePublish]
	put := func(auth, body string) (int, []byte) {
		return apiDo(t, s, "PUT", path, auth, "application/json", strings.NewReader(body))
	}
	status, raw := apiDo(t, s, "GET", path, reader, "", nil)
	wantErrors(t, "GET without a rule", status, raw, 404)
	for _, c := range []struct {
		name, auth, body string
		status           int
	}{
		{"no token", "", `{"keep_last":2}`, 401},
		{"read token", reader, `{"keep_last":2}`, 403},
		{"publish token", pub, `{"keep_last":2}`, 403},
		{"another namespace's admin", tokens[otherAdmin], `{"keep_last":2}`, 404},
		{"keeps nothing by count or age", admin, `{"pin":["1.0.0"]}`, 400},
		{"empty", admin, `{}`, 400},
		{"negative count", admin, `{"keep_last":-1}`, 400},
		{"count too large", admin, `{"keep_last":99999999}`, 400},
		{"age under a day", admin, `{"keep_within":"1h"}`, 400},
		{"age not a duration", admin, `{"keep_within":"forever"}`, 400},
		{"age in negative days", admin, `{"keep_within":"-5d"}`, 400},
		{"bad pin", admin, `{"keep_last":1,"pin":["~> banana"]}`, 400},
		{"pin with a control character", admin, `{"keep_last":1,"pin":["1.0.0\u0000"]}`, 400},
		{"pin too long", admin, `{"keep_last":1,"pin":["` + strings.Repeat("1", 200) + `"]}`, 400},
		{"unknown field", admin, `{"keep_last":1,"keep_forever":true}`, 400},
		{"not JSON", admin, `keep 2`, 400},
	} {
		status, raw := put(c.auth, c.body)
		wantErrors(t, c.name, status, raw, c.status)
	}
	if _, err := s.Index.GetRetentionRule(ctx, "acme"); !registry.IsKind(err, registry.NotFound) {
		t.Fatalf("a refused PUT stored a rule: %v", err)
	}
	status, raw = put(admin, `{"keep_last":1,"keep_within":"30d","pin":[">= 0.1.0, < 0.2.0"]}`)
	var rule apispec.RetentionRule
	if status != 200 || json.Unmarshal(raw, &rule) != nil || rule.KeepLast != 1 || rule.KeepWithin != "30d" || len(rule.Pin) != 1 || rule.UpdatedBy != actorOf(t, s, admin) {
		t.Fatalf("PUT = %d %s", status, raw)
	}
	if status, raw := apiDo(t, s, "GET", path, reader, "", nil); status != 200 || !bytes.Contains(raw, []byte(`"keep_within":"30d"`)) {
		t.Errorf("GET = %d %s", status, raw)
	}
	if events := auditEvents(t, s, "retention.put"); len(events) != 1 || events[0].Namespace != "acme" {
		t.Errorf("audit retention.put = %+v", events)
	}

	// Three module versions published long ago: the rule expires all but
	// the highest and newest (1.2.0) and the pinned 0.1.0.
	for i, v := range []string{"0.1.0", "1.0.0", "1.2.0"} {
		if err := s.Index.CreateModuleVersion(ctx, registry.ModuleVersion{Namespace: "acme", Name: "net", System: "aws", Version: v,
			ArchiveDigest: stored(t, s, string(rune('a'+i))), ArchiveFormat: "tar.gz", ArchiveSize: 1,
			PublishedAt: time.Now().Add(-time.Duration(100-i) * 24 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	status, raw = apiDo(t, s, "POST", "/api/v1/gc", tokens[globalAdmin], "application/json", strings.NewReader(`{"dry_run":true}`))
	var rep apispec.GCReport
	if status != 200 || json.Unmarshal(raw, &rep) != nil || len(rep.ExpiredVersions) != 1 || rep.ExpiredVersions[0].Version != "1.0.0" ||
		rep.ExpiredVersions[0].Kind != "module" || rep.ExpiredVersions[0].System != "aws" {
		t.Fatalf("dry run = %d %s, want 1.0.0 expired", status, raw)
	}
	if vs, err := s.Index.ListModuleVersions(ctx, "acme", "net", "aws"); err != nil || len(vs) != 3 {
		t.Errorf("the dry run deleted versions: %d left, %v", len(vs), err)
	}
	status, raw = apiDo(t, s, "POST", "/api/v1/gc", tokens[globalAdmin], "application/json", strings.NewReader(`{}`))
	if status != 200 || json.Unmarshal(raw, &rep) != nil || len(rep.ExpiredVersions) != 1 {
		t.Fatalf("collection = %d %s", status, raw)
	}
	if _, err := s.Index.GetModuleVersion(ctx, "acme", "net", "aws", "1.0.0"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("1.0.0 after the collection: %v, want deleted", err)
	}
	if events := auditEvents(t, s, "module.delete"); len(events) != 1 || events[0].Target != "acme/net/aws 1.0.0" || !strings.Contains(events[0].Details, "retention") {
		t.Errorf("audit module.delete = %+v, want the retention deletion", events)
	}

	if status, raw := apiDo(t, s, "DELETE", path, pub, "", nil); status != 403 {
		t.Errorf("DELETE with a publish token = %d %s", status, raw)
	}
	if status, raw := apiDo(t, s, "DELETE", path, admin, "", nil); status != 204 {
		t.Errorf("DELETE = %d %s", status, raw)
	}
	status, raw = apiDo(t, s, "DELETE", path, admin, "", nil)
	wantErrors(t, "DELETE again", status, raw, 404)
	if events := auditEvents(t, s, "retention.delete"); len(events) != 1 {
		t.Errorf("audit retention.delete = %+v", events)
	}
}
