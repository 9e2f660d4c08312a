package main

import (
	"io"
	"strings"
	"testing"
	"time"
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
