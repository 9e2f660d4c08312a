package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestFlushingWriter(t *testing.T) {
	var out lockedBuffer
	w := newFlushingWriter(&out, time.Hour)
	w.Write([]byte("line 1\n"))
	if out.String() != "" {
		t.Fatalf("written before a flush: %q", out.String())
	}
	w.Close()
	if out.String() != "line 1\n" {
		t.Fatalf("after Close = %q, want the buffered line", out.String())
	}

	var ticked lockedBuffer
	w = newFlushingWriter(&ticked, time.Millisecond)
	defer w.Close()
	w.Write([]byte("line 2\n"))
	for i := 0; i < 2000 && !strings.Contains(ticked.String(), "line 2"); i++ {
		time.Sleep(time.Millisecond)
	}
	if !strings.Contains(ticked.String(), "line 2") {
		t.Fatal("the periodic flush never wrote the line")
	}
}
