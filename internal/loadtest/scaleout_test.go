package loadtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestScaleOutFromEnv(t *testing.T) {
	full := map[string]string{
		EnvPostgresDSN: "postgres://trove:pw@127.0.0.1:5432/postgres?sslmode=disable",
		EnvS3Endpoint:  "http://127.0.0.1:7070",
		EnvS3AccessKey: "ak",
		EnvS3SecretKey: "sk",
	}
	with := func(changes map[string]string) func(string) string {
		return func(name string) string {
			if v, ok := changes[name]; ok {
				return v
			}
			return full[name]
		}
	}
	tests := map[string]struct {
		changes map[string]string
		wantErr []string // substrings of the error; nil: success
		region  string
	}{
		"complete":           {region: "us-east-1"},
		"region given":       {changes: map[string]string{EnvS3Region: "eu-west-3"}, region: "eu-west-3"},
		"localhost endpoint": {changes: map[string]string{EnvS3Endpoint: "http://localhost:7070/"}, region: "us-east-1"},
		"nothing set": {changes: map[string]string{EnvPostgresDSN: "", EnvS3Endpoint: "", EnvS3AccessKey: "", EnvS3SecretKey: ""},
			wantErr: []string{EnvPostgresDSN, EnvS3Endpoint, EnvS3AccessKey, EnvS3SecretKey, "scripts/testenv/s3.sh"}},
		"no secret":          {changes: map[string]string{EnvS3SecretKey: " "}, wantErr: []string{EnvS3SecretKey}},
		"remote endpoint":    {changes: map[string]string{EnvS3Endpoint: "https://s3.example.com"}, wantErr: []string{"loopback"}},
		"endpoint with path": {changes: map[string]string{EnvS3Endpoint: "http://127.0.0.1:7070/bucket"}, wantErr: []string{"base URL"}},
		"endpoint no scheme": {changes: map[string]string{EnvS3Endpoint: "127.0.0.1:7070"}, wantErr: []string{"base URL"}},
		"bad DSN":            {changes: map[string]string{EnvPostgresDSN: "postgres://a b:%zz@"}, wantErr: []string{EnvPostgresDSN}},
	}
	for name, tc := range tests {
		so, err := ScaleOutFromEnv(with(tc.changes))
		if tc.wantErr == nil {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			} else if so.S3Region != tc.region || so.S3SecretKey != "sk" {
				t.Errorf("%s: got %+v, want region %s", name, so, tc.region)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		for _, want := range tc.wantErr {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q does not mention %q", name, err, want)
			}
		}
		if strings.Contains(err.Error(), "pw@") {
			t.Errorf("%s: error %q repeats the password", name, err)
		}
	}
}

func TestDatabaseDSN(t *testing.T) {
	tests := map[string]string{
		"postgres://trove:pw@127.0.0.1:5432/postgres?sslmode=disable": "postgres://trove:pw@127.0.0.1:5432/trove_lt?sslmode=disable",
		"postgresql://trove@db/":                              "postgresql://trove@db/trove_lt",
		"host=127.0.0.1 port=5432 user=trove dbname=postgres": "host=127.0.0.1 port=5432 user=trove dbname=postgres dbname='trove_lt'",
	}
	for in, want := range tests {
		got, err := DatabaseDSN(in, "trove_lt")
		if err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", in, got, err, want)
			continue
		}
		cfg, err := pgx.ParseConfig(got)
		if err != nil || cfg.Database != "trove_lt" {
			t.Errorf("%q: pgx reads %q as database %q (%v)", in, got, cfg.Database, err)
		}
	}
	if _, err := DatabaseDSN("host=x", "a' b"); err == nil {
		t.Error("a quoting database name was accepted")
	}
}

func TestColdVersionsPaths(t *testing.T) {
	provs := []ProviderSpec{{"small", 30}, {"large", 2000}, {"p00001", 30}, {"p00002", 30}, {"p00003", 7}}
	paths := ColdVersionsPaths("acme", provs)
	want := []string{
		"/v1/providers/acme/large/versions", "/v1/providers/acme/p00001/versions", "/v1/providers/acme/p00002/versions",
		"/v1/providers/acme/p00003/versions", "/v1/providers/acme/small/versions",
	}
	sorted := slices.Clone(paths)
	slices.Sort(sorted)
	if !slices.Equal(sorted, want) {
		t.Errorf("paths %v, want each provider's versions path once: %v", paths, want)
	}
	if again := ColdVersionsPaths("acme", provs); !slices.Equal(again, paths) {
		t.Error("the order is not reproducible")
	}
	if m := medianProvider(provs); m.Versions != 30 {
		t.Errorf("median provider %v, want one of 30 versions", m)
	}
}

func TestColdDownloadPaths(t *testing.T) {
	provs := []ProviderSpec{{Type: "small", Versions: 3}, {Type: "large", Versions: 5}}
	platforms := []OSArch{{"linux", "amd64"}, {"darwin", "arm64"}}
	hot := "/v1/providers/acme/small/0.0.2/download/linux/amd64"
	paths := ColdDownloadPaths("acme", provs, platforms, map[string]bool{hot: true})
	if len(paths) != (3+5)*2-1 {
		t.Fatalf("%d paths, want 15: %v", len(paths), paths)
	}
	if slices.Contains(paths, hot) {
		t.Errorf("the skipped path %s is listed", hot)
	}
	sorted := slices.Clone(paths)
	slices.Sort(sorted)
	if len(slices.Compact(sorted)) != len(paths) {
		t.Errorf("paths repeat: %v", paths)
	}
	for _, want := range []string{
		"/v1/providers/acme/large/0.0.4/download/darwin/arm64",
		"/v1/providers/acme/small/0.0.0/download/linux/amd64",
	} {
		if !slices.Contains(paths, want) {
			t.Errorf("%s is missing", want)
		}
	}
	if again := ColdDownloadPaths("acme", provs, platforms, map[string]bool{hot: true}); !slices.Equal(again, paths) {
		t.Error("the order is not reproducible")
	}
	inOrder := true
	for i := 1; i < len(paths); i++ {
		inOrder = inOrder && paths[i-1] < paths[i]
	}
	if inOrder {
		t.Error("the paths are sorted, not shuffled")
	}
}

func TestURLCycle(t *testing.T) {
	if _, err := NewURLCycle(nil); err == nil {
		t.Error("an empty cycle was accepted")
	}
	c, err := NewURLCycle([]string{"a", "b", "c"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 3 {
		got = append(got, c.Next())
	}
	if !slices.Equal(got, []string{"a", "b", "c"}) || c.Repeats() != 0 || c.Issued() != 3 {
		t.Errorf("first pass %v, %d repeats, %d issued", got, c.Repeats(), c.Issued())
	}
	if next := c.Next(); next != "a" || c.Repeats() != 1 || c.Len() != 3 {
		t.Errorf("after the end: %q, %d repeats", next, c.Repeats())
	}
}

func TestFeedOrder(t *testing.T) {
	provs := []ProviderSpec{{Type: "a", Versions: 3}, {Type: "b", Versions: 1}, {Type: "c", Versions: 2}}
	tests := map[bool][]string{
		false: {"a0", "a1", "a2", "b0", "c0", "c1"},
		true:  {"a0", "b0", "c0", "a1", "c1", "a2"},
	}
	for interleave, want := range tests {
		var got []string
		for typ, i := range feedOrder(provs, interleave) {
			got = append(got, typ+string(rune('0'+i)))
		}
		if !slices.Equal(got, want) {
			t.Errorf("interleave=%v: %v, want %v", interleave, got, want)
		}
	}
	n := 0
	for range feedOrder(provs, true) {
		n++
		if n == 2 {
			break // stopping early must not panic
		}
	}
}

func TestRoundOrder(t *testing.T) {
	tests := map[[2]int][]int{
		{2, 1}: {0, 1}, {2, 2}: {1, 0}, {2, 3}: {0, 1},
		{3, 1}: {0, 1, 2}, {3, 2}: {1, 2, 0}, {3, 3}: {2, 0, 1}, {3, 4}: {0, 1, 2},
	}
	for in, want := range tests {
		if got := roundOrder(in[0], in[1]); !slices.Equal(got, want) {
			t.Errorf("roundOrder(%d sides, round %d) = %v, want %v", in[0], in[1], got, want)
		}
	}
}

func TestCycleNote(t *testing.T) {
	tests := map[string]struct {
		perRound []int64
		repeats  int64
		want     string
	}{
		"fresh":    {[]int64{12000, 15500}, 0, "every Trove request asked for a URL not asked for before: at most 15,500 per round (warm-up included) of 39,999 distinct ones"},
		"repeated": {[]int64{41000}, 1001, "1,001 Trove requests repeated a URL (at most 41,000 per round for 39,999 distinct ones): those may have been cache hits; seed more versions"},
	}
	for name, tc := range tests {
		if got := cycleNote(tc.perRound, tc.repeats, 39_999); got != tc.want {
			t.Errorf("%s: %q, want %q", name, got, tc.want)
		}
	}
}

func TestScaleOutSpecSeedsQuickly(t *testing.T) {
	s := ScaleOutSpec()
	provs, err := s.plan()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, p := range provs {
		total += p.Versions
	}
	if total != 10_000 || provs[0] != (ProviderSpec{"small", 30}) || provs[1] != (ProviderSpec{"large", 2000}) {
		t.Errorf("plan: %d versions, first providers %v", total, provs[:2])
	}
	if !s.Interleave || s.Workers < 8 || len(s.Modules) != 0 {
		t.Errorf("spec %+v: want interleaved writers, no modules", s)
	}
}

// TestRunScaleOutAgainstRealTrove runs the postgres-s3 mode briefly on the
// test servers, with a small index.
func TestRunScaleOutAgainstRealTrove(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts trove; skipped with -short")
	}
	so, err := ScaleOutFromEnv(os.Getenv)
	if err != nil {
		if os.Getenv("TROVE_REQUIRE_BACKENDS") == "1" {
			t.Fatal(err)
		}
		t.Skipf("no PostgreSQL and S3 servers: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "trove")
	build := exec.Command("go", "build", "-o", bin, "trove.dev/trove/cmd/trove")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/trove: %v\n%s", err, out)
	}
	opt := DefaultOptions()
	opt.Backend, opt.ScaleOut = BackendPostgresS3, so
	opt.TroveBinary = bin
	opt.Conns, opt.StreamConns = 4, 2
	opt.Warmup, opt.Duration, opt.Rounds = 100*time.Millisecond, 300*time.Millisecond, 2
	opt.Spec = ScaleOutSpec()
	opt.Spec.Providers = []ProviderSpec{{Type: "small", Versions: 30}, {Type: "large", Versions: 120}}
	opt.Spec.TotalVersions = 2000
	opt.Spec.ArchiveBytes = 2 << 20
	var progress strings.Builder
	opt.Progress = &progress

	report, err := Run(context.Background(), opt)
	if err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
	}
	wantRows := []string{
		"versions acme/small (30 versions), hot (cached)",
		"versions acme/large (120 versions), hot (cached)",
		"download acme/small 0.2.9 linux_amd64, hot (cached)",
		"versions, cold (a provider's versions read from PostgreSQL, per request)",
		"download, cold (a version and platform not asked for before, per request)",
		"archive 2.0 MiB, redirect (Trove HTTPS 302, then the presigned S3 GET) vs the plain-HTTP baseline",
		"archive 2.0 MiB, redirect (Trove HTTPS 302, then the presigned S3 GET) vs direct S3 GET",
		"archive 2.0 MiB, proxy (Trove HTTPS streams it from S3)",
		"archive 2.0 MiB, proxy (Trove HTTPS streams it from S3) vs direct S3 GET",
	}
	if len(report.Rows) != len(wantRows) {
		t.Fatalf("got %d rows, want %d: %+v\nprogress:\n%s", len(report.Rows), len(wantRows), report.Rows, progress.String())
	}
	for i, row := range report.Rows {
		if row.label() != wantRows[i] {
			t.Errorf("row %d is %q, want %q", i, row.label(), wantRows[i])
		}
		for name, res := range map[string]Result{"trove": row.Trove, "reference": row.Baseline} {
			if res.Requests == 0 || res.Errors != 0 {
				t.Errorf("%s on %s: %d requests, %d errors (first: %s)", row.label(), name, res.Requests, res.Errors, res.FirstError)
			}
		}
		if row.Trove.CPU <= 0 {
			t.Errorf("%s: Trove's CPU not measured", row.label())
		}
	}
	coldVersions := report.Rows[3]
	if !slices.ContainsFunc(coldVersions.Notes, func(n string) bool {
		return strings.Contains(n, "--cache-bytes 1,") && strings.Contains(n, "all 64 providers")
	}) || slices.ContainsFunc(coldVersions.Notes, func(n string) bool { return strings.Contains(n, "seed more versions") }) {
		t.Errorf("cold versions row notes %q: want the one-document cache and all providers explained, not the harness's advice on repeats", coldVersions.Notes)
	}
	if coldVersions.Trove.BackendCPU <= 0 {
		t.Errorf("cold versions row: PostgreSQL's CPU not measured (notes %q)", coldVersions.Notes)
	}
	cold := report.Rows[4]
	if !slices.ContainsFunc(cold.Notes, func(n string) bool {
		return strings.HasPrefix(n, "every Trove request asked for a URL not asked for before")
	}) {
		t.Errorf("cold row notes %q: some requests were not first requests", cold.Notes)
	}
	if !slices.ContainsFunc(cold.Notes, func(n string) bool {
		return strings.HasPrefix(n, "after the last cold round Trove's document cache held")
	}) {
		t.Errorf("cold row notes %q lack the cache metrics", cold.Notes)
	}
	if cold.Trove.BackendCPU <= 0 {
		t.Errorf("cold row: PostgreSQL's CPU not measured (notes %q)", cold.Notes)
	}
	if report.RSS == nil || report.RSS.Current <= 0 {
		t.Errorf("RSS %+v", report.RSS)
	}
	if !strings.Contains(report.Index, "2,000 versions") || !strings.Contains(report.Index, "PostgreSQL") {
		t.Errorf("Index = %q", report.Index)
	}
}
