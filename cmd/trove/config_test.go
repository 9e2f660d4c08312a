package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConfigFile runs `trove migrate`, which loads the configuration of
// `trove serve`, with its settings in a file named by --config or
// TROVE_CONFIG: the index is created where the file, the environment or a
// flag, in rising precedence, put the data directory.
func TestConfigFile(t *testing.T) {
	fromFile, fromEnv, fromFlag := t.TempDir(), t.TempDir(), t.TempDir()
	file := writeSettings(t, "# the settings of this server", "TROVE_DATA_DIR="+fromFile, "TROVE_LOG_FORMAT=json")
	tests := map[string]struct {
		args    []string
		environ map[string]string
		wantDir string
	}{
		"--config":            {[]string{"--config", file}, nil, fromFile},
		"TROVE_CONFIG":        {nil, map[string]string{"TROVE_CONFIG": file}, fromFile},
		"environment wins":    {[]string{"--config", file}, map[string]string{"TROVE_DATA_DIR": fromEnv}, fromEnv},
		"flag wins over both": {[]string{"--config", file, "--data-dir", fromFlag}, map[string]string{"TROVE_DATA_DIR": fromEnv}, fromFlag},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			environ := map[string]string{"HOME": t.TempDir()}
			for k, v := range tc.environ {
				environ[k] = v
			}
			db := filepath.Join(tc.wantDir, "trove.db")
			os.Remove(db)
			r := runTrove(t, environ, "", append([]string{"migrate"}, tc.args...)...)
			if r.code != exitOK || !strings.Contains(r.stdout, db) {
				t.Fatalf("trove migrate: exit %d, stdout %q, stderr %q; want the index %s", r.code, r.stdout, r.stderr, db)
			}
			if _, err := os.Stat(db); err != nil {
				t.Errorf("no index where the settings put it: %v", err)
			}
		})
	}
}

func TestConfigFileErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent.env")
	tests := map[string]struct {
		args []string
		want string
	}{
		"missing file":  {[]string{"serve", "--config", missing}, "cannot read the settings file: open " + missing},
		"unknown key":   {[]string{"serve", "--config", writeSettings(t, "TROVE_LISTEN=:9443", "TROVE_DATADIR=/srv")}, `settings.env:2: unknown setting "TROVE_DATADIR"`},
		"bad value":     {[]string{"serve", "--config", writeSettings(t, "TROVE_DOWNLOAD_URL_TTL=soon")}, `invalid TROVE_DOWNLOAD_URL_TTL="soon"`},
		"invalid whole": {[]string{"migrate", "--config", writeSettings(t, "TROVE_INDEX_BACKEND=postgres")}, "needs --postgres-dsn"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := runTrove(t, map[string]string{"HOME": t.TempDir()}, "", tc.args...)
			if r.code != exitUsage || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("trove %s: exit %d, stderr %q; want exit %d mentioning %q", strings.Join(tc.args, " "), r.code, r.stderr, exitUsage, tc.want)
			}
		})
	}
	r := runTrove(t, nil, "", "serve", "--help")
	for _, want := range []string{"--config file", "[$TROVE_CONFIG]"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("serve help does not contain %q:\n%s", want, r.stdout)
		}
	}
}
