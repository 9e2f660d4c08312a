package client_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/providerdocs"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/trovetest"
)

// TestProviderDocsAgainstTrove uploads and downloads a provider
// version's documentation through a real in-process Trove.
func TestProviderDocsAgainstTrove(t *testing.T) {
	ctx := t.Context()
	s := trovetest.Start(t)
	c, err := client.New(s.URL, s.AdminToken, client.WithCAFile(s.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	key := registry.SigningKey{Namespace: "acme", KeyID: "FEDCBA9876543210", Fingerprint: strings.Repeat("E", 40), ASCIIArmor: "x", CreatedAt: time.Now()}
	if err := s.Index.CreateProviderVersion(ctx, registry.ProviderVersion{Namespace: "acme", Type: "widget", Version: "1.0.0",
		Protocols: []string{"5.0"}, SHASumsDigest: s.Blob(t, "a"), SHASumsSignatureDigest: s.Blob(t, "b"),
		SigningKey: key, PublishedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "docs", "resources"), 0o755)
	os.WriteFile(filepath.Join(dir, "docs", "index.md"), []byte("# Acme\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "docs", "resources", "widget.md"), []byte("# widget\n"), 0o644)
	var archive bytes.Buffer
	if err := providerdocs.Pack(dir, &archive); err != nil {
		t.Fatal(err)
	}

	res, err := c.UploadProviderDocs(ctx, "acme", "widget", "1.0.0", bytes.NewReader(archive.Bytes()))
	if err != nil || !res.Created || res.PageCount != 2 || res.Size != int64(archive.Len()) {
		t.Fatalf("UploadProviderDocs = %+v, %v", res, err)
	}
	if res, err = c.UploadProviderDocs(ctx, "acme", "widget", "1.0.0", bytes.NewReader(archive.Bytes())); err != nil || res.Created {
		t.Errorf("second UploadProviderDocs = %+v, %v; want created=false", res, err)
	}
	if _, err := c.UploadProviderDocs(ctx, "acme", "widget", "1.0.0", strings.NewReader("other")); !client.IsConflict(err) {
		t.Errorf("UploadProviderDocs of other bytes = %v, want a conflict", err)
	}
	if _, err := c.UploadProviderDocs(ctx, "acme", "widget", "2.0.0", bytes.NewReader(archive.Bytes())); !client.IsNotFound(err) {
		t.Errorf("UploadProviderDocs of a missing version = %v, want not found", err)
	}
	if _, err := c.UploadProviderDocs(ctx, "acme", "widget", "..", bytes.NewReader(archive.Bytes())); err == nil {
		t.Error("UploadProviderDocs of version \"..\" was sent")
	}
	var got bytes.Buffer
	if err := c.DownloadProviderDocs(ctx, "acme", "widget", "1.0.0", &got); err != nil || !bytes.Equal(got.Bytes(), archive.Bytes()) {
		t.Errorf("DownloadProviderDocs = %d bytes, %v; want the uploaded archive", got.Len(), err)
	}
	v, err := c.GetProviderVersion(ctx, "acme", "widget", "1.0.0")
	if err != nil || v.DocsDigest != res.Digest || v.DocsSize != int64(archive.Len()) {
		t.Errorf("GetProviderVersion = %+v, %v; want the docs digest %s", v, err, res.Digest)
	}
}
