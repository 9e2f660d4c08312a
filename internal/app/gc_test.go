package app

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// TestPeriodicCollection: with --gc-interval, Serve runs garbage
// collections that reclaim unreferenced blobs past the grace period and
// are recorded in the audit log.
func TestPeriodicCollection(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	cfg := testConfig(t, dir)
	// Shorter than the flag allows, so that the test need not wait for
	// a minute; the grace period is the smallest collections accept.
	cfg.GCInterval, cfg.GCGrace = 20*time.Millisecond, time.Minute
	a, err := New(ctx, cfg, Options{Listener: testListener(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	old, young := []byte("garbage stored long ago"), []byte("garbage stored just now")
	digests := map[string][]byte{}
	for _, b := range [][]byte{old, young} {
		sum := sha256.Sum256(b)
		d := hex.EncodeToString(sum[:])
		digests[d] = b
		if err := a.Blobs.Put(ctx, d, int64(len(b)), bytes.NewReader(b)); err != nil {
			t.Fatal(err)
		}
	}
	sum := sha256.Sum256(old)
	oldDigest := hex.EncodeToString(sum[:])
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(filepath.Join(cfg.Blobs.FS.Dir, "sha256", oldDigest[:2], oldDigest), past, past); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx) }()

	var events []registry.AuditEvent
	for deadline := time.Now().Add(30 * time.Second); len(events) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if events, err = a.Index.(store.Access).ListAudit(ctx, registry.AuditFilter{Action: registry.AuditGC}); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(events) == 0 || events[0].Actor != "trove serve --gc-interval" {
		t.Fatalf("audit gc.run events = %+v, want one by the periodic collection", events)
	}
	for d, b := range digests {
		_, err := a.Blobs.Stat(context.Background(), d)
		if bytes.Equal(b, old) != registry.IsKind(err, registry.NotFound) {
			t.Errorf("blob %q after the periodic collection: Stat = %v", b, err)
		}
	}
}
