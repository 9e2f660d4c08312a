package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	gst "trove.dev/trove/internal/gitsource/gitsourcetest"
	"trove.dev/trove/internal/trovetest"
)

// TestGitSourcesPageRefusesNonPublic: on a Trove without
// --git-source-allow-private the add form refuses a loopback or metadata
// repository with the reason on the page, and nothing is stored; a
// reader of the namespace cannot open the page nor post to it.
func TestGitSourcesPageRefusesNonPublic(t *testing.T) {
	e := start(t)
	alice, bob := e.browser(t), e.browser(t)
	alice.signIn("alice", password)
	bob.signIn("bob", password)
	page := alice.get("/namespaces/secret/git-sources")
	if page.status != http.StatusOK || !strings.Contains(page.body, "No module of this namespace comes from a git repository") {
		t.Fatalf("git sources page: %d\n%s", page.status, page.body)
	}
	for _, u := range []string{"http://127.1/net.git", "http://169.254.169.254/net.git", "git@localhost.:net.git"} {
		p := alice.post("/namespaces/secret/git-sources", url.Values{"csrf": {csrf(t, page)}, "name": {"net"}, "system": {"aws"}, "url": {u}})
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, "public addresses only") || !strings.Contains(p.body, "--git-source-allow-private") ||
			!strings.Contains(p.body, `value="`+u+`"`) {
			t.Errorf("adding %s: %d, want 400 with the reason and the form kept\n%s", u, p.status, p.body)
		}
	}
	// Without the CSRF field, nothing is done either.
	if p := alice.post("/namespaces/secret/git-sources", url.Values{"name": {"net"}, "system": {"aws"}, "url": {"https://git.example.com/net.git"}}); p.status < 400 {
		t.Errorf("a post without CSRF: %d", p.status)
	}
	if p := bob.get("/namespaces/secret/git-sources"); p.status != http.StatusNotFound && p.status != http.StatusForbidden {
		t.Errorf("bob, no member, opens the page: %d", p.status)
	}
	if all, err := e.admin.ListGitSources(context.Background(), "secret"); err != nil || len(all) != 0 {
		t.Fatalf("stored %+v, %v", all, err)
	}
}

// TestGitSourcesPage adds a private repository served on loopback (with
// --git-source-allow-private) through the form, syncs it from the page,
// sees its state, and removes it.
func TestGitSourcesPage(t *testing.T) {
	e := start(t, trovetest.Options{GitServers: true})
	root := t.TempDir()
	repo := gst.NewRepo(t, root, "net", map[string]string{"main.tf": "variable \"x\" {}\n"})
	gst.Git(t, repo, "tag", "v1.0.0")
	base := gst.HTTP(t, root, "ci", "s3cret-token")
	alice := e.browser(t)
	alice.signIn("alice", password)
	page := alice.get("/namespaces/secret/git-sources")
	p := alice.post("/namespaces/secret/git-sources", url.Values{"csrf": {csrf(t, page)}, "name": {"net"}, "system": {"aws"}, "url": {base + "net"},
		"username": {"ci"}, "token": {"s3cret-token"}})
	if p.status != http.StatusOK || !strings.Contains(p.body, "gitsec_") || !strings.Contains(p.body, "/api/v1/git-hooks/secret/net/aws") ||
		strings.Contains(p.body, "s3cret-token") {
		t.Fatalf("adding: %d, want the webhook secret once and never the token\n%s", p.status, p.body)
	}
	if cc := p.header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("the page with the webhook secret: Cache-Control %q, want no-store", cc)
	}
	// A field the API would refuse is refused here too, not trimmed into
	// shape: nothing is added.
	if p := alice.post("/namespaces/secret/git-sources", url.Values{"csrf": {csrf(t, page)}, "name": {"net2"}, "system": {"aws"},
		"url": {" " + base + "net"}}); p.status != http.StatusBadRequest {
		t.Errorf("a URL with a leading space: %d, want 400\n%s", p.status, p.body)
	}
	if all, err := e.admin.ListGitSources(context.Background(), "secret"); err != nil || len(all) != 1 {
		t.Errorf("after the refused form: %d sources, %v", len(all), err)
	}
	p = alice.post("/namespaces/secret/git-sources/net/aws/sync", url.Values{"csrf": {csrf(t, page)}})
	if p.status != http.StatusOK || !(strings.Contains(p.body, "published 1.0.0") || strings.Contains(p.body, "nothing new")) {
		t.Fatalf("sync: %d\n%s", p.status, p.body)
	}
	page = alice.get("/namespaces/secret/git-sources")
	for _, want := range []string{base + "net", "1 published: 1.0.0", "basic auth"} {
		if !strings.Contains(page.body, want) {
			t.Errorf("the page does not show %q\n%s", want, page.body)
		}
	}
	if strings.Contains(page.body, "gitsec_") || strings.Contains(page.body, "s3cret-token") {
		t.Errorf("the page shows a secret again")
	}
	if ns := alice.get("/namespaces/secret"); !strings.Contains(ns.body, `href="/namespaces/secret/git-sources"`) {
		t.Errorf("the namespace page has no link to its git sources")
	}
	p = alice.post("/namespaces/secret/git-sources/net/aws/remove", url.Values{"csrf": {csrf(t, page)}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("remove: %d\n%s", p.status, p.body)
	}
	if all, err := e.admin.ListGitSources(context.Background(), "secret"); err != nil || len(all) != 0 {
		t.Fatalf("after removal: %+v, %v", all, err)
	}
	if _, err := e.admin.GetModuleVersion(context.Background(), "secret", "net", "aws", "1.0.0"); err != nil {
		t.Errorf("the published version after removal: %v", err)
	}
}
