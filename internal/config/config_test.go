package config

import (
	"errors"
	"flag"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

var baseEnv = map[string]string{"HOME": "/home/u"}

func TestLoadDefaults(t *testing.T) {
	c, err := Load(nil, env(baseEnv))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		Listen:                 "localhost:8443",
		DataDir:                "/home/u/.local/share/trove",
		PublicURL:              "https://localhost:8443",
		DownloadURLTTL:         15 * time.Minute,
		Access:                 Access{PrivateDownloadURLTTL: 5 * time.Minute, LoginTokenTTL: 720 * time.Hour, LocalPasswords: true},
		Limits:                 Limits{MaxUploadBytes: 2 << 30, MaxZipBytes: 1 << 30, MaxZipEntries: 1000, MaxUnpackedBytes: 1 << 30},
		LogLevel:               slog.LevelInfo,
		LogFormat:              "text",
		CacheBytes:             12 << 20,
		DownloadsFlushInterval: 10 * time.Second,
		ConsumerRetentionDays:  90,
		MirrorIdleTimeout:      time.Minute,
		GCGrace:                time.Hour,
		GitPollInterval:        5 * time.Minute,
		GitMaxRepoBytes:        512 << 20,
		Index:                  Index{Backend: "sqlite", SQLite: SQLite{Path: "/home/u/.local/share/trove/trove.db"}, Postgres: Postgres{MigrateOnStart: true}},
		Blobs:                  Blobs{Backend: "fs", FS: FS{Dir: "/home/u/.local/share/trove/blobs"}, S3: S3{DownloadMode: "redirect"}},
		Signing:                Signing{SecretFile: "/home/u/.local/share/trove/signing-secret", CreateSecret: true},
		Webhooks:               Webhooks{Timeout: 10 * time.Second, Attempts: 10, Retention: 720 * time.Hour},
	}
	if c != want {
		t.Errorf("Load() =\n%+v\nwant\n%+v", c, want)
	}
}

// TestLoad checks single settings of a loaded Config, keyed by the input.
func TestLoad(t *testing.T) {
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(Config) any
		want  any
	}{
		{"xdg data home", nil, map[string]string{"XDG_DATA_HOME": "/xdg"}, func(c Config) any { return c.DataDir }, "/xdg/trove"},
		{"relative xdg ignored", nil, map[string]string{"XDG_DATA_HOME": "rel", "HOME": "/h"}, func(c Config) any { return c.DataDir }, "/h/.local/share/trove"},
		{"data dir flag derives sqlite path", []string{"--data-dir", "/d"}, nil, func(c Config) any { return c.Index.SQLite.Path }, "/d/trove.db"},
		{"data dir flag derives blob dir", []string{"--data-dir=/d"}, nil, func(c Config) any { return c.Blobs.FS.Dir }, "/d/blobs"},
		{"data dir from env", nil, map[string]string{"TROVE_DATA_DIR": "/e"}, func(c Config) any { return c.DataDir }, "/e"},
		{"flag overrides env", []string{"--data-dir", "/f"}, map[string]string{"TROVE_DATA_DIR": "/e"}, func(c Config) any { return c.DataDir }, "/f"},
		{"explicit sqlite path kept", []string{"--data-dir", "/d", "--sqlite-path", "/db/x.db"}, nil, func(c Config) any { return c.Index.SQLite.Path }, "/db/x.db"},
		{"explicit blob dir kept", nil, map[string]string{"TROVE_FS_BLOB_DIR": "/b"}, func(c Config) any { return c.Blobs.FS.Dir }, "/b"},
		{"wildcard listen", []string{"--listen", ":9443"}, nil, func(c Config) any { return c.PublicURL }, "https://localhost:9443"},
		{"0.0.0.0 listen", []string{"--listen", "0.0.0.0:9443"}, nil, func(c Config) any { return c.PublicURL }, "https://localhost:9443"},
		{"ipv6 wildcard listen", []string{"--listen", "[::]:9443"}, nil, func(c Config) any { return c.PublicURL }, "https://localhost:9443"},
		{"ipv6 listen", []string{"--listen", "[::1]:9443"}, nil, func(c Config) any { return c.PublicURL }, "https://[::1]:9443"},
		{"port 443 dropped", []string{"--listen", "registry.internal:443"}, nil, func(c Config) any { return c.PublicURL }, "https://registry.internal"},
		{"named host", []string{"--listen", "10.1.2.3:8443"}, nil, func(c Config) any { return c.PublicURL }, "https://10.1.2.3:8443"},
		{"public url trailing slash trimmed", []string{"--public-url", "https://r.example/"}, nil, func(c Config) any { return c.PublicURL }, "https://r.example"},
		{"insecure with public url", []string{"--insecure-http", "--public-url", "https://r.example"}, nil, func(c Config) any { return c.PublicURL }, "https://r.example"},
		{"insecure from env", []string{"--public-url", "https://r.example"}, map[string]string{"TROVE_INSECURE_HTTP": "true"}, func(c Config) any { return c.InsecureHTTP }, true},
		{"ttl", []string{"--download-url-ttl", "1h"}, nil, func(c Config) any { return c.DownloadURLTTL }, time.Hour},
		{"size suffix", []string{"--max-upload-bytes", "3GiB"}, nil, func(c Config) any { return c.Limits.MaxUploadBytes }, int64(3 << 30)},
		{"plain size", nil, map[string]string{"TROVE_MAX_ZIP_BYTES": "1048576"}, func(c Config) any { return c.Limits.MaxZipBytes }, int64(1 << 20)},
		{"zip entries", []string{"--max-zip-entries", "5"}, nil, func(c Config) any { return c.Limits.MaxZipEntries }, 5},
		{"unpacked", []string{"--max-unpacked-bytes", "512 MiB"}, nil, func(c Config) any { return c.Limits.MaxUnpackedBytes }, int64(512 << 20)},
		{"cache from env", nil, map[string]string{"TROVE_CACHE_BYTES": "128MiB"}, func(c Config) any { return c.CacheBytes }, int64(128 << 20)},
		{"log level", []string{"--log-level", "debug"}, nil, func(c Config) any { return c.LogLevel }, slog.LevelDebug},
		{"log level env", nil, map[string]string{"TROVE_LOG_LEVEL": "WARN"}, func(c Config) any { return c.LogLevel }, slog.LevelWarn},
		{"log format", []string{"--log-format", "json"}, nil, func(c Config) any { return c.LogFormat }, "json"},
		{"tls pair", []string{"--tls-cert", "c.pem", "--tls-key", "k.pem"}, nil, func(c Config) any { return c.TLSCert + "," + c.TLSKey }, "c.pem,k.pem"},
		{"postgres from env", nil, map[string]string{"TROVE_INDEX_BACKEND": "postgres", "TROVE_POSTGRES_DSN": "postgres://u:p@db/trove", "TROVE_POSTGRES_MAX_CONNS": "20", "TROVE_MIGRATE_ON_START": "false"},
			func(c Config) any { return c.Index.Postgres }, Postgres{DSN: "postgres://u:p@db/trove", MaxConns: 20}},
		{"postgres migrates on start by default", []string{"--index-backend", "postgres", "--postgres-dsn", "host=db dbname=trove"}, nil,
			func(c Config) any { return c.Index.Postgres.MigrateOnStart }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := map[string]string{"HOME": "/home/u"}
			for k, v := range tt.env {
				e[k] = v
			}
			c, err := Load(tt.args, env(e))
			if err != nil {
				t.Fatalf("Load(%q) error: %v", tt.args, err)
			}
			if got := tt.check(c); got != tt.want {
				t.Errorf("Load(%q) = %v, want %v", tt.args, got, tt.want)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		args []string
		env  map[string]string
		want string // substring of the error
	}{
		{[]string{"--insecure-http"}, nil, "--insecure-http needs --public-url"},
		{[]string{"--public-url", "http://r.example"}, nil, "must start with https://"},
		{[]string{"--insecure-http", "--public-url", "http://r.example"}, nil, "must start with https://"},
		{[]string{"--public-url", "r.example"}, nil, "must start with https://"},
		{[]string{"--public-url", "https://"}, nil, "has no host"},
		{[]string{"--public-url", "https://r.example/?x=1"}, nil, "must not have a query"},
		{[]string{"--public-url", "https://r.example?"}, nil, "must not have a query"},
		{[]string{"--public-url", "https://r.example#top"}, nil, "must not have a fragment"},
		{[]string{"--public-url", "https://r.example/registry"}, nil, "must not have a path"},
		{[]string{"--public-url", "https://u:p@r.example"}, nil, "user information"},
		{[]string{"--public-url", "https://r.example:99999"}, nil, "port must be"},
		{[]string{"--public-url", "https://r.example:%zz"}, nil, "invalid --public-url"},
		{[]string{"--tls-cert", "c.pem"}, nil, "--tls-cert and --tls-key go together"},
		{[]string{"--tls-key", "k.pem"}, nil, "--tls-cert and --tls-key go together"},
		{[]string{"--insecure-http", "--public-url", "https://r.example", "--tls-cert", "c", "--tls-key", "k"}, nil, "cannot be combined"},
		{[]string{"--listen", "8443"}, nil, "invalid --listen"},
		{[]string{"--listen", "localhost:0"}, nil, "from 1 to 65535"},
		{[]string{"--listen", "localhost:http"}, nil, "from 1 to 65535"},
		{[]string{"--download-url-ttl", "10s"}, nil, "--download-url-ttl must be between"},
		{[]string{"--download-url-ttl", "48h"}, nil, "--download-url-ttl must be between"},
		{[]string{"--download-url-ttl", "soon"}, nil, `--download-url-ttl: want a duration such as 24h, 90m or 30s, got "soon"`},
		{[]string{"--max-upload-bytes", "0"}, nil, "--max-upload-bytes must be positive"},
		{[]string{"--max-upload-bytes", "-1"}, nil, "invalid size"},
		{[]string{"--max-upload-bytes", "99999999999TiB"}, nil, "too large"},
		{[]string{"--max-zip-bytes", "0"}, nil, "--max-zip-bytes must be positive"},
		{[]string{"--max-zip-entries", "0"}, nil, "--max-zip-entries must be positive"},
		{[]string{"--max-unpacked-bytes", "0"}, nil, "--max-unpacked-bytes must be positive"},
		{[]string{"--max-zip-bytes", "3GiB"}, nil, "exceeds --max-upload-bytes"},
		{[]string{"--cache-bytes", "0"}, nil, "--cache-bytes must be positive"},
		{[]string{"--log-format", "xml"}, nil, "--log-format must be text or json"},
		{[]string{"--log-level", "loud"}, nil, `--log-level: want debug, info, warn or error, got "loud"`},
		{[]string{"--index-backend", "mysql"}, nil, "unknown --index-backend"},
		{[]string{"--index-backend", "postgres"}, nil, "needs --postgres-dsn"},
		{[]string{"--index-backend", "postgres", "--postgres-dsn", "postgres://db/trove", "--postgres-max-conns", "-1"}, nil, "--postgres-max-conns must not be negative"},
		{[]string{"--blob-backend", "gcs"}, nil, "unknown --blob-backend"},
		{[]string{"--no-such-flag"}, nil, "unknown flag --no-such-flag"},
		{[]string{"extra"}, nil, "unexpected argument \"extra\""},
		{nil, map[string]string{"TROVE_MAX_ZIP_ENTRIES": "many"}, "invalid TROVE_MAX_ZIP_ENTRIES=\"many\""},
		{nil, map[string]string{"TROVE_INSECURE_HTTP": "maybe"}, "invalid TROVE_INSECURE_HTTP"},
		{nil, map[string]string{"HOME": ""}, "pass --data-dir"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " ")+" "+mapString(tt.env), func(t *testing.T) {
			e := map[string]string{"HOME": "/home/u"}
			for k, v := range tt.env {
				e[k] = v
			}
			_, err := Load(tt.args, env(e))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Load(%q) error = %v, want it to contain %q", tt.args, err, tt.want)
			}
		})
	}
}

func mapString(m map[string]string) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, k+"="+v)
	}
	return strings.Join(parts, " ")
}

func TestLoadHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		if _, err := Load([]string{arg}, env(baseEnv)); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("Load(%q) error = %v, want flag.ErrHelp", arg, err)
		}
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	c, err := Load(nil, env(baseEnv))
	if err != nil {
		t.Fatal(err)
	}
	c.LogFormat = "xml"
	c.Limits.MaxZipEntries = 0
	c.DownloadsFlushInterval = 10 * time.Millisecond
	c.ConsumerRetentionDays = 367
	err = c.Validate()
	for _, want := range []string{"--log-format", "--max-zip-entries", "--downloads-flush-interval", "--consumer-retention-days"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to mention %s", err, want)
		}
	}
}

func TestEnvVar(t *testing.T) {
	for flagName, want := range map[string]string{
		"data-dir":         "TROVE_DATA_DIR",
		"listen":           "TROVE_LISTEN",
		"download-url-ttl": "TROVE_DOWNLOAD_URL_TTL",
		"max-upload-bytes": "TROVE_MAX_UPLOAD_BYTES",
	} {
		if got := EnvVar(flagName); got != want {
			t.Errorf("EnvVar(%q) = %q, want %q", flagName, got, want)
		}
	}
}

func TestEveryFlagHasAnEnvVar(t *testing.T) {
	// Each flag must be settable from its environment variable.
	var c Config
	fs := c.FlagSet("serve")
	fs.VisitAll(func(f *flag.Flag) {
		e := map[string]string{"HOME": "/h"}
		v := map[string]string{
			"listen": "127.0.0.1:9000", "data-dir": "/x", "public-url": "https://p.example",
			"tls-cert": "c", "tls-key": "k", "insecure-http": "true", "download-url-ttl": "2m",
			"max-upload-bytes": "7", "max-zip-bytes": "7", "max-zip-entries": "7", "max-unpacked-bytes": "7",
			"cache-bytes": "7", "log-level": "error", "log-format": "json", "index-backend": "other", "sqlite-path": "/s.db",
			"blob-backend": "other", "fs-blob-dir": "/b",
			"postgres-dsn": "postgres://db/trove", "postgres-max-conns": "7", "migrate-on-start": "false",
			"s3-endpoint": "https://s3.example", "s3-region": "eu-west-1", "s3-bucket": "b", "s3-prefix": "p",
			"s3-path-style": "true", "s3-access-key": "a", "s3-secret-key": "s", "download-mode": "proxy",
			"private-download-url-ttl": "3m", "login-token-ttl": "24h", "config": "/etc/trove.env", "mirror-public": "true", "local-passwords": "false",
			"signing-secret-file": "/etc/trove/signing-secret", "downloads-flush-interval": "30s", "consumer-retention-days": "7",
			"webhook-allow-private": "true", "webhook-allow-http": "true", "webhook-timeout": "5s", "webhook-attempts": "3", "webhook-retention": "48h",
			"gc-interval": "24h", "gc-grace": "2h", "mirror-idle-timeout": "2m", "module-mirror": "tfaws=registry.example.com/aws-modules",
			"git-poll-interval": "10m", "git-max-repo-bytes": "7", "git-source-allow-private": "true",
		}[f.Name]
		if v == "" {
			t.Errorf("flag --%s has no test value", f.Name)
			return
		}
		e[EnvVar(f.Name)] = v
		var got Config
		gfs := got.FlagSet("serve")
		if err := SetFromEnv(gfs, env(e)); err != nil {
			t.Errorf("%s=%s: %v", EnvVar(f.Name), v, err)
			return
		}
		if s := gfs.Lookup(f.Name).Value.String(); s == f.DefValue {
			t.Errorf("%s=%s did not change --%s (still %q)", EnvVar(f.Name), v, f.Name, s)
		}
	})
}

func TestParseBytes(t *testing.T) {
	tests := map[string]int64{
		"0": 0, "1": 1, "1024": 1024, "1KiB": 1 << 10, "2 MiB": 2 << 20, "2gib": 2 << 30, "1TiB": 1 << 40,
		"9223372036854775807": 1<<63 - 1,
	}
	for in, want := range tests {
		got, err := ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "KiB", "-1", "1.5GiB", "1GB", "0x10", "9223372036854775808", "8388608TiB", "1 2"} {
		if got, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", in, got)
		}
	}
}

func TestByteSizeString(t *testing.T) {
	for in, want := range map[int64]string{0: "0", 1: "1", 1024: "1KiB", 2 << 30: "2GiB", 1536: "1536", 3 << 20: "3MiB"} {
		b := byteSize(in)
		if got := b.String(); got != want {
			t.Errorf("byteSize(%d).String() = %q, want %q", in, got, want)
		}
	}
}
