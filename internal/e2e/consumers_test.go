package e2e

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/server"
	"trove.dev/trove/internal/store/postgres/pgtest"
	"trove.dev/trove/internal/store/s3blob/s3test"
)

// consumerBound is how long a download may take to show in the consumer
// report of another replica: the replicas below flush every second
// (--downloads-flush-interval), and the report reads the index plus the
// replica's own pending records. The wait is generous for a loaded
// machine; the report is read again until it is right, never timed.
const consumerBound = time.Minute

// TestConsumers installs one provider with terraform through one replica
// with a user's token and with tofu through the other without a token, and
// reads who did from the first replica: each consumer with its client and
// client version, the version constraint filter, and the rights the
// report needs.
func TestConsumers(t *testing.T) {
	requireTerraform(t)
	requireTofu(t)
	dsn := pgtest.NewDatabase(t)
	bucket := s3test.NewBucket(t)
	cert, err := server.EnsureSelfSigned(filepath.Join(t.TempDir(), "tls"), []string{"localhost", "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"TROVE_POSTGRES_DSN=" + dsn, "TROVE_S3_SECRET_KEY=" + bucket.SecretKey}
	flags := []string{
		"--index-backend", "postgres",
		"--blob-backend", "s3", "--s3-endpoint", bucket.Endpoint, "--s3-region", bucket.Region,
		"--s3-bucket", bucket.Bucket, "--s3-path-style", "--s3-access-key", bucket.AccessKey,
		"--tls-cert", cert.CertFile, "--tls-key", cert.KeyFile,
		"--downloads-flush-interval", "1s",
	}
	a := startReplica(t, cert, true, env, flags)
	b := startReplica(t, cert, false, env, flags)
	b.AdminToken = a.AdminToken

	key, publishToken := setupNamespace(t, a)
	publish(t, a, publishToken, packageRelease(t, key, releaseSpec{Version: "1.0.0"}))
	a.mustCLIStdin(t, a.AdminToken, "a password of dana's\n", "user", "create", "dana", "--password-stdin")
	a.mustCLI(t, a.AdminToken, "member", "add", namespace, "dana", "--role", "reader")
	danaToken := strings.TrimSpace(a.mustCLI(t, a.AdminToken, "token", "create", "--user", "dana", "--namespace", namespace, "--scope", "read"))

	tf := newTerraform(t, a, danaToken)
	tf.mustRun(t, writeProject(t, a, "1.0.0", "by-dana"), "init", "-input=false")
	tofu := newClient(t, clientTofu, b, "")
	tofu.mustRun(t, writeProject(t, b, "1.0.0", "anonymous"), "init", "-input=false")

	want := map[string]string{ // consumer: client with version
		"user:dana": "terraform " + clientVersion(t, tf),
		"anonymous": "opentofu " + clientVersion(t, tofu),
	}
	address := namespace + "/" + providerType
	var report apispec.ConsumerReport
	deadline := time.Now().Add(consumerBound)
	for {
		report = consumers(t, a, publishToken, address)
		if seen(report, want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if !seen(report, want) {
		t.Fatalf("after %s the consumer report of replica A is %+v; want consumers %v", consumerBound, report, want)
	}
	if report.Downloads < 2 || len(report.Daily) == 0 || report.Daily[len(report.Daily)-1].Version != "1.0.0" {
		t.Errorf("report totals: %d downloads, daily %+v; want at least 2 downloads of 1.0.0 today", report.Downloads, report.Daily)
	}
	clients := map[string]bool{}
	for _, c := range report.Clients {
		clients[c.Client+" "+c.Version] = true
	}
	for _, c := range want {
		if !clients[c] {
			t.Errorf("client mix %+v lacks %q", report.Clients, c)
		}
	}

	if r := consumers(t, a, publishToken, address, "--versions", ">= 2.0"); r.Downloads != 0 || len(r.Consumers) != 0 {
		t.Errorf("report of versions >= 2.0 = %+v, want no downloads", r)
	}
	// The human output names each consumer.
	out := a.mustCLI(t, publishToken, "consumers", address)
	for c := range want {
		if !strings.Contains(out, c) {
			t.Errorf("trove consumers output lacks %q:\n%s", c, out)
		}
	}
	// A reader may not learn who else downloads.
	if res := a.cli(t, danaToken, "consumers", address); res.Code == 0 {
		t.Errorf("a read token read the consumer report:\n%s", res.Stdout)
	}
	// Bad input: a clear refusal.
	for _, args := range [][]string{{"--days", "0"}, {"--days", "9999"}, {"--versions", "not a constraint"}} {
		if res := a.cli(t, publishToken, append([]string{"consumers", address}, args...)...); res.Code == 0 {
			t.Errorf("trove consumers %v succeeded:\n%s", args, res.Stdout)
		}
	}
}

// consumers reads the consumer report of address through s's CLI.
func consumers(t *testing.T, s *troveServer, token, address string, args ...string) apispec.ConsumerReport {
	t.Helper()
	out := s.mustCLI(t, token, append([]string{"consumers", address, "--json"}, args...)...)
	var r apispec.ConsumerReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("trove consumers --json: %v\n%s", err, out)
	}
	return r
}

// seen reports whether report has every consumer of want with its client.
func seen(report apispec.ConsumerReport, want map[string]string) bool {
	found := 0
	for _, u := range report.Consumers {
		if c, ok := want[u.Consumer]; ok {
			for _, got := range u.Clients {
				if got == c {
					found++
					break
				}
			}
		}
	}
	return found == len(want)
}

var cliVersion = regexp.MustCompile(`v(\d+\.\d+\.\d+\S*)`)

// clientVersion is the version the client reports, as its User-Agent
// names it.
func clientVersion(t *testing.T, c *terraformCLI) string {
	t.Helper()
	res := c.mustRun(t, t.TempDir(), "version")
	m := cliVersion.FindStringSubmatch(res.Output)
	if m == nil {
		t.Fatalf("%s version printed no version:\n%s", c.name, res.Output)
	}
	return m[1]
}
