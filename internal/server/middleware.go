package server

import (
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
)

// Security headers of every response. The values are shared and assigned
// without copying: net/http never modifies them, and their capacity equals
// their length so an append copies. Every answer but the login page is
// JSON or a file, hence the strictest policy; its frame-ancestors is what
// keeps every answer out of frames (X-Frame-Options is obsolete where
// CSP 2 is understood, and Referrer-Policy only governs requests a
// document makes: the HTML pages set both themselves). Each header costs
// every request a little on both ends, which matters on the tiny
// protocol answers; and a providers.v1 or modules.v1 document's gzip
// answer already has eight (these two, Vary, ETag, Cache-Control,
// Content-Type, Content-Encoding, Content-Length), the most a Go map holds
// without a table: a ninth makes the handler's header map and net/http's
// copy of it allocate tables on every answer (a Date set here measured 5
// allocations and 1.1 KB more a request; docs/benchmarks.md). The OCI API's
// answers carry its own headers beyond these.
var (
	nosniff       = []string{"nosniff"}
	contentPolicy = []string{"default-src 'none'; frame-ancestors 'none'"}
	noStore       = []string{"no-store"}
)

// unmatchedRoute labels requests no pattern matched.
const unmatchedRoute = "unmatched"

// Large responses must keep moving: a write gets BodyIdleTimeout plus the
// time its size takes at minTransferRate, so a client that stops reading
// cannot hold a connection forever while a slow link still completes.
const (
	minTransferRate  = 8 << 10 // bytes per second
	deadlineFreeSize = 64 << 10
	sendfileChunk    = 8 << 20
)

// middleware wraps every route: panic recovery, metrics by route pattern,
// access log, security headers (on every answer with content),
// progress deadlines, and the refusal of non-canonical paths (paths.go)
// and of requests with more than one Authorization header.
type middleware struct {
	next    http.Handler
	log     *slog.Logger
	access  *AccessLog // nil: access lines go through log
	metrics *metrics
}

var recorders = sync.Pool{New: func() any { return new(recorder) }}

func (m *middleware) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 2 {
		growStack(false) // a new goroutine per request: see growStack
	}
	start := time.Now()
	rec := recorders.Get().(*recorder)
	*rec = recorder{ResponseWriter: w, start: start, h2: r.ProtoMajor == 2}
	if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
		r.Body = newIdleReader(r.Body, w)
	}
	m.metrics.inFlight.Inc()
	defer m.finish(rec, r, start)
	defer m.recover(rec, r)
	if err := pathError(r.URL); err != nil {
		httpjson.WriteError(m.log, rec, r, err) // see paths.go
		return
	}
	if len(r.Header["Authorization"]) > 1 {
		// Which credentials count would be each reader's guess (every
		// reader of the header takes the first; a proxy may take
		// another): no route sees such a request.
		httpjson.WriteError(m.log, rec, r, errTwoAuthorizations)
		return
	}
	m.next.ServeHTTP(rec, r)
}

// errTwoAuthorizations answers a request with more than one
// Authorization header.
var errTwoAuthorizations = registry.Errorf(registry.Invalid, "the request has more than one Authorization header: send one")

// setSecurityHeaders adds the security headers to an answer that has
// content: a 204 or 304 has none to sniff, render or frame, and a tiny
// protocol answer (a module download is a 204) is cheaper without them.
// A handler's own policy (an HTML page's) is kept.
//
// Over HTTP/2 (h2) the names are keyed as they go on the wire
// (httpjson.HeaderName): neither is on net/http's list of common names. A
// handler that set either itself (with its canonical name) keeps its
// own, so the answer never carries one twice.
func setSecurityHeaders(h http.Header, h2 bool) {
	if _, own := h[nosniffHeader.Canonical]; !own {
		h[nosniffHeader.KeyOn(h2)] = nosniff
	}
	if _, own := h[policyHeader.Canonical]; !own {
		h[policyHeader.KeyOn(h2)] = contentPolicy
	}
}

var (
	nosniffHeader = httpjson.HeaderName{Canonical: "X-Content-Type-Options", Wire: "x-content-type-options"}
	policyHeader  = httpjson.HeaderName{Canonical: "Content-Security-Policy", Wire: "content-security-policy"}
)

// recover turns a panic into a logged 500 JSON answer, or aborts the
// connection when the response had begun.
func (m *middleware) recover(rec *recorder, r *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler { // the handler chose to abort: net/http handles it quietly
		panic(v)
	}
	m.log.ErrorContext(r.Context(), "panic serving request", "method", r.Method, "route", routeLabel(r),
		"path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	if rec.wroteHeader {
		panic(http.ErrAbortHandler) // the client sees a truncated response, not a false success
	}
	clear(rec.Header()) // drop what the handler prepared for its own answer
	httpjson.WriteError(m.log, rec, r, registry.Errorf(registry.Internal, "panic"))
}

// finish records metrics and the access log line. It runs even when the
// connection is aborted.
func (m *middleware) finish(rec *recorder, r *http.Request, start time.Time) {
	end := time.Now()
	elapsed := end.Sub(start)
	m.metrics.inFlight.Dec()
	status := rec.status
	if status == 0 {
		status = http.StatusOK // the handler wrote nothing: net/http answers 200
	}
	rt := routeLabel(r)
	s := m.metrics.observe(rt, r.Method, status, elapsed)

	level := slog.LevelInfo
	switch {
	case rt == "/healthz" || rt == "/readyz" || rt == "/metrics":
		level = slog.LevelDebug
	case status >= 500:
		level = slog.LevelWarn
	}
	ctx := r.Context()
	if a := m.access; a != nil {
		if a.enabled(level) {
			a.writeLine(end, level, s.methodRoute(a, r.Method, rt), r.URL.Path, status, rec.bytes, elapsed)
		}
	} else if h := m.log.Handler(); h.Enabled(ctx, level) {
		// Straight to the handler: Logger.LogAttrs would also look up the
		// caller's program counter, which an access line does not show.
		// Never the query (signed file URLs carry their signature there)
		// nor any header: Authorization holds tokens.
		line := slog.NewRecord(end, level, "http request", 0)
		line.AddAttrs(slog.String("method", r.Method), slog.String("route", rt), slog.String("path", r.URL.Path),
			slog.Int("status", status), slog.Int64("bytes", rec.bytes), slog.Duration("duration", elapsed))
		_ = h.Handle(ctx, line)
	}
	*rec = recorder{}
	recorders.Put(rec)
}

// routeLabel returns the pattern that served r without its method (bounded
// cardinality, unlike the path), or "unmatched".
func routeLabel(r *http.Request) string {
	p := r.Pattern
	if p == "" {
		return unmatchedRoute
	}
	if i := strings.IndexByte(p, ' '); i >= 0 {
		p = p[i+1:]
	}
	return p
}

// recorder remembers the status and size of a response. It forwards
// ReadFrom so that file downloads keep using sendfile, and Unwrap so that
// http.ResponseController reaches the connection. It carries the time
// its request arrived (reqtime.Carrier) to the handlers.
type recorder struct {
	http.ResponseWriter
	start       time.Time // when the request arrived
	status      int
	bytes       int64
	wroteHeader bool
	h2          bool      // the request came over HTTP/2 (setSecurityHeaders)
	deadlineSet time.Time // when the write deadline was last extended
}

// RequestTime returns when the request arrived (reqtime.Carrier): the
// clock reading its duration is measured from.
func (w *recorder) RequestTime() time.Time { return w.start }

func (w *recorder) WriteHeader(code int) {
	if !w.wroteHeader && (code >= http.StatusOK || code == http.StatusSwitchingProtocols) {
		w.status = code
		w.wroteHeader = true
		if code != http.StatusNoContent && code != http.StatusNotModified {
			setSecurityHeaders(w.Header(), w.h2)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

// implicitOK records the 200 that net/http sends when a handler writes
// without calling WriteHeader.
func (w *recorder) implicitOK() {
	w.status, w.wroteHeader = http.StatusOK, true
	setSecurityHeaders(w.Header(), w.h2)
}

func (w *recorder) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.implicitOK()
	}
	if w.bytes+int64(len(p)) >= deadlineFreeSize {
		w.extendWriteDeadline(int64(len(p)))
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// ReadFrom copies src to the response. When src is a size-limited file
// (as http.ServeContent passes it) it is sent in chunks, each a
// sendfile-able *io.LimitedReader over the file, with a write deadline
// per chunk.
func (w *recorder) ReadFrom(src io.Reader) (int64, error) {
	if !w.wroteHeader {
		w.implicitOK()
	}
	rf, ok := w.ResponseWriter.(io.ReaderFrom)
	if !ok {
		return io.Copy(writerOnly{w}, src)
	}
	lr, ok := src.(*io.LimitedReader)
	if !ok {
		return io.Copy(writerOnly{w}, src)
	}
	var total int64
	for lr.N > 0 {
		chunk := &io.LimitedReader{R: lr.R, N: min(lr.N, sendfileChunk)}
		w.extendWriteDeadline(chunk.N)
		n, err := rf.ReadFrom(chunk)
		lr.N -= n
		total += n
		w.bytes += n
		if err != nil || n == 0 {
			return total, err
		}
	}
	return total, nil
}

// writerOnly hides ReadFrom so that io.Copy does not recurse into it.
type writerOnly struct{ io.Writer }

func (w *recorder) Flush() {
	if !w.wroteHeader {
		w.implicitOK()
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap returns the underlying ResponseWriter (for http.ResponseController).
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type writeDeadliner interface{ SetWriteDeadline(time.Time) error }
type readDeadliner interface{ SetReadDeadline(time.Time) error }

// extendWriteDeadline gives the next write of size bytes BodyIdleTimeout
// plus the time size takes at minTransferRate. Small writes only extend it
// every quarter of BodyIdleTimeout (setting one is not free, notably on
// HTTP/2), so a write always has at least three quarters of it.
func (w *recorder) extendWriteDeadline(size int64) {
	d, ok := w.ResponseWriter.(writeDeadliner)
	if !ok {
		return
	}
	now := time.Now()
	if size < deadlineFreeSize && now.Sub(w.deadlineSet) < BodyIdleTimeout/4 {
		return
	}
	w.deadlineSet = now
	_ = d.SetWriteDeadline(now.Add(BodyIdleTimeout + time.Duration(size/minTransferRate)*time.Second))
}

// idleReader fails a request body that stalls (for three quarters of
// BodyIdleTimeout at least, all of it at most) instead of limiting the
// whole upload's duration. net/http resets the deadline before the
// connection's next request.
type idleReader struct {
	body        io.ReadCloser
	conn        readDeadliner
	deadlineSet time.Time
}

func newIdleReader(body io.ReadCloser, w http.ResponseWriter) io.ReadCloser {
	d, ok := w.(readDeadliner)
	if !ok {
		return body
	}
	now := time.Now()
	_ = d.SetReadDeadline(now.Add(BodyIdleTimeout))
	return &idleReader{body: body, conn: d, deadlineSet: now}
}

func (r *idleReader) Read(p []byte) (int, error) {
	if now := time.Now(); now.Sub(r.deadlineSet) >= BodyIdleTimeout/4 {
		r.deadlineSet = now
		_ = r.conn.SetReadDeadline(now.Add(BodyIdleTimeout))
	}
	n, err := r.body.Read(p)
	if err == io.EOF {
		// The body is complete: drop the deadline so that net/http's
		// background read (which watches for a client going away) does
		// not time out and cancel the request's context.
		_ = r.conn.SetReadDeadline(time.Time{})
	}
	return n, err
}

func (r *idleReader) Close() error { return r.body.Close() }

// metrics holds the HTTP collectors and a cache of their series, so that
// the hot path neither formats the status nor hashes label values.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inFlight prometheus.Gauge

	// series maps every label set seen to its collectors: read without a
	// lock (a map is never changed once published), copied on a miss.
	series atomic.Pointer[map[seriesKey]*series]
	mu     sync.Mutex // serializes the copies
}

type seriesKey struct {
	route, method string
	status        int
}

// series is what the requests of one label set share: their
// collectors, and the method and route members of their access lines in
// either format (AccessLog.appendMethodRoute), formatted once.
type series struct {
	count            prometheus.Counter
	duration         prometheus.Observer
	method           string // the method label: the request's, or "OTHER"
	logText, logJSON []byte
}

// methodRoute returns the method and route members of the access line
// (in a's format) of a request of s made with method on route.
func (s *series) methodRoute(a *AccessLog, method, route string) []byte {
	switch {
	case s.method != method: // one the series counts as "OTHER": formatted per request
		return a.appendMethodRoute(nil, method, route)
	case a.JSON:
		return s.logJSON
	}
	return s.logText
}

// observe counts a request and its duration, and returns its series.
func (m *metrics) observe(route, method string, status int, elapsed time.Duration) *series {
	key := seriesKey{route: route, method: methodLabel(method), status: status}
	s, ok := (*m.series.Load())[key]
	if !ok {
		s = m.addSeries(key)
	}
	s.count.Inc()
	s.duration.Observe(elapsed.Seconds())
	return s
}

// addSeries publishes a copy of the series map with key's collectors.
func (m *metrics) addSeries(key seriesKey) *series {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.series.Load()
	if s, ok := old[key]; ok {
		return s
	}
	code := strconv.Itoa(key.status)
	s := &series{
		count:    m.requests.WithLabelValues(key.route, key.method, code),
		duration: m.duration.WithLabelValues(key.route, key.method, code),
		method:   key.method,
		logText:  appendMethodRouteText(nil, key.method, key.route),
		logJSON:  appendMethodRouteJSON(nil, key.method, key.route),
	}
	next := make(map[seriesKey]*series, len(old)+1)
	maps.Copy(next, old)
	next[key] = s
	m.series.Store(&next)
	return s
}

// methodLabel bounds the method label to the standard methods.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}
