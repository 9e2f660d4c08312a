package flock_test

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"trove.dev/trove/internal/flock"
)

func TestTryLock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	first, err := flock.TryLock(path)
	if errors.Is(err, flock.ErrUnsupported) {
		t.Skip("no file locks here")
	}
	if err != nil {
		t.Fatal(err)
	}
	// A second open file conflicts, even in the same process.
	if f, err := flock.TryLock(path); !errors.Is(err, flock.ErrLocked) {
		t.Fatalf("second TryLock = %v, %v; want ErrLocked", f, err)
	}
	first.Close()
	again, err := flock.TryLock(path)
	if err != nil {
		t.Fatalf("TryLock after the holder closed: %v", err)
	}
	again.Close()
}

// TestLockOfKilledProcessIsReleased locks a file in a child process, kills
// it with SIGKILL and takes the lock.
func TestLockOfKilledProcessIsReleased(t *testing.T) {
	if os.Getenv("FLOCK_TEST_HOLD") != "" {
		f, err := flock.TryLock(os.Getenv("FLOCK_TEST_HOLD"))
		if err != nil {
			os.Exit(2)
		}
		defer f.Close()
		os.Stdout.WriteString("locked\n")
		time.Sleep(time.Hour) // until killed
		return
	}
	path := filepath.Join(t.TempDir(), "lock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockOfKilledProcessIsReleased$")
	cmd.Env = append(os.Environ(), "FLOCK_TEST_HOLD="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := io.ReadFull(out, buf); err != nil || string(buf) != "locked\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Skipf("the child did not lock (%q, %v): no file locks here", buf, err)
	}
	if f, err := flock.TryLock(path); !errors.Is(err, flock.ErrLocked) {
		t.Fatalf("TryLock while the child holds the lock = %v, %v; want ErrLocked", f, err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	f, err := flock.TryLock(path)
	if err != nil {
		t.Fatalf("TryLock after the holder was killed: %v", err)
	}
	f.Close()
}
