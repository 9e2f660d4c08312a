package modules_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/client"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/modules"
	protocol "trove.dev/trove/internal/protocol/modules"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/trovetest"
)

// terraformLocation reads a download answer as Terraform does: only the
// X-Terraform-Get header counts, with status 200 or 204.
func terraformLocation(resp *http.Response, _ []byte) (string, error) {
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
		return "", fmt.Errorf("terraform: status %d", resp.StatusCode)
	}
	loc := resp.Header.Get("X-Terraform-Get")
	if loc == "" {
		return "", fmt.Errorf("terraform: no X-Terraform-Get header")
	}
	return loc, nil
}

// tofuLocation reads a download answer as OpenTofu does: with 204 the
// header; with 200 the body must be JSON and its "location" wins.
func tofuLocation(resp *http.Response, body []byte) (string, error) {
	switch resp.StatusCode {
	case http.StatusNoContent:
		if loc := resp.Header.Get("X-Terraform-Get"); loc != "" {
			return loc, nil
		}
		return "", fmt.Errorf("tofu: 204 without X-Terraform-Get")
	case http.StatusOK:
		var doc struct {
			Location string `json:"location"`
		}
		if err := json.Unmarshal(body, &doc); err != nil {
			return "", fmt.Errorf("tofu: 200 with a body that is not JSON: %v", err)
		}
		if doc.Location != "" {
			return doc.Location, nil
		}
		if loc := resp.Header.Get("X-Terraform-Get"); loc != "" {
			return loc, nil
		}
		return "", fmt.Errorf("tofu: no location")
	}
	return "", fmt.Errorf("tofu: status %d", resp.StatusCode)
}

// resolveLocation resolves a location as both clients do: absolute, or
// relative starting with "/", "./" or "../", against the request URL.
func resolveLocation(reqURL *url.URL, loc string) (*url.URL, error) {
	u, err := url.Parse(loc)
	if err != nil {
		return nil, err
	}
	if !u.IsAbs() && !strings.HasPrefix(loc, "/") && !strings.HasPrefix(loc, "./") && !strings.HasPrefix(loc, "../") {
		return nil, fmt.Errorf("relative location %q does not start with /, ./ or ../", loc)
	}
	u = reqURL.ResolveReference(u)
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, fmt.Errorf("location %q is not http(s)", loc)
	}
	return u, nil
}

// archiveType recognises the archive type from the path suffix (or the
// archive query parameter) as go-getter does.
func archiveType(u *url.URL) string {
	if a := u.Query().Get("archive"); a != "" {
		return a
	}
	for _, suffix := range []string{"tar.gz", "tgz", "zip", "tar.bz2", "tar.xz"} {
		if strings.HasSuffix(u.Path, "."+suffix) {
			return suffix
		}
	}
	return ""
}

type env struct {
	srv  *trovetest.Server
	c    *client.Client
	http *http.Client
}

func setup(t *testing.T) *env {
	t.Helper()
	srv := trovetest.Start(t)
	c, err := client.New(srv.URL, srv.AdminToken, client.WithHTTPClient(srv.HTTPClient()))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Index.CreateNamespace(t.Context(), registry.Namespace{Name: "acme", Visibility: registry.VisibilityPublic, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	// A client that never sends credentials and does not follow redirects.
	hc := &http.Client{Transport: srv.HTTPClient().Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &env{srv: srv, c: c, http: hc}
}

// publish packs files and publishes them as ns/name/system version.
func (e *env) publish(t *testing.T, address, version string, files map[string]string) []byte {
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
	parts := strings.Split(address, "/")
	_, err := e.c.PublishModule(t.Context(), client.ModuleUpload{Namespace: parts[0], Name: parts[1], System: parts[2], Version: version, Archive: bytes.NewReader(buf.Bytes())})
	if err != nil {
		t.Fatalf("publishing %s %s: %v", address, version, err)
	}
	return buf.Bytes()
}

func (e *env) get(t *testing.T, rawURL string, header http.Header) (*http.Response, []byte) {
	t.Helper()
	u, err := url.Parse(e.srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if u, err = u.Parse(rawURL); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, u.String(), nil)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func mainTF(output string) map[string]string {
	return map[string]string{"main.tf": fmt.Sprintf("output \"v\" {\n  value = %q\n}\n", output), "README.md": "# Net\n\nA module for " + output + ".\n"}
}

// TestDownloadAcceptedByBothClients is the conformance test of the
// download answer against Terraform's header-only reading and OpenTofu's
// JSON-location reading: both must find the same signed archive URL, whose
// path ends in the archive suffix and which serves the published bytes
// without any credentials.
func TestDownloadAcceptedByBothClients(t *testing.T) {
	e := setup(t)
	archive := e.publish(t, "acme/network/aws", "1.2.0", mainTF("one-two"))

	var disco map[string]any
	resp, body := e.get(t, "/.well-known/terraform.json", nil)
	if err := json.Unmarshal(body, &disco); err != nil || disco[protocol.ServiceID] != protocol.BasePath {
		t.Fatalf("discovery %s: %v, want %s = %s", body, err, protocol.ServiceID, protocol.BasePath)
	}
	base, _ := resp.Request.URL.Parse(protocol.BasePath)

	// The address as a user writes it keeps its case.
	dl, _ := base.Parse("Acme/Network/aws/1.2.0/download")
	resp, body = e.get(t, dl.String(), http.Header{"X-Terraform-Version": {"1.11.0"}})
	if resp.StatusCode != http.StatusNoContent || len(body) != 0 {
		t.Fatalf("download: status %d body %q, want 204 without a body", resp.StatusCode, body)
	}
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("download Cache-Control = %q, want no-store (it carries an expiring URL)", cc)
	}
	// Over HTTP/2, as both clients connect, the same single location
	// (Trove keys the header in lower case there: httpjson.HeaderName).
	h2 := &http.Client{Transport: &http.Transport{TLSClientConfig: e.srv.TLSConfig(t), ForceAttemptHTTP2: true}}
	defer h2.CloseIdleConnections()
	req2, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, dl.String(), nil)
	resp2, err := h2.Do(req2)
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if got := resp2.Header["X-Terraform-Get"]; resp2.ProtoMajor != 2 || resp2.StatusCode != http.StatusNoContent || len(got) != 1 || got[0] == "" {
		t.Errorf("download over HTTP/%d: status %d, X-Terraform-Get %q, want 204 with one location", resp2.ProtoMajor, resp2.StatusCode, got)
	}
	var locations []string
	for name, read := range map[string]func(*http.Response, []byte) (string, error){"terraform": terraformLocation, "opentofu": tofuLocation} {
		loc, err := read(resp, body)
		if err != nil {
			t.Fatalf("%s rejects the download answer: %v", name, err)
		}
		u, err := resolveLocation(dl, loc)
		if err != nil {
			t.Fatalf("%s cannot resolve %q: %v", name, loc, err)
		}
		if typ := archiveType(u); typ != "tar.gz" {
			t.Errorf("%s sees archive type %q in %s, want tar.gz", name, typ, u)
		}
		if !u.IsAbs() || u.Host != strings.TrimPrefix(e.srv.URL, "https://") {
			t.Errorf("%s location %s is not an absolute URL on the public host", name, u)
		}
		locations = append(locations, u.String())
	}
	if locations[0] != locations[1] {
		t.Errorf("the clients read different locations: %q", locations)
	}
	u, _ := url.Parse(locations[0])
	if !strings.HasPrefix(u.Path, signedurl.PathPrefix) || !strings.HasSuffix(u.Path, "/network-aws-1.2.0.tar.gz") {
		t.Errorf("archive URL path %s, want %s<digest>/network-aws-1.2.0.tar.gz", u.Path, signedurl.PathPrefix)
	}
	if _, _, err := e.srv.Signer.Verify(u.Path, u.Query()); err != nil {
		t.Errorf("the archive URL does not verify: %v", err)
	}

	// The archive downloads without any token, HEAD first as Terraform does.
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodHead, u.String(), nil)
	if head, err := e.http.Do(req); err != nil || head.StatusCode != http.StatusOK {
		t.Fatalf("HEAD archive: %v %v", head, err)
	}
	resp, got := e.get(t, u.String(), nil)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, archive) {
		t.Fatalf("archive download: status %d, %d bytes; want 200 and the %d published bytes", resp.StatusCode, len(got), len(archive))
	}
	// A tampered URL does not.
	tampered := *u
	tampered.Path = strings.Replace(u.Path, "1.2.0.tar.gz", "1.2.1.tar.gz", 1)
	if resp, _ := e.get(t, tampered.String(), nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("tampered archive URL: status %d, want 403", resp.StatusCode)
	}
}

func TestVersions(t *testing.T) {
	e := setup(t)
	for _, v := range []string{"1.0.0", "1.10.0", "1.9.0", "2.0.0-beta.1"} {
		e.publish(t, "acme/network/aws", v, mainTF(v))
	}
	e.publish(t, "acme/network/google", "3.0.0", mainTF("g"))

	resp, body := e.get(t, "/v1/modules/acme/network/aws/versions", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("versions: %d %s", resp.StatusCode, body)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		t.Errorf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
	var doc struct {
		Modules []struct {
			Versions []struct {
				Version string `json:"version"`
			} `json:"versions"`
		} `json:"modules"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || len(doc.Modules) != 1 {
		t.Fatalf("versions document %s: %v; want exactly one module", body, err)
	}
	var got []string
	for _, v := range doc.Modules[0].Versions {
		got = append(got, v.Version)
	}
	if want := []string{"2.0.0-beta.1", "1.10.0", "1.9.0", "1.0.0"}; !slices.Equal(got, want) {
		t.Errorf("versions = %q, want %q (newest first)", got, want)
	}

	// Revalidation with the ETag.
	etag := resp.Header.Get("ETag")
	if resp, _ := e.get(t, "/v1/modules/acme/network/aws/versions", http.Header{"If-None-Match": {etag}}); resp.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: status %d, want 304", resp.StatusCode)
	}
	// A publish shows up at once (the cache is invalidated).
	e.publish(t, "acme/network/aws", "2.0.0", mainTF("2"))
	resp, body = e.get(t, "/v1/modules/acme/network/aws/versions", http.Header{"If-None-Match": {etag}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"2.0.0"`) {
		t.Errorf("after a publish: status %d %s, want the new version", resp.StatusCode, body)
	}
	// So does a delete.
	if err := e.c.DeleteModuleVersion(t.Context(), "acme", "network", "aws", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	if _, body = e.get(t, "/v1/modules/ACME/network/aws/versions", nil); strings.Contains(string(body), `"1.0.0"`) {
		t.Errorf("after a delete: %s still lists 1.0.0", body)
	}
	if resp, _ := e.get(t, "/v1/modules/acme/network/aws/1.0.0/download", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("download of a deleted version: status %d, want 404", resp.StatusCode)
	}

	// An unknown namespace is not public: anonymous callers are asked for
	// credentials, as for a private one.
	if resp, _ := e.get(t, "/v1/modules/nope/network/aws/versions", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET of an unknown namespace: status %d, want 401", resp.StatusCode)
	}
	for _, path := range []string{
		"/v1/modules/acme/nope/aws/versions", "/v1/modules/acme/network/azurerm/versions",
		"/v1/modules/acme/network/AWS/versions", "/v1/modules/acme/-bad-/aws/versions", "/v1/modules/acme/network/aws/9.9.9/download",
		"/v1/modules/acme/network/aws/v1.10.0/download", "/v1/modules/acme/network/aws/1.10/download",
	} {
		resp, body := e.get(t, path, nil)
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: status %d %s, want 404", path, resp.StatusCode, body)
		}
	}
}

func TestLatestAndDetails(t *testing.T) {
	e := setup(t)
	e.publish(t, "acme/network/aws", "1.0.0", mainTF("1"))
	e.publish(t, "acme/network/aws", "1.1.0", mainTF("1.1"))
	e.publish(t, "acme/network/aws", "2.0.0-rc.1", mainTF("rc"))

	resp, _ := e.get(t, "/v1/modules/acme/network/aws/download", nil)
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != e.srv.URL+"/v1/modules/acme/network/aws/1.1.0/download" {
		t.Errorf("latest download: %d Location %q, want 302 to the 1.1.0 download (the newest release)", resp.StatusCode, resp.Header.Get("Location"))
	}
	var doc struct {
		ID          string   `json:"id"`
		Version     string   `json:"version"`
		Provider    string   `json:"provider"`
		Description string   `json:"description"`
		Versions    []string `json:"versions"`
		Root        struct {
			Readme  string `json:"readme"`
			Outputs []struct {
				Name string `json:"name"`
			} `json:"outputs"`
		} `json:"root"`
	}
	_, body := e.get(t, "/v1/modules/acme/network/aws", nil)
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.ID != "acme/network/aws/1.1.0" || doc.Provider != "aws" || doc.Description != "A module for 1.1." ||
		len(doc.Versions) != 3 || len(doc.Root.Outputs) != 1 || !strings.HasPrefix(doc.Root.Readme, "# Net") {
		t.Errorf("latest details = %s", body)
	}
	_, body = e.get(t, "/v1/modules/acme/network/aws/2.0.0-rc.1", nil)
	if err := json.Unmarshal(body, &doc); err != nil || doc.Version != "2.0.0-rc.1" {
		t.Errorf("version details = %s (%v)", body, err)
	}
	if resp, _ := e.get(t, "/v1/modules/acme/network/aws/3.0.0", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("details of a missing version: %d, want 404", resp.StatusCode)
	}

	// Listings and search agree with the details on what "latest" is.
	for _, path := range []string{"/v1/modules", "/v1/modules/acme", "/v1/modules/search?q=network"} {
		var l struct {
			Modules []struct {
				ID, Version, Description string
			} `json:"modules"`
		}
		resp, body := e.get(t, path, nil)
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &l) != nil || len(l.Modules) != 1 {
			t.Fatalf("GET %s: %d %s, want one module", path, resp.StatusCode, body)
		}
		if m := l.Modules[0]; m.ID != "acme/network/aws/1.1.0" || m.Version != "1.1.0" || m.Description != "A module for 1.1." {
			t.Errorf("GET %s lists %+v, want the newest release 1.1.0 as in the details", path, m)
		}
	}
	// Without any release, the newest pre-release is the latest everywhere.
	e.publish(t, "acme/beta/aws", "0.1.0-rc.1", mainTF("rc1"))
	e.publish(t, "acme/beta/aws", "0.1.0-rc.2", mainTF("rc2"))
	if resp, _ := e.get(t, "/v1/modules/acme/beta/aws/download", nil); !strings.HasSuffix(resp.Header.Get("Location"), "/v1/modules/acme/beta/aws/0.1.0-rc.2/download") {
		t.Errorf("latest download without a release: Location %q, want the 0.1.0-rc.2 download", resp.Header.Get("Location"))
	}
	_, body = e.get(t, "/v1/modules/search?q=beta", nil)
	if !strings.Contains(string(body), `"id":"acme/beta/aws/0.1.0-rc.2"`) {
		t.Errorf("search without a release: %s, want acme/beta/aws/0.1.0-rc.2", body)
	}
}

func TestListAndSearch(t *testing.T) {
	e := setup(t)
	if err := e.srv.Index.CreateNamespace(t.Context(), registry.Namespace{Name: "other", Visibility: registry.VisibilityPublic, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	e.publish(t, "acme/network/aws", "1.0.0", mainTF("vpc"))
	e.publish(t, "acme/network/google", "1.0.0", mainTF("gcp"))
	e.publish(t, "acme/dns/aws", "0.1.0", mainTF("zones"))
	e.publish(t, "other/network/aws", "2.0.0", mainTF("others"))

	type list struct {
		Meta struct {
			Limit         int    `json:"limit"`
			CurrentOffset int    `json:"current_offset"`
			NextOffset    *int   `json:"next_offset"`
			PrevOffset    *int   `json:"prev_offset"`
			NextURL       string `json:"next_url"`
		} `json:"meta"`
		Modules []struct {
			ID string `json:"id"`
		} `json:"modules"`
	}
	ids := func(l list) []string {
		var out []string
		for _, m := range l.Modules {
			out = append(out, m.ID)
		}
		return out
	}
	tests := []struct {
		path string
		want []string
		next bool
	}{
		{"/v1/modules", []string{"acme/dns/aws/0.1.0", "acme/network/aws/1.0.0", "acme/network/google/1.0.0", "other/network/aws/2.0.0"}, false},
		{"/v1/modules?namespace=acme&provider=aws", []string{"acme/dns/aws/0.1.0", "acme/network/aws/1.0.0"}, false},
		{"/v1/modules/other", []string{"other/network/aws/2.0.0"}, false},
		{"/v1/modules?limit=2", []string{"acme/dns/aws/0.1.0", "acme/network/aws/1.0.0"}, true},
		{"/v1/modules?limit=2&offset=2", []string{"acme/network/google/1.0.0", "other/network/aws/2.0.0"}, false},
		{"/v1/modules/search?q=network&provider=aws", []string{"acme/network/aws/1.0.0", "other/network/aws/2.0.0"}, false},
		{"/v1/modules/search?q=ZONES", []string{"acme/dns/aws/0.1.0"}, false},
		{"/v1/modules/search?q=nothing", nil, false},
		{"/v1/modules?verified=true", nil, false},
	}
	for _, tt := range tests {
		resp, body := e.get(t, tt.path, nil)
		var l list
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &l) != nil {
			t.Errorf("GET %s: %d %s", tt.path, resp.StatusCode, body)
			continue
		}
		if got := ids(l); !slices.Equal(got, tt.want) {
			t.Errorf("GET %s = %q, want %q", tt.path, got, tt.want)
		}
		if (l.Meta.NextOffset != nil) != tt.next {
			t.Errorf("GET %s: next_offset %v, want present=%v", tt.path, l.Meta.NextOffset, tt.next)
		}
	}
	_, body := e.get(t, "/v1/modules?limit=2", nil)
	var l list
	json.Unmarshal(body, &l)
	if l.Meta.Limit != 2 || *l.Meta.NextOffset != 2 || !strings.HasPrefix(l.Meta.NextURL, e.srv.URL+"/v1/modules?") || !strings.Contains(l.Meta.NextURL, "offset=2") {
		t.Errorf("meta = %+v", l.Meta)
	}
	for _, path := range []string{"/v1/modules/search", "/v1/modules?limit=0", "/v1/modules?limit=101", "/v1/modules?offset=-1", "/v1/modules?provider=AWS"} {
		if resp, body := e.get(t, path, nil); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("GET %s: %d %s, want 400", path, resp.StatusCode, body)
		}
	}
}

// TestPathPrefix checks the URLs the Service builds when Trove is reached
// under a path prefix (a public URL with a path, behind a proxy that
// strips it): the archive URL, the latest-version redirect and the
// listing's page links all keep the prefix.
func TestPathPrefix(t *testing.T) {
	e := setup(t)
	for _, name := range []string{"dns", "network", "vpc"} {
		e.publish(t, "acme/"+name+"/aws", "1.0.0", mainTF(name))
	}
	const base = "https://registry.example.test/trove"
	svc := protocol.New(e.srv.Index, e.srv.Signer, mustURL(base+"/"), nil)
	mux := http.NewServeMux()
	svc.Register(mux)
	get := func(path string) *httptest.ResponseRecorder {
		t.Helper()
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}

	rec := get("/v1/modules/acme/network/aws/1.0.0/download")
	if loc := rec.Header().Get("X-Terraform-Get"); rec.Code != http.StatusNoContent || !strings.HasPrefix(loc, base+signedurl.PathPrefix) {
		t.Errorf("download: %d X-Terraform-Get %q, want 204 and a URL under %s", rec.Code, loc, base+signedurl.PathPrefix)
	}
	rec = get("/v1/modules/acme/network/aws/download")
	if want := base + "/v1/modules/acme/network/aws/1.0.0/download"; rec.Code != http.StatusFound || rec.Header().Get("Location") != want {
		t.Errorf("latest download: %d Location %q, want 302 to %s", rec.Code, rec.Header().Get("Location"), want)
	}
	for _, tt := range []struct{ path, next, prev string }{
		{"/v1/modules?limit=1&offset=1", base + "/v1/modules?", base + "/v1/modules?"},
		{"/v1/modules/acme?limit=1&offset=1", base + "/v1/modules/acme?", base + "/v1/modules/acme?"},
		{"/v1/modules/search?q=acme&limit=1&offset=1", base + "/v1/modules/search?", base + "/v1/modules/search?"},
	} {
		rec := get(tt.path)
		var l struct {
			Meta struct {
				NextURL string `json:"next_url"`
				PrevURL string `json:"prev_url"`
			} `json:"meta"`
		}
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &l) != nil {
			t.Fatalf("GET %s: %d %s", tt.path, rec.Code, rec.Body)
		}
		if !strings.HasPrefix(l.Meta.NextURL, tt.next) || !strings.Contains(l.Meta.NextURL, "offset=2") ||
			!strings.HasPrefix(l.Meta.PrevURL, tt.prev) || !strings.Contains(l.Meta.PrevURL, "offset=0") {
			t.Fatalf("GET %s: next_url %q prev_url %q, want them under %s", tt.path, l.Meta.NextURL, l.Meta.PrevURL, base)
		}
		// The page links lead to the neighbouring pages once the prefix is stripped.
		for _, link := range []string{l.Meta.NextURL, l.Meta.PrevURL} {
			if rec := get(strings.TrimPrefix(link, base)); rec.Code != http.StatusOK {
				t.Errorf("GET %s (from %s): %d", link, tt.path, rec.Code)
			}
		}
	}
}

// TestCacheServesWithoutIndex shows that repeated protocol requests are
// answered from memory: they keep working once the index is closed.
func TestCacheServesWithoutIndex(t *testing.T) {
	e := setup(t)
	e.publish(t, "acme/network/aws", "1.0.0", mainTF("1"))
	svc := protocol.New(e.srv.Index, e.srv.Signer, mustURL(e.srv.URL), nil, protocol.WithMaxAge(time.Hour))
	mux := http.NewServeMux()
	svc.Register(mux)
	for _, path := range []string{"/v1/modules/acme/network/aws/versions", "/v1/modules/acme/network/aws/1.0.0/download"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code >= 300 {
			t.Fatalf("GET %s: %d", path, rec.Code)
		}
	}
	if svc.CacheEntries() != 1 {
		t.Errorf("cache entries = %d, want 1", svc.CacheEntries())
	}
	e.srv.Index.Close()
	for _, path := range []string{"/v1/modules/acme/network/aws/versions", "/v1/modules/acme/network/aws/1.0.0/download"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code >= 300 {
			t.Errorf("GET %s with the index closed: %d %s, want it served from the cache", path, rec.Code, rec.Body)
		}
	}
	svc.Invalidate("acme", "network", "aws")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/modules/acme/network/aws/versions", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Errorf("after Invalidate with the index closed: %d, want 503", rec.Code)
	}
}

// TestPrivateNamespace checks the access rules: a private namespace's
// modules need a token that may read it, are indistinguishable from
// unknown ones for other tokens, get short-lived archive URLs, and are
// left out of listings for callers who may not read them.
func TestPrivateNamespace(t *testing.T) {
	e := setup(t)
	ctx := t.Context()
	if err := e.srv.Index.CreateNamespace(ctx, registry.Namespace{Name: "secret", Visibility: registry.VisibilityPrivate, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	e.publish(t, "acme/network/aws", "1.0.0", mainTF("public"))
	e.publish(t, "secret/vault/aws", "1.0.0", mainTF("private"))
	reader := "Bearer " + mintToken(t, e.srv, "secret", registry.ScopeRead)
	outsider := "Bearer " + mintToken(t, e.srv, "acme", registry.ScopeRead)

	versions := "/v1/modules/secret/vault/aws/versions"
	if resp, body := e.get(t, versions, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous versions of a private module: %d %s, want 401", resp.StatusCode, body)
	}
	if resp, _ := e.get(t, "/v1/modules/secret/nope/aws/versions", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous versions of an unknown module in a private namespace: %d, want 401 as for an existing one", resp.StatusCode)
	}
	_, unknownBody := e.get(t, "/v1/modules/secret/nope/aws/versions", http.Header{"Authorization": {outsider}})
	resp, body := e.get(t, versions, http.Header{"Authorization": {outsider}})
	if resp.StatusCode != http.StatusNotFound || !bytes.Equal(body, bytes.Replace(unknownBody, []byte("nope"), []byte("vault"), 1)) {
		t.Errorf("versions with a token of another namespace: %d %s, want the 404 of an unknown module (%s)", resp.StatusCode, body, unknownBody)
	}
	if resp, _ := e.get(t, versions, http.Header{"Authorization": {"Bearer trove_not_a_real_token"}}); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("versions with an invalid token: %d, want 401", resp.StatusCode)
	}
	resp, body = e.get(t, versions, http.Header{"Authorization": {reader}})
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "private, no-cache" {
		t.Errorf("versions with a reader token: %d %q %s, want 200 marked private", resp.StatusCode, resp.Header.Get("Cache-Control"), body)
	}

	// Archive URLs of private namespaces carry the shorter lifetime.
	expiry := func(path, auth string) time.Duration {
		t.Helper()
		h := http.Header{}
		if auth != "" {
			h.Set("Authorization", auth)
		}
		resp, _ := e.get(t, path, h)
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		u, _ := url.Parse(resp.Header.Get("X-Terraform-Get"))
		var exp int64
		fmt.Sscan(u.Query().Get("expires"), &exp)
		return time.Until(time.Unix(exp, 0))
	}
	public, private := expiry("/v1/modules/acme/network/aws/1.0.0/download", ""), expiry("/v1/modules/secret/vault/aws/1.0.0/download", reader)
	if private > 5*time.Minute || public <= 5*time.Minute {
		t.Errorf("archive URL lifetimes: public %s, private %s; want the private one within the private TTL (5m) and the public one longer", public, private)
	}
	if resp, _ := e.get(t, "/v1/modules/secret/vault/aws/1.0.0/download", http.Header{"Authorization": {outsider}}); resp.StatusCode != http.StatusNotFound {
		t.Errorf("download with a token of another namespace: %d, want 404", resp.StatusCode)
	}

	// Listings show what the caller may read.
	ids := func(auth, path string) []string {
		t.Helper()
		h := http.Header{}
		if auth != "" {
			h.Set("Authorization", auth)
		}
		resp, body := e.get(t, path, h)
		var l struct {
			Modules []struct {
				ID string `json:"id"`
			} `json:"modules"`
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &l) != nil {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		var out []string
		for _, m := range l.Modules {
			out = append(out, m.ID)
		}
		return out
	}
	for _, tt := range []struct {
		auth, path string
		want       []string
	}{
		{"", "/v1/modules", []string{"acme/network/aws/1.0.0"}},
		{outsider, "/v1/modules/search?q=a", []string{"acme/network/aws/1.0.0"}}, // "vault" matches too, but is private
		{reader, "/v1/modules", []string{"acme/network/aws/1.0.0", "secret/vault/aws/1.0.0"}},
		{reader, "/v1/modules/secret", []string{"secret/vault/aws/1.0.0"}},
		{outsider, "/v1/modules/secret", nil},
		{reader, "/v1/modules?limit=1&offset=1", []string{"secret/vault/aws/1.0.0"}},
	} {
		if got := ids(tt.auth, tt.path); !slices.Equal(got, tt.want) {
			t.Errorf("GET %s as %q = %q, want %q", tt.path, tt.auth, got, tt.want)
		}
	}
	if resp, _ := e.get(t, "/v1/modules/secret", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous listing of a private namespace: %d, want 401", resp.StatusCode)
	}
}

// TestListingRejectsInvalidTokens checks that listings and search answer
// 401 to a token that is not valid, as the other routes do, also when
// they would list nothing and so never ask about a namespace.
func TestListingRejectsInvalidTokens(t *testing.T) {
	e := setup(t)
	if err := e.srv.Index.CreateNamespace(t.Context(), registry.Namespace{Name: "secret", Visibility: registry.VisibilityPrivate, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	valid := "Bearer " + mintToken(t, e.srv, "acme", registry.ScopeRead)
	bad := map[string]string{
		"unknown":   "Bearer trove_not_a_real_token",
		"malformed": "Basic dXNlcjpwYXNz",
		"expired":   "Bearer " + mintToken(t, e.srv, "acme", registry.ScopeRead, func(tk *registry.Token) { tk.ExpiresAt = time.Now().Add(-time.Minute) }),
		"revoked":   "Bearer " + mintToken(t, e.srv, "acme", registry.ScopeRead, func(tk *registry.Token) { tk.RevokedAt = time.Now().Add(-time.Minute) }),
	}
	// No module is published: nothing is listed, whoever asks.
	paths := []string{
		"/v1/modules", "/v1/modules?verified=true", "/v1/modules?namespace=acme", "/v1/modules?namespace=secret",
		"/v1/modules/acme", "/v1/modules/secret", "/v1/modules/nope", "/v1/modules/-bad-",
		"/v1/modules/search?q=network", "/v1/modules/search?q=network&namespace=acme", "/v1/modules/search",
	}
	for _, path := range paths {
		for name, header := range bad {
			resp, body := e.get(t, path, http.Header{"Authorization": {header}})
			var doc struct{ Errors []string }
			if resp.StatusCode != http.StatusUnauthorized || json.Unmarshal(body, &doc) != nil || len(doc.Errors) == 0 {
				t.Errorf("GET %s with the %s token: %d %s, want 401 with {\"errors\":[...]}", path, name, resp.StatusCode, body)
			}
		}
	}
	// A valid token still lists what it may read.
	e.publish(t, "acme/network/aws", "1.0.0", mainTF("vpc"))
	for _, path := range []string{"/v1/modules", "/v1/modules/acme", "/v1/modules/search?q=network"} {
		if resp, body := e.get(t, path, http.Header{"Authorization": {valid}}); resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "acme/network/aws/1.0.0") {
			t.Errorf("GET %s with a valid token: %d %s, want 200 listing acme/network/aws", path, resp.StatusCode, body)
		}
	}
}

// mintToken stores a token with scope on ns, adjusted by the optional
// mutate functions, and returns its secret.
func mintToken(t *testing.T, s *trovetest.Server, ns string, scope registry.Scope, mutate ...func(*registry.Token)) string {
	t.Helper()
	secret, hash, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := auth.NewID()
	tok := registry.Token{ID: id, Hash: hash, Scopes: []registry.Scope{scope}, CreatedAt: time.Now()}
	if ns != "" {
		tok.Namespaces = []string{ns}
	}
	for _, m := range mutate {
		m(&tok)
	}
	if err := s.Index.CreateToken(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	return secret
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}
