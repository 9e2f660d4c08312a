package loadtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
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

func TestBaselineHandlerLocations(t *testing.T) {
	const loc = "https://127.0.0.1:1/v1/files/abc/network-aws-0.2.9.tar.gz?expires=1&signature=x"
	h, err := NewBaselineHandler(BaselineConfig{Locations: map[string]string{"/v1/modules/acme/network/aws/0.2.9/download": loc}})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/modules/acme/network/aws/0.2.9/download", nil))
	if rec.Code != http.StatusNoContent || rec.Header().Get("X-Terraform-Get") != loc || rec.Body.Len() != 0 {
		t.Errorf("location: %d, X-Terraform-Get %q, body %q; want 204 with %q", rec.Code, rec.Header().Get("X-Terraform-Get"), rec.Body, loc)
	}
	if _, err := NewBaselineHandler(BaselineConfig{Locations: map[string]string{"v1/x": loc}}); err == nil {
		t.Error("a relative location path was accepted")
	}
}

func TestBaselineHandlerFamilies(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	h, err := NewBaselineHandler(BaselineConfig{
		Documents: map[string]string{"/v1/providers/acme/small/versions": write("versions.json", `"exact"`)},
		Families: map[string]string{
			"/v1/providers/acme/":       write("acme.json", `"acme"`),
			"/v1/providers/acme/large/": write("large.json", `"large"`),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		status int
		body   string
	}{
		"/v1/providers/acme/small/versions":                    {200, `"exact"`},
		"/v1/providers/acme/p00001/0.1.2/download/linux/arm64": {200, `"acme"`},
		"/v1/providers/acme/large/1.2.3/download/linux/arm64":  {200, `"large"`},
		"/v1/providers/acme":                                   {404, ""},
		"/v1/providers/other/x/versions":                       {404, ""},
	}
	for path, tc := range tests {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != tc.status {
			t.Errorf("%s: status %d, want %d", path, rec.Code, tc.status)
			continue
		}
		if tc.status == 200 && (rec.Body.String() != tc.body || rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("Content-Length") != strconv.Itoa(len(tc.body))) {
			t.Errorf("%s: body %q (%s, %s bytes), want %q as application/json", path, rec.Body, rec.Header().Get("Content-Type"), rec.Header().Get("Content-Length"), tc.body)
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
		"family no slash": {Families: map[string]string{"/v1/providers": doc}},
		"family root":     {Families: map[string]string{"/": doc}},
		"family unclean":  {Families: map[string]string{"/v1/../x/": doc}},
		"family relative": {Families: map[string]string{"v1/x/": doc}},
		"family missing":  {Families: map[string]string{"/v1/x/": filepath.Join(dir, "nope")}},
	}
	for name, cfg := range tests {
		if _, err := NewBaselineHandler(cfg); err == nil {
			t.Errorf("%s: accepted %+v", name, cfg)
		}
	}
}

func TestDownloadURL(t *testing.T) {
	const origin = "https://127.0.0.1:8443"
	tests := map[string]struct {
		doc     string
		want    string
		wantErr bool
	}{
		"absolute": {doc: `{"download_url":"https://127.0.0.1:8443/v1/files/ab/x.zip?expires=1&signature=s"}`,
			want: "https://127.0.0.1:8443/v1/files/ab/x.zip?expires=1&signature=s"},
		"relative":     {doc: `{"download_url":"/v1/files/ab/x.zip?expires=1"}`, want: "https://127.0.0.1:8443/v1/files/ab/x.zip?expires=1"},
		"localhost":    {doc: `{"download_url":"https://localhost:9/x.zip"}`, want: "https://localhost:9/x.zip"},
		"remote host":  {doc: `{"download_url":"https://example.invalid/x.zip"}`, wantErr: true},
		"other scheme": {doc: `{"download_url":"ftp://127.0.0.1/x.zip"}`, wantErr: true},
		"missing":      {doc: `{"os":"linux"}`, wantErr: true},
		"not json":     {doc: `<html>`, wantErr: true},
	}
	for name, tc := range tests {
		u, err := downloadURL([]byte(tc.doc), origin)
		if (err != nil) != tc.wantErr {
			t.Errorf("%s: err = %v, wantErr %v", name, err, tc.wantErr)
			continue
		}
		if err == nil && u.String() != tc.want {
			t.Errorf("%s: got %s, want %s", name, u, tc.want)
		}
	}
}

func TestParseBaselineAddrs(t *testing.T) {
	tests := map[string]struct {
		line      string
		tls, http string
		ok        bool
	}{
		"announced":    {line: "baseline listening https=127.0.0.1:4000 http=127.0.0.1:4001\n", tls: "127.0.0.1:4000", http: "127.0.0.1:4001", ok: true},
		"empty":        {line: "", ok: false},
		"not loopback": {line: "baseline listening https=10.0.0.1:4000 http=127.0.0.1:4001\n", ok: false},
		"garbage":      {line: "panic: boom\n", ok: false},
	}
	for name, tc := range tests {
		a, b, ok := parseBaselineAddrs(tc.line)
		if ok != tc.ok || a != tc.tls || b != tc.http {
			t.Errorf("%s: got %q %q %v, want %q %q %v", name, a, b, ok, tc.tls, tc.http, tc.ok)
		}
	}
}

func TestBaselineHandlerResponses(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "index.json")
	body := `{"schemaVersion":2}`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	const path = "/v2/acme/small/manifests/0.2.9"
	hdr := map[string]string{"Content-Type": "application/vnd.oci.image.index.v1+json", "Docker-Content-Digest": "sha256:" + strings.Repeat("a", 64)}
	h, err := NewBaselineHandler(BaselineConfig{Responses: map[string]BaselineResponse{path: {File: file, Header: hdr}}})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != 200 || rec.Body.String() != body || rec.Header().Get("Content-Length") != strconv.Itoa(len(body)) {
		t.Errorf("answer %d %q, Content-Length %q", rec.Code, rec.Body, rec.Header().Get("Content-Length"))
	}
	for k, v := range hdr {
		if got := rec.Header().Get(k); got != v {
			t.Errorf("%s: %q, want %q", k, got, v)
		}
	}

	for name, cfg := range map[string]BaselineConfig{
		"relative path":     {Responses: map[string]BaselineResponse{"v2/x": {File: file}}},
		"unclean path":      {Responses: map[string]BaselineResponse{"/v2/../x": {File: file}}},
		"missing file":      {Responses: map[string]BaselineResponse{path: {File: filepath.Join(dir, "nope")}}},
		"header injection":  {Responses: map[string]BaselineResponse{path: {File: file, Header: map[string]string{"Link": "x\r\nSet-Cookie: a=b"}}}},
		"empty header name": {Responses: map[string]BaselineResponse{path: {File: file, Header: map[string]string{"": "x"}}}},
	} {
		if _, err := NewBaselineHandler(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
