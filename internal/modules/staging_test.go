package modules

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestRemoveStaleUploads leaves in the staging directory what a module
// publish killed mid-way leaves (a staged archive, a half-filled
// extraction directory) and checks that RemoveStaleUploads, run at
// start-up, removes them and nothing that is not a module publish's.
func TestRemoveStaleUploads(t *testing.T) {
	e := newPublishEnv(t)
	if err := e.pub.RemoveStaleUploads(); err != nil {
		t.Fatalf("with no staging directory yet: %v", err)
	}
	archive := filepath.Join(e.tempDir, stagePrefix+"123.archive")
	extraction := filepath.Join(e.tempDir, stagePrefix+"456.d")
	other := filepath.Join(e.tempDir, "publish-789.zip") // a provider publish's: not this Publisher's
	if err := os.MkdirAll(filepath.Join(extraction, "modules", "vpc"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{archive, other, filepath.Join(extraction, "modules", "vpc", "main.tf")} {
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.pub.RemoveStaleUploads(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{archive, extraction} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s survived RemoveStaleUploads: %v", filepath.Base(p), err)
		}
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("a file the module publisher did not stage was removed: %v", err)
	}
}
