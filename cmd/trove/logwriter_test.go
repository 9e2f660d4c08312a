package main

import (
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/trovetest/logbuf"
)

func TestFlushingWriter(t *testing.T) {
	var out logbuf.Buffer
	w := newFlushingWriter(&out, time.Hour)
	w.Write([]byte("line 1\n"))
	if out.String() != "" {
		t.Fatalf("written before a flush: %q", out.String())
	}
	w.Close()
	if out.String() != "line 1\n" {
		t.Fatalf("after Close = %q, want the buffered line", out.String())
	}

	var ticked logbuf.Buffer
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
