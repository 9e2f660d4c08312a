package oci_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/protocol/oci"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/respcache"
	"trove.dev/trove/internal/trovetest"
	"trove.dev/trove/internal/trovetest/testarchive"
)

type env struct {
	srv     *trovetest.Server
	token   string // may read acme
	zips    map[string]string
	modArch []byte
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// newEnv starts a real Trove with a public namespace open and a private
// namespace acme, each holding the provider widget 1.0.0+b.1 (linux_amd64,
// darwin_arm64) and the module net/aws 1.0.0.
func newEnv(t *testing.T) *env {
	t.Helper()
	srv := trovetest.Start(t)
	ctx := t.Context()
	e := &env{srv: srv, zips: map[string]string{}}
	for _, ns := range []registry.Namespace{
		{Name: "open", Visibility: registry.VisibilityPublic, CreatedAt: time.Now()},
		{Name: "acme", CreatedAt: time.Now()},
	} {
		if err := srv.Index.CreateNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
		v := registry.ProviderVersion{
			Namespace: ns.Name, Type: "widget", Version: "1.0.0+b.1", Protocols: []string{"6.0"}, PublishedAt: time.Now(),
			SHASumsDigest: srv.Blob(t, "sums "+ns.Name), SHASumsSignatureDigest: srv.Blob(t, "sig "+ns.Name),
			SigningKey: registry.SigningKey{Namespace: ns.Name, KeyID: "0123456789ABCDEF", Fingerprint: strings.Repeat("AB", 20), ASCIIArmor: "x", CreatedAt: time.Now()},
		}
		for _, p := range []string{"linux_amd64", "darwin_arm64"} {
			os, arch, _ := strings.Cut(p, "_")
			content := "PK zip of " + ns.Name + " " + p
			d := srv.Blob(t, content)
			e.zips[ns.Name+"/"+p] = d
			v.Platforms = append(v.Platforms, registry.Platform{OS: os, Arch: arch, Filename: "terraform-provider-widget_1.0.0+b.1_" + p + ".zip", SHA256: d, Size: int64(len(content))})
		}
		if err := srv.Index.CreateProviderVersion(ctx, v); err != nil {
			t.Fatal(err)
		}
		arch := testarchive.TarGz(t, map[string]string{"main.tf": "# " + ns.Name + "\n", "modules/x/main.tf": "#\n"})
		e.modArch = arch
		ad := srv.Blob(t, string(arch))
		if err := srv.Index.CreateModuleVersion(ctx, registry.ModuleVersion{Namespace: ns.Name, Name: "net", System: "aws", Version: "1.0.0",
			ArchiveDigest: ad, ArchiveFormat: "tar.gz", ArchiveSize: int64(len(arch)), PublishedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	secret, hash, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Index.CreateToken(ctx, registry.Token{ID: "tok_reader", Hash: hash, Namespaces: []string{"acme"},
		Scopes: []registry.Scope{registry.ScopeRead}, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	e.token = secret
	return e
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (e *env) do(t *testing.T, method, path string, hdr ...string) resp {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Add(hdr[i], hdr[i+1])
	}
	r, err := e.srv.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return resp{r.StatusCode, r.Header, b}
}

func (e *env) getJSON(t *testing.T, path string, v any, hdr ...string) resp {
	t.Helper()
	r := e.do(t, http.MethodGet, path, hdr...)
	if r.status != http.StatusOK {
		t.Fatalf("GET %s = %d %s", path, r.status, r.body)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return r
}

func errCode(t *testing.T, r resp) string {
	t.Helper()
	var body struct {
		Errors []struct{ Code, Message string } `json:"errors"`
	}
	if err := json.Unmarshal(r.body, &body); err != nil || len(body.Errors) != 1 {
		t.Fatalf("error body %q is not an OCI error body", r.body)
	}
	return body.Errors[0].Code
}

// TestProviderPull walks what OpenTofu's oci_mirror source does: tags,
// index by tag, manifest of the platform, the layer blob, which is the
// stored zip byte for byte (its digest the zh: hash).
func TestProviderPull(t *testing.T) {
	e := newEnv(t)
	if r := e.do(t, http.MethodGet, "/v2/"); r.status != http.StatusOK {
		t.Fatalf("GET /v2/ = %d %s", r.status, r.body)
	}
	var tags struct {
		Name string
		Tags []string
	}
	e.getJSON(t, "/v2/open/widget/tags/list", &tags)
	if tags.Name != "open/widget" || len(tags.Tags) != 1 || tags.Tags[0] != "1.0.0_b.1" {
		t.Fatalf("tags = %+v", tags)
	}
	var idx oci.ImageIndex
	r := e.getJSON(t, "/v2/open/widget/manifests/1.0.0_b.1", &idx, "Accept", oci.MediaTypeIndex+", "+oci.MediaTypeManifest)
	if r.header.Get("Content-Type") != oci.MediaTypeIndex || idx.ArtifactType != oci.ArtifactProvider {
		t.Fatalf("index: %s %+v", r.header.Get("Content-Type"), idx)
	}
	indexDigest := r.header.Get("Docker-Content-Digest")
	if indexDigest != "sha256:"+sum(r.body) {
		t.Fatalf("Docker-Content-Digest %s is not the body's", indexDigest)
	}
	// By digest: the same bytes; HEAD: the same headers, no body.
	if r2 := e.do(t, http.MethodGet, "/v2/open/widget/manifests/"+indexDigest); !bytes.Equal(r2.body, r.body) {
		t.Fatalf("manifest by digest differs from by tag")
	}
	if h := e.do(t, http.MethodHead, "/v2/open/widget/manifests/1.0.0_b.1"); h.status != 200 || len(h.body) != 0 || h.header.Get("Content-Length") != r.header.Get("Content-Length") {
		t.Fatalf("HEAD manifest = %d %q %v", h.status, h.body, h.header)
	}
	for _, d := range idx.Manifests {
		var m oci.Manifest
		mr := e.getJSON(t, "/v2/open/widget/manifests/"+d.Digest, &m)
		if "sha256:"+sum(mr.body) != d.Digest || int64(len(mr.body)) != d.Size {
			t.Fatalf("manifest %s: digest or size mismatch", d.Digest)
		}
		layer := m.Layers[0]
		want := e.zips["open/"+d.Platform.OS+"_"+d.Platform.Architecture]
		if layer.MediaType != "archive/zip" || layer.Digest != "sha256:"+want {
			t.Fatalf("layer = %+v, want the zip %s", layer, want)
		}
		br := e.do(t, http.MethodGet, "/v2/open/widget/blobs/"+layer.Digest)
		if br.status != 200 || "sha256:"+sum(br.body) != layer.Digest || int64(len(br.body)) != layer.Size {
			t.Fatalf("blob %s = %d %q", layer.Digest, br.status, br.body)
		}
		// Range
		rr := e.do(t, http.MethodGet, "/v2/open/widget/blobs/"+layer.Digest, "Range", "bytes=3-5")
		if rr.status != http.StatusPartialContent || string(rr.body) != string(br.body[3:6]) {
			t.Fatalf("range = %d %q", rr.status, rr.body)
		}
	}
	// Referrers: the SHA256SUMS and its signature, and the key that
	// signed it.
	var refs oci.ImageIndex
	e.getJSON(t, "/v2/open/widget/referrers/"+indexDigest, &refs)
	if len(refs.Manifests) != 2 || refs.Manifests[0].ArtifactType != oci.ArtifactSignature || refs.Manifests[1].ArtifactType != oci.ArtifactSigningKey {
		t.Fatalf("referrers = %+v", refs)
	}
	var keyArtifact oci.Manifest
	e.getJSON(t, "/v2/open/widget/manifests/"+refs.Manifests[1].Digest, &keyArtifact)
	if keyArtifact.Subject == nil || keyArtifact.Subject.Digest != indexDigest || len(keyArtifact.Layers) != 1 ||
		keyArtifact.Layers[0].MediaType != oci.MediaTypePGPKeys {
		t.Fatalf("signing key manifest = %+v", keyArtifact)
	}
	if b := e.do(t, http.MethodGet, "/v2/open/widget/blobs/"+keyArtifact.Layers[0].Digest); b.status != http.StatusOK ||
		len(b.body) == 0 || "sha256:"+sum(b.body) != keyArtifact.Layers[0].Digest {
		t.Fatalf("signing key blob = %d %q", b.status, b.body)
	}
	var keyRefs oci.ImageIndex
	e.getJSON(t, "/v2/open/widget/referrers/"+indexDigest+"?artifactType="+oci.ArtifactSigningKey, &keyRefs)
	if len(keyRefs.Manifests) != 1 || keyRefs.Manifests[0].Digest != refs.Manifests[1].Digest {
		t.Fatalf("referrers filtered to the signing key = %+v", keyRefs)
	}
	var sig oci.Manifest
	e.getJSON(t, "/v2/open/widget/manifests/"+refs.Manifests[0].Digest, &sig)
	if sig.Subject == nil || sig.Subject.Digest != indexDigest || len(sig.Layers) != 2 {
		t.Fatalf("signature manifest = %+v", sig)
	}
	if b := e.do(t, http.MethodGet, "/v2/open/widget/blobs/"+sig.Layers[0].Digest); string(b.body) != "sums open" {
		t.Fatalf("SHA256SUMS blob = %q", b.body)
	}
	e.getJSON(t, "/v2/open/widget/referrers/"+indexDigest+"?artifactType=application/x-other", &refs)
	if len(refs.Manifests) != 0 {
		t.Fatalf("filtered referrers = %+v", refs)
	}
}

// TestModulePull: the module's manifest, its deterministic zip (the
// same digest on every render, after an invalidation too).
func TestModulePull(t *testing.T) {
	e := newEnv(t)
	var tags struct{ Tags []string }
	e.getJSON(t, "/v2/open/modules/net/aws/tags/list", &tags)
	if strings.Join(tags.Tags, ",") != "1.0.0,latest" {
		t.Fatalf("tags = %v", tags.Tags)
	}
	var m oci.Manifest
	r := e.getJSON(t, "/v2/open/modules/net/aws/manifests/1.0.0", &m)
	if m.ArtifactType != oci.ArtifactModule || len(m.Layers) != 1 || m.Layers[0].MediaType != "archive/zip" {
		t.Fatalf("manifest = %+v", m)
	}
	b := e.do(t, http.MethodGet, "/v2/open/modules/net/aws/blobs/"+m.Layers[0].Digest)
	if b.status != 200 || "sha256:"+sum(b.body) != m.Layers[0].Digest {
		t.Fatalf("module zip = %d", b.status)
	}
	zr, err := zip.NewReader(bytes.NewReader(b.body), int64(len(b.body)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != "main.tf,modules/x/main.tf" {
		t.Fatalf("zip entries = %v", names)
	}
	// A new render (another process would pack again) gives the same digest.
	e2 := e.do(t, http.MethodGet, "/v2/open/modules/net/aws/manifests/latest")
	if !bytes.Equal(e2.body, r.body) {
		t.Fatal("latest is not 1.0.0")
	}
}

func TestAccess(t *testing.T) {
	e := newEnv(t)
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("anyone:"+e.token))
	cases := []struct {
		path, auth string
		want       int
	}{
		{"/v2/acme/widget/tags/list", "", 401},
		{"/v2/acme/modules/net/aws/tags/list", "", 401},
		{"/v2/nosuch/widget/tags/list", "", 401},
		{"/v2/acme/widget/tags/list", "Bearer " + e.token, 200},
		{"/v2/acme/widget/tags/list", basic, 200},
		{"/v2/acme/modules/net/aws/tags/list", basic, 200},
		{"/v2/acme/widget/tags/list", "Bearer trove_wrong", 401},
		{"/v2/acme/widget/tags/list", "Basic !!!", 401},
		{"/v2/open/widget/tags/list", "", 200},
	}
	for _, c := range cases {
		var r resp
		if c.auth == "" {
			r = e.do(t, http.MethodGet, c.path)
		} else {
			r = e.do(t, http.MethodGet, c.path, "Authorization", c.auth)
		}
		if r.status != c.want {
			t.Errorf("GET %s (%.12s) = %d %s, want %d", c.path, c.auth, r.status, r.body, c.want)
			continue
		}
		if r.status == 401 {
			errCode(t, r)
			ch := r.header.Get("WWW-Authenticate")
			if !strings.HasPrefix(ch, `Bearer realm="`+e.srv.URL+`/v2/token",service="`+e.srv.Host+`"`) || !strings.Contains(ch, `scope="repository:`) {
				t.Errorf("GET %s: challenge %q", c.path, ch)
			}
		}
		if bytes.Contains(r.body, []byte(e.token)) {
			t.Errorf("GET %s echoes the token", c.path)
		}
	}
	// The token flow: Basic with a Trove token as the password gives a
	// bearer token that reads the private repository.
	if r := e.do(t, http.MethodGet, "/v2/token?service=x&scope=repository:acme/widget:pull"); r.status != 401 {
		t.Errorf("anonymous token request = %d", r.status)
	}
	if r := e.do(t, http.MethodGet, "/v2/token", "Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("u:trove_nope"))); r.status != 401 {
		t.Errorf("token request with a bad password = %d", r.status)
	}
	var tok struct{ Token string }
	e.getJSON(t, "/v2/token?service="+e.srv.Host+"&scope=repository:acme/widget:pull", &tok, "Authorization", basic)
	if r := e.do(t, http.MethodGet, "/v2/acme/widget/tags/list", "Authorization", "Bearer "+tok.Token); r.status != 200 {
		t.Errorf("with the bearer token: %d %s", r.status, r.body)
	}
	// Answers of a private repository are not for shared caches.
	for _, p := range []string{"/v2/acme/widget/tags/list", "/v2/acme/widget/manifests/1.0.0_b.1", "/v2/acme/widget/blobs/sha256:" + e.zips["acme/linux_amd64"]} {
		r := e.do(t, http.MethodGet, p, "Authorization", basic)
		if r.status != 200 || r.header.Get("Cache-Control") != "private, no-cache" {
			t.Errorf("GET %s = %d, Cache-Control %q, want 200 and private, no-cache", p, r.status, r.header.Get("Cache-Control"))
		}
	}
	if r := e.do(t, http.MethodGet, "/v2/open/widget/blobs/sha256:"+e.zips["open/linux_amd64"]); !strings.Contains(r.header.Get("Cache-Control"), "immutable") {
		t.Errorf("public blob Cache-Control = %q", r.header.Get("Cache-Control"))
	}
	// A private blob is not reachable through a public repository.
	d := e.zips["acme/linux_amd64"]
	if r := e.do(t, http.MethodGet, "/v2/open/widget/blobs/sha256:"+d); r.status != 404 || errCode(t, r) != "BLOB_UNKNOWN" {
		t.Errorf("private blob through a public repository = %d %s", r.status, r.body)
	}
}

// TestHostile: bad digests, traversal, huge n, unknown Accept types,
// writes to the read-only surface (nothing stored).
func TestHostile(t *testing.T) {
	e := newEnv(t)
	cases := []struct {
		method, path string
		hdr          []string
		status       int
		code         string
	}{
		{"GET", "/v2/open/widget/manifests/sha256:zz", nil, 400, "DIGEST_INVALID"},
		{"GET", "/v2/open/widget/blobs/sha256:" + strings.Repeat("A", 64), nil, 400, "DIGEST_INVALID"},
		{"GET", "/v2/open/widget/blobs/md5:abc", nil, 400, "DIGEST_INVALID"},
		{"GET", "/v2/open/widget/blobs/sha256:" + strings.Repeat("0", 64), nil, 404, "BLOB_UNKNOWN"},
		{"GET", "/v2/open/widget/manifests/9.9.9", nil, 404, "MANIFEST_UNKNOWN"},
		{"GET", "/v2/open/widget/manifests/" + strings.Repeat("x", 200), nil, 404, "MANIFEST_UNKNOWN"},
		{"GET", "/v2/open/widget/manifests/..%2F..%2Fetc", nil, 400, ""},
		{"GET", "/v2/open/../acme/widget/tags/list", nil, 0, ""},
		{"GET", "/v2/open/%2e%2e/acme/widget/tags/list", nil, 400, ""},
		{"GET", "/v2/open/modules/net/../../acme/widget/tags/list", nil, 0, ""},
		{"GET", "/v2/" + strings.Repeat("a/", 200) + "tags/list", nil, 404, "NAME_UNKNOWN"},
		{"GET", "/v2/open/widget/extra/tags/list", nil, 404, "NAME_UNKNOWN"},
		{"GET", "/v2/Open/Widget/tags/list", nil, 404, "NAME_UNKNOWN"},
		{"GET", "/v2/open/nosuch/tags/list", nil, 404, "NAME_UNKNOWN"},
		{"GET", "/v2/open/widget/tags/list?n=-1", nil, 400, "PAGINATION_NUMBER_INVALID"},
		{"GET", "/v2/open/widget/tags/list?n=x", nil, 400, "PAGINATION_NUMBER_INVALID"},
		{"GET", "/v2/open/widget/manifests/1.0.0_b.1", []string{"Accept", "application/x-nonsense"}, 404, "MANIFEST_UNKNOWN"},
		{"GET", "/v2/open/widget/referrers/sha256:bad", nil, 400, "DIGEST_INVALID"},
		{"GET", "/v2/open/modules/blobs/aws/tags/list", nil, 404, "NAME_UNKNOWN"},
		{"GET", "/v2/open/modules/net/aws/blobs/x/y", nil, 404, "NAME_UNKNOWN"},
		{"GET", "/v2/open/widget/nonsense/x", nil, 404, "NAME_UNKNOWN"},
		{"PUT", "/v2/open/widget/manifests/2.0.0", nil, 405, "UNSUPPORTED"},
		{"POST", "/v2/open/widget/blobs/uploads/?digest=sha256:" + strings.Repeat("0", 64), nil, 405, "UNSUPPORTED"},
		{"POST", "/v2/open/widget/blobs/uploads/", nil, 405, "UNSUPPORTED"},
		{"DELETE", "/v2/open/widget/manifests/1.0.0_b.1", nil, 405, "UNSUPPORTED"},
		{"PATCH", "/v2/acme/widget/blobs/uploads/x", nil, 405, "UNSUPPORTED"},
	}
	for _, c := range cases {
		r := e.do(t, c.method, c.path, c.hdr...)
		if c.status == 0 { // cleaned by the client or the mux: anything but a private answer
			if r.status == 200 {
				t.Errorf("%s %s = 200 %s", c.method, c.path, r.body)
			}
			continue
		}
		if r.status != c.status {
			t.Errorf("%s %s = %d %s, want %d", c.method, c.path, r.status, r.body, c.status)
			continue
		}
		if c.code != "" {
			if got := errCode(t, r); got != c.code {
				t.Errorf("%s %s: code %s, want %s", c.method, c.path, got, c.code)
			}
		}
	}
	// Huge n is capped; the 1.0.0 tag is still the only one and nothing
	// was stored by the writes.
	var tags struct{ Tags []string }
	e.getJSON(t, "/v2/open/widget/tags/list?n=99999999999", &tags)
	if len(tags.Tags) != 1 {
		t.Errorf("tags = %v", tags.Tags)
	}
	if _, err := e.srv.Index.GetProviderVersion(t.Context(), "open", "widget", "2.0.0"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("a version was stored: %v", err)
	}
}

func TestTagsPagination(t *testing.T) {
	e := newEnv(t)
	var page struct{ Tags []string }
	r := e.getJSON(t, "/v2/open/modules/net/aws/tags/list?n=1", &page)
	if len(page.Tags) != 1 || page.Tags[0] != "1.0.0" {
		t.Fatalf("page 1 = %v", page.Tags)
	}
	link := r.header.Get("Link")
	if !strings.Contains(link, "last=1.0.0") || !strings.Contains(link, `rel="next"`) {
		t.Fatalf("Link = %q", link)
	}
	r = e.getJSON(t, "/v2/open/modules/net/aws/tags/list?n=1&last=1.0.0", &page)
	if len(page.Tags) != 1 || page.Tags[0] != "latest" || r.header.Get("Link") != "" {
		t.Fatalf("page 2 = %v, Link %q", page.Tags, r.header.Get("Link"))
	}
	e.getJSON(t, "/v2/open/modules/net/aws/tags/list?n=0", &page)
	if len(page.Tags) != 0 {
		t.Fatalf("n=0 = %v", page.Tags)
	}
}

// TestFirstTagsPageOfALargeRepository: above MaxTags tags, the tags/list
// answer without a query is the first page with its Link, the same as
// asking for n=MaxTags, and the Link leads to the rest.
func TestFirstTagsPageOfALargeRepository(t *testing.T) {
	e := newEnv(t)
	arch := e.srv.Blob(t, string(e.modArch))
	for i := range oci.MaxTags + 1 {
		if err := e.srv.Index.CreateModuleVersion(t.Context(), registry.ModuleVersion{Namespace: "open", Name: "big", System: "aws",
			Version: fmt.Sprintf("1.%d.0", i), ArchiveDigest: arch, ArchiveFormat: "tar.gz", ArchiveSize: int64(len(e.modArch)), PublishedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	const list = "/v2/open/modules/big/aws/tags/list"
	var first, asked, rest struct{ Tags []string }
	for range 2 { // rendered, then cached
		r := e.getJSON(t, list, &first)
		if len(first.Tags) != oci.MaxTags {
			t.Fatalf("first page: %d tags, want %d", len(first.Tags), oci.MaxTags)
		}
		want := "<" + list + "?n=1000&last=" + first.Tags[len(first.Tags)-1] + `>; rel="next"`
		if got := r.header.Get("Link"); got != want {
			t.Fatalf("first page's Link %q, want %q", got, want)
		}
		a := e.getJSON(t, list+"?n=1000", &asked)
		if !bytes.Equal(r.body, a.body) || a.header.Get("Link") != want {
			t.Fatalf("n=1000 answered %d tags and Link %q, not the first page", len(asked.Tags), a.header.Get("Link"))
		}
		// The rest: the last version's tag and the module's "latest".
		next := e.getJSON(t, strings.TrimSuffix(strings.TrimPrefix(want, "<"), `>; rel="next"`), &rest)
		if len(rest.Tags) != 2 || next.header.Get("Link") != "" || !slices.IsSorted(append(first.Tags, rest.Tags...)) {
			t.Fatalf("second page %v, Link %q", rest.Tags, next.header.Get("Link"))
		}
		head := e.do(t, http.MethodHead, list)
		if head.status != http.StatusOK || len(head.body) != 0 || head.header.Get("Link") != want || head.header.Get("Content-Length") != strconv.Itoa(len(r.body)) {
			t.Fatalf("HEAD: %d, %d bytes, Link %q, Content-Length %q", head.status, len(head.body), head.header.Get("Link"), head.header.Get("Content-Length"))
		}
		// Its tag covers the Link too: the same first page with another
		// Link (the repository grown or shrunk) is another answer.
		plain := e.do(t, http.MethodGet, list, "Accept-Encoding", "identity")
		if tag := plain.header.Get("Etag"); tag != respcache.ETagOf(plain.body, []byte{0}, []byte(want)) {
			t.Fatalf("ETag %s is not the page's and its Link's", tag)
		}
		same := e.do(t, http.MethodGet, list, "If-None-Match", r.header.Get("Etag"))
		if same.status != http.StatusNotModified || same.header.Get("Link") != want {
			t.Fatalf("If-None-Match %s: %d, Link %q", r.header.Get("Etag"), same.status, same.header.Get("Link"))
		}
	}
}

// TestInvalidatedOnDelete: a version deleted through the API is gone
// from the tags and manifests at once (the API's change drops the cached
// repository on this replica before it answers).
func TestInvalidatedOnDelete(t *testing.T) {
	e := newEnv(t)
	var tags struct{ Tags []string }
	e.getJSON(t, "/v2/open/modules/net/aws/tags/list", &tags)
	e.getJSON(t, "/v2/open/widget/tags/list", &tags)
	c, err := client.New(e.srv.URL, e.srv.AdminToken, client.WithHTTPClient(e.srv.HTTPClient()))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteProviderVersion(t.Context(), "open", "widget", "1.0.0+b.1"); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteModuleVersion(t.Context(), "open", "net", "aws", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/v2/open/widget/tags/list", "/v2/open/modules/net/aws/tags/list", "/v2/open/widget/manifests/1.0.0_b.1"} {
		if r := e.do(t, http.MethodGet, p); r.status != 404 || errCode(t, r) != "NAME_UNKNOWN" {
			t.Errorf("GET %s after the delete = %d %s", p, r.status, r.body)
		}
	}
}

// TestModuleZipDeterministic: the same files published as a .tar.gz and
// as a .zip (other times, other order) give the same layer, byte for byte.
func TestModuleZipDeterministic(t *testing.T) {
	e := newEnv(t)
	older := time.Now().Add(-time.Hour)
	archive := testarchive.ZipOf(t, // other order, other times, stored
		testarchive.Entry{Name: "modules/x/main.tf", Body: "#\n", Mode: 0o600, ModTime: older, Stored: true},
		testarchive.Entry{Name: "main.tf", Body: "# open\n", Mode: 0o600, ModTime: older, Stored: true},
	)
	// Published through the API, as users do: its change drops the
	// cached repository before the publish answers.
	c, err := client.New(e.srv.URL, e.srv.AdminToken, client.WithHTTPClient(e.srv.HTTPClient()))
	if err != nil {
		t.Fatal(err)
	}
	// Cache the repository first, so that the publish must invalidate it.
	e.do(t, http.MethodGet, "/v2/open/modules/net/aws/tags/list")
	if _, err := c.PublishModule(t.Context(), client.ModuleUpload{Namespace: "open", Name: "net", System: "aws", Version: "1.0.1",
		Archive: bytes.NewReader(archive), ContentType: apispec.ModuleArchiveZip}); err != nil {
		t.Fatal(err)
	}
	layer := func(tag string) string {
		var m oci.Manifest
		e.getJSON(t, "/v2/open/modules/net/aws/manifests/"+tag, &m)
		return m.Layers[0].Digest
	}
	if a, b := layer("1.0.0"), layer("1.0.1"); a != b {
		t.Errorf("the same files packed to %s (tar.gz) and %s (zip)", a, b)
	}
}

// mint signs a token grant with the server's key, as the token endpoint
// does (to make expired and otherwise hostile tokens).
func (e *env) mint(t *testing.T, aud string, repos []string, exp time.Time) string {
	t.Helper()
	body, err := json.Marshal(map[string]any{"sub": "tok_reader", "aud": aud, "repos": repos, "iat": time.Now().Unix(), "exp": exp.Unix()})
	if err != nil {
		t.Fatal(err)
	}
	payload := base64.RawURLEncoding.EncodeToString(body)
	return oci.TokenPrefix + payload + "." + e.srv.Signer.Sum("oci-token-v1", []byte(payload))
}

// TestToken: the token endpoint issues short-lived tokens bound to the
// repositories asked for that the Trove token may read; forged, expired,
// other-repository and other-service tokens are refused, and an OCI
// token is no Trove API token.
func TestToken(t *testing.T) {
	e := newEnv(t)
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("anyone:"+e.token))
	type tokenResp struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
		ExpiresIn   int64  `json:"expires_in"`
		IssuedAt    string `json:"issued_at"`
	}
	get := func(query string) tokenResp {
		t.Helper()
		var tr tokenResp
		e.getJSON(t, "/v2/token?"+query, &tr, "Authorization", basic)
		if !strings.HasPrefix(tr.Token, oci.TokenPrefix) || tr.Token != tr.AccessToken || tr.ExpiresIn <= 0 || tr.ExpiresIn > 300 {
			t.Fatalf("token answer %+v", tr)
		}
		if at, err := time.Parse(time.RFC3339, tr.IssuedAt); err != nil || time.Since(at) > time.Minute {
			t.Fatalf("issued_at %q: %v", tr.IssuedAt, err)
		}
		if strings.Contains(tr.Token, e.token) {
			t.Fatal("the OCI token holds the Trove token")
		}
		return tr
	}
	svc := "service=" + e.srv.Host
	both := get(svc + "&scope=repository:acme/widget:pull&scope=repository:acme/modules/net/aws:pull")
	spaced := get(svc + "&scope=" + strings.ReplaceAll("repository:acme/widget:pull repository:open/widget:pull,push", " ", "%20"))
	widget := get("scope=repository:acme/widget:pull")
	none := get(svc) // docker login: no scope, a token for /v2/ only
	// Asked for, but not readable by the Trove token (no such namespace,
	// a shape that is no repository, other resource types): not granted.
	notGranted := get(svc + "&scope=repository:other/widget:pull&scope=repository:acme/x/y:pull&scope=registry:catalog:*&scope=repository:acme/widget:push")

	wrongAud := e.mint(t, "elsewhere.example", []string{"acme/widget"}, time.Now().Add(time.Minute))
	expired := e.mint(t, e.srv.Host, []string{"acme/widget"}, time.Now().Add(-time.Second))
	valid := e.mint(t, e.srv.Host, []string{"acme/widget"}, time.Now().Add(time.Minute))
	payload, _, _ := strings.Cut(strings.TrimPrefix(valid, oci.TokenPrefix), ".")
	forged := oci.TokenPrefix + payload + "." + strings.Repeat("A", 43)
	forgedRepos := oci.TokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(`{"sub":"x","aud":"`+e.srv.Host+`","repos":["acme/widget"],"exp":99999999999}`)) + "." + strings.Split(valid, ".")[1]

	const tags = "/v2/acme/widget/tags/list"
	const modTags = "/v2/acme/modules/net/aws/tags/list"
	cases := []struct {
		name, path, auth string
		want             int
	}{
		{"both scopes, provider", tags, "Bearer " + both.Token, 200},
		{"both scopes, module", modTags, "Bearer " + both.Token, 200},
		{"space-separated scopes", tags, "Bearer " + spaced.Token, 200},
		{"public repository granted too", "/v2/open/widget/tags/list", "Bearer " + spaced.Token, 200},
		{"as Basic password", tags, "Basic " + base64.StdEncoding.EncodeToString([]byte("u:"+widget.Token)), 200},
		{"blob", "/v2/acme/widget/blobs/sha256:" + e.zips["acme/linux_amd64"], "Bearer " + widget.Token, 200},
		{"base route", "/v2/", "Bearer " + none.Token, 200},
		{"other repository", modTags, "Bearer " + widget.Token, 401},
		{"no scope", tags, "Bearer " + none.Token, 401},
		{"not granted", tags, "Bearer " + notGranted.Token, 401},
		{"other service", tags, "Bearer " + wrongAud, 401},
		{"expired", tags, "Bearer " + expired, 401},
		{"expired, base route", "/v2/", "Bearer " + expired, 401},
		{"forged MAC", tags, "Bearer " + forged, 401},
		{"forged grant", tags, "Bearer " + forgedRepos, 401},
		{"truncated", tags, "Bearer " + widget.Token[:len(widget.Token)-3], 401},
		{"prefix only", tags, "Bearer " + oci.TokenPrefix, 401},
		{"garbage", tags, "Bearer " + oci.TokenPrefix + "!!!.???", 401},
		{"huge", tags, "Bearer " + oci.TokenPrefix + strings.Repeat("a", 20000), 401},
		// An OCI token is no Trove token: not on the API, not for
		// another token, not on the registry protocols.
		{"on the API", "/api/v1/namespaces", "Bearer " + widget.Token, 401},
		{"on providers.v1", "/v1/providers/acme/widget/versions", "Bearer " + widget.Token, 401},
		{"for another token", "/v2/token?" + svc + "&scope=repository:acme/widget:pull", "Bearer " + widget.Token, 401},
	}
	for _, c := range cases {
		r := e.do(t, http.MethodGet, c.path, "Authorization", c.auth)
		if r.status != c.want {
			t.Errorf("%s: GET %s = %d %s, want %d", c.name, c.path, r.status, r.body, c.want)
			continue
		}
		if r.status == 401 && strings.HasPrefix(c.path, "/v2/") && c.path != "/v2/" && !strings.HasPrefix(c.path, "/v2/token") {
			if errCode(t, r) != "UNAUTHORIZED" || !strings.Contains(r.header.Get("WWW-Authenticate"), `scope="repository:`) {
				t.Errorf("%s: %s, challenge %q", c.name, r.body, r.header.Get("WWW-Authenticate"))
			}
		}
	}

	// Hostile token requests: clean errors, no token.
	for _, q := range []string{
		"scope=garbage",
		"scope=repository:acme/widget",
		"scope=:acme/widget:pull",
		"scope=repository::pull",
		"scope=" + strings.Repeat("repository:acme/widget:pull%20", 17),
		"scope=repository:" + strings.Repeat("a", 400) + ":pull",
		"service=elsewhere.example&scope=repository:acme/widget:pull",
	} {
		r := e.do(t, http.MethodGet, "/v2/token?"+q, "Authorization", basic)
		if r.status != 400 || bytes.Contains(r.body, []byte(oci.TokenPrefix)) {
			t.Errorf("GET /v2/token?%.60s = %d %s, want 400", q, r.status, r.body)
			continue
		}
		errCode(t, r)
	}
	// A token's lifetime is never longer than its Trove token's.
	secret, hash, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Index.CreateToken(t.Context(), registry.Token{ID: "tok_short", Hash: hash, Namespaces: []string{"acme"},
		Scopes: []registry.Scope{registry.ScopeRead}, CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	var short struct {
		ExpiresIn int64 `json:"expires_in"`
	}
	e.getJSON(t, "/v2/token?scope=repository:acme/widget:pull", &short, "Authorization", "Bearer "+secret)
	if short.ExpiresIn > 60 || short.ExpiresIn <= 0 {
		t.Errorf("expires_in %d for a Trove token expiring in a minute", short.ExpiresIn)
	}
}

// TestMirrorRepositories: <host>/<namespace>/<type> names a provider of
// an upstream registry; hosts that are not upstreams, hosts with a port
// and names that are not normalized are NAME_UNKNOWN, and the mirror is
// not public by default (any valid token, or an OCI token granting the
// repository, reads it).
func TestMirrorRepositories(t *testing.T) {
	e := newEnv(t)
	bearer := "Bearer " + e.token
	cases := []struct {
		path, auth string
		want       int
		code       string
	}{
		{"/v2/nosuch.example/acme/widget/tags/list", "", 401, "UNAUTHORIZED"},
		{"/v2/nosuch.example/acme/widget/tags/list", bearer, 404, "NAME_UNKNOWN"},
		{"/v2/nosuch.example/acme/widget/manifests/1.0.0", bearer, 404, "NAME_UNKNOWN"},
		{"/v2/nosuch.example/acme/widget/blobs/sha256:" + strings.Repeat("a", 64), bearer, 404, "NAME_UNKNOWN"},
		{"/v2/nosuch.example:8443/acme/widget/tags/list", bearer, 404, "NAME_UNKNOWN"},
		{"/v2/NoSuch.example/acme/widget/tags/list", bearer, 404, "NAME_UNKNOWN"},
		{"/v2/nosuch.example/ACME/widget/tags/list", bearer, 404, "NAME_UNKNOWN"},
		{"/v2/no_such.example/acme/widget/tags/list", bearer, 404, "NAME_UNKNOWN"},
		{"/v2/-x.example/acme/widget/tags/list", bearer, 404, "NAME_UNKNOWN"},
		{"/v2/nosuch.example/acme/widget/manifests/../../x", bearer, 400, ""},
	}
	for _, c := range cases {
		r := e.do(t, http.MethodGet, c.path, "Authorization", c.auth)
		if r.status != c.want {
			t.Errorf("GET %s (%.8s) = %d %s, want %d", c.path, c.auth, r.status, r.body, c.want)
			continue
		}
		if c.code != "" {
			if got := errCode(t, r); got != c.code {
				t.Errorf("GET %s: code %s, want %s", c.path, got, c.code)
			}
		}
	}
	// The token endpoint grants a mirror repository to any valid token;
	// the repository then answers as to that token.
	var tok struct{ Token string }
	e.getJSON(t, "/v2/token?scope=repository:nosuch.example/acme/widget:pull", &tok, "Authorization", bearer)
	r := e.do(t, http.MethodGet, "/v2/nosuch.example/acme/widget/tags/list", "Authorization", "Bearer "+tok.Token)
	if r.status != 404 || errCode(t, r) != "NAME_UNKNOWN" {
		t.Errorf("with an OCI token: %d %s, want 404 NAME_UNKNOWN", r.status, r.body)
	}
	r = e.do(t, http.MethodGet, "/v2/acme/widget/tags/list", "Authorization", "Bearer "+tok.Token)
	if r.status != 401 {
		t.Errorf("the mirror repository's token on an own repository: %d %s, want 401", r.status, r.body)
	}
}

// TestMirroredProvenanceReferrer: a mirrored version an air-gap bundle
// imported with provenance has it as a referrer of its image index, as
// Trove's own versions have theirs; one imported without has none.
func TestMirroredProvenanceReferrer(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	bearer := "Bearer " + e.token
	envelope := []byte(`{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[{"keyid":"K","sig":"c2ln"}]}`)
	mirrored := func(version string, withProvenance bool) registry.MirroredVersion {
		v := registry.MirroredVersion{Host: "registry.example", ProviderVersion: registry.ProviderVersion{
			Namespace: "up", Type: "gadget", Version: version, Protocols: []string{"6.0"}, PublishedAt: time.Now(),
			SHASumsDigest: e.srv.Blob(t, "sums "+version), SHASumsSignatureDigest: e.srv.Blob(t, "sig "+version),
			SigningKey: registry.SigningKey{Namespace: "up", KeyID: "0123456789ABCDEF", Fingerprint: strings.Repeat("AB", 20), ASCIIArmor: "x", CreatedAt: time.Now()},
		}}
		content := "PK zip of gadget " + version
		v.Platforms = []registry.Platform{{OS: "linux", Arch: "amd64", Filename: "terraform-provider-gadget_" + version + "_linux_amd64.zip",
			SHA256: e.srv.Blob(t, content), Size: int64(len(content)), H1: "h1:" + strings.Repeat("A", 43) + "="}}
		if withProvenance {
			v.Provenance = envelope
			v.ProvenanceKeys = []registry.SigningKey{{Namespace: "up", KeyID: "0123456789ABCDEF", ASCIIArmor: "x"}}
		}
		return v
	}
	if _, err := e.srv.Index.ImportBundle(ctx, []registry.MirroredVersion{mirrored("1.0.0", true), mirrored("2.0.0", false)}, nil); err != nil {
		t.Fatal(err)
	}
	referrers := func(tag string) []oci.Descriptor {
		r := e.do(t, http.MethodGet, "/v2/registry.example/up/gadget/manifests/"+tag, "Authorization", bearer, "Accept", oci.MediaTypeIndex)
		if r.status != http.StatusOK {
			t.Fatalf("GET the index of %s = %d %s", tag, r.status, r.body)
		}
		var refs oci.ImageIndex
		e.getJSON(t, "/v2/registry.example/up/gadget/referrers/"+r.header.Get("Docker-Content-Digest")+"?artifactType="+url.QueryEscape(oci.ArtifactProvenance), &refs, "Authorization", bearer)
		return refs.Manifests
	}
	refs := referrers("1.0.0")
	if len(refs) != 1 {
		t.Fatalf("provenance referrers of the imported 1.0.0 = %+v, want one", refs)
	}
	var m oci.Manifest
	e.getJSON(t, "/v2/registry.example/up/gadget/manifests/"+refs[0].Digest, &m, "Authorization", bearer)
	if len(m.Layers) != 1 || m.Layers[0].MediaType != oci.MediaTypeDSSE {
		t.Fatalf("provenance manifest = %+v", m)
	}
	if b := e.do(t, http.MethodGet, "/v2/registry.example/up/gadget/blobs/"+m.Layers[0].Digest, "Authorization", bearer); b.status != 200 || !bytes.Equal(b.body, envelope) {
		t.Errorf("provenance layer = %d %q, want the envelope", b.status, b.body)
	}
	if refs := referrers("2.0.0"); len(refs) != 0 {
		t.Errorf("provenance referrers of 2.0.0, imported without = %+v", refs)
	}
}

// TestHeadersOverHTTP2: the answers carry the OCI API's own headers once
// each, with the same values, over HTTP/2 (where Trove keys them in lower
// case, as they go on the wire) as over HTTP/1.1.
func TestHeadersOverHTTP2(t *testing.T) {
	e := newEnv(t)
	h2 := &http.Client{Transport: &http.Transport{TLSClientConfig: e.srv.TLSConfig(t), ForceAttemptHTTP2: true}}
	defer h2.CloseIdleConnections()
	var idx oci.ImageIndex
	indexDigest := e.getJSON(t, "/v2/open/widget/manifests/1.0.0_b.1", &idx).header.Get("Docker-Content-Digest")
	layer := "sha256:" + e.zips["open/linux_amd64"]
	for _, c := range []struct {
		method, path string
		digest       string // the Docker-Content-Digest wanted, "" for none
	}{
		{http.MethodGet, "/v2/", ""},
		{http.MethodGet, "/v2/open/widget/tags/list", ""},
		{http.MethodGet, "/v2/open/widget/manifests/1.0.0_b.1", indexDigest},
		{http.MethodHead, "/v2/open/widget/manifests/1.0.0_b.1", indexDigest},
		{http.MethodGet, "/v2/open/widget/manifests/" + indexDigest, indexDigest},
		{http.MethodGet, "/v2/open/widget/manifests/" + idx.Manifests[0].Digest, idx.Manifests[0].Digest},
		{http.MethodGet, "/v2/open/widget/blobs/" + layer, layer},
		{http.MethodGet, "/v2/open/widget/manifests/9.9.9", ""},
		{http.MethodGet, "/v2/open/widget/blobs/sha256:" + strings.Repeat("0", 64), ""},
		{http.MethodGet, "/v2/acme/widget/tags/list", ""}, // unauthorized
		{http.MethodDelete, "/v2/open/widget/manifests/1.0.0_b.1", ""},
	} {
		var answers [2]http.Header
		for i, client := range []*http.Client{e.srv.HTTPClient(), h2} {
			req, err := http.NewRequestWithContext(t.Context(), c.method, e.srv.URL+c.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if want := i + 1; resp.ProtoMajor != want {
				t.Fatalf("%s %s: HTTP/%d, want HTTP/%d", c.method, c.path, resp.ProtoMajor, want)
			}
			answers[i] = resp.Header
		}
		for i, h := range answers {
			proto := []string{"HTTP/1.1", "HTTP/2"}[i]
			if got := h["Docker-Distribution-Api-Version"]; !slices.Equal(got, []string{"registry/2.0"}) {
				t.Errorf("%s %s over %s: Docker-Distribution-Api-Version %q, want it once", c.method, c.path, proto, got)
			}
			want := []string(nil)
			if c.digest != "" {
				want = []string{c.digest}
			}
			if got := h["Docker-Content-Digest"]; !slices.Equal(got, want) {
				t.Errorf("%s %s over %s: Docker-Content-Digest %q, want %q", c.method, c.path, proto, got, want)
			}
		}
		for _, name := range []string{"Content-Type", "Etag", "Cache-Control", "Www-Authenticate", "Allow"} {
			if h1, h2 := answers[0][name], answers[1][name]; !slices.Equal(h1, h2) {
				t.Errorf("%s %s: %s %q over HTTP/1.1, %q over HTTP/2", c.method, c.path, name, h1, h2)
			}
		}
	}
}

// TestBlobRanges: a range Trove cannot serve is refused in the OCI error
// format with the blob's size; a unit Trove does not serve is ignored.
func TestBlobRanges(t *testing.T) {
	e := newEnv(t)
	layer := "sha256:" + e.zips["open/linux_amd64"]
	whole := e.do(t, http.MethodGet, "/v2/open/widget/blobs/"+layer)
	if whole.status != http.StatusOK {
		t.Fatalf("blob = %d", whole.status)
	}
	for rg, size := range map[string]string{"bytes=999999999-": fmt.Sprintf("bytes */%d", len(whole.body)), "bytes=abc": ""} {
		r := e.do(t, http.MethodGet, "/v2/open/widget/blobs/"+layer, "Range", rg)
		if r.status != http.StatusRequestedRangeNotSatisfiable || errCode(t, r) != "RANGE_INVALID" ||
			r.header.Get("Content-Range") != size || r.header.Get("Content-Type") != "application/json" {
			t.Errorf("Range %s = %d %v %q, want 416 RANGE_INVALID (Content-Range %q)", rg, r.status, r.header, r.body, size)
		}
	}
	if r := e.do(t, http.MethodGet, "/v2/open/widget/blobs/"+layer, "Range", "items=0-1"); r.status != http.StatusOK || !bytes.Equal(r.body, whole.body) {
		t.Errorf("Range items=0-1 = %d (%d bytes), want the whole blob", r.status, len(r.body))
	}
	if r := e.do(t, http.MethodGet, "/v2/open/widget/blobs/"+layer, "Range", "Bytes=1-2"); r.status != http.StatusPartialContent || !bytes.Equal(r.body, whole.body[1:3]) {
		t.Errorf("Range Bytes=1-2 = %d %q, want 206", r.status, r.body)
	}
	// The token endpoint answers HEAD as GET.
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("x:"+e.token))
	get := e.do(t, http.MethodGet, "/v2/token?scope=repository:acme/widget:pull", "Authorization", basic)
	head := e.do(t, http.MethodHead, "/v2/token?scope=repository:acme/widget:pull", "Authorization", basic)
	if get.status != http.StatusOK || head.status != get.status || len(head.body) != 0 {
		t.Errorf("token: GET %d, HEAD %d with %d bytes, want 200 twice and no body", get.status, head.status, len(head.body))
	}
}
