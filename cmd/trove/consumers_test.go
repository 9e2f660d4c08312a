package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/trovetest"
)

// TestConsumersAndBlastRadius reads consumer records with trove
// consumers, and checks that a deprecation and a revocation first tell
// who downloaded the version in the last 30 days.
func TestConsumersAndBlastRadius(t *testing.T) {
	s := trovetest.Start(t)
	admin := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile}
	ctx := context.Background()
	if err := s.Index.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"1.0.0", "2.0.0"} {
		if err := s.Index.CreateProviderVersion(ctx, registry.ProviderVersion{Namespace: "acme", Type: "cloud", Version: v, Protocols: []string{"5.0"},
			SigningKey: registry.SigningKey{Namespace: "acme", KeyID: "0123456789ABCDEF", CreatedAt: time.Now()}, PublishedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	today := registry.DayOf(time.Now())
	record := func(version, consumer, client, clientVersion string, n int64) registry.DownloadCount {
		k := registry.ProviderDownload("acme", "cloud", version, "linux", "amd64")
		k.Day, k.Consumer, k.Client, k.ClientVersion = today, consumer, client, clientVersion
		return registry.DownloadCount{DownloadKey: k, Count: n}
	}
	if err := s.Index.AddDownloads(ctx, []registry.DownloadCount{
		record("1.0.0", "user:alice", registry.ClientTerraform, "1.9.5", 3),
		record("1.0.0", "anonymous", registry.ClientOpenTofu, "1.12.6", 1),
		record("2.0.0", "user:bob", registry.ClientOpenTofu, "1.12.6", 2),
	}); err != nil {
		t.Fatal(err)
	}

	r := runTrove(t, admin, "", "consumers", "acme/cloud", "--json")
	var report apispec.ConsumerReport
	if r.code != exitOK || json.Unmarshal([]byte(r.stdout), &report) != nil || report.Downloads != 6 || len(report.Consumers) != 3 {
		t.Fatalf("trove consumers --json: exit %d, %+v\n%s%s", r.code, report, r.stdout, r.stderr)
	}
	r = runTrove(t, admin, "", "consumers", "acme/cloud", "--versions", "< 2.0")
	if r.code != exitOK || !strings.Contains(r.stdout, "4 downloads by 2 consumers") || !strings.Contains(r.stdout, "user:alice") ||
		strings.Contains(r.stdout, "user:bob") || !strings.Contains(r.stdout, "terraform 1.9.5") {
		t.Errorf("trove consumers --versions '< 2.0': exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"consumers", "acme"}, {"consumers", "acme//x"}, {"consumers", "acme/cloud", "--days", "0"}} {
		if r := runTrove(t, admin, "", args...); r.code != exitUsage {
			t.Errorf("trove %v: exit %d, want a usage error\n%s", args, r.code, r.stderr)
		}
	}

	r = runTrove(t, admin, "", "provider", "deprecate", "acme/cloud", "1.0.0", "--reason", "use 2.x")
	if want := "2 consumers downloaded acme/cloud 1.0.0 in the last 30 days: user:alice (3, last " + today + "), anonymous (1, last " + today + ")"; r.code != exitOK || !strings.Contains(r.stderr, want) {
		t.Errorf("provider deprecate: exit %d, stderr %q; want it to say %q", r.code, r.stderr, want)
	}
	if r.stdout != "provider acme/cloud 1.0.0: deprecated (use 2.x)\n" {
		t.Errorf("provider deprecate printed %q on stdout: the blast radius belongs on stderr", r.stdout)
	}
	// A delete of a version in use is refused, naming who, and deletes nothing.
	r = runTrove(t, admin, "", "provider", "delete", "acme/cloud", "1.0.0", "--confirm")
	if r.code != exitError || !strings.Contains(r.stderr, "2 consumers downloaded acme/cloud 1.0.0 in the last 30 days (user:alice, anonymous)") ||
		!strings.Contains(r.stderr, "--in-use") {
		t.Errorf("provider delete of a version in use: exit %d\n%s", r.code, r.stderr)
	}
	if r := runTrove(t, admin, "", "provider", "delete", "acme/cloud", "--confirm"); r.code != exitError || !strings.Contains(r.stderr, "3 consumers downloaded acme/cloud") {
		t.Errorf("provider delete of a provider in use: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := s.Index.GetProviderVersion(ctx, "acme", "cloud", "1.0.0"); err != nil {
		t.Fatalf("a refused delete deleted the version: %v", err)
	}
	if r := runTrove(t, admin, "", "provider", "delete", "acme/cloud", "1.0.0", "--confirm", "--in-use"); r.code != exitOK {
		t.Errorf("provider delete --in-use: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := s.Index.GetProviderVersion(ctx, "acme", "cloud", "1.0.0"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("after delete --in-use the version reads %v, want NotFound", err)
	}

	r = runTrove(t, admin, "", "provider", "revoke", "acme/cloud", "2.0.0", "--reason", "broken")
	if r.code != exitOK || !strings.Contains(r.stderr, "1 consumers downloaded acme/cloud 2.0.0") || !strings.Contains(r.stderr, "user:bob") {
		t.Errorf("provider revoke: exit %d, stderr %q", r.code, r.stderr)
	}
}
