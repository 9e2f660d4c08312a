package mirror_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/mirror"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
	"trove.dev/trove/internal/trovetest"
)

// clock is a test clock the mirror reads.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// TestQuarantineWithTroveUpstream mirrors acme/widget from a second,
// real Trove under a rule with a minimum age of 7 days, on a clock the
// test moves: new versions are held from their first sight until they
// are 7 days old, an approval releases one early, a denial keeps versions
// out whatever their age, and a denied package the mirror holds is no
// longer served.
func TestQuarantineWithTroveUpstream(t *testing.T) {
	ctx := context.Background()
	up := trovetest.Start(t)
	c, err := client.New(up.URL, up.AdminToken, client.WithCAFile(up.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: "acme", Visibility: "public"}); err != nil {
		t.Fatal(err)
	}
	key := signingtest.NewKey(t, "acme")
	if _, err := c.AddSigningKey(ctx, "acme", apispec.AddSigningKeyRequest{ASCIIArmor: key.ArmoredPublic}); err != nil {
		t.Fatal(err)
	}
	publish := func(version string) {
		t.Helper()
		rel := releasetest.Build(t, key, releasetest.Spec{Type: "widget", Version: version, Platforms: []string{"linux_amd64"}, Protocols: []string{"5.0"}})
		var files []client.PublishFile
		for _, f := range rel.Files {
			files = append(files, client.PublishFile{Name: f.Name, Open: f.Open})
		}
		if _, err := c.PublishProvider(ctx, "acme", "widget", version, files); err != nil {
			t.Fatal(err)
		}
	}
	publish("1.0.0")

	st := sqlitetest.New(t)
	dir, idx, blobs := st.Dir, st.Index, st.Blobs
	ca, err := os.ReadFile(up.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	week := 7 * 24 * time.Hour
	if err := idx.PutMirrorUpstream(ctx, registry.MirrorUpstream{
		Host: up.Host, ServiceURL: up.URL + "/v1/providers/", CACertificates: string(ca),
		Allow:     []registry.MirrorRule{{Provider: "acme/widget", MinAge: week}},
		CreatedAt: time.Now(), UpdatedAt: time.Now(),
	}); err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	clk := &clock{t: t0}
	m, err := mirror.New(mirror.Options{Index: idx, Blobs: blobs, TempDir: filepath.Join(dir, "tmp"), Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)

	host := up.Host
	versions := func() ([]string, error) {
		vs, err := m.MirroredVersions(ctx, host, "acme", "widget")
		slices.Sort(vs)
		return vs, err
	}
	wantVersions := func(when string, want ...string) {
		t.Helper()
		got, err := versions()
		if err != nil {
			t.Fatalf("%s: MirroredVersions: %v; want %v", when, err, want)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%s: the mirror lists %v, want %v", when, got, want)
		}
	}
	wantRefused := func(when, version, says string) {
		t.Helper()
		_, err := m.MirroredVersion(ctx, host, "acme", "widget", version)
		if !registry.IsKind(err, registry.NotFound) || !strings.Contains(registry.Message(err), says) {
			t.Fatalf("%s: MirroredVersion %s = %v, want NotFound saying %q", when, version, err, says)
		}
	}

	// First sight at t0: 1.0.0 is held, nothing listed, nothing fetched.
	_, err = versions()
	if !registry.IsKind(err, registry.NotFound) || !strings.Contains(registry.Message(err), "1 held back by a minimum age") {
		t.Fatalf("at first sight: %v, want NotFound saying a version is held", err)
	}
	wantRefused("at first sight", "1.0.0", "held until 2026-11-08T00:00:00Z")
	if _, err := idx.GetMirroredVersion(ctx, host, "acme", "widget", "1.0.0"); !registry.IsKind(err, registry.NotFound) {
		t.Fatalf("a held version was fetched and stored: %v", err)
	}

	// An approval releases 1.0.0 at once.
	if _, err := idx.PutMirrorDecision(ctx, registry.MirrorDecision{Host: host, Namespace: "acme", Type: "widget",
		Kind: registry.MirrorApprove, Versions: "1.0.0", CreatedBy: "user:ops", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	wantVersions("approved", "1.0.0")
	v, err := m.MirroredVersion(ctx, host, "acme", "widget", "1.0.0")
	if err != nil || len(v.Platforms) != 1 {
		t.Fatalf("approved 1.0.0: %+v, %v", v, err)
	}

	// 1.1.0 appears a day later and is held until it is 7 days old.
	publish("1.1.0")
	clk.Set(t0.Add(24 * time.Hour))
	wantVersions("1.1.0 first seen", "1.0.0")
	wantRefused("1.1.0 first seen", "1.1.0", "held until 2026-11-09T00:00:00Z")
	clk.Set(t0.Add(24*time.Hour + week - time.Second))
	wantVersions("a second before 1.1.0 is 7 days old", "1.0.0")
	clk.Set(t0.Add(24*time.Hour + week))
	wantVersions("1.1.0 is 7 days old", "1.0.0", "1.1.0")
	if _, err := m.MirroredVersion(ctx, host, "acme", "widget", "1.1.0"); err != nil {
		t.Fatalf("released 1.1.0: %v", err)
	}
	// Revoking the approval changes nothing for 1.0.0 now: it is old enough.
	if err := idx.DeleteMirrorDecision(ctx, host, "acme", "widget", registry.MirrorApprove, "1.0.0"); err != nil {
		t.Fatal(err)
	}
	wantVersions("approval revoked after 7 days", "1.0.0", "1.1.0")

	// The package of 1.0.0 is fetched and held; then 1.0.0 is denied: it
	// leaves the listing, its document and its stored package.
	origin := registry.PackageOrigin{Host: host, Namespace: "acme", Type: "widget", Version: "1.0.0", OS: "linux", Arch: "amd64"}
	if err := m.FetchPackage(ctx, origin); err != nil {
		t.Fatal(err)
	}
	if err := m.ServesPackage(ctx, origin.String()); err != nil {
		t.Fatalf("a released package is not served: %v", err)
	}
	if _, err := idx.PutMirrorDecision(ctx, registry.MirrorDecision{Host: host, Namespace: "acme", Type: "widget",
		Kind: registry.MirrorDeny, Versions: "< 1.1.0", Reason: "compromised", CreatedBy: "user:sec", CreatedAt: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	wantVersions("1.0.0 denied", "1.1.0")
	wantRefused("1.0.0 denied", "1.0.0", "denied (< 1.1.0) by user:sec: compromised")
	if err := m.ServesPackage(ctx, origin.String()); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("the stored package of a denied version is still served: %v", err)
	}
	// A denial beats an approval.
	if _, err := idx.PutMirrorDecision(ctx, registry.MirrorDecision{Host: host, Namespace: "acme", Type: "widget",
		Kind: registry.MirrorApprove, Versions: "1.0.0", CreatedAt: clk.Now()}); err != nil {
		t.Fatal(err)
	}
	wantVersions("1.0.0 denied and approved", "1.1.0")

	// With the upstream down, the denial still holds for what the mirror holds.
	if err := idx.PutMirrorUpstream(ctx, registry.MirrorUpstream{
		Host: host, ServiceURL: "https://127.0.0.1:1/v1/providers/", CACertificates: string(ca),
		Allow:     []registry.MirrorRule{{Provider: "acme/widget", MinAge: week}},
		CreatedAt: time.Now(), UpdatedAt: time.Now(),
	}); err != nil {
		t.Fatal(err)
	}
	m.Reload()
	clk.Set(clk.Now().Add(time.Hour)) // the versions document is read again
	_, err = versions()
	if err == nil || !strings.Contains(registry.Message(err), "denied") && !strings.Contains(registry.Message(err), "unreachable") {
		t.Fatalf("upstream down, only a denied version held: %v", err)
	}
}
