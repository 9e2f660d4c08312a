package main

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRunUsageErrors(t *testing.T) {
	tests := map[string][]string{
		"unknown flag":               {"-bogus"},
		"stray argument":             {"extra"},
		"baseline without config":    {"baseline"},
		"baseline with stray arg":    {"baseline", "-config", "x.json", "y"},
		"seed without data dir":      {"seed"},
		"seed with bad version flag": {"seed", "-versions", "many"},
		"unknown backend":            {"-backend", "mysql"},
		"rows not a regexp":          {"-rows", "mirror ("},
		"compare without commits":    {"compare"},
		"compare with one commit":    {"compare", "HEAD"},
		"compare with three commits": {"compare", "HEAD", "HEAD", "HEAD"},
		"compare zero rounds":        {"compare", "-compare-rounds", "0", "HEAD", "HEAD"},
		"compare with a binary":      {"compare", "-trove", "/bin/true", "HEAD", "HEAD"},
	}
	for name, args := range tests {
		var stdout, stderr strings.Builder
		if code := run(context.Background(), args, nil, &stdout, &stderr); code != 2 {
			t.Errorf("%s: exit %d, want 2 (stderr %q)", name, code, stderr.String())
		}
	}
}

func TestRunInvalidSettingsFail(t *testing.T) {
	tests := map[string][]string{
		"zero connections": {"-conns", "0", "-trove", "/nonexistent"},
		"zero rounds":      {"-rounds", "0", "-trove", "/nonexistent"},
		"negative UI docs": {"-ui-docs", "-1", "-trove", "/nonexistent"},
		"UI only, no UI":   {"-ui-only", "-ui-docs", "0", "-trove", "/nonexistent"},
		"UI only, single":  {"-ui-only", "-single", "-trove", "/nonexistent"},
		"missing config":   {"baseline", "-config", filepath.Join(t.TempDir(), "none.json")},
	}
	for name, args := range tests {
		var stdout, stderr strings.Builder
		if code := run(context.Background(), args, nil, &stdout, &stderr); code != 1 {
			t.Errorf("%s: exit %d, want 1 (stderr %q)", name, code, stderr.String())
		}
		if !strings.HasPrefix(stderr.String(), "trove-loadtest: ") {
			t.Errorf("%s: stderr %q does not start with the program name", name, stderr.String())
		}
	}
}

func TestSeedRefusesAnExistingIndex(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "trove.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr strings.Builder
	if code := run(context.Background(), []string{"seed", "-data-dir", dir}, nil, &stdout, &stderr); code != 1 {
		t.Errorf("seeding a directory with an index: exit %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "already holds an index") {
		t.Errorf("stderr %q does not explain the refusal", stderr.String())
	}
}

func TestScaleOutNeedsItsServers(t *testing.T) {
	for _, name := range []string{"TROVE_TEST_POSTGRES_DSN", "TROVE_TEST_S3_ENDPOINT", "TROVE_TEST_S3_ACCESS_KEY", "TROVE_TEST_S3_SECRET_KEY"} {
		t.Setenv(name, "")
	}
	var stdout, stderr strings.Builder
	if code := run(context.Background(), []string{"-backend", "postgres-s3", "-trove", "/nonexistent"}, nil, &stdout, &stderr); code != 1 {
		t.Errorf("exit %d, want 1 (stderr %q)", code, stderr.String())
	}
	for _, want := range []string{"TROVE_TEST_POSTGRES_DSN", "TROVE_TEST_S3_SECRET_KEY", "scripts/testenv/postgres.sh"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q does not mention %s", stderr.String(), want)
		}
	}
}

func TestCompareRefusesUnknownCommits(t *testing.T) {
	for _, commit := range []string{"no-such-commit-anywhere", "--upload-pack=touch /tmp/x", "HEAD~100000"} {
		var stdout, stderr strings.Builder
		code := run(context.Background(), []string{"compare", "-module", "../..", "--", commit, "HEAD"}, nil, &stdout, &stderr)
		if code != 1 {
			t.Errorf("%q: exit %d, want 1 (stderr %q)", commit, code, stderr.String())
		}
		if !strings.Contains(stderr.String(), commit) {
			t.Errorf("%q: stderr %q does not name the commit", commit, stderr.String())
		}
	}
}

// TestDefaultTimeoutCoversTheDefaultRun: the default run measures for
// about 29 minutes after seeding 100,000 versions; a fixed 30-minute
// timeout expired in its last row and the run printed nothing.
func TestDefaultTimeoutCoversTheDefaultRun(t *testing.T) {
	fs := flag.NewFlagSet("trove-loadtest", flag.ContinueOnError)
	opt, timeout := loadFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	limit, err := runTimeout(*opt, *timeout)
	if err != nil {
		t.Fatal(err)
	}
	planned, err := opt.Planned()
	if err != nil {
		t.Fatal(err)
	}
	// Seeding the default index took 100 s on /dev/shm; building and
	// fetching a few minutes more.
	if need := planned + 10*time.Minute; limit < need {
		t.Errorf("the default run may take %v, measuring %v of it, but is given up after %v", need, planned, limit)
	}
	if planned < 25*time.Minute {
		t.Errorf("Planned() = %v for the default options: it misses rows", planned)
	}
	if limit, err := runTimeout(*opt, time.Minute); err != nil || limit != time.Minute {
		t.Errorf("with -timeout 1m: %v, %v", limit, err)
	}
	var stdout, stderr strings.Builder
	if code := run(context.Background(), []string{"-h"}, nil, &stdout, &stderr); code != 0 || !strings.Contains(stderr.String(), "0: the run's measured windows") {
		t.Errorf("-h: exit %d, usage %q does not explain -timeout 0", code, stderr.String())
	}
}

// TestRowsFlagSelects holds -rows to selecting rows by name, and to
// fewer planned windows than the whole run.
func TestRowsFlagSelects(t *testing.T) {
	fs := flag.NewFlagSet("trove-loadtest", flag.ContinueOnError)
	opt, _ := loadFlags(fs)
	all, err := opt.Planned()
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"-rows", "^mirror index"}); err != nil {
		t.Fatal(err)
	}
	if opt.Rows == nil || !opt.Rows.MatchString("mirror index.json, mix of 300 providers") || opt.Rows.MatchString("mirror version.json, mix of 300 versions") {
		t.Fatalf("-rows gave %v", opt.Rows)
	}
	some, err := opt.Planned()
	if err != nil {
		t.Fatal(err)
	}
	if some >= all {
		t.Errorf("Planned() with one mix row selected = %v, with every row %v", some, all)
	}
}
