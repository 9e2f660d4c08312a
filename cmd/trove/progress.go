package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"
)

// Progress display: drawn on stderr only when it is a terminal (never in
// CI logs), and only once a transfer has taken progressDelay, so that
// quick ones print nothing.
var (
	progressDelay    = time.Second
	progressInterval = 200 * time.Millisecond
	// stderrIsTerminal reports whether w is a terminal; tests replace it.
	stderrIsTerminal = func(w io.Writer) bool {
		f, ok := w.(*os.File)
		return ok && term.IsTerminal(int(f.Fd()))
	}
)

// progress shows the bytes of one transfer, its total (if known) and its
// rate on one line of stderr. A nil *progress does nothing.
type progress struct {
	w     io.Writer
	label string
	total int64 // <= 0: unknown
	start time.Time
	n     atomic.Int64

	stop    chan struct{}
	stopped sync.WaitGroup
	drawn   bool // only the drawing goroutine and finish (after it ended) touch it
}

// newProgress starts a progress line for a transfer of total bytes (0 if
// unknown) labelled label ("Uploading"), or returns nil when stderr is not
// a terminal or CI is set.
func newProgress(e env, label string, total int64) *progress {
	if !stderrIsTerminal(e.stderr) || e.getenv("CI") != "" || e.getenv("TERM") == "dumb" {
		return nil
	}
	p := &progress{w: e.stderr, label: label, total: total, start: time.Now(), stop: make(chan struct{})}
	p.stopped.Add(1)
	go p.run()
	return p
}

func (p *progress) run() {
	defer p.stopped.Done()
	t := time.NewTicker(progressInterval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			if time.Since(p.start) >= progressDelay {
				p.draw()
			}
		}
	}
}

// draw rewrites the progress line.
func (p *progress) draw() {
	n := p.n.Load()
	elapsed := time.Since(p.start).Seconds()
	line := p.label + " " + size(n)
	if p.total > 0 {
		line += " / " + size(p.total) + fmt.Sprintf(" (%d%%)", min(100, n*100/p.total))
	}
	if elapsed > 0 {
		line += ", " + size(int64(float64(n)/elapsed)) + "/s"
	}
	fmt.Fprintf(p.w, "\r%s\x1b[K", line) // \x1b[K clears what a longer line left
	p.drawn = true
}

// reader counts what is read through r.
func (p *progress) reader(r io.Reader) io.Reader {
	if p == nil {
		return r
	}
	return &countingReader{r: r, n: &p.n}
}

// finish stops the display; a transfer that took progressDelay or more
// ends with its final numbers and a line break.
func (p *progress) finish() {
	if p == nil {
		return
	}
	close(p.stop)
	p.stopped.Wait()
	if p.drawn || time.Since(p.start) >= progressDelay {
		p.draw()
		fmt.Fprintln(p.w)
	}
}

type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// readCloser pairs a reader with the Close of another.
type readCloser struct {
	io.Reader
	io.Closer
}
