package server

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"trove.dev/trove/internal/reqtime"
)

// deadlineWriter records what the middleware asks of the connection.
type deadlineWriter struct {
	h              http.Header
	readDeadlines  []time.Time
	writeDeadlines []time.Time
	readFrom       []io.Reader
	written        int64
}

func (w *deadlineWriter) Header() http.Header { return w.h }
func (w *deadlineWriter) WriteHeader(int)     {}
func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.written += int64(len(p))
	return len(p), nil
}

func (w *deadlineWriter) ReadFrom(src io.Reader) (int64, error) {
	w.readFrom = append(w.readFrom, src)
	n, err := io.Copy(io.Discard, src)
	w.written += n
	return n, err
}

func (w *deadlineWriter) SetReadDeadline(t time.Time) error {
	w.readDeadlines = append(w.readDeadlines, t)
	return nil
}

func (w *deadlineWriter) SetWriteDeadline(t time.Time) error {
	w.writeDeadlines = append(w.writeDeadlines, t)
	return nil
}

// TestRecorderKeepsSendfile checks that a file served the way
// http.ServeContent does reaches the connection as *io.LimitedReader over
// the *os.File (what net.TCPConn hands to sendfile), in chunks covered by
// write deadlines.
func TestRecorderKeepsSendfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "blob")
	const size = sendfileChunk*2 + 100
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	under := &deadlineWriter{h: http.Header{}}
	rec := &recorder{ResponseWriter: under}
	n, err := io.CopyN(rec, f, size) // what ServeContent does
	if err != nil || n != size || rec.bytes != size || under.written != size {
		t.Fatalf("copied %d (recorded %d, written %d), %v; want %d", n, rec.bytes, under.written, err, size)
	}
	if len(under.readFrom) != 3 {
		t.Fatalf("%d ReadFrom calls, want 3 chunks", len(under.readFrom))
	}
	for i, src := range under.readFrom {
		lr, ok := src.(*io.LimitedReader)
		if !ok {
			t.Fatalf("chunk %d reached the connection as %T", i, src)
		}
		if _, ok := lr.R.(*os.File); !ok {
			t.Fatalf("chunk %d wraps %T, want *os.File", i, lr.R)
		}
	}
	if len(under.writeDeadlines) != 2 {
		t.Fatalf("%d write deadlines, want one per full chunk (the 100-byte tail rides on the last)", len(under.writeDeadlines))
	}
	if rec.status != http.StatusOK {
		t.Fatalf("status %d", rec.status)
	}
}

func TestRecorderWriteDeadlines(t *testing.T) {
	under := &deadlineWriter{h: http.Header{}}
	rec := &recorder{ResponseWriter: under}
	_, _ = rec.Write(make([]byte, 1000))
	if len(under.writeDeadlines) != 0 {
		t.Fatal("a small response set a write deadline")
	}
	before := time.Now()
	_, _ = rec.Write(make([]byte, deadlineFreeSize))
	if len(under.writeDeadlines) != 1 {
		t.Fatalf("%d write deadlines after a large write", len(under.writeDeadlines))
	}
	if d := under.writeDeadlines[0]; d.Before(before.Add(BodyIdleTimeout)) {
		t.Fatalf("write deadline %v leaves less than %v", d.Sub(before), BodyIdleTimeout)
	}
	_, _ = rec.Write(make([]byte, 1000))
	if len(under.writeDeadlines) != 1 {
		t.Fatal("a small write right after extended the deadline again")
	}
	_, _ = rec.Write(make([]byte, 10*deadlineFreeSize))
	if len(under.writeDeadlines) != 2 || !under.writeDeadlines[1].After(under.writeDeadlines[0]) {
		t.Fatalf("a large write did not get its own, longer deadline: %v", under.writeDeadlines)
	}
}

func TestIdleReader(t *testing.T) {
	under := &deadlineWriter{h: http.Header{}}
	body := newIdleReader(io.NopCloser(strings.NewReader("hello")), under)
	if len(under.readDeadlines) != 1 || under.readDeadlines[0].IsZero() {
		t.Fatalf("no deadline before the first read: %v", under.readDeadlines)
	}
	data, err := io.ReadAll(body)
	if err != nil || string(data) != "hello" {
		t.Fatalf("read %q, %v", data, err)
	}
	if n := len(under.readDeadlines); n != 2 || !under.readDeadlines[1].IsZero() {
		t.Fatalf("deadlines %v: want the first one kept (reads within a quarter of the timeout) and cleared at EOF, "+
			"or net/http's background read would cancel the request", under.readDeadlines)
	}
	// A writer that cannot take deadlines gets the body unchanged.
	plain := io.NopCloser(strings.NewReader("x"))
	if got := newIdleReader(plain, struct{ http.ResponseWriter }{}); got != plain {
		t.Fatal("body wrapped without a deadline to set")
	}
}

func TestMethodLabel(t *testing.T) {
	tests := map[string]string{"GET": "GET", "HEAD": "HEAD", "POST": "POST", "PROPFIND": "OTHER", "get": "OTHER", "": "OTHER"}
	for in, want := range tests {
		if got := methodLabel(in); got != want {
			t.Errorf("methodLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSecurityHeaders: every answer with content carries nosniff and the
// strict CSP (a handler's own CSP is kept), whether the handler calls
// WriteHeader or only writes; a 204 or 304 carries neither.
func TestSecurityHeaders(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/explicit", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) })
	mux.HandleFunc("/implicit", func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("{}")) })
	mux.HandleFunc("/page", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'")
		w.Write([]byte("<p>hi</p>"))
	})
	mux.HandleFunc("/own-nosniff", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Write([]byte("{}"))
	})
	mux.HandleFunc("/empty", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("/same", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNotModified) })
	m, err := newMetrics(prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &middleware{next: mux, log: discardLogger(), metrics: m}
	want := map[string][2][]string{
		"/explicit":    {{"nosniff"}, contentPolicy},
		"/implicit":    {{"nosniff"}, contentPolicy},
		"/page":        {{"nosniff"}, {"default-src 'self'"}},
		"/own-nosniff": {{"nosniff"}, contentPolicy},
		"/missing":     {{"nosniff"}, contentPolicy},
		"/empty":       {nil, nil},
		"/same":        {nil, nil},
	}
	check := func(proto, path string, status int, hdr http.Header) {
		t.Helper()
		got := [2][]string{hdr["X-Content-Type-Options"], hdr["Content-Security-Policy"]}
		if !slices.Equal(got[0], want[path][0]) || !slices.Equal(got[1], want[path][1]) {
			t.Errorf("%s %s (status %d): nosniff and CSP %q, want each exactly %q", proto, path, status, got, want[path])
		}
	}
	for path := range want {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		check("HTTP/1.1", path, rec.Code, rec.Header())
	}

	// Over HTTP/2 the middleware sets the names in lower case; what the
	// client reads must be the same, each header once.
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	for path := range want {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.ProtoMajor != 2 {
			t.Fatalf("%s: HTTP/%d, want HTTP/2", path, resp.ProtoMajor)
		}
		check("HTTP/2", path, resp.StatusCode, resp.Header)
	}
}

// TestMiddlewareHandsDownRequestTime: the handlers behind the middleware
// get the time their request arrived (reqtime.Of) from the writer, the
// reading the request's duration is measured from, not a clock reading
// of their own.
func TestMiddlewareHandsDownRequestTime(t *testing.T) {
	var got []time.Time
	mux := http.NewServeMux()
	mux.HandleFunc("/t", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := w.(reqtime.Carrier); !ok {
			t.Errorf("the handler's writer %T carries no request time", w)
		}
		got = append(got, reqtime.Of(w))
		time.Sleep(time.Millisecond) // a later reading would differ
		got = append(got, reqtime.Of(w))
	})
	m, err := newMetrics(prometheus.NewRegistry(), nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &middleware{next: mux, log: slog.New(slog.DiscardHandler), metrics: m}
	before := time.Now()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/t", nil))
	after := time.Now()
	if len(got) != 2 || got[0].Before(before) || got[0].After(after) || !got[1].Equal(got[0]) {
		t.Errorf("request times %v, want one time between %v and %v", got, before, after)
	}
}
