package api_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/trovetest"
	"trove.dev/trove/internal/trovetest/testarchive"
)

// createVersion stores a provider version without documentation.
func createVersion(t *testing.T, s *trovetest.Server, ns, typ, version string) {
	t.Helper()
	key := registry.SigningKey{Namespace: ns, KeyID: "FEDCBA9876543210", Fingerprint: strings.Repeat("E", 40), ASCIIArmor: "x", CreatedAt: time.Now()}
	err := s.Index.CreateProviderVersion(context.Background(), registry.ProviderVersion{
		Namespace: ns, Type: typ, Version: version, Protocols: []string{"5.0"},
		SHASumsDigest: stored(t, s, "a"), SHASumsSignatureDigest: stored(t, s, "b"), SigningKey: key,
		PublishedAt: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
}

// docsCall sends method to the docs route of ns/typ version with body
// and the Authorization header auth, and returns the status and body.
func docsCall(t *testing.T, s *trovetest.Server, method, ns, typ, version, auth string, body []byte) (int, []byte, http.Header) {
	t.Helper()
	path := strings.NewReplacer("{namespace}", ns, "{type}", typ, "{version}", version).Replace(apispec.RouteProviderDocs)
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, _ := http.NewRequest(method, s.URL+path, r)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data, resp.Header
}

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestProviderDocsUpload(t *testing.T) {
	s, tokens := setup(t)
	ctx := context.Background()
	createVersion(t, s, "acme", "widget", "1.0.0")
	createVersion(t, s, "open", "widget", "1.0.0")
	archive := testarchive.TarGz(t, map[string]string{
		"docs/index.md":            "---\npage_title: Acme\n---\n# Acme\n",
		"docs/resources/widget.md": "---\nsubcategory: Compute\n---\n# widget\n",
		"docs/images/logo.png":     "png",
	})

	// noDocs checks that nothing was stored for acme/widget 1.0.0.
	noDocs := func(t *testing.T, what string) {
		t.Helper()
		v, err := s.Index.GetProviderVersion(ctx, "acme", "widget", "1.0.0")
		if err != nil {
			t.Fatal(err)
		}
		if v.DocsDigest != "" {
			t.Errorf("%s stored docs %s", what, v.DocsDigest)
		}
		if _, err := s.Blobs.Stat(ctx, digest(archive)); !registry.IsKind(err, registry.NotFound) {
			t.Errorf("%s stored the archive blob (Stat: %v)", what, err)
		}
	}

	t.Run("Rights", func(t *testing.T) {
		for _, c := range []struct {
			principal, ns string
			want          int
		}{
			{none, "acme", 401},
			{none, "open", 401},
			{acmeRead, "acme", 403},
			{globalRead, "acme", 403},
			{otherAdmin, "acme", 404},
			{otherAdmin, "open", 403},
			{userReader, "acme", 403},
			{userOther, "acme", 404},
		} {
			status, body, _ := docsCall(t, s, "PUT", c.ns, "widget", "1.0.0", tokens[c.principal], archive)
			if status != c.want {
				t.Errorf("PUT docs of %s as %s = %d %s, want %d", c.ns, c.principal, status, body, c.want)
			}
		}
		noDocs(t, "refused uploads")
	})

	t.Run("BadArchives", func(t *testing.T) {
		var page strings.Builder // text that compresses as little as real text
		for i := 0; page.Len() < 2<<20; i++ {
			page.WriteString(digest([]byte{byte(i), byte(i >> 8), byte(i >> 16)}))
		}
		big := testarchive.TarGz(t, map[string]string{"docs/index.md": page.String()})
		for name, c := range map[string]struct {
			body []byte
			want int
			msg  string
		}{
			"empty":        {[]byte{}, 400, "is empty"},
			"random bytes": {[]byte("not an archive at all"), 400, "neither a .tar.gz nor a .zip"},
			"no pages":     {testarchive.TarGz(t, map[string]string{"README.md": "x"}), 400, "holds no documentation pages"},
			"bad slug":     {testarchive.TarGz(t, map[string]string{"docs/resources/Widget.md": "x"}), 400, `docs/resources/Widget.md`},
			"traversal":    {testarchive.TarGz(t, map[string]string{"../docs/index.md": "x"}), 400, `escapes the archive`},
			"huge page":    {big, 413, "larger than the limit of 1 MiB"},
			"truncated":    {archive[:len(archive)/2], 400, "not a valid .tar.gz"},
		} {
			status, body, _ := docsCall(t, s, "PUT", "acme", "widget", "1.0.0", tokens[acmePublish], c.body)
			if status != c.want || !strings.Contains(string(body), c.msg) {
				t.Errorf("%s: PUT = %d %s, want %d with %q", name, status, body, c.want, c.msg)
			}
		}
		noDocs(t, "bad archives")
		// Over the size limit: refused while it streams.
		over := make([]byte, apispec.MaxProviderDocsBytes+10)
		copy(over, archive)
		status, body, _ := docsCall(t, s, "PUT", "acme", "widget", "1.0.0", tokens[acmePublish], over)
		if status != 413 || !strings.Contains(string(body), "larger than the limit") {
			t.Errorf("PUT of %d bytes = %d %s, want 413", len(over), status, body)
		}
		noDocs(t, "an archive over the limit")
	})

	t.Run("UnknownVersion", func(t *testing.T) {
		status, body, _ := docsCall(t, s, "PUT", "acme", "widget", "9.9.9", tokens[acmePublish], archive)
		if status != 404 || !strings.Contains(string(body), "publish the version first") {
			t.Errorf("PUT docs of a missing version = %d %s, want 404", status, body)
		}
	})

	t.Run("CreatedIdempotentConflict", func(t *testing.T) {
		status, body, _ := docsCall(t, s, "PUT", "acme", "widget", "1.0.0", tokens[acmePublish], archive)
		var res apispec.ProviderDocsResult
		if status != 201 || json.Unmarshal(body, &res) != nil || !res.Created || res.PageCount != 2 || res.Digest != digest(archive) ||
			res.Size != int64(len(archive)) || res.Pages[0].Slug != "index" || res.Pages[1].Subcategory != "Compute" {
			t.Fatalf("PUT docs = %d %s", status, body)
		}
		status, body, _ = docsCall(t, s, "PUT", "acme", "widget", "1.0.0", tokens[acmePublish], archive)
		if status != 200 || json.Unmarshal(body, &res) != nil || res.Created || res.PageCount != 2 || res.Digest != digest(archive) {
			t.Errorf("PUT of the same docs again = %d %s, want 200 created false", status, body)
		}
		other := testarchive.TarGz(t, map[string]string{"docs/index.md": "# other\n"})
		status, body, _ = docsCall(t, s, "PUT", "acme", "widget", "1.0.0", tokens[acmePublish], other)
		if status != 409 || !strings.Contains(string(body), "immutable") {
			t.Errorf("PUT of other docs = %d %s, want 409", status, body)
		}
		if _, err := s.Blobs.Stat(ctx, digest(other)); !registry.IsKind(err, registry.NotFound) {
			t.Errorf("the refused archive was stored (Stat: %v)", err)
		}
		events, err := s.Index.ListAudit(ctx, registry.AuditFilter{Action: registry.AuditProviderDocs})
		if err != nil || len(events) != 1 || events[0].Target != "acme/widget 1.0.0" {
			t.Errorf("audit events = %+v, %v; want one provider.docs event", events, err)
		}
		// The version names its documentation.
		var v apispec.ProviderVersion
		if status, raw := apiCall(t, s, s.URL, "GET", "/api/v1/namespaces/acme/providers/widget/versions/1.0.0", strings.TrimPrefix(tokens[acmeRead], "Bearer "), "", &v); status != 200 || v.DocsDigest != digest(archive) || v.DocsSize != int64(len(archive)) {
			t.Errorf("GET version = %d %s", status, raw)
		}
	})

	t.Run("Download", func(t *testing.T) {
		status, body, h := docsCall(t, s, "GET", "acme", "widget", "1.0.0", tokens[acmeRead], nil)
		if status != 200 || !bytes.Equal(body, archive) || h.Get("Content-Type") != "application/gzip" ||
			!strings.Contains(h.Get("Content-Disposition"), "terraform-provider-widget_1.0.0_docs.tar.gz") {
			t.Errorf("GET docs = %d %v (%d bytes)", status, h, len(body))
		}
		for _, c := range []struct {
			principal, ns, version string
			want                   int
		}{
			{none, "acme", "1.0.0", 404},       // private: no token, as if missing
			{otherAdmin, "acme", "1.0.0", 404}, // may not read acme
			{none, "open", "1.0.0", 404},       // public, readable, but without docs
			{acmeRead, "acme", "2.0.0", 404},
		} {
			if status, body, _ := docsCall(t, s, "GET", c.ns, "widget", c.version, tokens[c.principal], nil); status != c.want {
				t.Errorf("GET docs of %s %s as %s = %d %s, want %d", c.ns, c.version, c.principal, status, body, c.want)
			}
		}
		if status, body, _ := docsCall(t, s, "PUT", "open", "widget", "1.0.0", tokens[globalAdmin], archive); status != 201 {
			t.Fatalf("PUT docs of open = %d %s", status, body)
		}
		if status, body, _ := docsCall(t, s, "GET", "open", "widget", "1.0.0", "", nil); status != 200 || !bytes.Equal(body, archive) {
			t.Errorf("anonymous GET docs of a public namespace = %d (%d bytes), want 200 with the archive", status, len(body))
		}
		// Ranges as on every download: a JSON 416, units compared
		// without regard to case, other units ignored.
		path := strings.NewReplacer("{namespace}", "open", "{type}", "widget", "{version}", "1.0.0").Replace(apispec.RouteProviderDocs)
		for rg, want := range map[string]int{"bytes=999999-": 416, "bytes=abc": 416, "Bytes=0-1": 206, "items=0-1": 200} {
			req, _ := http.NewRequest(http.MethodGet, s.URL+path, nil)
			req.Header.Set("Range", rg)
			resp, err := s.HTTPClient().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var doc struct{ Errors []string }
			switch {
			case resp.StatusCode != want:
				t.Errorf("Range %s: %d %q, want %d", rg, resp.StatusCode, body, want)
			case want == 416 && (json.Unmarshal(body, &doc) != nil || len(doc.Errors) != 1):
				t.Errorf("Range %s: 416 with %q, want a JSON error", rg, body)
			case want == 206 && !bytes.Equal(body, archive[:2]), want == 200 && !bytes.Equal(body, archive):
				t.Errorf("Range %s: %d bytes, want the range's", rg, len(body))
			}
		}
	})
}
