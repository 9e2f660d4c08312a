package modules

import (
	"archive/tar"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/trovetest/testarchive"
)

// stagedImport writes archive to a file and returns the module version a
// bundle would name it with.
func stagedImport(t *testing.T, archive []byte) (registry.ModuleVersion, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "archive")
	if err := os.WriteFile(path, archive, 0o600); err != nil {
		t.Fatal(err)
	}
	return registry.ModuleVersion{Namespace: "acme", Name: "network", System: "aws", Version: "1.0.0",
		ArchiveFormat: FormatTarGz, ArchiveSize: int64(len(archive))}, path
}

// TestCheckImport: a module version that arrives with its archive passes
// the checks of Publish and gets the metadata and description Publish
// would store; what Publish refuses, CheckImport refuses.
func TestCheckImport(t *testing.T) {
	e := newPublishEnv(t)
	archive := packed(t, realisticModule)
	v, path := stagedImport(t, archive)
	v.Namespace, v.Origin = "Acme", "git tag v1.0.0"
	v.Metadata, v.Description = json.RawMessage(`{"root":{"readme":"forged"}}`), "forged"
	res, err := e.pub.CheckImport(t.Context(), v, path)
	if err != nil {
		t.Fatal(err)
	}
	published, err := e.pub.Publish(t.Context(), Upload{Namespace: "acme", Name: "network", System: "aws", Version: "1.0.0", Archive: strings.NewReader(string(archive))})
	if err != nil {
		t.Fatal(err)
	}
	got, want := res.Version, published.Version
	if got.Namespace != "acme" || got.ArchiveFormat != FormatTarGz || got.Origin != v.Origin ||
		got.Description != want.Description || string(got.Metadata) != string(want.Metadata) {
		t.Errorf("CheckImport = %+v\nwant the metadata and description of a publish: %+v", got, want)
	}

	for name, c := range map[string]struct {
		archive []byte
		change  func(v *registry.ModuleVersion)
		kind    registry.Kind
		want    string
	}{
		"link to /etc/passwd": {archive: testarchive.TarGzOf(t, tent{Name: "main.tf", Body: mainTF}, tent{Name: "passwd", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}),
			kind: registry.Invalid, want: "is absolute"},
		"hard link": {archive: testarchive.TarGzOf(t, tent{Name: "main.tf", Body: mainTF}, tent{Name: "b.tf", Typeflag: tar.TypeLink, Linkname: "main.tf"}),
			kind: registry.Invalid, want: "hard link"},
		"not an archive":    {archive: []byte("plain text"), kind: registry.Invalid, want: "neither a .tar.gz nor a .zip"},
		"over MaxArchive":   {archive: archive, change: func(v *registry.ModuleVersion) { v.ArchiveSize = 2 << 20 }, kind: registry.TooLarge, want: "larger than"},
		"empty":             {archive: archive, change: func(v *registry.ModuleVersion) { v.ArchiveSize = 0 }, kind: registry.Invalid, want: "empty"},
		"other format":      {archive: archive, change: func(v *registry.ModuleVersion) { v.ArchiveFormat = FormatZip }, kind: registry.Invalid, want: "not zip"},
		"origin with break": {archive: archive, change: func(v *registry.ModuleVersion) { v.Origin = "a\nb" }, kind: registry.Invalid, want: "origin contains"},
		"long origin":       {archive: archive, change: func(v *registry.ModuleVersion) { v.Origin = strings.Repeat("x", MaxOriginBytes+1) }, kind: registry.Invalid, want: "origin is too long"},
		"description with escape": {archive: archive, change: func(v *registry.ModuleVersion) { v.Description = "a\x1bb" }, kind: registry.Invalid,
			want: "description contains"},
		"metadata of another shape": {archive: archive, change: func(v *registry.ModuleVersion) { v.Metadata = json.RawMessage(`{"root":[]}`) },
			kind: registry.Invalid, want: "not module metadata"},
		"address the clients refuse": {archive: archive, change: func(v *registry.ModuleVersion) { v.Namespace = "café" }, kind: registry.Invalid,
			want: "not a module address"},
	} {
		t.Run(name, func(t *testing.T) {
			v, path := stagedImport(t, c.archive)
			if c.change != nil {
				c.change(&v)
			}
			_, err := e.pub.CheckImport(t.Context(), v, path)
			if !registry.IsKind(err, c.kind) || !strings.Contains(registry.Message(err), c.want) {
				t.Errorf("CheckImport = %v (%v), want %v saying %q", err, registry.KindOf(err), c.kind, c.want)
			}
		})
	}
}

// TestParseMetadata: what Inspect extracts reads back; anything of
// another shape is refused.
func TestParseMetadata(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, realisticModule)
	md, err := Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	data, err := encodeMetadata(md)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ParseMetadata(data); err != nil || got.Root.Readme != md.Root.Readme || len(got.Root.Inputs) != len(md.Root.Inputs) {
		t.Errorf("ParseMetadata of extracted metadata = %+v, %v", got, err)
	}
	for _, bad := range []string{`[]`, `"x"`, `{"root":5}`, `{"root":{"inputs":{}}}`, `{"root":{"empty":"yes"}}`, `{"other":1}`, `{} {}`,
		`{"root":{"readme":"` + strings.Repeat("x", MaxMetadataBytes) + `"}}`} {
		if _, err := ParseMetadata([]byte(bad)); err == nil {
			t.Errorf("ParseMetadata(%.40s) accepted it", bad)
		}
	}
}
