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

// progress shows the bytes of a transfer. On a terminal (stderr one, CI
// unset, TERM not dumb) it draws the bytes done, their total (if known)
// and the rate on one line it redraws; otherwise it writes a quiet line
// per file once the file is sent (fileReader), or one line with the bytes
// of a transfer that names no files. A command asked for --json shows
// none. A nil *progress does nothing.
type progress struct {
	w     io.Writer
	label string
	total int64 // <= 0: unknown
	start time.Time
	n     atomic.Int64
	lines bool // not a terminal: quiet lines, nothing redrawn

	mu    sync.Mutex // guards drawn, files and the writes to w
	drawn bool
	files int // quiet lines written

	stop    chan struct{}
	stopped sync.WaitGroup
}

// newProgress starts showing a transfer of total bytes (0 if unknown)
// labelled label ("Uploaded") for cl, or returns nil when cl prints
// --json.
func newProgress(cl *cli, label string, total int64) *progress {
	if cl.jsonOut {
		return nil
	}
	p := &progress{w: cl.stderr, label: label, total: total, start: time.Now()}
	if !stderrIsTerminal(cl.stderr) || cl.getenv("CI") != "" || cl.getenv("TERM") == "dumb" {
		p.lines = true
		return p
	}
	p.stop = make(chan struct{})
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
				p.mu.Lock()
				p.draw()
				p.mu.Unlock()
			}
		}
	}
}

// draw rewrites the progress line; p.mu is held (or p is not shared).
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

// fileReader counts what is read through r, the file name; without a
// terminal, the end of r writes the file's quiet line.
func (p *progress) fileReader(name string, r io.Reader) io.Reader {
	if p == nil {
		return r
	}
	return &countingReader{r: r, n: &p.n, onEOF: func(n int64) { p.fileDone(name, n) }}
}

// fileDone writes the quiet line of a file of n bytes sent (none on a
// terminal, where the progress line shows it).
func (p *progress) fileDone(name string, n int64) {
	if p == nil || !p.lines {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.files++
	fmt.Fprintf(p.w, "%s %s (%s)\n", p.label, printable(name), size(n))
}

// println writes line and a line break to w (stdout, say) without
// mixing it into the progress line: the line is cleared first and
// redrawn at the next tick.
func (p *progress) println(w io.Writer, line string) {
	if p == nil || p.lines {
		fmt.Fprintln(w, line)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
	fmt.Fprintln(w, line)
}

// finish stops the display. On a terminal, a transfer that took
// progressDelay or more ends with its final numbers and a line break;
// otherwise a transfer that wrote no file's line ends with one line of
// its bytes.
func (p *progress) finish() {
	if p == nil {
		return
	}
	if p.lines {
		p.mu.Lock()
		defer p.mu.Unlock()
		if n := p.n.Load(); p.files == 0 && n > 0 {
			fmt.Fprintf(p.w, "%s %s\n", p.label, size(n))
		}
		return
	}
	close(p.stop)
	p.stopped.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn || time.Since(p.start) >= progressDelay {
		p.draw()
		fmt.Fprintln(p.w)
	}
}

type countingReader struct {
	r     io.Reader
	n     *atomic.Int64
	onEOF func(read int64) // called once, at the first io.EOF; may be nil
	read  int64
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	c.read += int64(n)
	if err == io.EOF && c.onEOF != nil {
		c.onEOF(c.read)
		c.onEOF = nil
	}
	return n, err
}

// readCloser pairs a reader with the Close of another.
type readCloser struct {
	io.Reader
	io.Closer
}
