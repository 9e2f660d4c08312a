// Package loadtest measures Trove against a minimal static Go file server
// on loopback: it seeds a data directory through the store packages,
// starts the real `trove serve` binary and a baseline server that answers
// the same bytes from memory, drives both with keep-alive HTTP/1.1 (or,
// with Options.HTTP2, HTTP/2) connections and reports throughput, latency
// percentiles and Trove's resident memory as a Markdown table.
// cmd/trove-loadtest is its main.
package loadtest

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"trove.dev/trove/internal/protocol/providers"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/server"
	"trove.dev/trove/internal/store/fsblob"
	"trove.dev/trove/internal/store/sqlite"
)

// Options configures a Run.
type Options struct {
	// TroveBinary is a built `trove`; empty means build ./cmd/trove of the
	// module in ModuleDir into the temporary directory.
	TroveBinary string
	ModuleDir   string
	// BaselineBinary is the program whose `baseline` subcommand serves the
	// baseline (default: this executable).
	BaselineBinary string
	// Conns is the number of connections for the JSON endpoints,
	// StreamConns for the archive downloads.
	Conns       int
	StreamConns int
	// HTTP2 makes every HTTPS row speak HTTP/2, as `terraform init` and
	// `tofu init` do with a registry that offers it (Trove and the
	// baseline both do); by default the rows speak HTTP/1.1.
	HTTP2 bool
	// PlainHTTP measures the realistic-mix rows over plain HTTP: Trove
	// restarted with --insecure-http (as behind a TLS-terminating proxy)
	// against the baseline's plain listener, where neither server's TLS
	// work hides the handler's own cost. The archive, sweep and web UI
	// rows are not measured then.
	PlainHTTP bool
	// Pin runs Trove and the baseline on one CPU (GOMAXPROCS 1) and the
	// load generator on the others (Linux, two CPUs or more), so that a
	// server's throughput is what one core of its own gives, and the
	// load's work never takes from it.
	Pin      bool
	Warmup   time.Duration
	Duration time.Duration
	// Rounds is how often each endpoint is measured on Trove and on the
	// baseline (odd rounds Trove first, even rounds the baseline first);
	// the report adds the rounds up. Alternating evens out drifts in what
	// else the machine is doing, and any advantage of going first.
	Rounds int
	// StageDir, when set, is where the index is built before it is
	// copied into the data directory: a memory file system such as
	// /dev/shm makes seeding several times faster.
	StageDir string
	// TroveLogLevel is passed to trove serve --log-level.
	TroveLogLevel string
	// Spec is the index to seed.
	Spec Spec
	// MixDocs is how many distinct documents each realistic-mix row asks
	// for, drawn at random per request; MixDuration and MixRounds are the
	// measured window and the rounds of those rows (a window longer than
	// twice CacheMaxAge sees every cached document rendered again).
	MixDocs     int
	MixDuration time.Duration
	MixRounds   int
	// UIDocs is how many distinct pages the UI pages row asks for, and
	// how many distinct searches the UI search row sends (0: no UI rows).
	UIDocs int
	// Single adds the one-document rows (one document per endpoint in a
	// hot loop, Duration and Rounds), labelled as such.
	Single bool
	// UIOnly measures the web UI rows alone: no realistic-mix, archive or
	// one-document rows, no sweep, and the memory read just before the
	// UI rows (with UIDocs above 0).
	UIOnly bool
	// FillDocs is how many download documents a mirror-like sweep asks for
	// after the rows, to fill Trove's document cache before its memory is
	// read (0: no sweep).
	FillDocs int
	// Rows, when set, selects the rows measured: a realistic-mix, web UI
	// or archive row is measured only if its name matches (nil: every
	// row). The seeding, the cache sweep (FillDocs) and the memory
	// reading happen as without it.
	Rows *regexp.Regexp
	// Backend selects the storage Trove runs on: BackendEmbedded (empty
	// means it) or BackendPostgresS3, on the servers of ScaleOut.
	Backend  string
	ScaleOut ScaleOut
	// Progress receives one line per step (may be nil).
	Progress io.Writer
}

// protocol says what the HTTPS rows speak.
func (o Options) protocol() string {
	if o.PlainHTTP {
		return "HTTP/1.1 keep-alive over plain HTTP (Trove with --insecure-http)"
	}
	if o.HTTP2 {
		return "HTTP/2 over HTTPS (one stream at a time per connection; HTTP/1.1 on plain HTTP)"
	}
	return "HTTP/1.1 keep-alive over HTTPS"
}

// DefaultOptions returns the options of a standard run.
func DefaultOptions() Options {
	stage := ""
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		stage = "/dev/shm"
	}
	return Options{
		StageDir:      stage,
		ModuleDir:     ".",
		Conns:         32,
		StreamConns:   4,
		Warmup:        time.Second,
		Duration:      5 * time.Second,
		Rounds:        3,
		TroveLogLevel: "info",
		Spec:          DefaultSpec(),
		MixDocs:       300,
		MixDuration:   CacheMaxAge*2 + 5*time.Second,
		MixRounds:     1,
		UIDocs:        1000,
		FillDocs:      16_000,
	}
}

// selected reports whether the row named name is measured (Rows).
func (o Options) selected(name string) bool {
	return o.Rows == nil || o.Rows.MatchString(name)
}

// selectSets returns the sets of sets that Rows selects.
func (o Options) selectSets(sets []mixSet) []mixSet {
	return slices.DeleteFunc(sets, func(s mixSet) bool { return !o.selected(s.name) })
}

// runner holds the state of one Run.
type runner struct {
	opt     Options
	tmp     string
	dataDir string
	seeded  Seeded
	rows    []Row
	// upstream is the module mirror's upstream (nil without one).
	upstream *ModuleUpstream
	// pin splits the CPUs between the servers and the load (nil: shared).
	pin *pinning
}

// startModuleUpstream serves the module mirror's upstream (ModuleUpstream)
// over plain HTTP on loopback, as a registry on the internal network, and
// fills in its address in r.opt.Spec.ModuleMirror. It returns the
// function that stops it.
func (r *runner) startModuleUpstream() (func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, registry.Wrap(registry.Unavailable, err, "listening for the module mirror's upstream")
	}
	r.upstream = NewModuleUpstream(r.opt.Spec)
	srv := &http.Server{Handler: r.upstream, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	mm := &r.opt.Spec.ModuleMirror
	mm.Host = ln.Addr().String()
	mm.ServiceURL = "http://" + mm.Host + "/v1/providers/"
	r.progress("module mirror upstream on http://%s (namespace %s mirrors %s/%s)", mm.Host, mm.Namespace, mm.Host, r.opt.Spec.Namespace)
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		<-done
	}, nil
}

// moduleMirrorFlags are the flags of trove serve that map the module
// mirror's namespace to its upstream (none without one).
func (r *runner) moduleMirrorFlags() []string {
	mm := r.opt.Spec.ModuleMirror
	if mm.Namespace == "" {
		return nil
	}
	return []string{"--module-mirror", mm.Namespace + "=" + mm.Host + "/" + r.opt.Spec.Namespace}
}

func (r *runner) progress(format string, args ...any) {
	if r.opt.Progress != nil {
		fmt.Fprintf(r.opt.Progress, "trove-loadtest: "+format+"\n", args...)
	}
}

// Run seeds a fresh data directory (or, with BackendPostgresS3, a fresh
// database and bucket), starts Trove and the baseline, measures every
// endpoint on both and returns the report. It stops its
// child processes and removes its temporary directory before returning,
// also when ctx is cancelled.
func Run(ctx context.Context, opt Options) (Report, error) {
	if err := (LoadOptions{Conns: opt.Conns, Warmup: opt.Warmup, Duration: opt.Duration}).check(); err != nil {
		return Report{}, err
	}
	if err := (LoadOptions{Conns: opt.StreamConns, Warmup: opt.Warmup, Duration: opt.Duration}).check(); err != nil {
		return Report{}, err
	}
	if opt.Rounds < 1 || opt.Rounds > 20 {
		return Report{}, registry.Errorf(registry.Invalid, "rounds must be between 1 and 20, got %d", opt.Rounds)
	}
	if err := (LoadOptions{Conns: opt.Conns, Warmup: opt.Warmup, Duration: opt.MixDuration}).check(); err != nil {
		return Report{}, registry.Wrap(registry.Invalid, err, "the realistic mix")
	}
	if opt.MixRounds < 1 || opt.MixRounds > 20 {
		return Report{}, registry.Errorf(registry.Invalid, "mix rounds must be between 1 and 20, got %d", opt.MixRounds)
	}
	if opt.MixDocs < 1 || opt.MixDocs > 100_000 {
		return Report{}, registry.Errorf(registry.Invalid, "mix documents must be between 1 and 100,000, got %d", opt.MixDocs)
	}
	if opt.UIDocs < 0 || opt.UIDocs > 100_000 {
		return Report{}, registry.Errorf(registry.Invalid, "UI documents must be between 0 and 100,000, got %d", opt.UIDocs)
	}
	if opt.FillDocs < 0 || opt.FillDocs > 1_000_000 {
		return Report{}, registry.Errorf(registry.Invalid, "fill documents must be between 0 and 1,000,000, got %d", opt.FillDocs)
	}
	if opt.PlainHTTP && (opt.HTTP2 || opt.UIOnly || opt.Single || opt.Backend == BackendPostgresS3) {
		return Report{}, registry.Errorf(registry.Invalid, "plain HTTP measures the realistic-mix rows alone: not with HTTP/2, the UI rows only, the one-document rows or the postgres-s3 backend")
	}
	if opt.Pin && opt.Backend == BackendPostgresS3 {
		return Report{}, registry.Errorf(registry.Invalid, "pinning measures the embedded backend: PostgreSQL and the S3 server would share the load's CPUs")
	}
	if opt.UIOnly && (opt.UIDocs == 0 || opt.Single || opt.Backend == BackendPostgresS3) {
		return Report{}, registry.Errorf(registry.Invalid, "UI rows only needs UI documents above 0, without the one-document rows or the postgres-s3 backend")
	}
	switch opt.Backend {
	case "", BackendEmbedded:
	case BackendPostgresS3:
		return runScaleOut(ctx, opt)
	default:
		return Report{}, registry.Errorf(registry.Invalid, "unknown backend %q: want %s or %s", opt.Backend, BackendEmbedded, BackendPostgresS3)
	}
	tmp, err := os.MkdirTemp("", "trove-loadtest-")
	if err != nil {
		return Report{}, registry.Wrap(registry.Internal, err, "creating the temporary directory")
	}
	defer os.RemoveAll(tmp)
	r := &runner{opt: opt, tmp: tmp, dataDir: filepath.Join(tmp, "data")}
	if opt.Pin {
		if r.pin, err = newPinning(); err != nil {
			return Report{}, err
		}
	}
	if mm := &r.opt.Spec.ModuleMirror; mm.Namespace != "" && mm.Host == "" {
		stop, err := r.startModuleUpstream()
		if err != nil {
			return Report{}, err
		}
		defer stop()
	}

	troveBin, err := r.troveBinary(ctx)
	if err != nil {
		return Report{}, err
	}
	if err := r.seed(ctx); err != nil {
		return Report{}, err
	}
	rss, memory, err := r.measureAll(ctx, troveBin)
	s := r.seeded
	single := ""
	if opt.Single {
		single = fmt.Sprintf(", the one-document rows %d round(s) of %s", opt.Rounds, opt.Duration)
	}
	setup := fmt.Sprintf("the realistic-mix rows %d round(s) of %s per server%s, the archive rows %d round(s) of %s, each after %s warm-up, Trove and the baseline alternating which goes first",
		opt.MixRounds, opt.MixDuration, single, opt.Rounds, opt.Duration, opt.Warmup)
	if opt.PlainHTTP {
		setup = fmt.Sprintf("the realistic-mix rows only, %d round(s) of %s per server after %s warm-up, Trove and the baseline alternating which goes first",
			opt.MixRounds, opt.MixDuration, opt.Warmup)
	}
	if opt.UIOnly {
		setup = fmt.Sprintf("the web UI rows only, %d round(s) of %s per server after %s warm-up", opt.MixRounds, opt.MixDuration, opt.Warmup)
	}
	cpus := fmt.Sprintf("%d CPUs shared by Trove, the baseline and the load generator", runtime.NumCPU())
	if r.pin != nil {
		cpus = r.pin.describe()
	}
	rep := Report{
		Rows:   r.rows,
		RSS:    rss,
		Memory: memory,
		Index: fmt.Sprintf("%s versions of %s providers, %s packages, %s module versions of %s modules%s",
			thousands(s.Versions), thousands(s.Providers), thousands(s.Packages), thousands(s.ModuleVersions), thousands(len(opt.Spec.Modules)), mirroredIndex(s)),
		Setup: fmt.Sprintf("%s; %s, identity encoding; trove serve --log-level %s (cache maximum age %s); %s",
			setup, opt.protocol(), opt.TroveLogLevel, CacheMaxAge, cpus),
		Goals: DefaultGoals,
	}
	if err != nil {
		return partial(rep, err)
	}
	return rep, nil
}

// partial returns what a run that failed with err measured before it
// stopped (rep, when it holds a row), and err.
func partial(rep Report, err error) (Report, error) {
	if len(rep.Rows) == 0 {
		return Report{}, err
	}
	return rep, err
}

// mirroredIndex describes the module mirror's namespace for the report's
// index line ("" without one).
func mirroredIndex(s Seeded) string {
	if s.MirroredModuleVersions == 0 {
		return ""
	}
	return fmt.Sprintf(", and the same %s module versions again in a module mirror's namespace", thousands(s.MirroredModuleVersions))
}

// troveBinary returns opt.TroveBinary or builds one.
func (r *runner) troveBinary(ctx context.Context) (string, error) {
	if r.opt.TroveBinary != "" {
		return r.opt.TroveBinary, nil
	}
	bin := filepath.Join(r.tmp, "trove")
	r.progress("building trove (go build -o %s ./cmd/trove)", bin)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/trove")
	cmd.Dir = r.opt.ModuleDir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", registry.Errorf(registry.Unavailable, "go build ./cmd/trove in %s failed (%v):\n%s", r.opt.ModuleDir, err, out)
	}
	return bin, nil
}

// seed writes the index and the archive into the data directory, at the
// paths trove serve --data-dir opens by default. The index is built in
// opt.StageDir when set and then copied: through the ordinary store API
// every version is one synchronous commit, and a memory file system makes
// those commits cheap without changing the file that results.
func (r *runner) seed(ctx context.Context) error {
	indexPath := filepath.Join(r.dataDir, "trove.db")
	buildPath := indexPath
	if r.opt.StageDir != "" {
		stage, err := os.MkdirTemp(r.opt.StageDir, "trove-loadtest-")
		if err != nil {
			return registry.Wrap(registry.Internal, err, "creating the staging directory")
		}
		defer os.RemoveAll(stage)
		buildPath = filepath.Join(stage, "trove.db")
	}
	r.progress("seeding %s versions into %s", thousands(r.opt.Spec.TotalVersions), buildPath)
	idx, err := sqlite.Open(ctx, buildPath)
	if err != nil {
		return err
	}
	blobs, err := fsblob.Open(filepath.Join(r.dataDir, "blobs"))
	if err != nil {
		idx.Close()
		return err
	}
	seeded, err := Seed(ctx, idx, blobs, r.opt.Spec, filepath.Join(r.tmp, "archive.zip"))
	if cerr := idx.Close(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if buildPath != indexPath {
		// A closed SQLite database is its main file plus, if a checkpoint
		// was left undone, its -wal file.
		for _, suffix := range []string{"", "-wal"} {
			if err := copyFile(buildPath+suffix, indexPath+suffix); err != nil && !(suffix != "" && errors.Is(err, fs.ErrNotExist)) {
				return err
			}
		}
	}
	r.seeded = seeded
	r.progress("seeded %s versions of %s providers in %.1fs", thousands(seeded.Versions), thousands(seeded.Providers), seeded.Took.Seconds())
	return nil
}

// copyFile copies the regular file src to dst (mode 0600).
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return registry.Wrap(registry.Internal, err, "copying the index")
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return registry.Wrap(registry.Internal, err, "copying the index")
	}
	if err := out.Close(); err != nil {
		return registry.Wrap(registry.Internal, err, "copying the index")
	}
	return nil
}

// troveEnv is the harness's environment without TROVE_* settings, so
// that only the flags given configure trove serve.
func troveEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TROVE_") {
			env = append(env, kv)
		}
	}
	return env
}

// document is an answer of Trove that the baseline replays: a JSON body,
// or, when location is set, a 204 carrying it in X-Terraform-Get (a
// module download).
type document struct {
	name     string // row label
	path     string // URL path (with a query for a web UI page)
	body     []byte
	location string
	// html marks a page of the web UI: asked for with Accept: text/html,
	// answered as HTML.
	html bool
	// oci marks an answer of the OCI API, which the baseline replays with
	// its headers (ociHeaders).
	oci    bool
	header map[string]string
}

// side is one server of a measurement and how to load it.
type side struct {
	name string // in progress lines: "trove", "baseline", "direct S3"
	// url is loaded in every round, unless urls is set: then every round
	// gets a fresh cycle of URLs from it, one per request; or unless mix
	// is set: then every request draws one of its URLs.
	url  string
	urls func() (*URLCycle, error)
	mix  *URLMix
	// prepare, when set, runs before each of the side's rounds (to restart
	// Trove, so that nothing is cached).
	prepare func(ctx context.Context) error
	tls     *tls.Config // nil for plain HTTP
	header  http.Header // sent with every request (may be nil)
	follow  bool        // follow redirects, timing the whole chain
	// alive returns an error once the server has exited (nil: not ours
	// to watch); cpu and backendCPU read its CPU time and that of the
	// storage servers behind it (nil: not measured).
	alive      func() error
	cpu        func() (time.Duration, error)
	backendCPU func() (time.Duration, error)
}

// childSide returns a side served by the process that proc returns at
// the start of each round (Trove may be restarted between rounds).
func childSide(name, url string, cfg *tls.Config, proc func() *child) side {
	return side{
		name: name, url: url, tls: cfg,
		alive: func() error {
			if c := proc(); c.exited() {
				return c.failure("measuring")
			}
			return nil
		},
		cpu: func() (time.Duration, error) { return ReadCPUTime(proc().pid()) },
	}
}

// reference is a side Trove is compared with; label names it in the row
// ("" for the static baseline).
type reference struct {
	label string
	side  side
}

// measurement is one endpoint measured on Trove and its references; it
// gives one row per reference.
type measurement struct {
	name    string
	conns   int
	stream  bool
	latency bool // Row.Latency
	// rounds and duration replace Options.Rounds and Options.Duration
	// when set.
	rounds   int
	duration time.Duration
	backend  string // Row.Backend
	// p99Goal is Row.P99Goal.
	p99Goal time.Duration
	trove   side
	refs    []reference
	notes   []string
}

// endpoint is one measured URL pair of Trove and the static baseline.
type endpoint struct {
	name            string
	conns           int
	stream          bool
	tls             *tls.Config // nil for plain HTTP
	trove, baseline string
}

// measureAll starts Trove over HTTPS and the baseline, measures the
// realistic-mix rows (and, with Single, the one-document rows) and the
// archive, fills Trove's document cache as a mirror would, reads Trove's
// memory, then restarts Trove in plain HTTP mode for the plain archive
// download. It returns the memory and a sentence on when it was read
// (nil and "" when it failed before).
func (r *runner) measureAll(ctx context.Context, troveBin string) (*RSS, string, error) {
	if r.pin != nil {
		// After the seeding, which uses every CPU.
		if err := r.pin.pinHarness(); err != nil {
			return nil, "", err
		}
	}
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	origin := "https://127.0.0.1:" + strconv.Itoa(port)
	r.progress("starting trove serve on %s", origin)
	trove, err := startChild("trove", troveBin,
		append([]string{"serve", "--listen", "127.0.0.1:" + strconv.Itoa(port), "--data-dir", r.dataDir, "--log-level", r.opt.TroveLogLevel}, r.moduleMirrorFlags()...),
		troveEnv(), filepath.Join(r.tmp, "trove-https.log"), nil, nil, r.pin)
	if err != nil {
		return nil, "", err
	}
	defer trove.stop(30 * time.Second)
	tlsDir := filepath.Join(r.dataDir, "tls")
	var tlsCfg *tls.Config
	client, err := waitHealthy(ctx, trove, origin+"/healthz", func() (*http.Client, error) {
		cfg, err := trustCA(filepath.Join(tlsDir, server.CAFileName))
		if err != nil {
			return nil, err
		}
		tlsCfg = cfg
		return simpleClient(cfg), nil
	}, time.Minute)
	if err != nil {
		return nil, "", err
	}

	if r.opt.UIOnly {
		rss, err := ReadRSS(trove.pid())
		if err != nil {
			return nil, "", err
		}
		r.progress("trove VmRSS %s, VmHWM %s", formatMiB(rss.Current), formatMiB(rss.Peak))
		return &rss, "before the web UI rows (UI rows only)", r.measureUI(ctx, origin, tlsCfg, trove, rss, tlsDir)
	}
	docs, archiveURL, err := r.fetchDocuments(ctx, client, origin)
	if err != nil {
		return nil, "", err
	}
	sets, err := mixPicks(r.opt.Spec, r.opt.MixDocs, strings.TrimPrefix(origin, "https://"))
	if err != nil {
		return nil, "", err
	}
	sets = r.opt.selectSets(sets)
	n := 0
	for _, set := range sets {
		n += len(set.docs)
	}
	r.progress("fetching the %s documents of the realistic mix", thousands(n))
	if err := fetchMix(ctx, poolClient(tlsCfg, 8), origin, sets); err != nil {
		return nil, "", err
	}
	all := slices.Clone(docs)
	for _, set := range sets {
		all = append(all, set.docs...)
	}
	bl, err := r.startBaseline(ctx, "", all, nil, archiveURL.Path,
		filepath.Join(tlsDir, server.CertFileName), filepath.Join(tlsDir, server.KeyFileName))
	if err != nil {
		return nil, "", err
	}
	defer bl.stop(10 * time.Second)

	mixTrove, mixOrigin, mixTLS, blOrigin := trove, origin, tlsCfg, "https://"+bl.tlsAddr
	if r.opt.PlainHTTP {
		// One process on the data directory; the same host and port, so
		// that the documents fetched over HTTPS (the mirror's paths name
		// Trove's own host, download documents hold its URL) are the ones
		// it answers.
		trove.stop(30 * time.Second)
		plain, hostPort, _, err := r.startPlainTrove(ctx, troveBin, strings.TrimPrefix(origin, "https://"))
		if err != nil {
			return nil, "", err
		}
		defer plain.stop(30 * time.Second)
		mixTrove, mixOrigin, mixTLS, blOrigin = plain, "http://"+hostPort, nil, "http://"+bl.plainAddr
	}
	for _, set := range sets {
		var before int64
		if set.upstream && r.upstream != nil {
			before, _ = r.upstream.Counts()
		}
		if err := r.measureMix(ctx, set, mixOrigin, mixTLS, mixTrove, bl, blOrigin, 0); err != nil {
			return nil, "", err
		}
		if set.upstream && r.upstream != nil {
			after, other := r.upstream.Counts()
			row := &r.rows[len(r.rows)-1]
			row.Notes = append(row.Notes, fmt.Sprintf("the upstream answered %s versions documents during this row (%s since Trove started) and %s other requests (service discovery, or a path it does not serve) since Trove started",
				thousands(int(after-before)), thousands(int(after)), thousands(int(other))))
		}
	}
	if r.opt.PlainHTTP {
		rss, err := ReadRSS(mixTrove.pid())
		if err != nil {
			return nil, "", err
		}
		return &rss, "after the realistic-mix rows over plain HTTP (no sweep)", nil
	}
	if r.opt.Single {
		for _, d := range docs {
			m := r.pair(endpoint{name: "one document (hot loop): " + d.name, conns: r.opt.Conns, tls: tlsCfg,
				trove: origin + d.path, baseline: "https://" + bl.tlsAddr + d.path}, trove, bl.child)
			m.latency = true
			if err := r.measure(ctx, m); err != nil {
				return nil, "", err
			}
		}
	}
	// The signed URL fetched at the start may have expired during the rows
	// above (they take minutes): ask for the download document again.
	body, err := fetch(ctx, client, origin+downloadPath(r.seeded.Namespace, r.seeded.Archive))
	if err != nil {
		return nil, "", err
	}
	if archiveURL, err = downloadURL(body, origin); err != nil {
		return nil, "", err
	}
	archiveName := "archive " + formatMiB(r.seeded.Archive.Size)
	archive := endpoint{name: archiveName + ", HTTPS", conns: r.opt.StreamConns, stream: true, tls: tlsCfg,
		trove: archiveURL.String(), baseline: "https://" + bl.tlsAddr + archiveURL.RequestURI()}
	if r.opt.selected(archive.name) {
		if err := r.measure(ctx, r.pair(archive, trove, bl.child)); err != nil {
			return nil, "", err
		}
	}

	memory := "after all its rows"
	if r.opt.FillDocs > 0 {
		if memory, err = r.fillCache(ctx, poolClient(tlsCfg, r.opt.Conns), origin); err != nil {
			return nil, "", err
		}
	}
	rss, err := ReadRSS(trove.pid())
	if err != nil {
		return nil, "", err
	}
	r.progress("trove VmRSS %s, VmHWM %s", formatMiB(rss.Current), formatMiB(rss.Peak))
	if err := r.measureUI(ctx, origin, tlsCfg, trove, rss, tlsDir); err != nil {
		return &rss, memory, err
	}
	trove.stop(30 * time.Second)

	plain := endpoint{name: archiveName + ", plain HTTP", conns: r.opt.StreamConns, stream: true}
	if !r.opt.selected(plain.name) {
		return &rss, memory, nil
	}
	if err := r.measurePlain(ctx, troveBin, plain, bl); err != nil {
		return &rss, memory, err
	}
	return &rss, memory, nil
}

// measureUI measures the web UI's rows on trove. They come after its
// memory was read (rss), and their pages are fetched only then, for a
// baseline of their own, so that the memory goal keeps measuring the
// protocols alone; each row's notes say what the pages added.
func (r *runner) measureUI(ctx context.Context, origin string, tlsCfg *tls.Config, trove *child, rss RSS, tlsDir string) error {
	sets, err := r.uiPicks()
	if err != nil {
		return err
	}
	if sets = r.opt.selectSets(sets); len(sets) == 0 {
		return nil
	}
	n := 0
	for _, set := range sets {
		n += len(set.docs)
	}
	r.progress("fetching the %s pages of the web UI rows", thousands(n))
	if err := fetchMix(ctx, poolClient(tlsCfg, 8), origin, sets); err != nil {
		return err
	}
	var docs []document // with the bodies just fetched
	for _, set := range sets {
		docs = append(docs, set.docs...)
	}
	bl, err := r.startBaseline(ctx, "-ui", docs, nil, "",
		filepath.Join(tlsDir, server.CertFileName), filepath.Join(tlsDir, server.KeyFileName))
	if err != nil {
		return err
	}
	defer bl.stop(10 * time.Second)
	for _, set := range sets {
		if err := r.measureMix(ctx, set, origin, tlsCfg, trove, bl, "https://"+bl.tlsAddr, set.p99Goal); err != nil {
			return err
		}
		after, err := ReadRSS(trove.pid())
		if err != nil {
			return err
		}
		row := &r.rows[len(r.rows)-1]
		row.Notes = append(row.Notes, fmt.Sprintf("Trove VmRSS after this row: %s (%s before the web UI rows)", formatMiB(after.Current), formatMiB(rss.Current)))
	}
	return nil
}

// uiPicks returns the sets of the web UI rows (none without opt.UIDocs
// or modules to show).
func (r *runner) uiPicks() ([]mixSet, error) {
	if r.opt.UIDocs == 0 || len(r.opt.Spec.Modules) == 0 {
		return nil, nil
	}
	pages, err := uiPagePicks(r.opt.Spec, r.opt.UIDocs)
	if err != nil {
		return nil, err
	}
	search, err := uiSearchPicks(r.opt.Spec, r.opt.UIDocs)
	if err != nil {
		return nil, err
	}
	pages.p99Goal, search.p99Goal = UIPageP99Goal, UISearchP99Goal
	return []mixSet{pages, search}, nil
}

// measureMix measures a realistic-mix row: every request draws one of
// set's documents, on Trove and on the baseline. A row with a p99 goal
// (the web UI's) is checked against it rather than against the
// baseline's latency.
func (r *runner) measureMix(ctx context.Context, set mixSet, origin string, tlsCfg *tls.Config, trove *child, bl *baseline, blOrigin string, p99Goal time.Duration) error {
	ts := childSide("trove", origin+set.docs[0].path, tlsCfg, func() *child { return trove })
	bs := childSide("baseline", blOrigin+set.docs[0].path, tlsCfg, func() *child { return bl.child })
	if set.docs[0].html {
		ts.header, bs.header = htmlHeader(), htmlHeader()
	}
	if set.header != nil {
		ts.header, bs.header = set.header, set.header
	}
	var err error
	if set.weights != nil {
		ts.mix, err = NewWeightedURLMix(mixURLs(origin, set), set.weights)
		if err == nil {
			bs.mix, err = NewWeightedURLMix(mixURLs(blOrigin, set), set.weights)
		}
	} else {
		ts.mix, err = NewURLMix(mixURLs(origin, set))
		if err == nil {
			bs.mix, err = NewURLMix(mixURLs(blOrigin, set))
		}
	}
	if err != nil {
		return err
	}
	notes := append(slices.Clone(set.notes), mixNote(set, r.opt.MixDuration))
	return r.measure(ctx, measurement{
		name: set.name, conns: r.opt.Conns, latency: p99Goal == 0, p99Goal: p99Goal, rounds: r.opt.MixRounds, duration: r.opt.MixDuration,
		trove: ts, refs: []reference{{side: bs}}, notes: notes,
	})
}

// fillCache asks Trove for opt.FillDocs download documents, every
// platform of every version provider after provider, as `terraform
// providers mirror` of every platform does, which fills its document
// cache; it returns a sentence on what the cache then held.
func (r *runner) fillCache(ctx context.Context, client *http.Client, origin string) (string, error) {
	paths, err := fillPaths(r.opt.Spec, r.opt.FillDocs)
	if err != nil {
		return "", err
	}
	r.progress("filling trove's cache: %s download documents as a mirror of every platform asks for them, %d connections", thousands(len(paths)), r.opt.Conns)
	began := time.Now()
	failed, err := sweep(ctx, client, origin, paths, r.opt.Conns)
	if err != nil {
		return "", err
	}
	if failed > 0 {
		return "", registry.Errorf(registry.Unavailable, "filling the cache: %d of %d download documents were not answered 200", failed, len(paths))
	}
	took := time.Since(began)
	entries, bytes, heap, nextGC, err := cacheFigures(ctx, client, origin)
	if err != nil {
		return "", err
	}
	note := fmt.Sprintf("read after a sweep like `terraform providers mirror` of every platform asked for %s download documents in %.1f s, which left the providers.v1 cache holding %s documents accounted as %s (its default limit is %s); Go heap in use %s, next GC at %s",
		thousands(len(paths)), took.Seconds(), thousands(int(entries)), formatMiB(bytes), formatMiB(providers.DefaultCacheBytes), formatMiB(heap), formatMiB(nextGC))
	r.progress("%s", note)
	return note, nil
}

// measurePlain restarts Trove with --insecure-http, as behind a
// TLS-terminating proxy, and measures the archive download over plain
// HTTP, where both servers can use sendfile. A Trove that refuses the
// flags gives a skipped row.
func (r *runner) measurePlain(ctx context.Context, troveBin string, ep endpoint, bl *baseline) error {
	trove, hostPort, client, err := r.startPlainTrove(ctx, troveBin, "")
	if trove != nil {
		defer trove.stop(30 * time.Second)
	}
	if err != nil {
		if trove == nil || !trove.exited() {
			return err
		}
		reason := "trove serve --insecure-http did not start: " + firstLine(trove.logTail(1))
		r.progress("%s", reason)
		r.rows = append(r.rows, Row{Endpoint: ep.name, Conns: ep.conns, Stream: true, Skipped: reason})
		return nil
	}
	a := r.seeded.Archive
	body, err := fetch(ctx, client, "http://"+hostPort+downloadPath(r.seeded.Namespace, a))
	if err != nil {
		return err
	}
	u, err := downloadURL(body, "https://"+hostPort)
	if err != nil {
		return err
	}
	u.Scheme, u.Host = "http", hostPort // the proxy would forward it so
	ep.trove = u.String()
	ep.baseline = "http://" + bl.plainAddr + u.RequestURI()
	return r.measure(ctx, r.pair(ep, trove, bl.child))
}

// startPlainTrove starts Trove on the data directory with
// --insecure-http, as behind a TLS-terminating proxy (its public URL
// https on the same host and port), on hostPort (empty: a free loopback
// port), and waits until it answers. It returns the process (nil if it
// did not start; stop it), its host:port and a client; the error of a
// process that exited is its refusal.
func (r *runner) startPlainTrove(ctx context.Context, troveBin, hostPort string) (*child, string, *http.Client, error) {
	if hostPort == "" {
		port, err := freePort()
		if err != nil {
			return nil, "", nil, err
		}
		hostPort = "127.0.0.1:" + strconv.Itoa(port)
	}
	r.progress("starting trove serve --insecure-http on http://%s", hostPort)
	trove, err := startChild("trove", troveBin,
		append([]string{"serve", "--listen", hostPort, "--data-dir", r.dataDir, "--insecure-http",
			"--public-url", "https://" + hostPort, "--log-level", r.opt.TroveLogLevel}, r.moduleMirrorFlags()...),
		troveEnv(), filepath.Join(r.tmp, "trove-plain.log"), nil, nil, r.pin)
	if err != nil {
		return nil, "", nil, err
	}
	client, err := waitHealthy(ctx, trove, "http://"+hostPort+"/healthz", func() (*http.Client, error) {
		return simpleClient(nil), nil
	}, time.Minute)
	return trove, hostPort, client, err
}

// pair is the measurement of ep on the Trove and baseline processes.
func (r *runner) pair(ep endpoint, trove, base *child) measurement {
	return measurement{
		name: ep.name, conns: ep.conns, stream: ep.stream,
		trove: childSide("trove", ep.trove, ep.tls, func() *child { return trove }),
		refs:  []reference{{side: childSide("baseline", ep.baseline, ep.tls, func() *child { return base })}},
	}
}

// measure loads m on Trove and on each reference, opt.Rounds times,
// rotating which goes first (with one reference: odd rounds Trove first,
// even rounds the reference first), and adds one row per reference with
// the totals of all rounds.
//
// When a round fails, measure adds the rows with Failed set instead, so
// that the report of the run that stops there still shows every row
// measured before it.
func (r *runner) measure(ctx context.Context, m measurement) (err error) {
	defer func() {
		if err == nil {
			return
		}
		for _, ref := range m.refs {
			r.rows = append(r.rows, Row{Endpoint: m.name, Reference: ref.label, Backend: m.backend, Conns: m.conns, Stream: m.stream,
				Latency: m.latency, P99Goal: m.p99Goal, Failed: err.Error()})
		}
	}()
	rounds, duration := r.opt.Rounds, r.opt.Duration
	if m.rounds > 0 {
		rounds = m.rounds
	}
	if m.duration > 0 {
		duration = m.duration
	}
	sides := []side{m.trove}
	for _, ref := range m.refs {
		sides = append(sides, ref.side)
	}
	totals := make([]Result, len(sides))
	hists := make([]Histogram, len(sides))
	ratioMin := make([]float64, len(m.refs))
	ratioMax := make([]float64, len(m.refs))
	var firstRequests []int64 // per round: URLs Trove's cycle handed out
	var repeats int64
	distinct := 0
	for round := 1; round <= rounds; round++ {
		this := make([]Result, len(sides))
		for _, i := range roundOrder(len(sides), round) {
			sd := sides[i]
			if sd.prepare != nil {
				if err := sd.prepare(ctx); err != nil {
					return err
				}
			}
			opt := LoadOptions{Conns: m.conns, Warmup: r.opt.Warmup, Duration: duration, TLS: sd.tls, Header: sd.header,
				FollowRedirects: sd.follow, CPU: sd.cpu, BackendCPU: sd.backendCPU, HTTP2: r.opt.HTTP2 && sd.tls != nil}
			if r.pin != nil {
				opt.LoadCPU = func() (time.Duration, error) { return ReadCPUTime(os.Getpid()) }
			}
			if sd.mix != nil {
				opt.NextURL = sd.mix.Next
			}
			var cycle *URLCycle
			if sd.urls != nil {
				c, err := sd.urls()
				if err != nil {
					return err
				}
				cycle, opt.NextURL = c, c.Next
			}
			r.progress("%s: %s, round %d/%d, %d connections, %s + %s warm-up", m.name, sd.name, round, rounds, m.conns, duration, r.opt.Warmup)
			res, hist, err := load(ctx, sd.url, opt)
			if sd.alive != nil {
				if aerr := sd.alive(); aerr != nil {
					return registry.Wrap(registry.Unavailable, aerr, m.name)
				}
			}
			if err != nil {
				return err
			}
			if i == 0 && cycle != nil {
				firstRequests = append(firstRequests, cycle.Issued())
				repeats += cycle.Repeats()
				distinct = cycle.Len()
			}
			this[i] = res
			totals[i].add(res)
			hists[i].Merge(hist)
			line := fmt.Sprintf("  %s req/s, %s MiB/s, p50 %s, p99 %s, max %s (%d over %s), CPU/req %s, %d errors", formatRate(res.ReqPerSec()), formatRate(res.MiBPerSec()),
				formatLatency(res.P50), formatLatency(res.P99), formatLatency(res.Max), res.Slow, formatLatency(SlowLatency), formatCPU(res.CPUPerRequest()), res.Errors)
			if s := res.BackendCPUPerRequest(); s > 0 {
				line += fmt.Sprintf(", %s CPU/req %s", m.backend, formatCPU(s))
			}
			if r.pin != nil {
				line += fmt.Sprintf(", server busy %.0f%%, load generator busy %.0f%% of %d CPU(s)", 100*res.CPU.Seconds()/res.Elapsed.Seconds(),
					100*res.LoadCPU.Seconds()/res.Elapsed.Seconds()/float64(r.pin.loadCPUs), r.pin.loadCPUs)
			}
			if res.Errors > 0 {
				line += " (first: " + res.FirstError + ")"
			}
			r.progress("%s", line)
		}
		for j := range m.refs {
			ratio := Row{Stream: m.stream, Trove: this[0], Baseline: this[j+1]}.Ratio()
			if round == 1 || ratio < ratioMin[j] {
				ratioMin[j] = ratio
			}
			if round == 1 || ratio > ratioMax[j] {
				ratioMax[j] = ratio
			}
		}
	}
	for i := range totals {
		totals[i].P50 = hists[i].Percentile(50)
		totals[i].P99 = hists[i].Percentile(99)
		totals[i].Max = hists[i].Max()
		totals[i].Slow = hists[i].Above(SlowLatency)
	}
	notes := append([]string(nil), m.notes...)
	if firstRequests != nil {
		notes = append(notes, cycleNote(firstRequests, repeats, distinct))
	}
	for j, ref := range m.refs {
		r.rows = append(r.rows, Row{
			Endpoint: m.name, Reference: ref.label, Backend: m.backend, Conns: m.conns, Stream: m.stream, Latency: m.latency, P99Goal: m.p99Goal,
			Trove: totals[0], Baseline: totals[j+1], Rounds: rounds,
			RatioMin: ratioMin[j], RatioMax: ratioMax[j], Notes: notes,
		})
	}
	return nil
}

// roundOrder returns the order in which n sides are measured in round
// (from 1): rotated by one each round, so that each goes first equally
// often and none always follows the same one.
func roundOrder(n, round int) []int {
	order := make([]int, n)
	for i := range order {
		order[i] = (round - 1 + i) % n
	}
	return order
}

// cycleNote says how many distinct URLs Trove was asked for per round,
// and whether any was asked for twice.
func cycleNote(perRound []int64, repeats int64, distinct int) string {
	most := slices.Max(perRound)
	if repeats == 0 {
		return fmt.Sprintf("every Trove request asked for a URL not asked for before: at most %s per round (warm-up included) of %s distinct ones",
			thousands(int(most)), thousands(distinct))
	}
	return fmt.Sprintf("%s Trove requests repeated a URL (at most %s per round for %s distinct ones): those may have been cache hits; seed more versions",
		thousands(int(repeats)), thousands(int(most)), thousands(distinct))
}

// downloadPath returns the providers.v1 download path of the archive.
func downloadPath(namespace string, a Archive) string {
	return "/v1/providers/" + namespace + "/" + a.Type + "/" + a.Version + "/download/" + a.OS + "/" + a.Arch
}

// fetchDocuments fetches the JSON bodies the baseline replays and
// resolves the archive's download URL.
func (r *runner) fetchDocuments(ctx context.Context, client *http.Client, origin string) ([]document, *url.URL, error) {
	ns, a := r.seeded.Namespace, r.seeded.Archive
	count := map[string]int{}
	for _, p := range r.opt.Spec.Providers {
		count[p.Type] = p.Versions
	}
	var docs []document
	for _, p := range r.opt.Spec.Providers {
		docs = append(docs, document{
			name: fmt.Sprintf("versions %s/%s (%s versions)", ns, p.Type, thousands(count[p.Type])),
			path: "/v1/providers/" + ns + "/" + p.Type + "/versions",
		})
	}
	docs = append(docs, document{
		name: fmt.Sprintf("download %s/%s %s %s_%s", ns, a.Type, a.Version, a.OS, a.Arch),
		path: downloadPath(ns, a),
	})
	for i := range docs {
		body, err := fetch(ctx, client, origin+docs[i].path)
		if err != nil {
			return nil, nil, err
		}
		docs[i].body = body
	}
	u, err := downloadURL(docs[len(docs)-1].body, origin)
	if err != nil {
		return nil, nil, err
	}
	if err := checkArchive(ctx, client, u.String(), a.Size); err != nil {
		return nil, nil, err
	}
	for _, m := range r.opt.Spec.Modules[:min(1, len(r.opt.Spec.Modules))] { // the others are for the mix
		base := "/v1/modules/" + ns + "/" + m.Name + "/" + m.System
		versions := document{name: fmt.Sprintf("module versions %s/%s/%s (%s versions)", ns, m.Name, m.System, thousands(m.Versions)), path: base + "/versions"}
		if versions.body, err = fetch(ctx, client, origin+versions.path); err != nil {
			return nil, nil, err
		}
		newest := VersionAt(newestIndex(m.Versions))
		download := document{name: fmt.Sprintf("module download %s/%s/%s %s", ns, m.Name, m.System, newest), path: base + "/" + newest + "/download"}
		if download.location, err = fetchLocation(ctx, client, origin+download.path); err != nil {
			return nil, nil, err
		}
		docs = append(docs, versions, download)
	}
	return docs, u, nil
}

// fetchLocation fetches a module download answer, which must be 204 with
// an X-Terraform-Get header, and returns that header.
func fetchLocation(ctx context.Context, client *http.Client, url string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := client.Do(req)
	if err != nil {
		return "", registry.Wrap(registry.Unavailable, err, "fetching "+url)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	loc := resp.Header.Get("X-Terraform-Get")
	if resp.StatusCode != http.StatusNoContent || loc == "" {
		return "", registry.Errorf(registry.Unavailable, "GET %s answered %s with X-Terraform-Get %q, want 204 with the archive URL", url, resp.Status, loc)
	}
	return loc, nil
}

// downloadURL reads download_url from a download document and resolves it
// against origin. It must name a loopback host.
func downloadURL(doc []byte, origin string) (*url.URL, error) {
	var d struct {
		DownloadURL string `json:"download_url"`
	}
	if err := json.Unmarshal(doc, &d); err != nil || d.DownloadURL == "" {
		return nil, registry.Errorf(registry.Invalid, "the download document has no download_url: %.300s", doc)
	}
	base, err := url.Parse(origin + "/")
	if err != nil {
		return nil, registry.Wrap(registry.Invalid, err, "origin "+origin)
	}
	ref, err := url.Parse(d.DownloadURL)
	if err != nil {
		return nil, registry.Errorf(registry.Invalid, "download_url %q does not parse: %v", d.DownloadURL, err)
	}
	u := base.ResolveReference(ref)
	if u.Scheme != "https" && u.Scheme != "http" || !isLoopback(u.Hostname()) {
		return nil, registry.Errorf(registry.Invalid, "download_url %q does not point at a loopback address: the load test only loads loopback", d.DownloadURL)
	}
	return u, nil
}

// isLoopback reports whether host is localhost or a loopback IP address.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// checkArchive downloads url once and checks its size.
func checkArchive(ctx context.Context, client *http.Client, url string, size int64) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := client.Do(req)
	if err != nil {
		return registry.Wrap(registry.Unavailable, err, "downloading the archive")
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return registry.Wrap(registry.Unavailable, err, "downloading the archive")
	}
	if resp.StatusCode != http.StatusOK || n != size {
		return registry.Errorf(registry.Unavailable, "GET %s answered %s with %d bytes, want 200 with %d", url, resp.Status, n, size)
	}
	return nil
}

// baseline is a running baseline process.
type baseline struct {
	*child
	tlsAddr, plainAddr string
	stdin              io.Closer
}

func (b *baseline) stop(grace time.Duration) {
	b.stdin.Close()
	b.child.stop(grace)
}

// startBaseline writes the documents and the baseline configuration into
// the temporary directory and starts `<BaselineBinary> baseline`; tag
// tells the files of a second baseline from the first's.
// families maps URL path prefixes to the one body answered under each
// (BaselineConfig.Families); it may be nil.
func (r *runner) startBaseline(ctx context.Context, tag string, docs []document, families map[string][]byte, archivePath, certFile, keyFile string) (*baseline, error) {
	cfg := BaselineConfig{
		CertFile: certFile, KeyFile: keyFile,
		Documents:   map[string]string{},
		Locations:   map[string]string{},
		Pages:       map[string]string{},
		Families:    map[string]string{},
		Responses:   map[string]BaselineResponse{},
		ArchivePath: archivePath,
		ArchiveFile: r.seeded.Archive.File,
	}
	for prefix, body := range families {
		file := filepath.Join(r.tmp, "family"+tag+"-"+strconv.Itoa(len(cfg.Families))+".json")
		if err := os.WriteFile(file, body, 0o600); err != nil {
			return nil, registry.Wrap(registry.Internal, err, "writing a baseline document")
		}
		cfg.Families[prefix] = file
	}
	for i, d := range docs {
		if d.oci {
			file := filepath.Join(r.tmp, "oci"+tag+"-"+strconv.Itoa(i)+".json")
			if err := os.WriteFile(file, d.body, 0o600); err != nil {
				return nil, registry.Wrap(registry.Internal, err, "writing a baseline OCI document")
			}
			cfg.Responses[d.path] = BaselineResponse{File: file, Header: d.header}
			continue
		}
		if d.location != "" {
			cfg.Locations[d.path] = d.location
			continue
		}
		if d.html {
			file := filepath.Join(r.tmp, "page"+tag+"-"+strconv.Itoa(i)+".html")
			if err := os.WriteFile(file, d.body, 0o600); err != nil {
				return nil, registry.Wrap(registry.Internal, err, "writing a baseline page")
			}
			cfg.Pages[d.path] = file
			continue
		}
		file := filepath.Join(r.tmp, "document"+tag+"-"+strconv.Itoa(i)+".json")
		if err := os.WriteFile(file, d.body, 0o600); err != nil {
			return nil, registry.Wrap(registry.Internal, err, "writing a baseline document")
		}
		cfg.Documents[d.path] = file
	}
	cfgFile := filepath.Join(r.tmp, "baseline"+tag+".json")
	if err := WriteBaselineConfig(cfgFile, cfg); err != nil {
		return nil, err
	}
	bin := r.opt.BaselineBinary
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, registry.Wrap(registry.Internal, err, "locating this executable to start the baseline")
		}
		bin = exe
	}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, registry.Wrap(registry.Internal, err, "creating the baseline's stdin")
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		return nil, registry.Wrap(registry.Internal, err, "creating the baseline's stdout")
	}
	r.progress("starting the baseline server")
	c, err := startChild("baseline", bin, []string{"baseline", "-config", cfgFile}, os.Environ(),
		filepath.Join(r.tmp, "baseline"+tag+".log"), stdoutW, stdinR, r.pin)
	stdinR.Close()
	stdoutW.Close()
	if err != nil {
		stdinW.Close()
		stdoutR.Close()
		return nil, err
	}
	b := &baseline{child: c, stdin: stdinW}
	lines := make(chan string, 1)
	go func() {
		defer stdoutR.Close()
		line, _ := bufio.NewReader(stdoutR).ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, stdoutR) // keep draining until the child exits
	}()
	var line string
	select {
	case line = <-lines:
	case <-time.After(30 * time.Second):
	case <-ctx.Done():
	}
	tlsAddr, plainAddr, ok := parseBaselineAddrs(line)
	if !ok {
		b.stop(5 * time.Second)
		return nil, registry.Errorf(registry.Unavailable, "the baseline did not announce its addresses (got %q); end of its log:\n%s", line, c.logTail(20))
	}
	b.tlsAddr, b.plainAddr = tlsAddr, plainAddr
	return b, nil
}

// baselineAnnounce is the format of the line the baseline prints once it
// listens.
const baselineAnnounce = "baseline listening https=%s http=%s\n"

// parseBaselineAddrs reads the addresses from the baseline's first line.
func parseBaselineAddrs(line string) (tlsAddr, plainAddr string, ok bool) {
	var a, b string
	if _, err := fmt.Sscanf(line, baselineAnnounce, &a, &b); err != nil {
		return "", "", false
	}
	for _, addr := range []string{a, b} {
		host, _, err := net.SplitHostPort(addr)
		if err != nil || host != "127.0.0.1" {
			return "", "", false
		}
	}
	return a, b, true
}

// RunBaseline is the `baseline` subcommand: it serves the configuration
// in cfgFile on two loopback ports (HTTPS and plain HTTP), announces them
// on stdout, and serves until ctx ends or stdin reaches end of file (the
// harness holds the other end, so the baseline never outlives it).
func RunBaseline(ctx context.Context, cfgFile string, stdin io.Reader, stdout io.Writer) error {
	cfg, err := ReadBaselineConfig(cfgFile)
	if err != nil {
		return err
	}
	h, err := NewBaselineHandler(cfg)
	if err != nil {
		return err
	}
	tlsLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return registry.Wrap(registry.Unavailable, err, "baseline: listening on 127.0.0.1")
	}
	plainLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tlsLn.Close()
		return registry.Wrap(registry.Unavailable, err, "baseline: listening on 127.0.0.1")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if stdin != nil {
		go func() {
			_, _ = io.Copy(io.Discard, stdin)
			cancel()
		}()
	}
	errc := make(chan error, 1)
	go func() { errc <- ServeBaseline(ctx, cfg, h, tlsLn, plainLn) }()
	fmt.Fprintf(stdout, baselineAnnounce, tlsLn.Addr(), plainLn.Addr())
	return <-errc
}

// trustCA returns a client TLS configuration trusting only the CA in file.
func trustCA(file string) (*tls.Config, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, registry.Wrap(registry.Unavailable, err, "reading the CA certificate")
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, registry.Errorf(registry.Invalid, "%s holds no PEM certificate", file)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// poolClient is a client of set-up requests sent from up to conns
// goroutines at once, keeping that many connections open.
func poolClient(cfg *tls.Config, conns int) *http.Client {
	c := simpleClient(cfg)
	c.Transport.(*http.Transport).MaxIdleConnsPerHost = conns
	return c
}

// simpleClient is the client of the set-up requests (not the load).
func simpleClient(cfg *tls.Config) *http.Client {
	return &http.Client{
		Transport: &http.Transport{TLSClientConfig: cfg, DisableCompression: true},
		Timeout:   2 * time.Minute,
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// thousands formats n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
