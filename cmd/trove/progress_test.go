package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest"
)

// forceTerminal makes stderr count as a terminal and every transfer as a
// slow one.
func forceTerminal(t *testing.T) {
	oldTerm, oldDelay := stderrIsTerminal, progressDelay
	stderrIsTerminal = func(io.Writer) bool { return true }
	progressDelay = 0
	t.Cleanup(func() { stderrIsTerminal, progressDelay = oldTerm, oldDelay })
}

func TestUploadProgress(t *testing.T) {
	dir := writeDist(t,
		"terraform-provider-foo_1.0.0_SHA256SUMS", "terraform-provider-foo_1.0.0_SHA256SUMS.sig",
		"terraform-provider-foo_1.0.0_linux_amd64.zip")

	// Not a terminal: no progress line.
	f := newFakeAPI(t)
	if r := runTrove(t, f.env(), "", "publish", "--namespace", "acme", dir); r.code != exitOK || strings.Contains(r.stderr, "\r") {
		t.Errorf("publish without a terminal: exit %d, stderr %q", r.code, r.stderr)
	}

	forceTerminal(t)
	r := runTrove(t, f.env(), "", "publish", "--namespace", "acme", dir)
	if r.code != exitOK {
		t.Fatalf("publish: exit %d\n%s", r.code, r.stderr)
	}
	// The final line: every byte of the files, of their total, and a rate.
	last := r.stderr[strings.LastIndex(r.stderr, "\r")+1:]
	if !strings.HasPrefix(last, "Uploaded ") || !strings.Contains(last, "(100%)") || !strings.Contains(last, "/s") || !strings.HasSuffix(last, "\n") {
		t.Errorf("progress line %q, want the total, 100%% and a rate", last)
	}
	if r.stdout != "Published acme/foo 1.0.0 for linux_amd64, darwin_arm64\n" {
		t.Errorf("stdout %q: the progress went to stdout?", r.stdout)
	}

	// CI logs never get one, terminal or not.
	env := f.env()
	env["CI"] = "true"
	if r := runTrove(t, env, "", "publish", "--namespace", "acme", dir); r.code != exitOK || strings.Contains(r.stderr, "\r") {
		t.Errorf("publish with CI set: exit %d, stderr %q", r.code, r.stderr)
	}
}

func TestProgressLine(t *testing.T) {
	var b strings.Builder
	p := &progress{w: &b, label: "Uploaded", total: 4 << 20, start: time.Now().Add(-2 * time.Second)}
	p.n.Store(1 << 20)
	p.draw()
	if got := b.String(); !strings.HasPrefix(got, "\rUploaded 1.0 MiB / 4.0 MiB (25%), ") || !strings.HasSuffix(got, "/s\x1b[K") {
		t.Errorf("progress line %q", got)
	}
}

// TestProgressWithoutTerminal: on a writer that is no terminal, publish,
// module publish and bundle export/import write a quiet line per file (or
// per transfer) with its bytes and never redraw a line; --json writes none.
func TestProgressWithoutTerminal(t *testing.T) {
	s, dst := trovetest.Start(t), trovetest.Start(t)
	env := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile, "HOME": t.TempDir()}
	dstEnv := map[string]string{"TROVE_ADDR": dst.URL, "TROVE_TOKEN": dst.AdminToken, "TROVE_CA_FILE": dst.CAFile, "HOME": t.TempDir()}
	run := func(args ...string) result {
		t.Helper()
		r := runTrove(t, env, "", args...)
		if r.code != exitOK {
			t.Fatalf("trove %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
		if strings.ContainsAny(r.stderr, "\r\x1b") {
			t.Errorf("trove %s redraws a line without a terminal: %q", strings.Join(args, " "), r.stderr)
		}
		return r
	}
	run("namespace", "create", "acme")
	key := signingtest.NewKey(t, "acme")
	if r := runTrove(t, env, key.ArmoredPublic, "key", "add", "acme", "--file", "-"); r.code != exitOK {
		t.Fatal(r.stderr)
	}
	dist := writeSignedDist(t, key, "foo", "1.2.0", "linux_amd64", "darwin_arm64")
	r := run("publish", "--namespace", "acme", dist)
	for _, name := range []string{"terraform-provider-foo_1.2.0_SHA256SUMS", "terraform-provider-foo_1.2.0_linux_amd64.zip", "terraform-provider-foo_1.2.0_darwin_arm64.zip"} {
		fi, err := os.Stat(filepath.Join(dist, name))
		if err != nil {
			t.Fatal(err)
		}
		if want := "Uploaded " + name + " (" + size(fi.Size()) + ")\n"; !strings.Contains(r.stderr, want) {
			t.Errorf("publish stderr %q lacks the line %q", r.stderr, want)
		}
	}
	if strings.Contains(r.stdout, "Uploaded") {
		t.Errorf("publish wrote its progress to stdout: %q", r.stdout)
	}

	out := filepath.Join(t.TempDir(), "acme.tar")
	r = run("bundle", "export", "--output", out, "--provider", s.Host+"/acme/foo@1.2.0")
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Downloaded " + size(fi.Size()) + "\n"; !strings.Contains(r.stderr, want) {
		t.Errorf("bundle export stderr %q lacks %q", r.stderr, want)
	}
	env = dstEnv // import into another Trove
	r = run("bundle", "import", out)
	if want := "Uploaded " + size(fi.Size()) + "\n"; !strings.Contains(r.stderr, want) {
		t.Errorf("bundle import stderr %q lacks %q", r.stderr, want)
	}

	// --json: the document alone, no progress of any kind.
	r = run("bundle", "import", out, "--json")
	if strings.Contains(r.stderr, "Uploaded") {
		t.Errorf("bundle import --json wrote progress: %q", r.stderr)
	}
	env = map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile, "HOME": t.TempDir()}
	r = run("bundle", "export", "--output", out, "--provider", s.Host+"/acme/foo@1.2.0", "--json")
	if strings.Contains(r.stderr, "Downloaded") {
		t.Errorf("bundle export --json wrote progress: %q", r.stderr)
	}
}

// TestProgressQuietLines: the quiet lines of files, and of a transfer
// that names none, on a writer that is no terminal.
func TestProgressQuietLines(t *testing.T) {
	var b strings.Builder
	cl := &cli{env: env{getenv: func(string) string { return "" }, stderr: &b}}
	p := newProgress(cl, "Uploaded", 0)
	for _, name := range []string{"a.zip", "b\x1b[2J.zip"} {
		if _, err := io.Copy(io.Discard, p.fileReader(name, strings.NewReader("12345"))); err != nil {
			t.Fatal(err)
		}
	}
	p.finish()
	if got, want := b.String(), "Uploaded a.zip (5 B)\nUploaded b?[2J.zip (5 B)\n"; got != want {
		t.Errorf("quiet lines %q, want %q", got, want)
	}

	b.Reset()
	p = newProgress(cl, "Downloaded", 0)
	_, _ = io.Copy(p.writer(io.Discard), strings.NewReader("123"))
	p.finish()
	if got := b.String(); got != "Downloaded 3 B\n" {
		t.Errorf("the line of a transfer naming no file: %q", got)
	}

	b.Reset()
	cl.jsonOut = true
	if p := newProgress(cl, "Uploaded", 0); p != nil {
		t.Errorf("newProgress with --json = %+v, want nil (no progress)", p)
	}
}

// TestProgressPrintln: a line printed during a transfer on a terminal
// clears the progress line first instead of running into it.
func TestProgressPrintln(t *testing.T) {
	forceTerminal(t)
	var errOut, out strings.Builder
	p := &progress{w: &errOut, label: "Downloaded", start: time.Now()}
	p.draw()
	p.println(&out, "Fetched acme/foo 1.0.0 linux_amd64")
	if got := errOut.String(); !strings.HasSuffix(got, "\r\x1b[K") {
		t.Errorf("progress output %q: the line was not cleared before the print", got)
	}
	if out.String() != "Fetched acme/foo 1.0.0 linux_amd64\n" {
		t.Errorf("printed %q", out.String())
	}
}
