package config

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
)

func TestParseSettings(t *testing.T) {
	getenv := env(map[string]string{"PGPASS": "s3cr3t", "HOME": "/h"})
	tests := map[string]struct {
		in   string
		want map[string]string
		err  string
	}{
		"plain":         {"TROVE_DATA_DIR=/var/lib/trove\n", map[string]string{"TROVE_DATA_DIR": "/var/lib/trove"}, ""},
		"export spaces": {"  export TROVE_S3_BUCKET = trove  \n", map[string]string{"TROVE_S3_BUCKET": "trove"}, ""},
		"comments":      {"# a comment\n\nTROVE_BLOB_BACKEND=s3 \n", map[string]string{"TROVE_BLOB_BACKEND": "s3"}, ""},
		"expansion":     {"TROVE_POSTGRES_DSN=postgres://trove:${PGPASS}@db/trove\n", map[string]string{"TROVE_POSTGRES_DSN": "postgres://trove:s3cr3t@db/trove"}, ""},
		"double quotes": {`TROVE_S3_PREFIX="a b/$PGPASS"`, map[string]string{"TROVE_S3_PREFIX": "a b/s3cr3t"}, ""},
		"single quotes": {`TROVE_S3_SECRET_KEY='x$PGPASS'`, map[string]string{"TROVE_S3_SECRET_KEY": "x$PGPASS"}, ""},
		"equals inside": {"TROVE_POSTGRES_DSN=host=db dbname=trove\n", map[string]string{"TROVE_POSTGRES_DSN": "host=db dbname=trove"}, ""},
		"unknown key":   {"TROVE_DATA_DIR=/d\nTROVE_S3_BUKET=trove\n", nil, `s.env:2: unknown setting "TROVE_S3_BUKET"`},
		"not trove":     {"AWS_REGION=eu-west-1\n", nil, `unknown setting "AWS_REGION"`},
		"no equals":     {"TROVE_DATA_DIR\n", nil, "want KEY=VALUE"},
		"nested file":   {"TROVE_CONFIG=other.env\n", nil, "TROVE_CONFIG cannot be set in a settings file"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseSettings(strings.NewReader(tc.in), "s.env", getenv)
			if tc.err != "" {
				if !registry.IsKind(err, registry.Invalid) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want an invalid-kind one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || !maps.Equal(got, tc.want) {
				t.Errorf("ParseSettings = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// writeFile writes a settings file of lines and returns its path.
func writeFile(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "trove.env")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLoadConfigFile checks where each setting comes from when a settings
// file is given: flags win over the environment, which wins over the file.
func TestLoadConfigFile(t *testing.T) {
	file := writeFile(t,
		"# settings of the test",
		"TROVE_DATA_DIR=/file",
		"TROVE_LISTEN=127.0.0.1:9000",
		"TROVE_LOG_FORMAT=json",
		"TROVE_S3_BUCKET=${BUCKET}",
		"TROVE_BLOB_BACKEND=s3",
		"TROVE_INSECURE_HTTP=true",
		"TROVE_PUBLIC_URL=https://registry.example",
		"TROVE_CACHE_BYTES=",
	)
	other := writeFile(t, "TROVE_DATA_DIR=/other")
	tests := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(Config) any
		want  any
	}{
		{"file by flag", []string{"--config", file}, nil, func(c Config) any { return c.DataDir }, "/file"},
		{"file by environment", nil, map[string]string{"TROVE_CONFIG": file}, func(c Config) any { return c.DataDir }, "/file"},
		{"file recorded", []string{"--config=" + file}, nil, func(c Config) any { return c.File }, file},
		{"flag names another file than the environment", []string{"--config", other}, map[string]string{"TROVE_CONFIG": file}, func(c Config) any { return c.DataDir }, "/other"},
		{"environment over file", []string{"--config", file}, map[string]string{"TROVE_DATA_DIR": "/env"}, func(c Config) any { return c.DataDir }, "/env"},
		{"flag over environment and file", []string{"--config", file, "--data-dir", "/flag"}, map[string]string{"TROVE_DATA_DIR": "/env"}, func(c Config) any { return c.DataDir }, "/flag"},
		{"flag before --config still wins", []string{"--data-dir", "/flag", "--config", file}, nil, func(c Config) any { return c.DataDir }, "/flag"},
		{"bool flag over file", []string{"--config", file, "--insecure-http=false"}, nil, func(c Config) any { return c.InsecureHTTP }, false},
		{"empty environment variable keeps the file's", []string{"--config", file}, map[string]string{"TROVE_LISTEN": ""}, func(c Config) any { return c.Listen }, "127.0.0.1:9000"},
		{"empty file value keeps the default", []string{"--config", file}, nil, func(c Config) any { return c.CacheBytes }, int64(DefaultCacheBytes)},
		{"file value expanded from the environment", []string{"--config", file}, nil, func(c Config) any { return c.Blobs.S3.Bucket }, "trove-blobs"},
		{"derived defaults use the file's data dir", []string{"--config", file, "--blob-backend", "fs"}, nil, func(c Config) any { return c.Blobs.FS.Dir }, "/file/blobs"},
		{"no file", nil, nil, func(c Config) any { return c.File }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := map[string]string{"HOME": "/home/u", "BUCKET": "trove-blobs"}
			maps.Copy(e, tc.env)
			c, err := Load(tc.args, env(e))
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.check(c); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestLoadConfigFileErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent.env")
	tests := map[string]struct {
		args []string
		env  map[string]string
		want []string
	}{
		"missing file":             {[]string{"--config", missing}, nil, []string{"cannot read the settings file", missing, "no such file"}},
		"missing file from env":    {nil, map[string]string{"TROVE_CONFIG": missing}, []string{"cannot read the settings file", missing}},
		"unknown key":              {[]string{"--config", writeFile(t, "TROVE_LISTEN=:9443", "TROVE_DATADIR=/d")}, nil, []string{"trove.env:2", `unknown setting "TROVE_DATADIR"`}},
		"invalid value names file": {[]string{"--config", writeFile(t, "TROVE_MAX_ZIP_ENTRIES=many")}, nil, []string{"trove.env: invalid TROVE_MAX_ZIP_ENTRIES=\"many\""}},
		"validated with the rest":  {[]string{"--config", writeFile(t, "TROVE_BLOB_BACKEND=s3")}, nil, []string{"needs --s3-bucket"}},
		"bad flag still reported":  {[]string{"--config", writeFile(t, "TROVE_LISTEN=:9443"), "--no-such-flag"}, nil, []string{"no-such-flag"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := map[string]string{"HOME": "/home/u"}
			maps.Copy(e, tc.env)
			_, err := Load(tc.args, env(e))
			if !registry.IsKind(err, registry.Invalid) {
				t.Fatalf("Load = %v, want an invalid-kind error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Load = %v, want it to mention %q", err, w)
				}
			}
		})
	}
}

// TestLoadFile checks that a file loaded alone ignores the TROVE_*
// variables of the environment but still expands others.
func TestLoadFile(t *testing.T) {
	file := writeFile(t, "TROVE_DATA_DIR=/file", "TROVE_S3_BUCKET=${BUCKET}", "TROVE_BLOB_BACKEND=s3")
	getenv := env(map[string]string{"HOME": "/home/u", "BUCKET": "b", "TROVE_DATA_DIR": "/env", "TROVE_LISTEN": ":1", "TROVE_CONFIG": "/elsewhere.env"})
	c, err := LoadFile(file, getenv)
	if err != nil {
		t.Fatal(err)
	}
	if c.DataDir != "/file" || c.Listen != DefaultListen || c.Blobs.S3.Bucket != "b" || c.File != file {
		t.Errorf("LoadFile = data dir %q, listen %q, bucket %q, file %q; want the file's settings only", c.DataDir, c.Listen, c.Blobs.S3.Bucket, c.File)
	}
	_, err = LoadFile(writeFile(t, "TROVE_BLOB_BACKEND=s3"), getenv)
	if err == nil || !strings.Contains(err.Error(), "trove.env: ") || !strings.Contains(err.Error(), "needs --s3-bucket") {
		t.Errorf("LoadFile of an invalid file = %v, want an error naming the file and the problem", err)
	}
}
