package web_test

import (
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

// TestLifecyclePages checks what provider and module pages show of
// deprecated and revoked versions: the notice with reason and link, the
// marks in the version selector, revoked versions left out of the
// selector and of "latest" but reachable by address with a notice.
func TestLifecyclePages(t *testing.T) {
	e := start(t)
	ctx := t.Context()
	e.publishModule(t, "acme", "network", "aws", "1.0.0", networkModule)
	e.publishModule(t, "acme", "network", "aws", "1.1.0", networkModule)
	for _, v := range []string{"1.0.0", "1.1.0"} {
		if err := e.srv.Index.CreateProviderVersion(ctx, registry.ProviderVersion{Namespace: "acme", Type: "cloud", Version: v, Protocols: []string{"5.0"},
			SigningKey: registry.SigningKey{Namespace: "acme", KeyID: "0123456789ABCDEF", CreatedAt: time.Now()}, PublishedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	dep := apispec.DeprecateRequest{Reason: "use 2.x <now>", Link: "https://example.com/up?a=1&b=2"}
	if _, err := e.admin.DeprecateModuleVersion(ctx, "acme", "network", "aws", "1.0.0", dep); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.RevokeModuleVersion(ctx, "acme", "network", "aws", "1.1.0", apispec.RevokeRequest{Reason: "broken archive"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.DeprecateProviderVersion(ctx, "acme", "cloud", "1.0.0", dep); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.RevokeProviderVersion(ctx, "acme", "cloud", "1.1.0", apispec.RevokeRequest{Reason: "broken packages"}); err != nil {
		t.Fatal(err)
	}
	b := e.browser(t)
	for _, c := range []struct{ base, revokedReason string }{{"/modules/acme/network/aws", "broken archive"}, {"/providers/acme/cloud", "broken packages"}} {
		latest := b.get(c.base)
		// The latest is the newest version not revoked: the deprecated 1.0.0.
		for _, want := range []string{
			`id="version-deprecated"`, "<strong>Deprecated:</strong> use 2.x &lt;now&gt;",
			`<a href="https://example.com/up?a=1&amp;b=2" rel="noopener noreferrer nofollow">`,
			`1.0.0 (deprecated)</option>`,
		} {
			if !strings.Contains(latest.body, want) {
				t.Errorf("%s lacks %q", c.base, want)
			}
		}
		if strings.Contains(latest.body, `value="1.1.0"`) || strings.Contains(latest.body, "The latest version is") {
			t.Errorf("%s offers the revoked 1.1.0 or calls 1.0.0 not the latest", c.base)
		}
		revoked := b.get(c.base + "/1.1.0")
		if revoked.status != 200 || !strings.Contains(revoked.body, `id="version-revoked"`) || !strings.Contains(revoked.body, c.revokedReason) ||
			!strings.Contains(revoked.body, `1.1.0 (revoked)</option>`) || strings.Contains(revoked.body, `id="version-deprecated"`) {
			t.Errorf("%s/1.1.0: %d, want the revoked notice and the version in its own selector", c.base, revoked.status)
		}
	}
	// Restoring shows at once (the pages are dropped with the protocol documents).
	if _, err := e.admin.RestoreModuleVersion(ctx, "acme", "network", "aws", "1.1.0"); err != nil {
		t.Fatal(err)
	}
	if p := b.get("/modules/acme/network/aws"); !strings.Contains(p.body, `value="1.1.0"`) || strings.Contains(p.body, `id="version-deprecated"`) {
		t.Errorf("module page after restoring 1.1.0 does not show 1.1.0 as the latest")
	}
}
