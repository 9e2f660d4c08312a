// Package config owns the configuration of `trove serve`: the one Config
// struct, how it is read from command-line flags, TROVE_* environment
// variables and a settings file of such variables (file.go), in that order
// of precedence, the defaults derived from other settings, and its
// validation. Everything else receives a validated Config explicitly.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
)

// EnvPrefix starts the name of every environment variable Trove reads.
const EnvPrefix = "TROVE_"

// Defaults of the settings that do not depend on others.
const (
	DefaultListen           = "localhost:8443"
	DefaultDownloadURLTTL   = 15 * time.Minute
	DefaultMaxUploadBytes   = 2 << 30 // 2 GiB
	DefaultMaxZipBytes      = 1 << 30 // 1 GiB
	DefaultMaxZipEntries    = 1000
	DefaultMaxUnpackedBytes = 1 << 30 // 1 GiB
	DefaultLogFormat        = "text"
	DefaultCacheBytes       = 12 << 20 // 12 MiB: about 6,000 download documents
	// DefaultDownloadsFlushInterval is how often download counts are
	// written to the index.
	DefaultDownloadsFlushInterval = 10 * time.Second
	// DefaultMirrorIdleTimeout is how long a mirror download waits for
	// an upstream's next bytes; Min and Max bound it.
	DefaultMirrorIdleTimeout = time.Minute
	MinMirrorIdleTimeout     = time.Second
	MaxMirrorIdleTimeout     = 30 * time.Minute

	// Bounds of DownloadURLTTL: a URL must outlive the gap between the
	// client reading the download document and fetching the file, and a
	// leaked URL should not stay usable for long.
	MinDownloadURLTTL = time.Minute
	MaxDownloadURLTTL = 24 * time.Hour

	// Bounds of DownloadsFlushInterval: a write per replica per second at
	// most, an hour of counts lost by a crash at most.
	MinDownloadsFlushInterval = time.Second
	MaxDownloadsFlushInterval = time.Hour
	// DefaultGCGrace, MinGCGrace, MinGCInterval and MaxGCInterval bound
	// the periodic garbage collection (--gc-grace, --gc-interval).
	DefaultGCGrace = time.Hour
	MinGCGrace     = time.Minute
	MinGCInterval  = time.Minute
	// DefaultGitPollInterval and MinGitPollInterval bound
	// --git-poll-interval; DefaultGitMaxRepoBytes and MinGitMaxRepoBytes
	// --git-max-repo-bytes.
	DefaultGitPollInterval = 5 * time.Minute
	MinGitPollInterval     = time.Minute
	DefaultGitMaxRepoBytes = 512 << 20
	MinGitMaxRepoBytes     = 1 << 20
	MaxGCInterval          = 30 * 24 * time.Hour
)

// Backend names.
const (
	IndexSQLite = "sqlite"
	BlobsFS     = "fs"
)

// Config is the whole configuration of `trove serve`.
type Config struct {
	// File is the settings file the configuration was read from, if any
	// (--config, TROVE_CONFIG).
	File string
	// Listen is the host:port the server listens on.
	Listen string
	// DataDir holds everything Trove writes locally (absolute path).
	DataDir string
	// PublicURL is the https:// origin clients use to reach Trove, with no
	// path, query or fragment and no trailing slash.
	PublicURL string
	// TLSCert and TLSKey are PEM files of the server certificate and key.
	// Both empty means a self-signed certificate in DataDir/tls, unless
	// InsecureHTTP is set.
	TLSCert string
	TLSKey  string
	// InsecureHTTP serves plain HTTP, for running behind a TLS-terminating
	// proxy that is reached at PublicURL.
	InsecureHTTP bool
	// DownloadURLTTL is how long a signed download URL stays valid.
	DownloadURLTTL time.Duration
	// Access configures access control (see access.go).
	Access Access
	// Limits bound what a publish may upload.
	Limits Limits
	// LogLevel is the lowest level logged.
	LogLevel slog.Level
	// LogFormat is "text" or "json".
	LogFormat string
	// CacheBytes bounds the memory of the rendered providers.v1 documents,
	// and (a budget of its own of the same size) that of the OCI pull
	// API's generated documents.
	CacheBytes int64
	// DownloadsFlushInterval is how often the download counts this
	// process counted are added to the index: what a crash loses at most.
	DownloadsFlushInterval time.Duration
	// ConsumerRetentionDays is how many days of consumer records
	// (who downloaded which version, with which client) the index keeps;
	// 0 records none.
	ConsumerRetentionDays int
	// MirrorIdleTimeout is how long the mirror's download of a package
	// waits for the upstream's next bytes before it gives up.
	MirrorIdleTimeout time.Duration
	// ModuleMirrors map namespaces of Trove to module namespaces of
	// upstream registries: "NAMESPACE=HOST/UPSTREAM_NAMESPACE" each,
	// comma-separated (see docs/mirror.md, "Modules", and
	// ModuleMirrorList); internal/mirror parses them.
	ModuleMirrors string
	// GCInterval is how often the server runs a garbage collection of
	// unreferenced blobs; 0 (the default) never.
	GCInterval time.Duration
	// GCGrace is the grace period of those collections: blobs modified
	// more recently are kept.
	GCGrace time.Duration
	// GitPollInterval is how often the git sources of modules that name
	// no interval of their own are polled; 0 never (webhooks and manual
	// syncs only).
	GitPollInterval time.Duration
	// GitMaxRepoBytes bounds what one sync of a git source may fetch and
	// check out on disk.
	GitMaxRepoBytes int64
	// GitAllowPrivate lets git sources fetch from loopback, private,
	// link-local and other non-public addresses; refused by default (SSRF
	// guard, internal/netguard).
	GitAllowPrivate bool
	// Index selects and configures the metadata backend.
	Index Index
	// Blobs selects and configures the blob backend.
	Blobs Blobs
	// Signing configures registry-managed signing keys (see signing.go).
	Signing Signing
	// Webhooks configures the delivery of events to webhooks.
	Webhooks Webhooks
}

// Limits bound the size of what a publish may upload.
type Limits struct {
	MaxUploadBytes   int64 // whole request body
	MaxZipBytes      int64 // one zip archive
	MaxZipEntries    int   // entries in one zip archive
	MaxUnpackedBytes int64 // uncompressed size of one zip archive
}

// Index selects the metadata backend: Backend names it and the sub-struct
// of that name configures it.
type Index struct {
	Backend  string // "sqlite" or "postgres"
	SQLite   SQLite
	Postgres Postgres // see postgres.go
}

// SQLite configures the embedded SQLite index.
type SQLite struct {
	Path string // database file; default DataDir/trove.db
}

// Blobs selects the blob backend: Backend names it and the sub-struct of
// that name configures it.
type Blobs struct {
	Backend string // "fs" or "s3"
	FS      FS
	S3      S3 // see s3.go
}

// FS configures the local-filesystem blob store.
type FS struct {
	Dir string // default DataDir/blobs
}

// EnvVar returns the environment variable that sets the flag called name:
// "data-dir" gives "TROVE_DATA_DIR".
func EnvVar(name string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// SetFromEnv sets every flag of fs whose environment variable (EnvVar) is
// non-empty, so that flags parsed afterwards override the environment.
func SetFromEnv(fs *flag.FlagSet, getenv func(string) string) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		name := EnvVar(f.Name)
		v := getenv(name)
		if v == "" {
			return
		}
		if err := fs.Set(f.Name, v); err != nil {
			errs = append(errs, registry.Errorf(registry.Invalid, "invalid %s=%q: %s", name, v, err))
		}
	})
	return errors.Join(errs...)
}

// FlagSet returns the flag set of `trove serve` bound to c. It sets no
// defaults from the environment; Load does.
func (c *Config) FlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.File, FlagConfig, "", "settings `file` of TROVE_* variables, one KEY=VALUE a line; the environment and flags override it")
	fs.StringVar(&c.Listen, "listen", DefaultListen, "`host:port` to listen on")
	fs.StringVar(&c.DataDir, "data-dir", "", "`directory` for the database, blobs, TLS files and temporary uploads (default $XDG_DATA_HOME/trove, else ~/.local/share/trove)")
	fs.StringVar(&c.PublicURL, "public-url", "", "https:// `URL` clients use to reach Trove (default https://<listen host>:<port>, localhost for a wildcard host)")
	fs.StringVar(&c.TLSCert, "tls-cert", "", "PEM `file` of the TLS certificate chain (with --tls-key; default: a self-signed certificate in <data-dir>/tls)")
	fs.StringVar(&c.TLSKey, "tls-key", "", "PEM `file` of the TLS private key (with --tls-cert)")
	fs.BoolVar(&c.InsecureHTTP, "insecure-http", false, "serve plain HTTP, for running behind a TLS-terminating proxy (needs --public-url)")
	fs.DurationVar(&c.DownloadURLTTL, "download-url-ttl", DefaultDownloadURLTTL, "how long signed download URLs stay valid")
	c.accessFlags(fs)
	fs.Var((*byteSize)(&c.Limits.MaxUploadBytes), "max-upload-bytes", "largest publish request body, in `bytes` (suffixes KiB, MiB, GiB allowed)")
	fs.Var((*byteSize)(&c.Limits.MaxZipBytes), "max-zip-bytes", "largest provider zip archive, in `bytes`")
	fs.IntVar(&c.Limits.MaxZipEntries, "max-zip-entries", DefaultMaxZipEntries, "most entries in one provider zip archive")
	fs.Var((*byteSize)(&c.Limits.MaxUnpackedBytes), "max-unpacked-bytes", "largest uncompressed size of one provider zip archive, in `bytes`")
	fs.Var((*byteSize)(&c.CacheBytes), "cache-bytes", "memory for cached providers.v1 documents, and as much for OCI documents, in `bytes`")
	fs.IntVar(&c.ConsumerRetentionDays, "consumer-retention-days", registry.DefaultConsumerRetentionDays,
		"how many days of consumer records (who downloaded which version, with which client) to keep; 0 records none")
	fs.DurationVar(&c.DownloadsFlushInterval, "downloads-flush-interval", DefaultDownloadsFlushInterval, "how often download counts are written to the index (a crash loses at most this much of this server's counts)")
	fs.DurationVar(&c.MirrorIdleTimeout, "mirror-idle-timeout", DefaultMirrorIdleTimeout, "how long the mirror's download of a package from an upstream registry waits for its next bytes before it gives up (the clients waiting for it get an error)")
	fs.Var((*moduleMirrors)(&c.ModuleMirrors), "module-mirror", "mirror the modules of an upstream registry's namespace in a namespace of Trove: `NAMESPACE=HOST/UPSTREAM_NAMESPACE`, e.g. tfaws=registry.terraform.io/terraform-aws-modules (HOST must be a mirror upstream); repeatable, comma-separated in TROVE_MODULE_MIRROR")
	fs.DurationVar(&c.GCInterval, "gc-interval", 0, "how often to reclaim the stored files no version references (garbage collection; one replica at a time runs it), e.g. 24h; 0 never (run trove gc instead)")
	fs.DurationVar(&c.GitPollInterval, "git-poll-interval", DefaultGitPollInterval, "how often the git sources of modules are polled for new version tags, unless a source sets its own interval; 0 never (webhooks and trove module source sync only)")
	fs.BoolVar(&c.GitAllowPrivate, "git-source-allow-private", false, "let the git sources of modules fetch from loopback, private and link-local addresses (refused by default: a namespace admin could otherwise probe the internal network)")
	fs.Var((*byteSize)(&c.GitMaxRepoBytes), "git-max-repo-bytes", "most disk one sync of a module's git source may use for a tag's fetch and checkout, in `bytes`")
	fs.DurationVar(&c.GCGrace, "gc-grace", DefaultGCGrace, "grace period of the periodic garbage collection: files modified more recently are kept (longer than the slowest publish)")
	fs.TextVar(&c.LogLevel, "log-level", slog.LevelInfo, "lowest `level` logged: debug, info, warn or error")
	fs.StringVar(&c.LogFormat, "log-format", DefaultLogFormat, "log `format` on stderr: text or json")
	fs.StringVar(&c.Index.Backend, "index-backend", IndexSQLite, "metadata `backend`: sqlite or postgres")
	c.postgresFlags(fs)
	fs.StringVar(&c.Index.SQLite.Path, "sqlite-path", "", "SQLite database `file` (default <data-dir>/trove.db)")
	fs.StringVar(&c.Blobs.Backend, "blob-backend", BlobsFS, "blob `backend`: fs or s3")
	fs.StringVar(&c.Blobs.FS.Dir, "fs-blob-dir", "", "`directory` of the fs blob backend (default <data-dir>/blobs)")
	c.s3Flags(fs)
	c.signingFlags(fs)
	c.webhookFlags(fs)
	c.Limits.MaxUploadBytes = DefaultMaxUploadBytes
	c.Limits.MaxZipBytes = DefaultMaxZipBytes
	c.Limits.MaxUnpackedBytes = DefaultMaxUnpackedBytes
	c.CacheBytes = DefaultCacheBytes
	c.GitMaxRepoBytes = DefaultGitMaxRepoBytes
	for _, n := range []string{"max-upload-bytes", "max-zip-bytes", "max-unpacked-bytes", "cache-bytes", "git-max-repo-bytes"} {
		f := fs.Lookup(n)
		f.DefValue = f.Value.String()
	}
	// slog names levels in capitals; the flag takes and the documentation
	// writes them in lower case.
	fs.Lookup("log-level").DefValue = strings.ToLower(slog.LevelInfo.String())
	// Durations print as the documentation writes them: 15m, not 15m0s.
	fs.VisitAll(func(f *flag.Flag) {
		if g, ok := f.Value.(flag.Getter); ok {
			if d, ok := g.Get().(time.Duration); ok {
				f.DefValue = ShortDuration(d)
			}
		}
	})
	return fs
}

// Load reads the configuration of `trove serve` from args, then from the
// environment (read through getenv) for what args do not set, then from
// the settings file that --config or TROVE_CONFIG names (ReadSettings)
// for what neither sets; it fills the derived defaults and validates the
// result. It returns flag.ErrHelp when args ask for help.
func Load(args []string, getenv func(string) string) (Config, error) {
	return LoadWith(args, getenv, nil)
}

// LoadWith is Load for a command that takes flags of its own besides
// those of `trove serve` (such as `trove admin token --description`):
// extra, if not nil, defines them on the flag set before the command line
// is parsed. They are read from args only, never from the environment or
// the settings file.
func LoadWith(args []string, getenv func(string) string, extra func(fs *flag.FlagSet)) (Config, error) {
	// A first parse only finds the file; its errors are those of the
	// real parse below.
	var probe Config
	probeFS := probe.FlagSet("serve")
	if extra != nil {
		extra(probeFS)
	}
	if err := parseArgs(probeFS, args); err != nil {
		return Config{}, err
	}
	file := probe.File
	if file == "" {
		file = getenv(EnvVar(FlagConfig))
	}
	var settings map[string]string
	if file != "" {
		var err error
		if settings, err = ReadSettings(file, getenv); err != nil {
			return Config{}, err
		}
	}
	return load(args, getenv, file, settings, extra)
}

// load reads the configuration from args, then getenv, then settings
// (read from file), fills the derived defaults and validates it. extra,
// if not nil, defines command-line-only flags (see LoadWith).
func load(args []string, getenv func(string) string, file string, settings map[string]string, extra func(*flag.FlagSet)) (Config, error) {
	var c Config
	fs := c.FlagSet("serve")
	if err := setFromSettings(fs, settings, file); err != nil {
		return Config{}, err
	}
	if err := SetFromEnv(fs, getenv); err != nil {
		return Config{}, err
	}
	if extra != nil {
		extra(fs) // after the environment: these flags have none
	}
	if err := parseArgs(fs, args); err != nil {
		return Config{}, err
	}
	c.File = file
	if err := c.applyDefaults(getenv); err != nil {
		return Config{}, err
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// parseArgs parses args into fs, which must take flags only.
func parseArgs(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return registry.Errorf(registry.Invalid, "%s", FlagErrorMessage(fs, err))
	}
	if fs.NArg() > 0 {
		return registry.Errorf(registry.Invalid, "unexpected argument %q: trove serve takes only flags", fs.Arg(0))
	}
	return nil
}

// applyDefaults fills the settings whose defaults derive from others.
func (c *Config) applyDefaults(getenv func(string) string) error {
	if c.DataDir == "" {
		dir, err := DefaultDataDir(getenv)
		if err != nil {
			return err
		}
		c.DataDir = dir
	}
	abs, err := filepath.Abs(c.DataDir)
	if err != nil {
		return registry.Wrap(registry.Invalid, err, "cannot make the data directory absolute")
	}
	c.DataDir = abs
	if c.Index.Backend == IndexSQLite && c.Index.SQLite.Path == "" {
		c.Index.SQLite.Path = filepath.Join(c.DataDir, "trove.db")
	}
	if c.Blobs.Backend == BlobsFS && c.Blobs.FS.Dir == "" {
		c.Blobs.FS.Dir = filepath.Join(c.DataDir, "blobs")
	}
	// Behind a proxy the listen address says nothing about the public
	// one, so --insecure-http gets no default: Validate asks for it.
	if c.PublicURL == "" && !c.InsecureHTTP {
		if u, err := DefaultPublicURL(c.Listen); err == nil {
			c.PublicURL = u
		}
	}
	c.PublicURL = strings.TrimSuffix(c.PublicURL, "/")
	c.signingDefaults()
	return nil
}

// DefaultDataDir returns $XDG_DATA_HOME/trove, else $HOME/.local/share/trove.
func DefaultDataDir(getenv func(string) string) (string, error) {
	if x := getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "trove"), nil
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "share", "trove"), nil
	}
	return "", registry.Errorf(registry.Invalid, "cannot choose a data directory: neither XDG_DATA_HOME nor HOME is set; pass --data-dir")
}

// DefaultPublicURL returns https://<host>:<port> for a listen address,
// with "localhost" for an empty or wildcard host and without ":443".
func DefaultPublicURL(listen string) (string, error) {
	host, port, err := splitListen(listen)
	if err != nil {
		return "", err
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	if port == "443" {
		if strings.Contains(host, ":") {
			return "https://[" + host + "]", nil
		}
		return "https://" + host, nil
	}
	return "https://" + net.JoinHostPort(host, port), nil
}

func splitListen(listen string) (host, port string, err error) {
	host, port, err = net.SplitHostPort(listen)
	if err != nil {
		return "", "", registry.Errorf(registry.Invalid, "invalid --listen %q: want host:port, e.g. localhost:8443 or :8443", listen)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", "", registry.Errorf(registry.Invalid, "invalid --listen %q: the port must be a number from 1 to 65535", listen)
	}
	return host, port, nil
}

// Validate checks every setting and returns all problems found, each
// naming the flag to change. Load calls it; call it again after changing
// a Config by hand.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, registry.Errorf(registry.Invalid, format, args...))
	}
	_, _, listenErr := splitListen(c.Listen)
	if listenErr != nil {
		errs = append(errs, listenErr)
	}
	if c.DataDir == "" || !filepath.IsAbs(c.DataDir) {
		bad("--data-dir must be an absolute directory, got %q", c.DataDir)
	}
	switch {
	case c.PublicURL == "" && c.InsecureHTTP:
		bad("--insecure-http needs --public-url: the https:// URL of the TLS-terminating proxy in front of Trove (Terraform and OpenTofu only speak HTTPS to registries)")
	case c.PublicURL == "":
		if listenErr == nil { // otherwise the listen error explains it
			bad("--public-url is empty")
		}
	default:
		if err := checkPublicURL(c.PublicURL); err != nil {
			errs = append(errs, err)
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		bad("--tls-cert and --tls-key go together: pass both or neither")
	}
	if c.InsecureHTTP && c.TLSCert != "" {
		bad("--insecure-http serves plain HTTP and cannot be combined with --tls-cert/--tls-key")
	}
	if c.DownloadsFlushInterval < MinDownloadsFlushInterval || c.DownloadsFlushInterval > MaxDownloadsFlushInterval {
		bad("--downloads-flush-interval must be between %s and %s, got %s", ShortDuration(MinDownloadsFlushInterval), ShortDuration(MaxDownloadsFlushInterval), ShortDuration(c.DownloadsFlushInterval))
	}
	if c.ConsumerRetentionDays < 0 || c.ConsumerRetentionDays > registry.MaxConsumerDays {
		bad("--consumer-retention-days must be between 0 (record no consumers) and %d, got %d", registry.MaxConsumerDays, c.ConsumerRetentionDays)
	}
	if c.MirrorIdleTimeout < MinMirrorIdleTimeout || c.MirrorIdleTimeout > MaxMirrorIdleTimeout {
		bad("--mirror-idle-timeout must be between %s and %s, got %s", ShortDuration(MinMirrorIdleTimeout), ShortDuration(MaxMirrorIdleTimeout), ShortDuration(c.MirrorIdleTimeout))
	}
	if c.GCInterval != 0 && (c.GCInterval < MinGCInterval || c.GCInterval > MaxGCInterval) {
		bad("--gc-interval must be 0 (never) or between %s and %s, got %s", ShortDuration(MinGCInterval), ShortDuration(MaxGCInterval), ShortDuration(c.GCInterval))
	}
	if c.GitPollInterval != 0 && c.GitPollInterval < MinGitPollInterval {
		bad("--git-poll-interval must be 0 (never) or at least %s, got %s", ShortDuration(MinGitPollInterval), ShortDuration(c.GitPollInterval))
	}
	if c.GitMaxRepoBytes < MinGitMaxRepoBytes {
		bad("--git-max-repo-bytes must be at least %d", MinGitMaxRepoBytes)
	}
	if c.GCGrace < MinGCGrace {
		bad("--gc-grace must be at least %s, got %s", ShortDuration(MinGCGrace), ShortDuration(c.GCGrace))
	}
	if c.DownloadURLTTL < MinDownloadURLTTL || c.DownloadURLTTL > MaxDownloadURLTTL {
		bad("--download-url-ttl must be between %s and %s, got %s", ShortDuration(MinDownloadURLTTL), ShortDuration(MaxDownloadURLTTL), ShortDuration(c.DownloadURLTTL))
	}
	errs = append(errs, c.Access.validate()...)
	errs = append(errs, c.Signing.validate()...)
	errs = append(errs, c.Webhooks.validate()...)
	for _, l := range []struct {
		flag string
		v    int64
	}{
		{"--max-upload-bytes", c.Limits.MaxUploadBytes},
		{"--max-zip-bytes", c.Limits.MaxZipBytes},
		{"--max-zip-entries", int64(c.Limits.MaxZipEntries)},
		{"--max-unpacked-bytes", c.Limits.MaxUnpackedBytes},
		{"--cache-bytes", c.CacheBytes},
	} {
		if l.v <= 0 {
			bad("%s must be positive, got %d", l.flag, l.v)
		}
	}
	if c.Limits.MaxZipBytes > c.Limits.MaxUploadBytes && c.Limits.MaxUploadBytes > 0 {
		bad("--max-zip-bytes (%d) exceeds --max-upload-bytes (%d): no such zip could be uploaded", c.Limits.MaxZipBytes, c.Limits.MaxUploadBytes)
	}
	switch c.LogFormat {
	case "text", "json":
	default:
		bad("--log-format must be text or json, got %q", c.LogFormat)
	}
	switch c.Index.Backend {
	case IndexSQLite:
		if c.Index.SQLite.Path == "" {
			bad("--sqlite-path is empty")
		}
	case IndexPostgres:
		errs = append(errs, c.Index.Postgres.validate()...)
	default:
		bad("unknown --index-backend %q: want %s or %s", c.Index.Backend, IndexSQLite, IndexPostgres)
	}
	switch c.Blobs.Backend {
	case BlobsFS:
		if c.Blobs.FS.Dir == "" {
			bad("--fs-blob-dir is empty")
		}
	case BlobsS3:
		errs = append(errs, c.Blobs.S3.validate()...)
	default:
		bad("unknown --blob-backend %q: want %s or %s", c.Blobs.Backend, BlobsFS, BlobsS3)
	}
	return errors.Join(errs...)
}

func checkPublicURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return registry.Errorf(registry.Invalid, "invalid --public-url %q: %s", s, err)
	}
	var problem string
	switch {
	case u.Scheme != "https":
		problem = "it must start with https:// (Terraform and OpenTofu only speak HTTPS to registries; use --insecure-http behind a TLS-terminating proxy)"
	case u.Host == "" || u.Hostname() == "":
		problem = "it has no host"
	case u.User != nil:
		problem = "it must not contain user information"
	case u.RawQuery != "" || u.ForceQuery:
		problem = "it must not have a query"
	case u.Fragment != "" || strings.Contains(s, "#"):
		problem = "it must not have a fragment"
	case u.Path != "" && u.Path != "/":
		problem = "it must not have a path: clients look up /.well-known/terraform.json at the root of the host"
	case u.Port() != "":
		if n, err := strconv.Atoi(u.Port()); err != nil || n < 1 || n > 65535 {
			problem = "its port must be a number from 1 to 65535"
		}
	}
	if problem != "" {
		return registry.Errorf(registry.Invalid, "invalid --public-url %q: %s", s, problem)
	}
	return nil
}

// ShortDuration formats d as Go does, without the zero minutes and
// seconds it appends to whole hours and minutes: 15m, 720h, 1h30m.
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// byteSize is a flag.Value of a byte count: a plain integer or one with a
// binary suffix (KiB, MiB, GiB, TiB).
type byteSize int64

func (b *byteSize) String() string {
	if b == nil {
		return "0"
	}
	v := int64(*b)
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if v != 0 && v%u.n == 0 {
			return strconv.FormatInt(v/u.n, 10) + u.suffix
		}
	}
	return strconv.FormatInt(v, 10)
}

func (b *byteSize) Set(s string) error {
	v, err := ParseBytes(s)
	if err != nil {
		return err
	}
	*b = byteSize(v)
	return nil
}

// ParseBytes parses a byte count: digits, optionally followed by KiB, MiB,
// GiB or TiB (case-insensitive). It rejects negative numbers and overflow.
func ParseBytes(s string) (int64, error) {
	num, mult := strings.TrimSpace(s), int64(1)
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40}} {
		if strings.HasSuffix(strings.ToLower(num), u.suffix) {
			num, mult = strings.TrimSpace(num[:len(num)-len(u.suffix)]), u.n
			break
		}
	}
	if num == "" || strings.TrimLeft(num, "0123456789") != "" {
		return 0, fmt.Errorf("invalid size %q: want a number of bytes, optionally with KiB, MiB, GiB or TiB", s)
	}
	v, err := strconv.ParseInt(num, 10, 64)
	if err != nil || v > (1<<63-1)/mult {
		return 0, fmt.Errorf("invalid size %q: too large", s)
	}
	return v * mult, nil
}
