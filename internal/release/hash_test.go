package release

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"trove.dev/trove/internal/trovetest/testarchive"
)

// TestPackageHash checks the h1 hash against the definition the clients
// use: SHA-256 over the lines "<sha256 hex>  <name>\n" of the archive's
// files in name order, base64-encoded, and that it ignores compression.
func TestPackageHash(t *testing.T) {
	files := map[string]string{"terraform-provider-widget_v1.0.0": "#!/bin/sh\necho widget\n", "LICENSE": "MIT\n", "docs/README.md": "# widget\n"}
	var names []string
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var lines strings.Builder
	for _, name := range names {
		fmt.Fprintf(&lines, "%x  %s\n", sha256.Sum256([]byte(files[name])), name)
	}
	sum := sha256.Sum256([]byte(lines.String()))
	want := "h1:" + base64.StdEncoding.EncodeToString(sum[:])

	var got []string
	for _, stored := range []bool{true, false} {
		var entries []testarchive.Entry
		for _, name := range []string{"terraform-provider-widget_v1.0.0", "LICENSE", "docs/README.md"} { // not in name order
			entries = append(entries, testarchive.Entry{Name: name, Body: files[name], Stored: stored})
		}
		path := filepath.Join(t.TempDir(), "p.zip")
		if err := os.WriteFile(path, testarchive.ZipOf(t, entries...), 0o644); err != nil {
			t.Fatal(err)
		}
		h, err := PackageHash(path)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h)
	}
	if got[0] != want || got[1] != want {
		t.Fatalf("PackageHash = %v (stored, deflated), want %s for both", got, want)
	}

	bad := filepath.Join(t.TempDir(), "bad.zip")
	os.WriteFile(bad, []byte("not a zip"), 0o644)
	if h, err := PackageHash(bad); err == nil {
		t.Fatalf("PackageHash of a non-zip = %q, want an error", h)
	}
}

// TestPackageHashRefusesBombs: an archive that declares more unpacked
// bytes than the limit is refused before anything is unpacked.
func TestPackageHashRefusesBombs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bomb.zip")
	// A directory entry that declares 2 GiB: what a bomb declares (the
	// zip reader would refuse a file that unpacks to more).
	bomb := testarchive.ZipOf(t, testarchive.Entry{Body: "0000", Raw: &zip.FileHeader{Name: "zeros", Method: zip.Store, CompressedSize64: 4, UncompressedSize64: 2 << 30}})
	if err := os.WriteFile(path, bomb, 0o644); err != nil {
		t.Fatal(err)
	}
	if h, err := PackageHash(path); err == nil || !strings.Contains(err.Error(), "unpacks to") {
		t.Fatalf("PackageHash of an archive declaring 2 GiB = %q, %v; want a refusal", h, err)
	}
}
