package loadtest

import (
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"trove.dev/trove/internal/protocol/providers"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/server"
	"trove.dev/trove/internal/store/postgres"
	"trove.dev/trove/internal/store/s3blob"
)

// Backends the harness measures Trove on (Options.Backend).
const (
	// BackendEmbedded is the SQLite index and the filesystem blob store in
	// the data directory.
	BackendEmbedded = "embedded"
	// BackendPostgresS3 is the PostgreSQL index and the S3 blob store, on
	// servers named by the environment (ScaleOutFromEnv).
	BackendPostgresS3 = "postgres-s3"
)

// Environment variables of a BackendPostgresS3 run: those that
// scripts/testenv/postgres.sh and scripts/testenv/s3.sh export.
const (
	EnvPostgresDSN = "TROVE_TEST_POSTGRES_DSN"
	EnvS3Endpoint  = "TROVE_TEST_S3_ENDPOINT"
	EnvS3AccessKey = "TROVE_TEST_S3_ACCESS_KEY"
	EnvS3SecretKey = "TROVE_TEST_S3_SECRET_KEY"
	EnvS3Region    = "TROVE_TEST_S3_REGION" // optional, default us-east-1
)

// ScaleOut names the servers of a BackendPostgresS3 run. The run creates a
// fresh database and bucket on them and drops both when it ends.
type ScaleOut struct {
	// PostgresDSN is a DSN of a PostgreSQL server on which its user may
	// CREATE DATABASE.
	PostgresDSN string
	// S3Endpoint is the base URL of an S3-compatible server on a loopback
	// address (the harness loads it directly), addressed path-style; the
	// keys may create buckets.
	S3Endpoint  string
	S3Region    string
	S3AccessKey string
	S3SecretKey string
}

// ScaleOutFromEnv reads the servers of a BackendPostgresS3 run from the
// environment variables Env*, failing with a message that says which are
// missing and how to get them.
func ScaleOutFromEnv(getenv func(string) string) (ScaleOut, error) {
	so := ScaleOut{
		PostgresDSN: getenv(EnvPostgresDSN),
		S3Endpoint:  getenv(EnvS3Endpoint),
		S3Region:    getenv(EnvS3Region),
		S3AccessKey: getenv(EnvS3AccessKey),
		S3SecretKey: getenv(EnvS3SecretKey),
	}
	var missing []string
	for _, v := range []struct{ name, value string }{
		{EnvPostgresDSN, so.PostgresDSN}, {EnvS3Endpoint, so.S3Endpoint},
		{EnvS3AccessKey, so.S3AccessKey}, {EnvS3SecretKey, so.S3SecretKey},
	} {
		if strings.TrimSpace(v.value) == "" {
			missing = append(missing, v.name)
		}
	}
	if len(missing) > 0 {
		return ScaleOut{}, registry.Errorf(registry.Invalid,
			"-backend %s needs %s: start throwaway servers with `source scripts/testenv/postgres.sh; source scripts/testenv/s3.sh` (or run make bench-scaleout, which does)",
			BackendPostgresS3, strings.Join(missing, ", "))
	}
	if so.S3Region == "" {
		so.S3Region = "us-east-1"
	}
	return so, so.check()
}

// check validates what the run needs before it touches anything.
func (so ScaleOut) check() error {
	u, err := url.Parse(so.S3Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" && u.Path != "/" {
		return registry.Errorf(registry.Invalid, "%s=%q is not the base URL of an S3 server, e.g. http://127.0.0.1:7070", EnvS3Endpoint, so.S3Endpoint)
	}
	if !isLoopback(u.Hostname()) {
		return registry.Errorf(registry.Invalid, "%s=%q is not on a loopback address: the load test loads only loopback servers", EnvS3Endpoint, so.S3Endpoint)
	}
	if _, err := pgx.ParseConfig(so.PostgresDSN); err != nil {
		return registry.Errorf(registry.Invalid, "%s does not parse as a PostgreSQL DSN (a postgres:// URL or key=value pairs)", EnvPostgresDSN)
	}
	return nil
}

// ScaleOutSpec is the index of a BackendPostgresS3 run: DefaultSpec with
// 10,000 versions (acme/small with 30, acme/large with 2,000, and filler
// providers of 30 versions, so that there are many providers), no modules,
// and 16 writers interleaving the providers, so that seeding takes seconds.
func ScaleOutSpec() Spec {
	s := DefaultSpec()
	s.TotalVersions = 10_000
	s.FillerVersions = 30
	s.Workers = 16
	s.Interleave = true
	s.Modules = nil
	s.ModuleMirror = ModuleMirrorSpec{}
	return s
}

// DatabaseDSN returns dsn (a postgres:// URL or key=value pairs) naming
// database name instead of its own.
func DatabaseDSN(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", registry.Errorf(registry.Invalid, "the PostgreSQL DSN is not a valid URL")
		}
		u.Path, u.RawPath = "/"+name, ""
		return u.String(), nil
	}
	if strings.ContainsAny(name, `'\ `) {
		return "", registry.Errorf(registry.Invalid, "invalid database name %q", name)
	}
	return strings.TrimSpace(dsn) + " dbname='" + name + "'", nil // a later key wins
}

// ColdDownloadPaths returns the download document path of every platform
// of every version of provs, except those in skip, in a fixed
// pseudo-random order (so that consecutive requests touch unrelated rows).
func ColdDownloadPaths(namespace string, provs []ProviderSpec, platforms []OSArch, skip map[string]bool) []string {
	var paths []string
	for _, p := range provs {
		for i := range p.Versions {
			for _, pl := range platforms {
				path := downloadPath(namespace, Archive{Type: p.Type, Version: VersionAt(i), OSArch: pl})
				if !skip[path] {
					paths = append(paths, path)
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(0x7472, 0x6f7665))
	rng.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	return paths
}

// ColdVersionsPaths returns the versions document path of every provider
// of provs in a fixed pseudo-random order.
func ColdVersionsPaths(namespace string, provs []ProviderSpec) []string {
	paths := make([]string, len(provs))
	for i, p := range provs {
		paths[i] = versionsPath(namespace, p.Type)
	}
	rng := rand.New(rand.NewPCG(0x7665, 0x7273))
	rng.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	return paths
}

func versionsPath(namespace, typ string) string {
	return "/v1/providers/" + namespace + "/" + typ + "/versions"
}

// medianProvider returns the provider of provs with the median number of
// versions (the first of several such).
func medianProvider(provs []ProviderSpec) ProviderSpec {
	sorted := slices.Clone(provs)
	slices.SortStableFunc(sorted, func(a, b ProviderSpec) int { return a.Versions - b.Versions })
	return sorted[len(sorted)/2]
}

// scaleOut is the state of a BackendPostgresS3 run.
type scaleOut struct {
	*runner
	so       ScaleOut
	troveBin string
	dsn      string // of the run's database
	bucket   string
	blobs    *s3blob.Store
	provs    []ProviderSpec

	port   int
	origin string
	tlsCfg *tls.Config
	client *http.Client
	trove  *child
	mode   string // --download-mode of the running Trove
	starts int

	pgCPU, s3CPU func() (time.Duration, error) // nil: not measurable here
	cpuNotes     []string
}

// runScaleOut is Run for BackendPostgresS3.
func runScaleOut(ctx context.Context, opt Options) (Report, error) {
	if err := opt.ScaleOut.check(); err != nil {
		return Report{}, err
	}
	tmp, err := os.MkdirTemp("", "trove-loadtest-")
	if err != nil {
		return Report{}, registry.Wrap(registry.Internal, err, "creating the temporary directory")
	}
	defer os.RemoveAll(tmp)
	s := &scaleOut{runner: &runner{opt: opt, tmp: tmp, dataDir: filepath.Join(tmp, "data")}, so: opt.ScaleOut}
	if s.troveBin, err = s.troveBinary(ctx); err != nil {
		return Report{}, err
	}
	provs, err := opt.Spec.plan()
	if err != nil {
		return Report{}, err
	}
	s.provs = provs

	suffix, err := randomSuffix()
	if err != nil {
		return Report{}, err
	}
	dropDB, err := s.createDatabase(ctx, "trove_loadtest_"+suffix)
	if err != nil {
		return Report{}, err
	}
	defer dropDB()
	deleteBucket, err := s.createBucket(ctx, "trove-loadtest-"+suffix)
	if err != nil {
		return Report{}, err
	}
	defer deleteBucket()
	if err := s.seed(ctx); err != nil {
		return Report{}, err
	}
	s.findServers()
	defer func() {
		if s.trove != nil {
			s.trove.stop(30 * time.Second)
		}
	}()
	rss, err := s.measureAll(ctx)
	var rssp *RSS
	if err == nil {
		rssp = &rss
	}
	sd := s.seeded
	rep := Report{
		Rows: s.rows,
		RSS:  rssp,
		Index: fmt.Sprintf("%s versions of %s providers, %s packages, in PostgreSQL; the %s archive in S3",
			thousands(sd.Versions), thousands(sd.Providers), thousands(sd.Packages), formatMiB(sd.Archive.Size)),
		Setup: fmt.Sprintf("%d round(s) per endpoint of %s measured after %s warm-up, Trove and its references rotating which goes first; %s, identity encoding; "+
			"trove serve --index-backend postgres --blob-backend s3 --download-mode redirect (proxy for the proxy rows) --log-level %s (and --cache-bytes "+coldVersionsCacheBytes+" for the cold versions row), PostgreSQL pool of %d; "+
			"PostgreSQL and the S3 server on this machine; %d CPUs shared by all of them and the load generator",
			opt.Rounds, opt.Duration, opt.Warmup, opt.protocol(), opt.TroveLogLevel, postgres.DefaultMaxConns, runtime.NumCPU()),
		Goals: DefaultGoals,
	}
	if err != nil {
		return partial(rep, err)
	}
	return rep, nil
}

func randomSuffix() (string, error) {
	b := make([]byte, 6)
	if _, err := crand.Read(b); err != nil {
		return "", registry.Wrap(registry.Internal, err, "choosing a database name")
	}
	return hex.EncodeToString(b), nil
}

// createDatabase creates database name on the server and returns a
// function that drops it.
func (s *scaleOut) createDatabase(ctx context.Context, name string) (func(), error) {
	dsn, err := DatabaseDSN(s.so.PostgresDSN, name)
	if err != nil {
		return nil, err
	}
	exec := func(ctx context.Context, sql string) error {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, s.so.PostgresDSN)
		if err != nil {
			return registry.Errorf(registry.Unavailable, "connecting to the PostgreSQL server of %s: %s", EnvPostgresDSN, pgError(err, s.so.PostgresDSN))
		}
		defer conn.Close(context.WithoutCancel(ctx))
		if _, err := conn.Exec(ctx, sql); err != nil {
			return registry.Errorf(registry.Unavailable, "%s: %s", sql, pgError(err, s.so.PostgresDSN))
		}
		return nil
	}
	ident := pgx.Identifier{name}.Sanitize()
	if err := exec(ctx, "CREATE DATABASE "+ident); err != nil {
		return nil, err
	}
	s.dsn = dsn
	s.progress("created database %s", name)
	return func() {
		if err := exec(context.WithoutCancel(ctx), "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
			s.progress("dropping database %s: %v", name, err)
		}
	}, nil
}

// pgError describes err without the DSN's password.
func pgError(err error, dsn string) string {
	msg := err.Error()
	if cfg, perr := pgx.ParseConfig(dsn); perr == nil && cfg.Password != "" {
		msg = strings.ReplaceAll(msg, cfg.Password, "xxxxx")
	}
	return msg
}

// s3Client is a plain client of the S3 server, for the bucket itself.
func (s *scaleOut) s3Client() *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint:               aws.String(s.so.S3Endpoint),
		Region:                     s.so.S3Region,
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(s.so.S3AccessKey, s.so.S3SecretKey, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// createBucket creates the bucket and returns a function that empties and
// deletes it.
func (s *scaleOut) createBucket(ctx context.Context, name string) (func(), error) {
	client := s.s3Client()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := client.CreateBucket(cctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		return nil, registry.Wrap(registry.Unavailable, err, "creating the S3 bucket "+name+" at "+s.so.S3Endpoint)
	}
	s.bucket = name
	s.progress("created bucket %s", name)
	return func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		pages := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: aws.String(name)})
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				s.progress("listing bucket %s: %v", name, err)
				return
			}
			for _, o := range page.Contents {
				if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(name), Key: o.Key}); err != nil {
					s.progress("emptying bucket %s: %v", name, err)
					return
				}
			}
		}
		if _, err := client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)}); err != nil {
			s.progress("deleting bucket %s: %v", name, err)
		}
	}, nil
}

// blobOptions returns the options of the run's blob store.
func (s *scaleOut) blobOptions() s3blob.Options {
	return s3blob.Options{Endpoint: s.so.S3Endpoint, Region: s.so.S3Region, Bucket: s.bucket, PathStyle: true,
		AccessKey: s.so.S3AccessKey, SecretKey: s.so.S3SecretKey}
}

// seed writes the index into the run's database through the postgres
// package and the archive into the bucket through s3blob, as trove serve
// opens them.
func (s *scaleOut) seed(ctx context.Context) error {
	spec := s.opt.Spec
	spec.ModuleMirror = ModuleMirrorSpec{} // the scale-out rows do not measure the module mirror
	s.progress("seeding %s versions into PostgreSQL with %d writers, the %s archive into S3", thousands(spec.TotalVersions), max(spec.Workers, 1), formatMiB(spec.ArchiveBytes))
	idx, err := postgres.Open(ctx, s.dsn, postgres.WithMaxConns(max(spec.Workers, 1)))
	if err != nil {
		return err
	}
	defer idx.Close()
	blobs, err := s3blob.Open(ctx, s.blobOptions())
	if err != nil {
		return err
	}
	s.blobs = blobs
	seeded, err := Seed(ctx, idx, blobs, spec, filepath.Join(s.tmp, "archive.zip"))
	if err != nil {
		return err
	}
	s.seeded = seeded
	s.progress("seeded %s versions of %s providers in %.1fs", thousands(seeded.Versions), thousands(seeded.Providers), seeded.Took.Seconds())
	return idx.Close()
}

// findServers prepares the CPU readers of PostgreSQL and the S3 server,
// when they run on this machine and their processes are visible.
func (s *scaleOut) findServers() {
	find := func(what, host string, port int) func() (time.Duration, error) {
		if !isLoopback(host) {
			s.cpuNotes = append(s.cpuNotes, what+" is not on this machine: its CPU is not measured")
			return nil
		}
		pid, err := ListenerPID(port)
		if err != nil {
			s.cpuNotes = append(s.cpuNotes, what+"'s CPU is not measured: "+registry.Message(err))
			s.progress("%s: CPU not measured: %v", what, err)
			return nil
		}
		s.progress("%s: process %d (CPU of it and its children measured)", what, pid)
		return func() (time.Duration, error) { return ReadTreeCPUTime(pid) }
	}
	if cfg, err := pgx.ParseConfig(s.dsn); err == nil {
		s.pgCPU = find("PostgreSQL", cfg.Host, int(cfg.Port))
	}
	if u, err := url.Parse(s.so.S3Endpoint); err == nil {
		port, _ := strconv.Atoi(u.Port())
		if port == 0 {
			port = map[string]int{"http": 80, "https": 443}[u.Scheme]
		}
		s.s3CPU = find("the S3 server", u.Hostname(), port)
	}
}

// startTrove stops the running Trove, if any, and starts one on the same
// port with --download-mode mode and the extra flags, waiting until it is
// healthy. Secrets go through the environment, not the command line.
func (s *scaleOut) startTrove(ctx context.Context, mode string, extra ...string) error {
	if s.trove != nil {
		s.trove.stop(30 * time.Second)
		s.trove = nil
	}
	if s.port == 0 {
		port, err := freePort()
		if err != nil {
			return err
		}
		s.port = port
		s.origin = "https://127.0.0.1:" + strconv.Itoa(port)
	}
	s.starts++
	env := append(troveEnv(), "TROVE_POSTGRES_DSN="+s.dsn, "TROVE_S3_SECRET_KEY="+s.so.S3SecretKey)
	args := []string{"serve", "--listen", "127.0.0.1:" + strconv.Itoa(s.port), "--data-dir", s.dataDir, "--log-level", s.opt.TroveLogLevel,
		"--index-backend", "postgres", "--blob-backend", "s3", "--s3-endpoint", s.so.S3Endpoint, "--s3-region", s.so.S3Region,
		"--s3-bucket", s.bucket, "--s3-path-style", "--s3-access-key", s.so.S3AccessKey, "--download-mode", mode}
	args = append(args, extra...)
	c, err := startChild("trove", s.troveBin, args, env, filepath.Join(s.tmp, "trove-"+strconv.Itoa(s.starts)+".log"), nil, nil, nil)
	if err != nil {
		return err
	}
	s.trove, s.mode = c, mode
	client, err := waitHealthy(ctx, c, s.origin+"/healthz", func() (*http.Client, error) {
		cfg, err := trustCA(filepath.Join(s.dataDir, "tls", server.CAFileName))
		if err != nil {
			return nil, err
		}
		s.tlsCfg = cfg
		return simpleClient(cfg), nil
	}, time.Minute)
	if err != nil {
		return err
	}
	s.client = client
	return nil
}

// troveSide is a side served by whichever Trove process runs.
func (s *scaleOut) troveSide(url string) side {
	sd := childSide("trove", url, nil, func() *child { return s.trove })
	sd.tls = s.tlsCfg
	return sd
}

// measureAll measures every endpoint and returns the resident memory of
// the Trove that served the cold downloads and the redirects.
func (s *scaleOut) measureAll(ctx context.Context) (RSS, error) {
	s.progress("starting trove serve --index-backend postgres --blob-backend s3 --download-mode redirect")
	if err := s.startTrove(ctx, "redirect"); err != nil {
		return RSS{}, err
	}
	s.progress("trove listening on %s", s.origin)
	docs, archiveURL, err := s.fetchDocuments(ctx, s.client, s.origin)
	if err != nil {
		return RSS{}, err
	}
	hot := docs[len(docs)-1] // the download document of the archive
	if err := s.checkRedirect(ctx, archiveURL.String()); err != nil {
		return RSS{}, err
	}
	a := s.seeded.Archive
	direct, err := s.blobs.PresignGet(ctx, a.SHA256, a.Filename, time.Hour)
	if err != nil {
		return RSS{}, err
	}
	if err := checkArchive(ctx, simpleClient(nil), direct, a.Size); err != nil {
		return RSS{}, err
	}

	// The baseline answers every cold versions URL with the versions
	// document of the provider with the median number of versions.
	median := medianProvider(s.provs)
	medianBody, err := fetch(ctx, s.client, s.origin+versionsPath(s.seeded.Namespace, median.Type))
	if err != nil {
		return RSS{}, err
	}

	tlsDir := filepath.Join(s.dataDir, "tls")
	family := "/v1/providers/" + s.seeded.Namespace + "/"
	families := map[string][]byte{family: hot.body, coldVersionsFamily: medianBody}
	bl, err := s.startBaseline(ctx, "", docs, families, archiveURL.Path,
		filepath.Join(tlsDir, server.CertFileName), filepath.Join(tlsDir, server.KeyFileName))
	if err != nil {
		return RSS{}, err
	}
	defer bl.stop(10 * time.Second)
	baseSide := func(url string, cfg *tls.Config) side {
		return childSide("baseline", url, cfg, func() *child { return bl.child })
	}

	// Hot: the documents asked for again and again, answered from the cache.
	for _, d := range docs {
		ts := s.troveSide(s.origin + d.path)
		ts.backendCPU = s.pgCPU
		m := measurement{name: d.name + ", hot (cached)", conns: s.opt.Conns, backend: "PostgreSQL", trove: ts,
			refs: []reference{{side: baseSide("https://"+bl.tlsAddr+d.path, s.tlsCfg)}}}
		if err := s.measure(ctx, m); err != nil {
			return RSS{}, err
		}
	}

	if err := s.measureColdVersions(ctx, bl, median, len(medianBody)); err != nil {
		return RSS{}, err
	}

	// Cold: a download document nobody asked this Trove for, every time.
	paths := ColdDownloadPaths(s.seeded.Namespace, s.provs, s.opt.Spec.Platforms, map[string]bool{hot.path: true})
	cycle := func(origin string) func() (*URLCycle, error) {
		return func() (*URLCycle, error) {
			urls := make([]string, len(paths))
			for i, p := range paths {
				urls[i] = origin + p
			}
			return NewURLCycle(urls)
		}
	}
	cold := s.troveSide("")
	cold.urls, cold.backendCPU = cycle(s.origin), s.pgCPU
	cold.prepare = func(ctx context.Context) error {
		s.progress("restarting trove, so that its cache is empty")
		return s.startTrove(ctx, "redirect")
	}
	coldBase := baseSide("", s.tlsCfg)
	coldBase.urls = cycle("https://" + bl.tlsAddr)
	err = s.measure(ctx, measurement{
		name: "download, cold (a version and platform not asked for before, per request)", conns: s.opt.Conns, backend: "PostgreSQL",
		trove: cold, refs: []reference{{side: coldBase}},
		notes: []string{"Trove restarted before each of its rounds, so its cache started empty; the requests walk the download documents of all seeded versions and platforms in a shuffled order; the baseline answers one static download document for every such URL"},
	})
	if err != nil {
		return RSS{}, err
	}
	if note, err := s.cacheNote(ctx); err != nil {
		s.progress("reading trove's cache metrics: %v", err)
	} else {
		s.progress("%s", note)
		s.rows[len(s.rows)-1].Notes = append(s.rows[len(s.rows)-1].Notes, note)
	}

	// The archive through a 302 to a presigned URL of the bucket.
	if archiveURL, err = s.archiveURL(ctx); err != nil {
		return RSS{}, err
	}
	if err := s.checkRedirect(ctx, archiveURL.String()); err != nil {
		return RSS{}, err
	}
	directSide := side{name: "direct S3", url: direct, cpu: s.s3CPU}
	archiveName := "archive " + formatMiB(a.Size)
	redirect := s.troveSide(archiveURL.String())
	redirect.follow, redirect.backendCPU = true, s.s3CPU
	err = s.measure(ctx, measurement{
		name: archiveName + ", redirect (Trove HTTPS 302, then the presigned S3 GET)", conns: s.opt.StreamConns, stream: true, backend: "S3 server",
		trove: redirect,
		// The bytes come from the S3 server over plain HTTP here: compare
		// with the baseline's plain-HTTP listener (sendfile), not its TLS one.
		refs: []reference{
			{label: "the plain-HTTP baseline", side: baseSide("http://"+bl.plainAddr+archiveURL.RequestURI(), nil)},
			{label: "direct S3 GET", side: directSide},
		},
		notes: s.cpuNotes,
	})
	if err != nil {
		return RSS{}, err
	}
	rss, err := ReadRSS(s.trove.pid())
	if err != nil {
		return RSS{}, err
	}
	s.progress("trove VmRSS %s, VmHWM %s", formatMiB(rss.Current), formatMiB(rss.Peak))

	// The archive streamed through Trove.
	s.progress("restarting trove with --download-mode proxy")
	if err := s.startTrove(ctx, "proxy"); err != nil {
		return RSS{}, err
	}
	if archiveURL, err = s.archiveURL(ctx); err != nil {
		return RSS{}, err
	}
	noFollow := simpleClient(s.tlsCfg)
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if err := checkArchive(ctx, noFollow, archiveURL.String(), a.Size); err != nil {
		return RSS{}, fmt.Errorf("trove --download-mode proxy: %w", err)
	}
	proxy := s.troveSide(archiveURL.String())
	proxy.backendCPU = s.s3CPU
	err = s.measure(ctx, measurement{
		name: archiveName + ", proxy (Trove HTTPS streams it from S3)", conns: s.opt.StreamConns, stream: true, backend: "S3 server",
		trove: proxy,
		refs: []reference{
			{side: baseSide("https://"+bl.tlsAddr+archiveURL.RequestURI(), s.tlsCfg)},
			{label: "direct S3 GET", side: directSide},
		},
		notes: s.cpuNotes,
	})
	if err != nil {
		return RSS{}, err
	}
	if proxyRSS, err := ReadRSS(s.trove.pid()); err == nil {
		s.progress("proxy trove VmRSS %s, VmHWM %s", formatMiB(proxyRSS.Current), formatMiB(proxyRSS.Peak))
	}
	return rss, nil
}

// coldVersionsFamily is the path prefix under which the baseline answers
// the cold versions URLs with one static versions document.
const coldVersionsFamily = "/cold-versions/"

// coldVersionsCacheBytes is the --cache-bytes of the Trove of the cold
// versions row: less than any document, so that the cache keeps only the
// document rendered last.
const coldVersionsCacheBytes = "1"

// measureColdVersions measures versions documents read from PostgreSQL on
// every request. A run seeds hundreds of providers, while a round asks
// for many thousands of versions documents, so walking them all still
// repeats each many times per round: Trove runs with a cache too small for any
// document, restarted before each of its rounds as for the cold
// downloads, and a request can be a hit only when the document rendered
// just before was the same.
func (s *scaleOut) measureColdVersions(ctx context.Context, bl *baseline, median ProviderSpec, medianBytes int) error {
	paths := ColdVersionsPaths(s.seeded.Namespace, s.provs)
	urls := make([]string, len(paths))
	baseURLs := make([]string, len(paths))
	for i, p := range paths {
		urls[i] = s.origin + p
		baseURLs[i] = "https://" + bl.tlsAddr + coldVersionsFamily + strings.TrimPrefix(p, "/v1/providers/")
	}
	var cycles []*URLCycle // Trove's, one per round
	cold := s.troveSide("")
	cold.backendCPU = s.pgCPU
	cold.urls = func() (*URLCycle, error) {
		c, err := NewURLCycle(urls)
		if err == nil {
			cycles = append(cycles, c)
		}
		return c, err
	}
	cold.prepare = func(ctx context.Context) error {
		s.progress("restarting trove with --cache-bytes %s, so that it caches no versions document", coldVersionsCacheBytes)
		return s.startTrove(ctx, "redirect", "--cache-bytes", coldVersionsCacheBytes)
	}
	base := childSide("baseline", "", s.tlsCfg, func() *child { return bl.child })
	base.urls = func() (*URLCycle, error) { return NewURLCycle(baseURLs) }
	fewest, most := s.provs[0].Versions, s.provs[0].Versions
	for _, p := range s.provs {
		fewest, most = min(fewest, p.Versions), max(most, p.Versions)
	}
	err := s.measure(ctx, measurement{
		name: "versions, cold (a provider's versions read from PostgreSQL, per request)", conns: s.opt.Conns, backend: "PostgreSQL",
		trove: cold, refs: []reference{{side: base}},
		notes: []string{fmt.Sprintf("Trove restarted before each of its rounds with --cache-bytes %s, a cache smaller than any document, so that it keeps only the document it rendered last; "+
			"the requests walk the versions documents of all %s providers (%s to %s versions each) in a shuffled order, so a request is answered from the cache only when the one rendered just before it was the same provider's; "+
			"the baseline answers the versions document of %s/%s (%s versions, %s bytes, the median provider) for every such URL",
			coldVersionsCacheBytes, thousands(len(s.provs)), thousands(fewest), thousands(most),
			s.seeded.Namespace, median.Type, thousands(median.Versions), thousands(medianBytes))},
	})
	if err != nil {
		return err
	}
	// The harness's note on repeated URLs assumes a cache that keeps them;
	// say instead how often each document was asked for.
	row := &s.rows[len(s.rows)-1]
	row.Notes = slices.DeleteFunc(row.Notes, func(n string) bool { return strings.Contains(n, "Trove request") })
	var perRound int64
	for _, c := range cycles {
		perRound = max(perRound, c.Issued())
	}
	row.Notes = append(row.Notes, fmt.Sprintf("at most %s Trove requests per round (warm-up included): each versions document asked for about %s times per round",
		thousands(int(perRound)), thousands(int(perRound)/len(paths))))
	return nil
}

// cacheNote reads from Trove's /metrics what its document cache and Go
// heap hold, for the memory the cold downloads leave behind.
func (s *scaleOut) cacheNote(ctx context.Context) (string, error) {
	entries, bytes, heap, nextGC, err := cacheFigures(ctx, s.client, s.origin)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("after the last cold round Trove's document cache held %s documents accounted as %s (its default limit is %s); Go heap in use %s, next GC at %s",
		thousands(int(entries)), formatMiB(bytes), formatMiB(providers.DefaultCacheBytes), formatMiB(heap), formatMiB(nextGC)), nil
}

// archiveURL fetches the archive's download document from the running
// Trove and returns its signed URL.
func (s *scaleOut) archiveURL(ctx context.Context) (*url.URL, error) {
	body, err := fetch(ctx, s.client, s.origin+downloadPath(s.seeded.Namespace, s.seeded.Archive))
	if err != nil {
		return nil, err
	}
	return downloadURL(body, s.origin)
}

// checkRedirect checks that Trove answers the signed archive URL with a
// 302 to the S3 server, as --download-mode redirect should.
func (s *scaleOut) checkRedirect(ctx context.Context, signed string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	client := simpleClient(s.tlsCfg)
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, signed, nil)
	resp, err := client.Do(req)
	if err != nil {
		return registry.Wrap(registry.Unavailable, err, "fetching "+signed)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	loc, _ := url.Parse(resp.Header.Get("Location"))
	want, _ := url.Parse(s.so.S3Endpoint)
	if resp.StatusCode != http.StatusFound || loc == nil || loc.Host != want.Host {
		return registry.Errorf(registry.Unavailable, "trove --download-mode redirect answered the archive URL with %s and Location %q, want 302 to %s",
			resp.Status, resp.Header.Get("Location"), s.so.S3Endpoint)
	}
	return nil
}
