package loadtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBaselineHandler(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cfg := BaselineConfig{
		Documents: map[string]string{
			"/v1/providers/acme/small/versions": write("versions.json", `{"versions":[]}`),
		},
		ArchivePath: "/v1/files/abc/terraform-provider-small_1.0.0_linux_amd64.zip",
		ArchiveFile: write("archive.zip", "0123456789"),
	}
	h, err := NewBaselineHandler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	tests := map[string]struct {
		path, rangeHdr string
		status         int
		body, ctype    string
	}{
		"document":           {path: "/v1/providers/acme/small/versions", status: 200, body: `{"versions":[]}`, ctype: "application/json"},
		"archive with query": {path: cfg.ArchivePath + "?expires=1&signature=x", status: 200, body: "0123456789", ctype: "application/zip"},
		"archive range":      {path: cfg.ArchivePath, rangeHdr: "bytes=2-4", status: 206, body: "234", ctype: "application/zip"},
		"unknown":            {path: "/v1/providers/acme/large/versions", status: 404},
	}
	for name, tc := range tests {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+tc.path, nil)
		if tc.rangeHdr != "" {
			req.Header.Set("Range", tc.rangeHdr)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d", name, resp.StatusCode, tc.status)
			continue
		}
		if tc.status == 404 {
			continue
		}
		if string(body) != tc.body {
			t.Errorf("%s: body %q, want %q", name, body, tc.body)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tc.ctype) {
			t.Errorf("%s: Content-Type %q, want %q", name, ct, tc.ctype)
		}
	}
}

func TestBaselineHandlerRejectsBadConfig(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "doc.json")
	if err := os.WriteFile(doc, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := map[string]BaselineConfig{
		"relative path":   {Documents: map[string]string{"v1/x": doc}},
		"unclean path":    {Documents: map[string]string{"/v1/../x": doc}},
		"missing doc":     {Documents: map[string]string{"/x": filepath.Join(dir, "nope")}},
		"missing archive": {ArchivePath: "/a.zip", ArchiveFile: filepath.Join(dir, "nope.zip")},
	}
	for name, cfg := range tests {
		if _, err := NewBaselineHandler(cfg); err == nil {
			t.Errorf("%s: accepted %+v", name, cfg)
		}
	}
}
