package api_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing/signingtest"
)

// TestLock publishes a provider for three platforms and asks for its lock
// file: it must hold the h1 of every package (as release.PackageHash
// computes it from the package itself), a zh of every SHA256SUMS line,
// and the newest version the constraint allows.
func TestLock(t *testing.T) {
	s, tokens := setup(t)
	ctx := context.Background()
	admin, err := client.New(s.URL, strings.TrimPrefix(tokens[globalAdmin], "Bearer "), client.WithCAFile(s.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	key := signingtest.NewKey(t, "acme")
	if _, err := admin.AddSigningKey(ctx, "acme", apispec.AddSigningKeyRequest{ASCIIArmor: key.ArmoredPublic}); err != nil {
		t.Fatal(err)
	}
	platforms := []string{"linux_amd64", "darwin_arm64", "windows_amd64"}
	var newest releasetest.Release
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0"} {
		rel := releasetest.Build(t, key, releasetest.Spec{Type: "widget", Version: v, Platforms: platforms, Protocols: []string{"5.0"}})
		var files []client.PublishFile
		for _, f := range rel.Files {
			files = append(files, client.PublishFile{Name: f.Name, Open: f.Open})
		}
		if _, err := admin.PublishProvider(ctx, "acme", "widget", v, files); err != nil {
			t.Fatal(err)
		}
		if v == "1.1.0" {
			newest = rel
		}
	}

	reader, err := client.New(s.URL, strings.TrimPrefix(tokens[acmeRead], "Bearer "), client.WithCAFile(s.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	source := s.Host + "/acme/widget"
	resp, err := reader.Lock(ctx, apispec.LockRequest{Providers: []apispec.LockProvider{{Source: source, Versions: "~> 1.0"}}})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, p := range platforms {
		path := filepath.Join(t.TempDir(), "p.zip")
		os.WriteFile(path, newest.ByName(newest.ZipName(p)), 0o644)
		h1, err := release.PackageHash(path)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, h1)
	}
	sums, _ := release.ParseSHA256SUMS(newest.ByName(newest.Prefix() + "_SHA256SUMS"))
	for _, s := range sums {
		want = append(want, "zh:"+s.Digest)
	}
	slices.Sort(want)
	if len(resp.Providers) != 1 || resp.Providers[0].Version != "1.1.0" || !slices.Equal(resp.Providers[0].Hashes, want) {
		t.Fatalf("lock = %+v\nwant 1.1.0 with hashes %v", resp.Providers, want)
	}
	if !strings.Contains(resp.LockFile, `provider "`+source+`" {`) || !strings.Contains(resp.LockFile, `constraints = "~> 1.0"`) {
		t.Errorf("lock file:\n%s", resp.LockFile)
	}

	one, err := reader.Lock(ctx, apispec.LockRequest{Providers: []apispec.LockProvider{{Source: source}}, Platforms: []string{"darwin_arm64"}})
	if err != nil || one.Providers[0].Version != "2.0.0" || len(one.Providers[0].Hashes) != 1+4 {
		t.Errorf("lock for darwin_arm64 = %+v, %v; want 2.0.0 with one h1 and four zh", one.Providers, err)
	}

	other, err := client.New(s.URL, strings.TrimPrefix(tokens[otherAdmin], "Bearer "), client.WithCAFile(s.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		c      *client.Client
		req    apispec.LockRequest
		status int
		want   string
	}{
		{other, apispec.LockRequest{Providers: []apispec.LockProvider{{Source: source}}}, http.StatusNotFound, "not found"},
		{reader, apispec.LockRequest{Providers: []apispec.LockProvider{{Source: source, Versions: ">= 3.0"}}}, http.StatusNotFound, "no version matches"},
		{reader, apispec.LockRequest{Providers: []apispec.LockProvider{{Source: source}}, Platforms: []string{"plan9_mips"}}, http.StatusNotFound, "no package for plan9_mips"},
		{reader, apispec.LockRequest{Providers: []apispec.LockProvider{{Source: "not a source"}}}, http.StatusBadRequest, "not a source"},
		{reader, apispec.LockRequest{}, 0, "at least one provider"}, // refused by the client before sending
	} {
		_, err := c.c.Lock(ctx, c.req)
		if client.StatusCode(err) != c.status || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Lock(%+v) = %v (status %d), want %d saying %q", c.req, err, client.StatusCode(err), c.status, c.want)
		}
	}
}
