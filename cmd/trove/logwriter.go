package main

import (
	"bufio"
	"io"
	"sync"
	"time"
)

// flushingWriter buffers log output and writes it out at least every
// interval, when the buffer fills, and on Close. A busy server then pays
// one write(2) per batch of log lines instead of one per request; at most
// one interval of lines is lost if the process is killed.
type flushingWriter struct {
	mu   sync.Mutex
	buf  *bufio.Writer
	stop chan struct{}
	done chan struct{}
}

func newFlushingWriter(w io.Writer, interval time.Duration) *flushingWriter {
	f := &flushingWriter{buf: bufio.NewWriterSize(w, 64<<10), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				f.flush()
			case <-f.stop:
				f.flush()
				return
			}
		}
	}()
	return f
}

// Write buffers p. slog handlers write whole lines, so lines never interleave.
func (f *flushingWriter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.buf.Write(p)
}

func (f *flushingWriter) flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	_ = f.buf.Flush()
}

// Close flushes what is buffered and stops the background flusher.
func (f *flushingWriter) Close() error {
	close(f.stop)
	<-f.done
	return nil
}
