package e2e

import (
	"bufio"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	// crashPayload is the incompressible filler that makes the crash
	// test's archive large enough to kill the server mid-upload and to
	// show whether uploads are streamed.
	crashPayload = 150 << 20
	// maxServerRSS bounds the server's peak resident memory while such an
	// archive passes through: far less than the archive itself.
	maxServerRSS = 150 << 20
	// stagedBeforeKill is how much of the archive must be staged before
	// the server is killed.
	stagedBeforeKill = 8 << 20
)

// TestCrashDuringPublish kills the server (SIGKILL) while a large archive
// is being uploaded, restarts it on the same data directory and checks
// that nothing of the interrupted version is visible, that publishing it
// again succeeds with bounded server memory, and that it then installs.
func TestCrashDuringPublish(t *testing.T) {
	requireTerraform(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	srv := startTrove(t, dataDir)
	key, publishToken := setupNamespace(t, srv)
	rel := packageRelease(t, key, releaseSpec{
		Version:   "4.0.0",
		Platforms: []string{hostPlatform},
		Extra:     []zipEntry{{Name: "payload.bin", Random: crashPayload}},
	})
	zipDigest := rel.zipDigest(t, hostPlatform)

	// Upload, and kill the server once part of the archive is staged.
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	upload := exec.CommandContext(ctx, troveBin, "publish", "--namespace", namespace, rel.Dir)
	upload.Env = append(baseEnv(t.TempDir()), "TROVE_ADDR="+srv.Addr, "TROVE_CA_FILE="+srv.CAFile, "TROVE_TOKEN="+publishToken)
	var uploadOut strings.Builder
	upload.Stdout, upload.Stderr = &uploadOut, &uploadOut
	if err := upload.Start(); err != nil {
		t.Fatal(err)
	}
	uploadDone := make(chan error, 1)
	go func() { uploadDone <- upload.Wait() }()

	staged := waitForStaging(t, dataDir, uploadDone)
	peakBefore := vmHWM(t, srv.pid())
	srv.kill()
	t.Logf("killed the server with %d MiB of the archive staged; its peak RSS was %d MiB", staged>>20, peakBefore>>20)
	if err := <-uploadDone; err == nil {
		t.Fatalf("trove publish succeeded although the server was killed during the upload:\n%s", uploadOut.String())
	}
	if peakBefore > maxServerRSS {
		t.Errorf("server peak RSS during the upload: %d MiB, want at most %d MiB: uploads must stream", peakBefore>>20, maxServerRSS>>20)
	}

	srv2 := startTrove(t, dataDir)
	srv2.AdminToken = srv.AdminToken
	t.Run("interrupted version is invisible", func(t *testing.T) {
		if r := srv2.get(t, versionsURL(t, srv2)); r.Status != http.StatusNotFound {
			t.Errorf("versions after the crash: status %d, want 404: %s", r.Status, r.Body)
		}
		if r := srv2.get(t, downloadURL(t, srv2, rel.Version, hostPlatform)); r.Status != http.StatusNotFound {
			t.Errorf("download document after the crash: status %d, want 404: %s", r.Status, r.Body)
		}
		apiPath := "/api/v1/namespaces/" + namespace + "/providers/" + providerType + "/versions/" + rel.Version
		if r := srv2.do(t, http.MethodGet, apiPath, http.Header{"Authorization": {"Bearer " + srv2.AdminToken}}); r.Status != http.StatusNotFound {
			t.Errorf("GET %s after the crash: status %d, want 404: %s", apiPath, r.Status, r.Body)
		}
		if p := findBlob(t, dataDir, zipDigest); p != "" {
			t.Errorf("the interrupted archive was stored as a blob: %s", p)
		}
		if left := stagedFiles(t, dataDir); len(left) > 0 {
			t.Errorf("staging files left by the killed upload after a restart: %q", left)
		}
	})

	t.Run("publish again and install", func(t *testing.T) {
		out := publish(t, srv2, publishToken, rel)
		if !strings.Contains(out, "Published") {
			t.Errorf("trove publish printed %q, want it to report the published version", out)
		}
		peak := vmHWM(t, srv2.pid())
		t.Logf("server peak RSS with a %d MiB archive published: %d MiB", fileSize(t, rel.path(rel.zipName(hostPlatform)))>>20, peak>>20)
		if peak > maxServerRSS {
			t.Errorf("server peak RSS: %d MiB, want at most %d MiB: uploads must stream", peak>>20, maxServerRSS>>20)
		}
		doc, _ := getDownload(t, srv2, rel.Version, hostPlatform)
		if doc.SHASum != zipDigest {
			t.Errorf("served shasum %s, want %s", doc.SHASum, zipDigest)
		}

		tf := newTerraform(t, srv2, "")
		dir := writeProject(t, srv2, rel.Version, "after-crash")
		tf.mustRun(t, dir, "init", "-input=false")
		applyAndCheck(t, tf, dir, "after-crash")
	})
}

// waitForStaging waits until the server stages at least stagedBeforeKill
// bytes of an archive in dataDir/tmp and returns the size seen. It fails
// the test if the upload ends first.
func waitForStaging(t *testing.T, dataDir string, uploadDone <-chan error) int64 {
	t.Helper()
	deadline := time.After(commandTimeout)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		entries, _ := os.ReadDir(filepath.Join(dataDir, "tmp"))
		for _, e := range entries {
			if info, err := e.Info(); err == nil && info.Mode().IsRegular() && info.Size() >= stagedBeforeKill {
				return info.Size()
			}
		}
		select {
		case err := <-uploadDone:
			t.Fatalf("the upload ended (%v) before %d MiB of the archive were staged in %s/tmp", err, stagedBeforeKill>>20, dataDir)
		case <-deadline:
			t.Fatalf("no archive was staged in %s/tmp within %s", dataDir, commandTimeout)
		case <-tick.C:
		}
	}
}

// vmHWM returns the peak resident set size of a process, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatalf("reading the server's memory use: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("unexpected VmHWM line %q", sc.Text())
			}
			return kb << 10
		}
	}
	t.Fatalf("/proc/%d/status has no VmHWM line", pid)
	return 0
}

// findBlob returns the path of a file named digest under dataDir/blobs,
// or "" if there is none.
func findBlob(t *testing.T, dataDir, digest string) string {
	t.Helper()
	var found string
	err := filepath.WalkDir(filepath.Join(dataDir, "blobs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == digest {
			found = p
			return fs.SkipAll
		}
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return found
}

// fileSize returns the size of a file.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
