package api_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/trovetest"
)

// moduleArchive packs files into a module .tar.gz.
func moduleArchive(t *testing.T, files map[string]string) []byte {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if _, err := modules.PackArchive(&buf, dir); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var networkModule = map[string]string{
	"main.tf":   "variable \"cidr\" {\n  type        = string\n  description = \"CIDR block.\"\n}\n\noutput \"cidr\" {\n  value = var.cidr\n}\n",
	"README.md": "# Network\n\nBuilds a network.\n",
}

// auditEvents returns the audit events of one action, read through the API
// as a global admin.
func auditEvents(t *testing.T, s *trovetest.Server, action string) []apispec.AuditEvent {
	t.Helper()
	status, raw := apiDo(t, s, "GET", "/api/v1/audit?action="+action, "Bearer "+s.AdminToken, "", nil)
	var list apispec.AuditList
	if status != 200 || json.Unmarshal(raw, &list) != nil {
		t.Fatalf("audit?action=%s = %d %s", action, status, raw)
	}
	return list.Events
}

// actorOf names the holder of a "Bearer <secret>" service token as the
// audit log does.
func actorOf(t *testing.T, s *trovetest.Server, bearer string) string {
	t.Helper()
	tok, err := s.Index.TokenByHash(t.Context(), auth.HashToken(strings.TrimPrefix(bearer, "Bearer ")))
	if err != nil {
		t.Fatal(err)
	}
	return "token:" + tok.ID
}

// checkModuleAudit checks that exactly one event of action was recorded
// for the module version target, by actor, from the loopback address.
func checkModuleAudit(t *testing.T, s *trovetest.Server, action, actor, target, digest string) {
	t.Helper()
	events := auditEvents(t, s, action)
	if len(events) != 1 {
		t.Fatalf("audit has %d %s events, want 1: %+v", len(events), action, events)
	}
	ev := events[0]
	if ev.Action != action || ev.Actor != actor || ev.Target != target || ev.Namespace != "acme" ||
		ev.SourceAddr != "127.0.0.1" || !strings.Contains(ev.Details, "sha256 "+digest) {
		t.Errorf("%s event = %+v, want actor %s, target %q, namespace acme, source 127.0.0.1 and the archive digest %s",
			action, ev, actor, target, digest)
	}
}

// apiDo sends one request and returns the status and body.
func apiDo(t *testing.T, s *trovetest.Server, method, path, auth, contentType string, body io.Reader) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}

func TestModuleAuthorizationMatrix(t *testing.T) {
	s, tokens := setup(t)
	garbage := func() (io.Reader, string) { return strings.NewReader("not an archive"), apispec.ModuleArchiveTarGz }
	cases := []struct {
		name string
		call call
		want map[string]int
	}{
		{"list modules", call{"GET", "/api/v1/namespaces/acme/modules", nil},
			map[string]int{acmeRead: 200, acmePublish: 200, acmeAdmin: 200, otherAdmin: 404, globalRead: 200, globalAdmin: 200}},
		{"get module", call{"GET", "/api/v1/namespaces/acme/modules/network/aws", nil},
			map[string]int{acmeRead: 404, acmePublish: 404, acmeAdmin: 404, otherAdmin: 404, globalRead: 404, globalAdmin: 404}},
		{"get module version", call{"GET", "/api/v1/namespaces/acme/modules/network/aws/versions/1.0.0", nil},
			map[string]int{acmeRead: 404, acmePublish: 404, acmeAdmin: 404, otherAdmin: 404, globalRead: 404, globalAdmin: 404}},
		{"publish module (garbage)", call{"POST", "/api/v1/namespaces/acme/modules/network/aws/versions/1.0.0", garbage},
			map[string]int{acmeRead: 403, acmePublish: 400, acmeAdmin: 400, otherAdmin: 404, globalRead: 403, globalAdmin: 400}},
		{"delete module version (unconfirmed)", call{"DELETE", "/api/v1/namespaces/acme/modules/network/aws/versions/1.0.0", nil},
			map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 400, otherAdmin: 404, globalRead: 403, globalAdmin: 400}},
		{"delete module version (confirmed, missing)", call{"DELETE", "/api/v1/namespaces/acme/modules/network/aws/versions/1.0.0?confirm=acme/network/aws/1.0.0", nil},
			map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 404, otherAdmin: 404, globalRead: 403, globalAdmin: 404}},
	}
	for _, c := range cases {
		for _, p := range principals {
			want, valid := c.want[p]
			if !valid {
				want = unauthorized
			}
			t.Run(c.name+"/"+p, func(t *testing.T) {
				var body io.Reader
				ctype := ""
				if c.call.body != nil {
					body, ctype = c.call.body()
				}
				status, raw := apiDo(t, s, c.call.method, c.call.path, tokens[p], ctype, body)
				if status != want {
					t.Fatalf("%s %s as %s = %d %s, want %d", c.call.method, c.call.path, p, status, raw, want)
				}
				if status >= 400 {
					var e struct{ Errors []string }
					if json.Unmarshal(raw, &e) != nil || len(e.Errors) == 0 || e.Errors[0] == "" {
						t.Fatalf("error body %q is not {\"errors\": [...]}", raw)
					}
				}
			})
		}
	}
}

func TestModuleLifecycle(t *testing.T) {
	s, tokens := setup(t)
	pub, admin := tokens[acmePublish], tokens[acmeAdmin]
	archive := moduleArchive(t, networkModule)
	path := "/api/v1/namespaces/acme/modules/Network/aws/versions/1.0.0"

	status, raw := apiDo(t, s, "POST", path+"?origin=git+tag+v1.0.0", pub, apispec.ModuleArchiveTarGz, bytes.NewReader(archive))
	var res apispec.ModulePublishResult
	if status != 201 || json.Unmarshal(raw, &res) != nil || !res.Created {
		t.Fatalf("publish = %d %s", status, raw)
	}
	v := res.Version
	if v.Name != "network" || v.ArchiveFormat != "tar.gz" || v.ArchiveSize != int64(len(archive)) || v.Origin != "git tag v1.0.0" ||
		v.Description != "Builds a network." || len(v.Metadata) == 0 || res.Warnings == nil {
		t.Errorf("publish result = %s", raw)
	}
	checkModuleAudit(t, s, registry.AuditModulePublish, actorOf(t, s, pub), "acme/network/aws 1.0.0", v.ArchiveDigest)

	// The same bytes as multipart: an idempotent retry.
	var mp bytes.Buffer
	mw := multipart.NewWriter(&mp)
	fw, _ := mw.CreateFormFile(apispec.PublishFileField, "network.tar.gz")
	fw.Write(archive)
	mw.Close()
	status, raw = apiDo(t, s, "POST", path, pub, mw.FormDataContentType(), &mp)
	if status != 200 || json.Unmarshal(raw, &res) != nil || res.Created {
		t.Errorf("re-publish of the same bytes = %d %s, want 200 created=false", status, raw)
	}
	// Other bytes: 409.
	other := moduleArchive(t, map[string]string{"main.tf": "# other\n"})
	if status, raw = apiDo(t, s, "POST", path, pub, "application/octet-stream", bytes.NewReader(other)); status != 409 || !strings.Contains(string(raw), "immutable") {
		t.Errorf("re-publish with other bytes = %d %s, want 409", status, raw)
	}
	// Two archive parts: refused.
	mp.Reset()
	mw = multipart.NewWriter(&mp)
	for range 2 {
		fw, _ := mw.CreateFormFile(apispec.PublishFileField, "network.tar.gz")
		fw.Write(other)
	}
	mw.Close()
	if status, raw = apiDo(t, s, "POST", "/api/v1/namespaces/acme/modules/network/aws/versions/1.0.1", pub, mw.FormDataContentType(), &mp); status != 400 {
		t.Errorf("publish with two parts = %d %s, want 400", status, raw)
	}
	for name, tt := range map[string]struct {
		path, ctype string
		body        []byte
		want        int
	}{
		"invalid version":          {"/api/v1/namespaces/acme/modules/network/aws/versions/v1.0.2", apispec.ModuleArchiveTarGz, other, 400},
		"upper-case system":        {"/api/v1/namespaces/acme/modules/network/AWS/versions/1.0.2", apispec.ModuleArchiveTarGz, other, 400},
		"unsupported content type": {"/api/v1/namespaces/acme/modules/network/aws/versions/1.0.2", "text/plain", other, 400},
		"bad origin":               {"/api/v1/namespaces/acme/modules/network/aws/versions/1.0.2?origin=a%0Ab", apispec.ModuleArchiveTarGz, other, 400},
	} {
		if status, raw := apiDo(t, s, "POST", tt.path, pub, tt.ctype, bytes.NewReader(tt.body)); status != tt.want {
			t.Errorf("%s: publish = %d %s, want %d", name, status, raw, tt.want)
		}
	}

	// Reads.
	status, raw = apiDo(t, s, "GET", "/api/v1/namespaces/acme/modules?system=aws&q=NET", tokens[acmeRead], "", nil)
	var list apispec.ModuleList
	if status != 200 || json.Unmarshal(raw, &list) != nil || list.Total != 1 || list.Modules[0].LatestVersion != "1.0.0" || list.Limit != apispec.DefaultModuleLimit {
		t.Errorf("list = %d %s", status, raw)
	}
	status, raw = apiDo(t, s, "GET", "/api/v1/namespaces/acme/modules/network/aws", tokens[acmeRead], "", nil)
	var detail apispec.ModuleDetail
	if status != 200 || json.Unmarshal(raw, &detail) != nil || len(detail.Versions) != 1 || detail.Versions[0].Metadata != nil {
		t.Errorf("get module = %d %s, want one version without metadata", status, raw)
	}
	status, raw = apiDo(t, s, "GET", path, tokens[acmeRead], "", nil)
	var got apispec.ModuleVersion
	if status != 200 || json.Unmarshal(raw, &got) != nil {
		t.Fatalf("get version = %d %s", status, raw)
	}
	var md modules.Metadata
	if err := json.Unmarshal(got.Metadata, &md); err != nil || len(md.Root.Inputs) != 1 || md.Root.Inputs[0].Description != "CIDR block." {
		t.Errorf("metadata = %s (%v)", got.Metadata, err)
	}

	// The namespace cannot be deleted while it holds the module.
	if status, raw = apiDo(t, s, "DELETE", "/api/v1/namespaces/acme", tokens[globalAdmin], "", nil); status != 409 || !strings.Contains(string(raw), "module") {
		t.Errorf("namespace delete = %d %s, want 409 naming modules", status, raw)
	}

	// Delete: refused without the right confirmation, done with it.
	for _, q := range []string{"", "?confirm=yes", "?confirm=acme/network/aws/1.0.1", "?confirm=acme/network/aws"} {
		if status, raw = apiDo(t, s, "DELETE", path+q, admin, "", nil); status != 400 || !strings.Contains(string(raw), "confirm=acme/network/aws/1.0.0") {
			t.Errorf("delete with %q = %d %s, want 400 telling the confirmation", q, status, raw)
		}
	}
	if events := auditEvents(t, s, registry.AuditModuleDelete); len(events) != 0 {
		t.Errorf("refused deletes recorded %d %s events: %+v", len(events), registry.AuditModuleDelete, events)
	}
	if status, raw = apiDo(t, s, "DELETE", path+"?confirm=ACME/Network/aws/1.0.0", admin, "", nil); status != 204 {
		t.Fatalf("confirmed delete = %d %s", status, raw)
	}
	checkModuleAudit(t, s, registry.AuditModuleDelete, actorOf(t, s, admin), "acme/network/aws 1.0.0", v.ArchiveDigest)
	// The idempotent re-publish, the conflict and the refused publishes
	// recorded nothing: still the one publish.
	checkModuleAudit(t, s, registry.AuditModulePublish, actorOf(t, s, pub), "acme/network/aws 1.0.0", v.ArchiveDigest)
	if status, _ = apiDo(t, s, "GET", path, admin, "", nil); status != 404 {
		t.Errorf("get after delete = %d, want 404", status)
	}
	if status, _ = apiDo(t, s, "DELETE", "/api/v1/namespaces/acme", tokens[globalAdmin], "", nil); status != 204 {
		t.Errorf("namespace delete once empty = %d, want 204", status)
	}
}

// TestModulePublishTooLarge sends an archive over the server's archive
// limit, as a raw body and as a multipart part: 413 with a JSON error, and
// nothing stored or left staged.
func TestModulePublishTooLarge(t *testing.T) {
	const limit = 4 << 10
	s := trovetest.Start(t, trovetest.Options{MaxZipBytes: limit})
	if err := s.Index.CreateNamespace(t.Context(), registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	pub := "Bearer " + mint(t, s, "acme", registry.ScopePublish, nil)
	// Random bytes do not compress: the archive exceeds the limit.
	noise := make([]byte, 2*limit)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(r.Uint32())
	}
	archive := moduleArchive(t, map[string]string{"main.tf": networkModule["main.tf"], "data.bin": string(noise)})
	if len(archive) <= limit {
		t.Fatalf("test archive of %d bytes is within the %d-byte limit", len(archive), limit)
	}
	multipartBody := func() (io.Reader, string) {
		var mp bytes.Buffer
		mw := multipart.NewWriter(&mp)
		fw, _ := mw.CreateFormFile(apispec.PublishFileField, "network.tar.gz")
		fw.Write(archive)
		mw.Close()
		return &mp, mw.FormDataContentType()
	}
	path := "/api/v1/namespaces/acme/modules/network/aws/versions/1.0.0"
	for name, body := range map[string]func() (io.Reader, string){
		"raw body":  func() (io.Reader, string) { return bytes.NewReader(archive), apispec.ModuleArchiveTarGz },
		"multipart": multipartBody,
	} {
		b, ctype := body()
		status, raw := apiDo(t, s, "POST", path, pub, ctype, b)
		var e struct{ Errors []string }
		if status != http.StatusRequestEntityTooLarge || json.Unmarshal(raw, &e) != nil || len(e.Errors) == 0 ||
			!strings.Contains(e.Errors[0], "limit") {
			t.Errorf("%s: publish of a %d-byte archive = %d %s, want 413 with {\"errors\":[...]} naming the limit", name, len(archive), status, raw)
		}
	}

	if status, raw := apiDo(t, s, "GET", path, pub, "", nil); status != http.StatusNotFound {
		t.Errorf("get after the refused publishes = %d %s, want 404", status, raw)
	}
	if _, total, err := s.Index.ListModules(t.Context(), registry.ModuleFilter{}); err != nil || total != 0 {
		t.Errorf("ListModules after the refused publishes: %d modules (%v), want none", total, err)
	}
	blobs := 0
	if err := s.Blobs.Walk(t.Context(), func(string, int64) error { blobs++; return nil }); err != nil || blobs != 0 {
		t.Errorf("%d blobs stored by the refused publishes (%v), want none", blobs, err)
	}
	staged, _ := filepath.Glob(filepath.Join(s.DataDir, "tmp", "module-*"))
	if len(staged) != 0 {
		t.Errorf("staging area keeps %q", staged)
	}
}

// TestModulePublishBrokenBody sends module publishes whose bodies break
// off or are malformed on the wire: each answers 400 with a JSON error
// (the client's fault), not 500, and stores nothing.
func TestModulePublishBrokenBody(t *testing.T) {
	s := trovetest.Start(t)
	if err := s.Index.CreateNamespace(t.Context(), registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	pub := "Bearer " + mint(t, s, "acme", registry.ScopePublish, nil)
	head := "POST /api/v1/namespaces/acme/modules/network/aws/versions/1.0.0 HTTP/1.1\r\nHost: localhost\r\n" +
		"Authorization: " + pub + "\r\nContent-Type: " + apispec.ModuleArchiveTarGz + "\r\n"
	for name, req := range map[string]string{
		"malformed chunk":                  head + "Transfer-Encoding: chunked\r\n\r\nzz\r\n",
		"body shorter than Content-Length": head + "Content-Length: 1000\r\n\r\n" + "\x1f\x8b" + strings.Repeat("x", 100),
	} {
		t.Run(name, func(t *testing.T) {
			conn, err := tls.Dial("tcp", strings.TrimPrefix(s.URL, "https://"), s.TLSConfig(t))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := io.WriteString(conn, req); err != nil {
				t.Fatal(err)
			}
			if name == "body shorter than Content-Length" {
				conn.CloseWrite() // the rest of the body never comes
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"errors"`) {
				t.Errorf("answer = %d %s, want 400 with a JSON error", resp.StatusCode, body)
			}
		})
	}
	if _, err := s.Index.GetModuleVersion(t.Context(), "acme", "network", "aws", "1.0.0"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("a module version was stored from a broken body: %v", err)
	}
}
