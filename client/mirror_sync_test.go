package client_test

import (
	"context"
	"net/url"
	"slices"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest"
)

// TestMirrorSyncMethods reads a provider of the server itself through its
// network mirror: its versions, its packages (held, with absolute signed
// URLs) and a HEAD of each; a URL whose signature was changed and an
// unknown provider are refused.
func TestMirrorSyncMethods(t *testing.T) {
	ctx := context.Background()
	s := trovetest.Start(t)
	admin, err := client.New(s.URL, s.AdminToken, client.WithCAFile(s.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	key := signingtest.NewKey(t, "acme")
	if _, err := admin.AddSigningKey(ctx, "acme", apispec.AddSigningKeyRequest{ASCIIArmor: key.ArmoredPublic}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		if _, err := admin.PublishProvider(ctx, "acme", "widget", v, release(t, key, "widget", v, "linux_amd64", "darwin_arm64")); err != nil {
			t.Fatal(err)
		}
	}
	// The namespace is private: the mirror documents need the token, the
	// signed package URLs do not.
	versions, err := admin.MirrorVersions(ctx, s.Host, "acme", "widget")
	slices.Sort(versions)
	if err != nil || !slices.Equal(versions, []string{"1.0.0", "1.1.0"}) {
		t.Fatalf("MirrorVersions = %v, %v; want 1.0.0 and 1.1.0", versions, err)
	}
	archives, err := admin.MirrorArchives(ctx, s.Host, "acme", "widget", "1.1.0")
	if err != nil {
		t.Fatal(err)
	}
	if len(archives) != 2 || archives[0].Platform != "darwin_arm64" || archives[1].Platform != "linux_amd64" {
		t.Fatalf("MirrorArchives = %+v, want darwin_arm64 and linux_amd64", archives)
	}
	for _, a := range archives {
		if !a.Held() || !strings.HasPrefix(a.URL, s.URL+"/") {
			t.Errorf("archive %+v: want held, with an absolute URL of %s", a, s.URL)
		}
		if err := admin.FetchMirrorPackage(ctx, a); err != nil {
			t.Errorf("FetchMirrorPackage(%s): %v", a.Platform, err)
		}
	}

	forged := archives[0]
	u, _ := url.Parse(forged.URL)
	q := u.Query()
	q.Set("signature", strings.Repeat("0", len(q.Get("signature"))))
	u.RawQuery = q.Encode()
	forged.URL = u.String()
	if err := admin.FetchMirrorPackage(ctx, forged); client.StatusCode(err) < 400 || !strings.Contains(err.Error(), "darwin_arm64") {
		t.Errorf("FetchMirrorPackage of a forged URL = %v, want a refusal naming the platform", err)
	}
	if _, err := admin.MirrorVersions(ctx, s.Host, "acme", "nothing"); !client.IsNotFound(err) {
		t.Errorf("MirrorVersions of an unknown provider = %v, want not found", err)
	}
	if _, err := admin.MirrorArchives(ctx, s.Host, "acme", "widget", "9.9.9"); !client.IsNotFound(err) {
		t.Errorf("MirrorArchives of an unknown version = %v, want not found", err)
	}
}

// TestMirrorArchiveHeld: only an h1 hash says the server holds a package.
func TestMirrorArchiveHeld(t *testing.T) {
	for hashes, want := range map[string]bool{"zh:01": false, "": false, "h1:abc= zh:01": true} {
		if got := (client.MirrorArchive{Hashes: strings.Fields(hashes)}).Held(); got != want {
			t.Errorf("Held(%q) = %v, want %v", hashes, got, want)
		}
	}
}
