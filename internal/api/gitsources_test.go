package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/gitsource"
	gst "trove.dev/trove/internal/gitsource/gitsourcetest"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/trovetest"
)

const gitModuleTF = "variable \"x\" {\n  default = 1\n}\n"

// waitVersions waits (a minute at most) until the module acme/net/aws
// has n versions, as a background sync publishes them.
func waitVersions(t *testing.T, s *trovetest.Server, n int) []registry.ModuleVersion {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		vs, err := s.Index.ListModuleVersions(t.Context(), "acme", "net", "aws")
		if err != nil && !registry.IsKind(err, registry.NotFound) {
			t.Fatal(err)
		}
		if len(vs) >= n {
			return vs
		}
		if time.Now().After(deadline) {
			g, _ := s.Index.GetGitSource(t.Context(), "acme", "net", "aws")
			t.Fatalf("%d versions, want %d (last sync error %q)", len(vs), n, g.LastError)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestGitSourceThroughAPI(t *testing.T) {
	s, tokens := setup(t, trovetest.Options{GitServers: true})
	admin, pub, read := tokens[acmeAdmin], tokens[acmePublish], tokens[acmeRead]
	root := t.TempDir()
	repo := gst.NewRepo(t, root, "net", map[string]string{"main.tf": gitModuleTF})
	gst.Git(t, repo, "tag", "v1.0.0")
	base := gst.HTTP(t, root, "ci", "s3cret-token")
	path := "/api/v1/namespaces/acme/modules/net/aws/git-source"
	create := apispec.CreateGitSourceRequest{URL: base + "net", Auth: "basic", Username: "ci", Password: "s3cret-token", PollIntervalSeconds: -1}

	// Only namespace admins create; hostile input is refused, nothing stored.
	if status, raw := apiDo(t, s, "POST", path, pub, "application/json", jsonReader(create)); status != http.StatusForbidden {
		t.Fatalf("create by a publisher = %d %s", status, raw)
	}
	for _, bad := range []apispec.CreateGitSourceRequest{
		{URL: "file:///etc"}, {URL: "ext::sh -c id"}, {URL: "ssh://-oProxyCommand=id/x"}, {URL: base + "net", Subdir: "../x"},
	} {
		status, raw := apiDo(t, s, "POST", path, admin, "application/json", jsonReader(bad))
		if status != http.StatusBadRequest || !strings.Contains(string(raw), `"errors"`) {
			t.Fatalf("create %+v = %d %s, want 400", bad, status, raw)
		}
	}
	if all, _ := s.Index.ListGitSources(t.Context(), ""); len(all) != 0 {
		t.Fatalf("a refused source was stored: %+v", all)
	}

	status, raw := apiDo(t, s, "POST", path, admin, "application/json", jsonReader(create))
	var created apispec.CreatedGitSource
	if status != http.StatusCreated || json.Unmarshal(raw, &created) != nil || !strings.HasPrefix(created.WebhookSecret, "gitsec_") {
		t.Fatalf("create = %d %s", status, raw)
	}
	if strings.Contains(string(raw), "s3cret-token") || !strings.HasSuffix(created.WebhookURL, "/api/v1/git-hooks/acme/net/aws") {
		t.Fatalf("create answer %s: carries the credential or a wrong webhook URL", raw)
	}
	// The first sync runs in the background after the create.
	waitVersions(t, s, 1)

	// Reading needs publish; the credential is never shown.
	if status, _ := apiDo(t, s, "GET", path, read, "", nil); status != http.StatusForbidden {
		t.Fatalf("get by a reader = %d", status)
	}
	status, raw = apiDo(t, s, "GET", path, pub, "", nil)
	if status != 200 || strings.Contains(string(raw), "s3cret") || strings.Contains(string(raw), created.WebhookSecret) {
		t.Fatalf("get = %d %s", status, raw)
	}
	status, raw = apiDo(t, s, "GET", "/api/v1/namespaces/acme/git-sources", pub, "", nil)
	if status != 200 || !strings.Contains(string(raw), `"url":"`+base+`net"`) {
		t.Fatalf("list = %d %s", status, raw)
	}

	// A new tag: a manual sync publishes it.
	gst.Commit(t, repo, map[string]string{"outputs.tf": "output \"y\" {\n  value = 2\n}\n"})
	gst.Git(t, repo, "tag", "v1.1.0")
	status, raw = apiDo(t, s, "POST", path+"/sync", pub, "", nil)
	var res apispec.GitSourceSyncResult
	if status != 200 || json.Unmarshal(raw, &res) != nil || len(res.Published) != 1 || res.Published[0] != "1.1.0" || res.Current != 1 {
		t.Fatalf("sync = %d %s", status, raw)
	}

	// Push webhooks: GitHub and GitLab shapes verified, the rest 401 with nothing done.
	hook := s.URL + "/api/v1/git-hooks/acme/net/aws"
	post := func(body []byte, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest("POST", hook, bytes.NewReader(body))
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := s.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	body := []byte(`{"ref":"refs/tags/v1.2.0"}`)
	gst.Commit(t, repo, map[string]string{"README.md": "# net\n"})
	gst.Git(t, repo, "tag", "v1.2.0")
	for name, hdr := range map[string]map[string]string{
		"bad signature": {gitsource.HeaderGitHubSignature: gitsource.SignGitHub("guess", body)},
		"bad token":     {gitsource.HeaderGitLabToken: "guess"},
		"unsigned":      {},
		"bearer token":  {"Authorization": admin},
	} {
		if status, raw := post(body, hdr); status != http.StatusUnauthorized || !strings.Contains(raw, `"errors"`) {
			t.Fatalf("%s: %d %s, want 401", name, status, raw)
		}
	}
	if vs, _ := s.Index.ListModuleVersions(t.Context(), "acme", "net", "aws"); len(vs) != 2 {
		t.Fatalf("an unverified webhook synced: %d versions", len(vs))
	}
	if status, raw := post(body, map[string]string{gitsource.HeaderGitHubSignature: gitsource.SignGitHub(created.WebhookSecret, body), gitsource.HeaderGitHubEvent: "push"}); status != http.StatusAccepted {
		t.Fatalf("github webhook = %d %s", status, raw)
	}
	waitVersions(t, s, 3)
	gst.Git(t, repo, "tag", "v1.3.0")
	if status, raw := post(body, map[string]string{gitsource.HeaderGitLabToken: created.WebhookSecret}); status != http.StatusAccepted {
		t.Fatalf("gitlab webhook = %d %s", status, raw)
	}
	waitVersions(t, s, 4)

	// Audit entries of the source and of its publishes.
	entries, err := s.Index.(store.Access).ListAudit(t.Context(), registry.AuditFilter{Namespace: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, e := range entries {
		seen[e.Action]++
		if strings.Contains(e.Details, "s3cret") {
			t.Fatalf("audit entry %+v carries the credential", e)
		}
	}
	if seen[registry.AuditGitSourceCreate] != 1 || seen[registry.AuditModulePublish] != 4 || seen[registry.AuditGitSourceSync] != 1 {
		t.Fatalf("audit actions %v", seen)
	}

	// Delete: the versions stay, the webhook no longer verifies.
	if status, raw := apiDo(t, s, "DELETE", path, admin, "", nil); status != http.StatusNoContent {
		t.Fatalf("delete = %d %s", status, raw)
	}
	if status, _ := post(body, map[string]string{gitsource.HeaderGitLabToken: created.WebhookSecret}); status != http.StatusUnauthorized {
		t.Fatalf("webhook after delete = %d", status)
	}
	if vs, _ := s.Index.ListModuleVersions(t.Context(), "acme", "net", "aws"); len(vs) != 4 {
		t.Fatalf("%d versions after the delete, want 4", len(vs))
	}
}

// TestGitSourceRefusesNonPublicHosts: on a Trove without
// --git-source-allow-private, a git source naming a loopback, private or
// metadata address is refused with a JSON error naming the flag, and
// nothing is stored.
func TestGitSourceRefusesNonPublicHosts(t *testing.T) {
	s, tokens := setup(t)
	path := "/api/v1/namespaces/acme/modules/net/aws/git-source"
	for _, u := range []string{"http://127.1/net.git", "https://0x7f.1/net.git", "https://169.254.169.254/net.git", "git://localhost./net.git",
		"ssh://git@10.0.0.1/net.git", "git@[0:0:0:0:0:ffff:7f00:1]:net.git"} {
		status, raw := apiDo(t, s, "POST", path, tokens[acmeAdmin], "application/json", jsonReader(apispec.CreateGitSourceRequest{URL: u}))
		var body struct{ Errors []string }
		if status != http.StatusBadRequest || json.Unmarshal(raw, &body) != nil || len(body.Errors) != 1 ||
			!strings.Contains(body.Errors[0], "public addresses only") || !strings.Contains(body.Errors[0], "--git-source-allow-private") {
			t.Errorf("create %s = %d %s, want 400 naming --git-source-allow-private", u, status, raw)
		}
	}
	if all, _ := s.Index.ListGitSources(t.Context(), ""); len(all) != 0 {
		t.Fatalf("a refused source was stored: %+v", all)
	}
}
