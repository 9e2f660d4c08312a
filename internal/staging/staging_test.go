package staging

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/fsblob"
)

// TestRemoveStale leaves what killed publishes of two kinds left in one
// staging directory and checks that each kind removes its own only.
func TestRemoveStale(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tmp")
	modules, providers := Dir{Path: dir, Prefix: "module-"}, Dir{Path: dir, Prefix: "publish-"}
	if err := modules.RemoveStale(); err != nil {
		t.Fatalf("with no staging directory yet: %v", err)
	}
	f, err := modules.CreateFile("*.archive")
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	extraction, err := modules.MkdirTemp("*.d")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(extraction, "main.tf"), []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	zip, err := providers.CreateFile("*.zip")
	if err != nil {
		t.Fatal(err)
	}
	zip.Close()
	if err := modules.RemoveStale(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{f.Name(), extraction} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s survived RemoveStale: %v", filepath.Base(p), err)
		}
	}
	if _, err := os.Stat(zip.Name()); err != nil {
		t.Errorf("the other kind's staged file was removed: %v", err)
	}
}

func TestCopy(t *testing.T) {
	var buf bytes.Buffer
	n, digest, err := Copy(&buf, strings.NewReader("abc"), 3, "the archive")
	if err != nil || n != 3 || buf.String() != "abc" ||
		digest != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("Copy = %d, %s, %v (%q)", n, digest, err, buf.String())
	}
	_, _, err = Copy(io.Discard, strings.NewReader("abcd"), 3, "the archive")
	if !registry.IsKind(err, registry.TooLarge) || registry.Message(err) != "the archive is larger than the limit of 3 bytes" {
		t.Errorf("Copy of 4 bytes with limit 3: %v", err)
	}
}

// putOnly hides the FilePutter of a blob store.
type putOnly struct{ store.Blobs }

// TestStore stores a staged file in a blob store that takes files and in
// one that does not.
func TestStore(t *testing.T) {
	ctx := context.Background()
	blobs, err := fsblob.Open(filepath.Join(t.TempDir(), "blobs"))
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	stage := Dir{Path: t.TempDir(), Prefix: "publish-"}
	for name, b := range map[string]store.Blobs{"file putter": blobs, "put only": putOnly{blobs}} {
		t.Run(name, func(t *testing.T) {
			content := "content for " + name
			f, err := stage.CreateFile("*.zip")
			if err != nil {
				t.Fatal(err)
			}
			n, digest, err := Copy(f, strings.NewReader(content), 1<<20, "x")
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			if err := Store(ctx, b, digest, n, f.Name()); err != nil {
				t.Fatal(err)
			}
			blob, err := blobs.Open(ctx, digest)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(blob.Content)
			blob.Close()
			if string(got) != content {
				t.Errorf("stored %q, want %q", got, content)
			}
		})
	}
}
