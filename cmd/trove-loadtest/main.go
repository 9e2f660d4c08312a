// Command trove-loadtest measures Trove against a minimal static Go server
// on loopback and prints a Markdown table (see internal/loadtest and
// docs/benchmarks.md). Run it from the module root:
//
//	go run ./cmd/trove-loadtest [-conns 32] [-mix-docs 300] [-mix-duration 65s] [-ui-docs 1000] [-ui-only] [-single] [-stream-conns 4] [-duration 5s] [-warmup 1s]
//	go run ./cmd/trove-loadtest -backend postgres-s3   # PostgreSQL and S3, see docs/benchmarks.md
//
// `trove-loadtest baseline -config FILE` is the baseline server the run
// starts; `trove-loadtest seed -data-dir DIR` only seeds a data directory
// (for profiling Trove by hand); `trove-loadtest compare [flags] A B`
// builds trove at commits A and B and runs the harness against each in
// alternating runs, printing per row how B compares with A. It exits 0
// whatever the ratios are,
// 1 when the measurement failed and 2 on a wrong command line.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"trove.dev/trove/internal/loadtest"
	"trove.dev/trove/internal/store/fsblob"
	"trove.dev/trove/internal/store/sqlite"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// errUsage marks a wrong command line (exit 2).
var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var err error
	switch {
	case len(args) > 0 && args[0] == "baseline":
		err = runBaseline(ctx, args[1:], stdin, stdout, stderr)
	case len(args) > 0 && args[0] == "seed":
		err = runSeed(ctx, args[1:], stdout, stderr)
	case len(args) > 0 && args[0] == "compare":
		err = runCompare(ctx, args[1:], stdout, stderr)
	default:
		err = runLoad(ctx, args, stdout, stderr)
	}
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	default:
		fmt.Fprintf(stderr, "trove-loadtest: %v\n", err)
		return 1
	}
}

// parse parses args with fs, printing problems and usage to stderr.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "trove-loadtest: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return errUsage
	}
	return nil
}

func runLoad(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("trove-loadtest", flag.ContinueOnError)
	opt, timeout := loadFlags(fs)
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if err := finishLoadOptions(fs, opt, stderr); err != nil {
		return err
	}
	opt.Progress = stderr
	limit, err := runTimeout(*opt, *timeout)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	report, err := loadtest.Run(ctx, *opt)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("%w (the run took longer than its -timeout of %s)", err, limit)
	}
	if len(report.Rows) > 0 {
		// What was measured before a failure is printed too; its last
		// row says what failed.
		if rerr := loadtest.RenderMarkdown(stdout, report); err == nil {
			err = rerr
		}
	}
	return err
}

// runTimeout returns how long one run with opt may take: flag, or when
// it is 0, the run's budget (its measured windows plus time to set up).
func runTimeout(opt loadtest.Options, flag time.Duration) (time.Duration, error) {
	if flag > 0 {
		return flag, nil
	}
	return opt.Budget()
}

// loadFlags defines the flags of a load run on fs and returns the options
// they fill and the overall timeout.
func loadFlags(fs *flag.FlagSet) (*loadtest.Options, *time.Duration) {
	o := loadtest.DefaultOptions()
	opt := &o
	fs.IntVar(&opt.Conns, "conns", opt.Conns, "concurrent keep-alive connections for the JSON endpoints")
	fs.IntVar(&opt.StreamConns, "stream-conns", opt.StreamConns, "concurrent connections for the archive downloads")
	fs.BoolVar(&opt.HTTP2, "http2", opt.HTTP2, "speak HTTP/2 on the HTTPS rows, as terraform and tofu do (default: HTTP/1.1)")
	fs.BoolVar(&opt.Pin, "pin", opt.Pin, "run Trove and the baseline on one CPU (GOMAXPROCS 1) and the load generator on the others (Linux, two CPUs or more), as a measurement that gives each side a CPU of its own")
	fs.BoolVar(&opt.PlainHTTP, "plain", opt.PlainHTTP, "measure the realistic-mix rows alone over plain HTTP (Trove with --insecure-http, as behind a TLS-terminating proxy), where no TLS work hides the handler's own cost")
	fs.DurationVar(&opt.Duration, "duration", opt.Duration, "measured `duration` per endpoint and server")
	fs.DurationVar(&opt.Warmup, "warmup", opt.Warmup, "unmeasured warm-up before each measurement")
	fs.IntVar(&opt.Rounds, "rounds", opt.Rounds, "measure each endpoint this many times on Trove and the baseline, alternately, and add the rounds up")
	fs.StringVar(&opt.TroveBinary, "trove", "", "a built trove `binary` (default: go build ./cmd/trove of -module into a temporary directory)")
	fs.StringVar(&opt.ModuleDir, "module", opt.ModuleDir, "`directory` of the Trove module to build trove from")
	fs.StringVar(&opt.TroveLogLevel, "trove-log-level", opt.TroveLogLevel, "--log-level of trove serve (info logs every request, as in production)")
	fs.IntVar(&opt.Spec.TotalVersions, "versions", opt.Spec.TotalVersions, "provider versions in the seeded index")
	fs.IntVar(&opt.MixDocs, "mix-docs", opt.MixDocs, "distinct documents per realistic-mix row, drawn at random per request")
	fs.DurationVar(&opt.MixDuration, "mix-duration", opt.MixDuration, "measured `duration` of each realistic-mix row per server (longer than twice the cache maximum age of "+loadtest.CacheMaxAge.String()+" to see documents rendered again)")
	fs.IntVar(&opt.MixRounds, "mix-rounds", opt.MixRounds, "rounds of each realistic-mix row")
	fs.IntVar(&opt.UIDocs, "ui-docs", opt.UIDocs, "distinct pages of the web UI pages row and distinct queries of the UI search row (0: no UI rows)")
	fs.BoolVar(&opt.UIOnly, "ui-only", opt.UIOnly, "measure the web UI rows alone: no realistic-mix, archive or one-document rows and no sweep (the memory is read before the UI rows)")
	fs.BoolVar(&opt.Single, "single", opt.Single, "also measure one document per endpoint in a hot loop (-duration, -rounds), as the harness did before the realistic mix")
	fs.IntVar(&opt.FillDocs, "fill-docs", opt.FillDocs, "download documents a mirror-like sweep asks for to fill the cache before Trove's memory is read (0: none)")
	fs.StringVar(&opt.StageDir, "stage-dir", opt.StageDir, "`directory` (best a memory file system) to build the index in before copying it; empty: build in place")
	fs.StringVar(&opt.Backend, "backend", loadtest.BackendEmbedded, "storage of Trove: "+loadtest.BackendEmbedded+" (SQLite and files) or "+loadtest.BackendPostgresS3+
		" (PostgreSQL and S3 on the servers named by "+loadtest.EnvPostgresDSN+" and "+loadtest.EnvS3Endpoint+"; default -versions 10000)")
	fs.Func("rows", "measure only the rows whose name matches this Go `regexp` (e.g. 'mirror index|module versions'; default: every row)", func(v string) error {
		re, err := regexp.Compile(v)
		if err != nil {
			return err
		}
		opt.Rows = re
		return nil
	})
	timeout := fs.Duration("timeout", 0, "give up a run after this long (0: the run's measured windows, from the flags above, plus 20 minutes and 1 second per 250 versions to build, seed and fetch)")
	return opt, timeout
}

// finishLoadOptions applies what the parsed flags imply (the scale-out
// backend's index and servers).
func finishLoadOptions(fs *flag.FlagSet, opt *loadtest.Options, stderr io.Writer) error {
	switch opt.Backend {
	case loadtest.BackendEmbedded:
	case loadtest.BackendPostgresS3:
		so, err := loadtest.ScaleOutFromEnv(os.Getenv)
		if err != nil {
			return err
		}
		opt.ScaleOut = so
		versions := opt.Spec.TotalVersions
		opt.Spec = loadtest.ScaleOutSpec()
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "versions" {
				opt.Spec.TotalVersions = versions
			}
		})
	default:
		fmt.Fprintf(stderr, "trove-loadtest: -backend must be %s or %s, got %q\n", loadtest.BackendEmbedded, loadtest.BackendPostgresS3, opt.Backend)
		return errUsage
	}
	return nil
}

func runBaseline(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("trove-loadtest baseline", flag.ContinueOnError)
	cfg := fs.String("config", "", "baseline configuration `file` (JSON, written by the harness)")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if *cfg == "" {
		fmt.Fprintln(stderr, "trove-loadtest baseline: -config is required")
		return errUsage
	}
	return loadtest.RunBaseline(ctx, *cfg, stdin, stdout)
}

func runSeed(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	spec := loadtest.DefaultSpec()
	// The module mirror's namespace needs the upstream the harness serves
	// while it runs: a seeded directory for profiling goes without it.
	spec.ModuleMirror = loadtest.ModuleMirrorSpec{}
	fs := flag.NewFlagSet("trove-loadtest seed", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "new `directory` to seed, as trove serve --data-dir opens it")
	fs.IntVar(&spec.TotalVersions, "versions", spec.TotalVersions, "provider versions in the index")
	if err := parse(fs, args, stderr); err != nil {
		return err
	}
	if *dataDir == "" {
		fmt.Fprintln(stderr, "trove-loadtest seed: -data-dir is required")
		return errUsage
	}
	if _, err := os.Stat(filepath.Join(*dataDir, "trove.db")); err == nil {
		return fmt.Errorf("%s already holds an index; seed a new directory", *dataDir)
	}
	idx, err := sqlite.Open(ctx, filepath.Join(*dataDir, "trove.db"))
	if err != nil {
		return err
	}
	defer idx.Close()
	blobs, err := fsblob.Open(filepath.Join(*dataDir, "blobs"))
	if err != nil {
		return err
	}
	s, err := loadtest.Seed(ctx, idx, blobs, spec, filepath.Join(*dataDir, "archive.zip"))
	if err != nil {
		return err
	}
	a := s.Archive
	fmt.Fprintf(stdout, "seeded %d versions of %d providers in %s in %.1fs\narchive: /v1/providers/%s/%s/%s/download/%s/%s (%s, copy in %s)\n",
		s.Versions, s.Providers, *dataDir, s.Took.Seconds(), s.Namespace, a.Type, a.Version, a.OS, a.Arch, a.Filename, a.File)
	return idx.Close()
}
