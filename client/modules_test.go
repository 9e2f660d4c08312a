package client_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/trovetest"
)

// TestModulesAgainstTrove runs every module method against a real
// in-process Trove.
func TestModulesAgainstTrove(t *testing.T) {
	ctx := t.Context()
	s := trovetest.Start(t)
	c, err := client.New(s.URL, s.AdminToken, client.WithCAFile(s.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte("output \"x\" {\n  value = 1\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	if _, err := modules.PackArchive(&archive, dir); err != nil {
		t.Fatal(err)
	}

	up := client.ModuleUpload{Namespace: "acme", Name: "net", System: "aws", Version: "1.0.0", Origin: "unit test",
		ContentType: apispec.ModuleArchiveTarGz, Archive: bytes.NewReader(archive.Bytes())}
	res, err := c.PublishModule(ctx, up)
	if err != nil || !res.Created || res.Version.ArchiveSize != int64(archive.Len()) || res.Version.Origin != "unit test" {
		t.Fatalf("PublishModule = %+v, %v", res, err)
	}
	up.Archive, up.ContentType = bytes.NewReader(archive.Bytes()), "" // octet-stream: recognised from the content
	if res, err = c.PublishModule(ctx, up); err != nil || res.Created {
		t.Errorf("second PublishModule = %+v, %v; want created=false", res, err)
	}
	up.Version, up.Archive = "1.1.0", io.MultiReader(bytes.NewReader(archive.Bytes()), errReader{})
	if _, err := c.PublishModule(ctx, up); err == nil {
		t.Error("PublishModule with a failing archive reader succeeded")
	}

	list, err := c.ListModules(ctx, "acme", client.ModuleListOptions{Query: "ne", System: "aws", Limit: 5})
	if err != nil || list.Total != 1 || len(list.Modules) != 1 || list.Limit != 5 || list.Modules[0].Name != "net" {
		t.Errorf("ListModules = %+v, %v", list, err)
	}
	m, err := c.GetModule(ctx, "acme", "net", "aws")
	if err != nil || len(m.Versions) != 1 || m.Versions[0].Version != "1.0.0" {
		t.Errorf("GetModule = %+v, %v", m, err)
	}
	v, err := c.GetModuleVersion(ctx, "acme", "net", "aws", "1.0.0")
	if err != nil || len(v.Metadata) == 0 {
		t.Errorf("GetModuleVersion = %+v, %v", v, err)
	}
	if err := c.DeleteModuleVersion(ctx, "acme", "net", "aws", "1.0.0"); err != nil {
		t.Fatalf("DeleteModuleVersion: %v", err)
	}
	if _, err := c.GetModuleVersion(ctx, "acme", "net", "aws", "1.0.0"); !client.IsNotFound(err) {
		t.Errorf("GetModuleVersion after delete: %v, want 404", err)
	}
	if err := c.DeleteModuleVersion(ctx, "acme", "net", "aws", "1.0.0"); !client.IsNotFound(err) {
		t.Errorf("second DeleteModuleVersion: %v, want 404", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }
