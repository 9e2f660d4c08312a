package oci_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/protocol/oci"
	"trove.dev/trove/internal/trovetest/testarchive"
)

// TestPerDocumentCacheSeesChanges: with the tag list, a version's
// manifest and its documents by digest cached, a publish and a delete
// through the API are seen by the very next request (the change drops
// every cached document of the repository), and what was not changed
// is still served.
func TestPerDocumentCacheSeesChanges(t *testing.T) {
	e := newEnv(t)
	c, err := client.New(e.srv.URL, e.srv.AdminToken, client.WithHTTPClient(e.srv.HTTPClient()))
	if err != nil {
		t.Fatal(err)
	}
	const repo = "/v2/open/modules/net/aws/"
	tagList := func() string {
		var tags struct{ Tags []string }
		e.getJSON(t, repo+"tags/list", &tags)
		return strings.Join(tags.Tags, ",")
	}
	// Cache the tag list, the manifest by tag and "latest", by digest,
	// and the layer.
	if got := tagList(); got != "1.0.0,latest" {
		t.Fatalf("tags = %s", got)
	}
	var m1 oci.Manifest
	r1 := e.getJSON(t, repo+"manifests/1.0.0", &m1)
	d1 := r1.header.Get("Docker-Content-Digest")
	if r := e.do(t, http.MethodGet, repo+"manifests/latest"); !bytes.Equal(r.body, r1.body) {
		t.Fatal("latest is not 1.0.0")
	}
	if r := e.do(t, http.MethodGet, repo+"manifests/"+d1); !bytes.Equal(r.body, r1.body) {
		t.Fatalf("by digest = %d %s", r.status, r.body)
	}
	if r := e.do(t, http.MethodHead, repo+"blobs/"+m1.Layers[0].Digest); r.status != 200 {
		t.Fatalf("HEAD layer = %d", r.status)
	}

	// Publish 1.0.1 (other files, so another manifest): in the tag list
	// and "latest" at once.
	if _, err := c.PublishModule(t.Context(), client.ModuleUpload{Namespace: "open", Name: "net", System: "aws", Version: "1.0.1",
		Archive: bytes.NewReader(testarchive.TarGz(t, map[string]string{"main.tf": "# 1.0.1\n"})), ContentType: apispec.ModuleArchiveTarGz}); err != nil {
		t.Fatal(err)
	}
	if got := tagList(); got != "1.0.0,1.0.1,latest" {
		t.Fatalf("tags after the publish = %s", got)
	}
	var m2 oci.Manifest
	r2 := e.getJSON(t, repo+"manifests/latest", &m2)
	d2 := r2.header.Get("Docker-Content-Digest")
	if d2 == d1 || m2.Layers[0].Digest == m1.Layers[0].Digest {
		t.Fatalf("latest after the publish is still 1.0.0's manifest %s", d2)
	}
	if r := e.do(t, http.MethodGet, repo+"manifests/"+d1); !bytes.Equal(r.body, r1.body) {
		t.Fatalf("1.0.0 by digest after the publish = %d %s", r.status, r.body)
	}

	// Delete 1.0.0: its tag, manifest and layer are gone at once; 1.0.1
	// is served.
	if err := c.DeleteModuleVersion(t.Context(), "open", "net", "aws", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	if got := tagList(); got != "1.0.1,latest" {
		t.Fatalf("tags after the delete = %s", got)
	}
	for _, p := range []string{repo + "manifests/1.0.0", repo + "manifests/" + d1} {
		if r := e.do(t, http.MethodGet, p); r.status != 404 || errCode(t, r) != "MANIFEST_UNKNOWN" {
			t.Errorf("GET %s after the delete = %d %s", p, r.status, r.body)
		}
	}
	if r := e.do(t, http.MethodGet, repo+"blobs/"+m1.Layers[0].Digest); r.status != 404 || errCode(t, r) != "BLOB_UNKNOWN" {
		t.Errorf("1.0.0's layer after the delete = %d %s", r.status, r.body)
	}
	if r := e.do(t, http.MethodGet, repo+"manifests/"+d2); r.status != 200 {
		t.Errorf("1.0.1 by digest after the delete = %d %s", r.status, r.body)
	}
}

// TestByDigestFirst: documents and blobs asked for by digest before any
// tag (nothing of the version cached) are found, and unknown digests of
// a known repository are unknown.
func TestByDigestFirst(t *testing.T) {
	e := newEnv(t)
	layer := "sha256:" + e.zips["open/linux_amd64"]
	if r := e.do(t, http.MethodGet, "/v2/open/widget/blobs/"+layer); r.status != 200 || "sha256:"+sum(r.body) != layer {
		t.Fatalf("layer by digest first = %d %s", r.status, r.body)
	}
	other := "sha256:" + strings.Repeat("0", 64)
	if r := e.do(t, http.MethodGet, "/v2/open/widget/blobs/"+other); r.status != 404 || errCode(t, r) != "BLOB_UNKNOWN" {
		t.Fatalf("unknown blob = %d %s", r.status, r.body)
	}
	if r := e.do(t, http.MethodGet, "/v2/open/widget/manifests/"+other); r.status != 404 || errCode(t, r) != "MANIFEST_UNKNOWN" {
		t.Fatalf("unknown manifest = %d %s", r.status, r.body)
	}
	// Another repository's blob is not this one's.
	if r := e.do(t, http.MethodGet, "/v2/open/modules/net/aws/blobs/"+layer); r.status != 404 || errCode(t, r) != "BLOB_UNKNOWN" {
		t.Fatalf("a provider's blob through a module = %d %s", r.status, r.body)
	}
	// The index by digest, then by tag: the same bytes.
	var idx oci.ImageIndex
	byTag := e.getJSON(t, "/v2/open/widget/manifests/1.0.0_b.1", &idx)
	d := byTag.header.Get("Docker-Content-Digest")
	if r := e.do(t, http.MethodGet, "/v2/open/widget/manifests/"+d); !bytes.Equal(r.body, byTag.body) {
		t.Fatalf("index by digest = %d %s", r.status, r.body)
	}
	if r := e.do(t, http.MethodGet, "/v2/open/widget/manifests/9.9.9"); r.status != 404 || errCode(t, r) != "MANIFEST_UNKNOWN" {
		t.Fatalf("unknown tag = %d %s", r.status, r.body)
	}
}
