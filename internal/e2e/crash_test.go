package e2e

import (
	"bufio"
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
)

const (
	// crashPayload is the incompressible filler that makes the crash
	// test's archive large enough to kill the server mid-upload and to
	// show whether uploads are streamed: at least 200 MiB.
	crashPayload = 200 << 20
	// maxServerRSS bounds the server's peak resident memory while the
	// large archive passes through: far less than the archive itself.
	maxServerRSS = 96 << 20
	// maxRSSGrowth bounds how much the server's peak resident memory may
	// grow from an upload of the plain example provider (some 15 MiB) to
	// the large one: a server that buffered uploads would grow by about
	// the difference, close to 200 MiB.
	maxRSSGrowth = 32 << 20
	// stagedBeforeKill is how much of the archive must be staged before
	// the server is killed.
	stagedBeforeKill = 8 << 20
)

// TestCrashDuringPublish kills the server (SIGKILL) while a 200 MiB
// archive is being uploaded, restarts it on the same data directory and
// checks that nothing of the interrupted version is visible, that
// publishing it again succeeds in constant server memory, and that it
// then installs.
//
// Constant memory is judged by the server's peak resident set size
// (VmHWM): after a publish of a small archive (the plain example
// provider) and again after the 200 MiB one, on the same process. The
// peak may not grow by more than maxRSSGrowth nor exceed maxServerRSS.
func TestCrashDuringPublish(t *testing.T) {
	requireTerraform(t)
	requireNonRaceBuild(t)
	dataDir := filepath.Join(t.TempDir(), "data")
	srv := startTrove(t, dataDir)
	key, publishToken := setupNamespace(t, srv)
	rel := packageRelease(t, key, releaseSpec{
		Version:   "4.0.0",
		Platforms: []string{hostPlatform},
		Extra:     []zipEntry{{Name: "payload.bin", Random: crashPayload}},
	})
	small := packageRelease(t, key, releaseSpec{Version: "3.9.0", Platforms: []string{hostPlatform}})
	zipDigest := rel.zipDigest(t, hostPlatform)
	largeSize := fileSize(t, rel.path(rel.zipName(hostPlatform)))
	if largeSize < 200<<20 {
		t.Fatalf("the large archive is %d MiB, want at least 200 MiB", largeSize>>20)
	}

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

	t.Run("publish again in constant memory and install", func(t *testing.T) {
		publish(t, srv2, publishToken, small)
		peakSmall := vmHWM(t, srv2.pid())
		out := publish(t, srv2, publishToken, rel)
		if !strings.Contains(out, "Published") {
			t.Errorf("trove publish printed %q, want it to report the published version", out)
		}
		peak := vmHWM(t, srv2.pid())
		t.Logf("server peak RSS: %d MiB after a %d MiB archive, %d MiB after a %d MiB archive",
			peakSmall>>20, fileSize(t, small.path(small.zipName(hostPlatform)))>>20, peak>>20, largeSize>>20)
		if peak-peakSmall > maxRSSGrowth {
			t.Errorf("server peak RSS grew by %d MiB from the small upload to the %d MiB one, want at most %d MiB: uploads must stream",
				(peak-peakSmall)>>20, largeSize>>20, maxRSSGrowth>>20)
		}
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

// requireNonRaceBuild fails the test if the trove binary under test was
// built with the race detector, whose shadow memory would distort any
// measurement of the server's memory use.
func requireNonRaceBuild(t *testing.T) {
	t.Helper()
	info, err := buildinfo.ReadFile(troveBin)
	if err != nil {
		t.Fatalf("reading the build information of %s: %v", troveBin, err)
	}
	for _, s := range info.Settings {
		if s.Key == "-race" && s.Value == "true" {
			t.Fatalf("%s was built with -race; memory limits apply to a normal build", troveBin)
		}
	}
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

// crashRounds is how many publishes TestCrashAnywhereDuringPublish
// interrupts.
const crashRounds = 12

// TestCrashAnywhereDuringPublish kills the server (SIGKILL) at moments
// spread over a whole publish, from before `trove publish` connects to
// after it would have finished: while the small files, the archives or
// the commit are in flight. Each round publishes a new version of a small
// two-platform release, kills the server after its round's delay, restarts
// it on the same data directory and checks that the version is either
// wholly absent or wholly present (see checkAllOrNothing), that a publish
// the CLI reported as done survived, that no staged upload is left, and
// that publishing again then yields the whole version.
//
// The delays are fractions of one uninterrupted publish measured at the
// start; no assertion depends on timing, only on which state a crash may
// leave behind.
func TestCrashAnywhereDuringPublish(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	srv := startTrove(t, dataDir)
	adminToken := srv.AdminToken
	key, publishToken := setupNamespace(t, srv)

	// Two uninterrupted publishes: the first warms the server up (the
	// rounds run on servers that have just served a publish); the
	// second's duration sets the time scale of the kills.
	var took time.Duration
	var before []*dist
	for _, v := range []string{"5.0.0", "5.0.100"} {
		d := packageRelease(t, key, releaseSpec{Version: v})
		start := time.Now()
		publish(t, srv, publishToken, d)
		took = time.Since(start)
		if !checkAllOrNothing(t, srv, d) {
			t.Fatalf("%s is not served after an uninterrupted publish", d.Version)
		}
		before = append(before, d)
	}
	t.Logf("an uninterrupted publish took %s", took.Round(time.Millisecond))

	outcomes := map[bool]int{}
	for round := range crashRounds {
		// From 0 to 1.5 times the measured publish, evenly spaced.
		delay := took * time.Duration(3*round) / time.Duration(2*(crashRounds-1))
		d := packageRelease(t, key, releaseSpec{Version: fmt.Sprintf("5.0.%d", round+1)})
		res := publishAndKill(t, srv, publishToken, d, delay)
		srv = startTrove(t, dataDir) // on t, not a subtest: the server outlives the round
		srv.AdminToken = adminToken

		present := checkAllOrNothing(t, srv, d)
		outcomes[present]++
		t.Logf("%s: killed %s into the publish (trove publish exit %d); after the restart the version is %s",
			d.Version, delay.Round(time.Millisecond), res.Code, map[bool]string{true: "present", false: "absent"}[present])
		if res.Code == 0 && !present {
			t.Errorf("trove publish reported success, yet %s is gone after the crash:\n%s", d.Version, res.Stdout)
		}
		if left := stagedFiles(t, dataDir); len(left) > 0 {
			t.Errorf("%s: staged uploads left after the restart: %q", d.Version, left)
		}
		if left := blobTemps(t, dataDir); len(left) > 0 {
			// The blob store removes at start the temporary files of
			// every process that is gone (their locks are free).
			t.Errorf("%s: temporary blob files left by the crash after the restart: %q", d.Version, left)
		}

		publish(t, srv, publishToken, d)
		if !checkAllOrNothing(t, srv, d) {
			t.Errorf("%s is not served after publishing it again", d.Version)
		}
	}
	t.Logf("%d rounds left the version absent, %d present", outcomes[false], outcomes[true])
	for _, d := range before {
		if !checkAllOrNothing(t, srv, d) {
			t.Errorf("%s, published before the crashes, is no longer served", d.Version)
		}
	}
}

// publishAndKill runs `trove publish` for d, kills the server delay after
// starting it (or once it ends, if sooner) and returns what the CLI did.
func publishAndKill(t *testing.T, s *troveServer, token string, d *dist, delay time.Duration) cliResult {
	t.Helper()
	type outcome struct {
		res cliResult
		err error
	}
	done := make(chan outcome, 1)
	home := t.TempDir()
	go func() {
		res, err := s.runCLI(t.Context(), home, token, "publish", "--namespace", namespace, d.Dir)
		done <- outcome{res, err}
	}()
	var o outcome
	select {
	case <-time.After(delay):
		s.kill()
		o = <-done
	case o = <-done:
		s.kill()
	}
	if o.err != nil {
		t.Fatal(o.err)
	}
	if o.res.Code != 0 && o.res.Code != 1 {
		t.Errorf("trove publish cut off by a crash: exit %d, want 0 or 1\nstderr: %s", o.res.Code, o.res.Stderr)
	}
	return o.res
}

// checkAllOrNothing reports whether the version of d is published and
// checks that it is so wholly or not at all, everywhere: the versions
// document, the API's version and provider detail, and every platform's
// download document agree, and a present version serves each archive
// with the digest SHA256SUMS gives it, and the very SHA256SUMS and
// signature of d.
func checkAllOrNothing(t *testing.T, s *troveServer, d *dist) bool {
	t.Helper()
	platforms, inVersions := getVersions(t, s).platforms()[d.Version]

	auth := http.Header{"Authorization": {"Bearer " + s.AdminToken}}
	apiVersion := s.do(t, http.MethodGet, "/api/v1/namespaces/"+namespace+"/providers/"+providerType+"/versions/"+d.Version, auth)
	if apiVersion.Status != http.StatusOK && apiVersion.Status != http.StatusNotFound {
		t.Fatalf("API GET of %s: status %d, want 200 or 404: %s", d.Version, apiVersion.Status, apiVersion.Body)
	}
	inAPI := apiVersion.Status == http.StatusOK

	var detail apispec.ProviderDetail
	if r := s.do(t, http.MethodGet, "/api/v1/namespaces/"+namespace+"/providers/"+providerType, auth); r.Status == http.StatusOK {
		if err := json.Unmarshal(r.Body, &detail); err != nil {
			t.Fatalf("API provider detail %s: %v", r.Body, err)
		}
	} else if r.Status != http.StatusNotFound {
		t.Fatalf("API provider detail: status %d: %s", r.Status, r.Body)
	}
	inListing := slices.ContainsFunc(detail.Versions, func(v apispec.ProviderVersion) bool { return v.Version == d.Version })

	if inVersions != inAPI || inAPI != inListing {
		t.Errorf("%s is half published: in the versions document %v, API version %v, API provider listing %v",
			d.Version, inVersions, inAPI, inListing)
	}
	present := inVersions || inAPI || inListing

	want := slices.Sorted(slices.Values(d.Platforms))
	if present && !slices.Equal(platforms, want) {
		t.Errorf("versions document lists %s for %v, want %v", d.Version, platforms, want)
	}
	listed := parseSums(t, d.sums(t))
	for _, p := range d.Platforms {
		if !present {
			if r := s.get(t, downloadURL(t, s, d.Version, p)); r.Status != http.StatusNotFound {
				t.Errorf("download document of the absent %s for %s: status %d, want 404: %s", d.Version, p, r.Status, r.Body)
			}
			continue
		}
		r := s.get(t, downloadURL(t, s, d.Version, p))
		if r.Status != http.StatusOK {
			t.Errorf("download document of %s for %s: status %d, want 200: %s", d.Version, p, r.Status, r.Body)
			continue
		}
		var doc downloadDoc
		if err := json.Unmarshal(r.Body, &doc); err != nil {
			t.Fatalf("download document %s: %v", r.Body, err)
		}
		if want := listed[d.zipName(p)]; doc.SHASum != want {
			t.Errorf("download document of %s for %s: shasum %s, want %s from SHA256SUMS", d.Version, p, doc.SHASum, want)
		}
		if a := s.get(t, r.resolve(t, doc.DownloadURL)); a.Status != http.StatusOK || sha256Hex(a.Body) != listed[d.zipName(p)] {
			t.Errorf("archive of %s for %s: status %d, SHA-256 %s; want 200 and %s from SHA256SUMS",
				d.Version, p, a.Status, sha256Hex(a.Body), listed[d.zipName(p)])
		}
		if a := s.get(t, r.resolve(t, doc.SHASumsURL)); a.Status != http.StatusOK || !bytes.Equal(a.Body, d.sums(t)) {
			t.Errorf("SHA256SUMS of %s: status %d, SHA-256 %s; want 200 and the release's SHA256SUMS", d.Version, a.Status, sha256Hex(a.Body))
		}
		if a := s.get(t, r.resolve(t, doc.SHASumsSignatureURL)); a.Status != http.StatusOK || !bytes.Equal(a.Body, d.read(t, d.sigName())) {
			t.Errorf("signature of %s: status %d, SHA-256 %s; want 200 and the release's signature", d.Version, a.Status, sha256Hex(a.Body))
		}
	}
	return present
}

// parseSums maps file names to digests of a SHA256SUMS file.
func parseSums(t *testing.T, sums []byte) map[string]string {
	t.Helper()
	m := map[string]string{}
	for line := range strings.Lines(string(sums)) {
		digest, name, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "  ")
		if !ok {
			t.Fatalf("malformed SHA256SUMS line %q", line)
		}
		m[name] = digest
	}
	return m
}

// blobTemps lists the files in the blob store's temporary directory of
// dataDir (see blobTempFiles).
func blobTemps(t *testing.T, dataDir string) []string {
	t.Helper()
	return blobTempFiles(t, filepath.Join(dataDir, "blobs"))
}
