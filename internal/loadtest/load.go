package loadtest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"trove.dev/trove/internal/registry"
)

// LoadOptions shapes one load run.
type LoadOptions struct {
	// Conns is the number of concurrent keep-alive connections (HTTP/1.1,
	// or HTTP/2 with HTTP2), each driven by one goroutine that sends its
	// next request as soon as the previous response was read to the end:
	// over HTTP/2, one stream at a time per connection.
	Conns int
	// Warmup runs before the measured window; nothing it does is counted.
	Warmup time.Duration
	// Duration is the length of the measured window.
	Duration time.Duration
	// TLS configures HTTPS connections (nil for plain HTTP targets).
	TLS *tls.Config
	// RequestTimeout bounds one request, body included (default 1 minute).
	RequestTimeout time.Duration
	// CPU, when set, reads the CPU time the server has used so far; Load
	// calls it when the window opens and when it closes, and reports the
	// difference as Result.CPU.
	CPU func() (time.Duration, error)
	// BackendCPU, when set, reads the CPU time of the storage servers
	// behind the server (PostgreSQL, S3) in the same way, into
	// Result.BackendCPU.
	BackendCPU func() (time.Duration, error)
	// LoadCPU, when set, reads the CPU time of the load generator itself
	// in the same way, into Result.LoadCPU: a load that keeps its CPUs
	// busy may be what limits the throughput.
	LoadCPU func() (time.Duration, error)
	// NextURL, when set, gives the URL of every request in place of the
	// fixed one (for requests that must each ask for something new); it
	// must be safe for concurrent use. See URLCycle.
	NextURL func() string
	// Header is sent with every request (Accept: text/html for the web
	// UI's pages, which protocol clients never ask for).
	Header http.Header
	// FollowRedirects makes a request follow redirects (a download from
	// Trove in redirect mode ends at the object store) and counts the whole
	// chain as one request; otherwise a redirect is the answer counted.
	FollowRedirects bool
	// HTTP2 negotiates HTTP/2 on HTTPS connections, as Terraform's and
	// OpenTofu's HTTP clients do; otherwise every connection speaks
	// HTTP/1.1. Plain HTTP stays HTTP/1.1 either way.
	HTTP2 bool
}

// maxLoadDuration bounds Warmup + Duration, so that no flag can make the
// load loop run unbounded.
const maxLoadDuration = 10 * time.Minute

func (o LoadOptions) check() error {
	switch {
	case o.Conns < 1 || o.Conns > 4096:
		return registry.Errorf(registry.Invalid, "connections must be between 1 and 4096, got %d", o.Conns)
	case o.Duration <= 0:
		return registry.Errorf(registry.Invalid, "the measured duration must be positive, got %s", o.Duration)
	case o.Warmup < 0:
		return registry.Errorf(registry.Invalid, "the warm-up must not be negative, got %s", o.Warmup)
	case o.Warmup+o.Duration > maxLoadDuration:
		return registry.Errorf(registry.Invalid, "warm-up plus duration must not exceed %s, got %s", maxLoadDuration, o.Warmup+o.Duration)
	}
	return nil
}

// Load sends GET requests for url from opt.Conns connections for
// opt.Warmup + opt.Duration and returns what the measured window saw.
// A request counts when it started and finished inside the window; body
// bytes count when they arrived inside it, so a stream of large files is
// measured fairly even if few complete. Requests still running when the
// window closes are cancelled and not counted. Non-2xx answers and
// transport errors are counted as errors, never returned: Load fails only
// for invalid options or a cancelled ctx.
func Load(ctx context.Context, url string, opt LoadOptions) (Result, error) {
	res, _, err := load(ctx, url, opt)
	return res, err
}

// load is Load that also returns the latencies of the successful requests.
func load(ctx context.Context, url string, opt LoadOptions) (Result, *Histogram, error) {
	if err := opt.check(); err != nil {
		return Result{}, nil, err
	}
	if opt.RequestTimeout <= 0 {
		opt.RequestTimeout = time.Minute
	}
	start := time.Now()
	win := window{from: start.Add(opt.Warmup), to: start.Add(opt.Warmup + opt.Duration)}
	runCtx, cancel := context.WithDeadline(ctx, win.to)
	defer cancel()
	cpuc := make(chan cpuSample, 1)
	go sampleCPU(runCtx, opt.CPU, win, cpuc)
	backendc := make(chan cpuSample, 1)
	go sampleCPU(runCtx, opt.BackendCPU, win, backendc)
	loadc := make(chan cpuSample, 1)
	go sampleCPU(runCtx, opt.LoadCPU, win, loadc)

	workers := make([]*worker, opt.Conns)
	var wg sync.WaitGroup
	for i := range workers {
		w := newWorker(url, opt, win)
		workers[i] = w
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(runCtx)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return Result{}, nil, registry.Wrap(registry.Unavailable, err, "load run interrupted")
	}
	cpu, backend, loadCPU := <-cpuc, <-backendc, <-loadc
	if err := errors.Join(cpu.err, backend.err, loadCPU.err); err != nil {
		return Result{}, nil, err
	}

	hist := &Histogram{}
	res := Result{Elapsed: opt.Duration, CPU: cpu.used, BackendCPU: backend.used, LoadCPU: loadCPU.used}
	for _, w := range workers {
		hist.Merge(&w.hist)
		res.Requests += w.hist.Count()
		res.Errors += w.errors
		res.Bytes += w.bytes
		if res.FirstError == "" {
			res.FirstError = w.firstErr
		}
		w.client.CloseIdleConnections()
	}
	res.P50 = hist.Percentile(50)
	res.P99 = hist.Percentile(99)
	res.Max = hist.Max()
	res.Slow = hist.Above(SlowLatency)
	return res, hist, nil
}

type cpuSample struct {
	used time.Duration
	err  error
}

// sampleCPU reads read when the window opens and when it closes and sends
// the difference (zero without read) once ctx, which ends with the
// window, is done.
func sampleCPU(ctx context.Context, read func() (time.Duration, error), win window, out chan<- cpuSample) {
	if read == nil {
		<-ctx.Done()
		out <- cpuSample{}
		return
	}
	wait := func(until time.Time) {
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	wait(win.from)
	start, err := read()
	if err != nil {
		<-ctx.Done()
		out <- cpuSample{err: err}
		return
	}
	wait(win.to)
	<-ctx.Done()
	end, err := read()
	out <- cpuSample{used: end - start, err: err}
}

// window is the measured interval.
type window struct{ from, to time.Time }

func (w window) contains(t time.Time) bool { return !t.Before(w.from) && t.Before(w.to) }

// worker drives one connection (two when it follows a redirect to another
// host).
type worker struct {
	url     string
	nextURL func() string // nil: always url
	header  http.Header
	client  *http.Client
	win     window
	buf     []byte

	hist     Histogram
	errors   int
	bytes    int64
	firstErr string
}

func newWorker(url string, opt LoadOptions, win window) *worker {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig:     opt.TLS.Clone(),
		TLSHandshakeTimeout: 10 * time.Second,
		MaxConnsPerHost:     1,
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     time.Minute,
		// Identity encoding for Trove and the baseline alike, and
		// HTTP/1.1 unless asked: a non-nil empty TLSNextProto disables
		// HTTP/2.
		DisableCompression: true,
		ForceAttemptHTTP2:  opt.HTTP2,
	}
	if !opt.HTTP2 {
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	}
	client := &http.Client{
		Transport: tr,
		Timeout:   opt.RequestTimeout,
		// A redirect is an answer to count, not to follow, unless asked.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	if opt.FollowRedirects {
		client.CheckRedirect = nil // the default: follow up to 10
	}
	return &worker{
		url:     url,
		nextURL: opt.NextURL,
		header:  opt.Header.Clone(),
		client:  client,
		win:     win,
		buf:     make([]byte, 64<<10),
		hist:    Histogram{samples: make([]time.Duration, 0, 1<<14)},
	}
}

func (w *worker) run(ctx context.Context) {
	for ctx.Err() == nil {
		start := time.Now()
		err := w.one(ctx)
		end := time.Now()
		if ctx.Err() != nil {
			return // cancelled at the end of the window: not counted
		}
		if !w.win.contains(start) || !w.win.contains(end) {
			continue
		}
		if err != nil {
			w.errors++
			if w.firstErr == "" {
				w.firstErr = err.Error()
			}
			// Do not spin on a refused connection.
			time.Sleep(time.Millisecond)
			continue
		}
		w.hist.Record(end.Sub(start))
	}
}

// one sends one request and reads the whole answer, counting the body
// bytes that arrive inside the window.
func (w *worker) one(ctx context.Context) error {
	url := w.url
	if w.nextURL != nil {
		url = w.nextURL()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if w.header != nil {
		req.Header = w.header // read only by the client
	}
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	for {
		n, err := resp.Body.Read(w.buf)
		if n > 0 && w.win.contains(time.Now()) {
			w.bytes += int64(n)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("HTTP status %s", resp.Status)
	}
	return nil
}

// URLCycle hands out a list of URLs in order, one per call of Next, for
// LoadOptions.NextURL. Past the end it starts again from the first and
// counts the repeats, so that a run which needed every request to be a
// first one can tell whether it was. It is safe for concurrent use.
type URLCycle struct {
	urls []string
	next atomic.Int64
}

// NewURLCycle returns a cycle over urls, which must not be empty.
func NewURLCycle(urls []string) (*URLCycle, error) {
	if len(urls) == 0 {
		return nil, registry.Errorf(registry.Invalid, "a URL cycle needs at least one URL")
	}
	return &URLCycle{urls: urls}, nil
}

// Next returns the next URL.
func (c *URLCycle) Next() string {
	i := c.next.Add(1) - 1
	return c.urls[i%int64(len(c.urls))]
}

// Issued returns how many URLs Next has handed out.
func (c *URLCycle) Issued() int64 { return c.next.Load() }

// Repeats returns how many of them repeated an earlier one.
func (c *URLCycle) Repeats() int64 { return max(0, c.Issued()-int64(len(c.urls))) }

// Len returns the number of distinct URLs.
func (c *URLCycle) Len() int { return len(c.urls) }

// URLMix hands out URLs drawn at random from a list, one per call of
// Next, for LoadOptions.NextURL: a realistic mix of documents rather than
// one document in a hot loop. It is safe for concurrent use.
type URLMix struct {
	urls []string
	// cum holds the cumulative weights of urls (nil: all equal).
	cum []float64
}

// NewURLMix returns a mix of urls, which must not be empty.
func NewURLMix(urls []string) (*URLMix, error) {
	if len(urls) == 0 {
		return nil, registry.Errorf(registry.Invalid, "a URL mix needs at least one URL")
	}
	return &URLMix{urls: urls}, nil
}

// NewWeightedURLMix returns a mix of urls in which each is drawn with a
// probability proportional to its weight (one positive weight per URL).
func NewWeightedURLMix(urls []string, weights []float64) (*URLMix, error) {
	if len(urls) == 0 || len(weights) != len(urls) {
		return nil, registry.Errorf(registry.Invalid, "a weighted URL mix needs at least one URL and one weight per URL, got %d URLs and %d weights", len(urls), len(weights))
	}
	cum, total := make([]float64, len(weights)), 0.0
	for i, w := range weights {
		if !(w > 0) {
			return nil, registry.Errorf(registry.Invalid, "the weight of %s must be positive, got %v", urls[i], w)
		}
		total += w
		cum[i] = total
	}
	return &URLMix{urls: urls, cum: cum}, nil
}

// Next returns a URL of the mix, each with the same probability unless
// the mix is weighted.
func (m *URLMix) Next() string {
	if m.cum == nil {
		return m.urls[rand.IntN(len(m.urls))]
	}
	x := rand.Float64() * m.cum[len(m.cum)-1]
	i, _ := slices.BinarySearch(m.cum, x)
	return m.urls[min(i, len(m.urls)-1)]
}

// Len returns the number of distinct URLs.
func (m *URLMix) Len() int { return len(m.urls) }
