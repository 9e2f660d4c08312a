package main

import (
	"net/url"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/ciissuer"
	"trove.dev/trove/internal/ciissuer/ciissuertest"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest"
)

// keylessEnv starts Trove and the CI issuer process; acme trusts the
// issuer's tokens of repository acme/infra on tags, and has a key.
func keylessEnv(t *testing.T) (*trovetest.Server, *ciissuertest.Process, *signingtest.Key) {
	t.Helper()
	s := trovetest.Start(t)
	iss := ciissuertest.Start(t)
	admin := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile}
	key := signingtest.NewKey(t, "acme")
	for _, args := range [][]string{
		{"namespace", "create", "acme"},
		{"namespace", "create", "labs"},
		{"trust-policy", "create", "acme", "--issuer", iss.URL, "--claim", "repository=acme/infra", "--claim", "ref=refs/tags/v*", "--description", "releases"},
	} {
		if r := runTrove(t, admin, "", args...); r.code != exitOK {
			t.Fatalf("trove %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if r := runTrove(t, admin, key.ArmoredPublic, "key", "add", "acme", "--file", "-"); r.code != exitOK {
		t.Fatal(r.stderr)
	}
	return s, iss, key
}

// ciEnv is the environment of a GitHub Actions job with "id-token:
// write" and no Trove token.
func ciEnv(s *trovetest.Server, iss *ciissuertest.Process, home string) map[string]string {
	return map[string]string{
		"TROVE_ADDR": s.URL, "TROVE_CA_FILE": s.CAFile, "HOME": home,
		"ACTIONS_ID_TOKEN_REQUEST_URL": iss.RequestURL, "ACTIONS_ID_TOKEN_REQUEST_TOKEN": iss.RequestToken,
	}
}

func TestKeylessPublishFromGitHubActions(t *testing.T) {
	s, iss, key := keylessEnv(t)
	env := ciEnv(s, iss, t.TempDir())

	mod := t.TempDir()
	writeModule(t, mod, cliModule)
	r := runTrove(t, env, "", "module", "publish", "acme/labels/null", "1.0.0", mod)
	if r.code != exitOK || !strings.Contains(r.stderr, "Exchanged the GitHub Actions ID token (audience "+s.URL+") for a publish token of namespace acme (trust policy tp_") {
		t.Fatalf("keyless module publish: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runTrove(t, env, "", "publish", "--namespace", "acme", writeSignedDist(t, key, "foo", "1.0.0", "linux_amd64"))
	if r.code != exitOK || !strings.Contains(r.stdout, "Published acme/foo 1.0.0") || strings.Count(r.stderr, "Exchanged the GitHub Actions ID token") != 1 {
		t.Fatalf("keyless provider publish: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// The exchanged token publishes to acme only.
	r = runTrove(t, env, "", "module", "publish", "labs/labels/null", "1.0.0", mod)
	if r.code != exitError || !strings.Contains(r.stderr, "no trust policy of namespace labs trusts ID tokens of issuer "+iss.URL) {
		t.Errorf("keyless publish to a namespace without policies: exit %d\n%s", r.code, r.stderr)
	}
	// Another audience than the policy's is refused with what to do.
	r = runTrove(t, env, "", "module", "publish", "acme/labels/null", "1.0.1", mod, "--oidc-audience", "https://other.example")
	if r.code != exitError || !strings.Contains(r.stderr, "the ID token's audience (aud) is https://other.example") || !strings.Contains(r.stderr, "docs/keyless.md") {
		t.Errorf("keyless publish for another audience: exit %d\n%s", r.code, r.stderr)
	}
	// A token that is set wins: no exchange.
	env["TROVE_TOKEN"] = s.AdminToken
	r = runTrove(t, env, "", "module", "publish", "acme/labels/null", "1.0.2", mod)
	if r.code != exitOK || strings.Contains(r.stderr, "Exchanged") {
		t.Errorf("publish with TROVE_TOKEN set: exit %d\n%s", r.code, r.stderr)
	}
	api, err := client.New(s.URL, s.AdminToken, client.WithCAFile(s.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	toks, err := api.ListTokens(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	exchanged := 0
	for _, tk := range toks {
		if strings.HasPrefix(tk.Description, "keyless: policy tp_") {
			exchanged++
			if tk.ExpiresAt == nil || tk.User != "" {
				t.Errorf("exchanged token %+v: want an expiring service token", tk)
			}
		}
	}
	if exchanged != 2 {
		t.Errorf("%d exchanged tokens listed in acme, want 2 (one per successful keyless publish)", exchanged)
	}
}

// TestKeylessPublishWithIDTokenVariable: any CI (GitLab's id_tokens) sets
// TROVE_ID_TOKEN; it is exchanged as it is.
func TestKeylessPublishWithIDTokenVariable(t *testing.T) {
	s, iss, _ := keylessEnv(t)
	env := map[string]string{"TROVE_ADDR": s.URL, "TROVE_CA_FILE": s.CAFile, "HOME": t.TempDir(),
		"TROVE_ID_TOKEN": iss.Mint(t, url.Values{ciissuer.ParamAudience: {s.URL}})}
	mod := t.TempDir()
	writeModule(t, mod, cliModule)
	r := runTrove(t, env, "", "module", "publish", "acme/labels/null", "1.0.0", mod)
	if r.code != exitOK || !strings.Contains(r.stderr, "Exchanged the ID token in $TROVE_ID_TOKEN for a publish token of namespace acme") {
		t.Fatalf("keyless publish with TROVE_ID_TOKEN: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The same ID token a second time is a replay.
	r = runTrove(t, env, "", "module", "publish", "acme/labels/null", "1.0.1", mod)
	if r.code != exitError || !strings.Contains(r.stderr, "was exchanged already") {
		t.Errorf("second publish with the same ID token: exit %d\n%s", r.code, r.stderr)
	}
	// A bad request token at GitHub's endpoint is reported as such.
	env = ciEnv(s, iss, t.TempDir())
	env["ACTIONS_ID_TOKEN_REQUEST_TOKEN"] = "wrong"
	r = runTrove(t, env, "", "module", "publish", "acme/labels/null", "1.0.1", mod)
	if r.code != exitError || !strings.Contains(r.stderr, "requesting a GitHub Actions ID token") || !strings.Contains(r.stderr, "id-token: write") {
		t.Errorf("publish with a refused request token: exit %d\n%s", r.code, r.stderr)
	}
}

func TestTrustPolicyCommands(t *testing.T) {
	s := trovetest.Start(t)
	admin := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile}
	if r := runTrove(t, admin, "", "namespace", "create", "acme"); r.code != exitOK {
		t.Fatal(r.stderr)
	}
	r := runTrove(t, admin, "", "trust-policy", "create", "acme", "--issuer", "https://gitlab.com", "--claim", "project_path=acme/infra",
		"--claim", "ref_type=tag", "--scope", "read", "--ttl", "5m", "--json")
	var p apispec.TrustPolicy
	if r.code != exitOK || !strings.Contains(r.stdout, `"project_path": "acme/infra"`) {
		t.Fatalf("create: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	p.ID = r.stdout[strings.Index(r.stdout, `"tp_`)+1 : strings.Index(r.stdout, `"tp_`)+20]
	r = runTrove(t, admin, "", "trust-policy", "list", "acme")
	if r.code != exitOK || !strings.Contains(r.stdout, p.ID+"  https://gitlab.com  "+s.URL+"  project_path=acme/infra, ref_type=tag  read   5m0s") {
		t.Errorf("list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"trust-policy", "create", "acme", "--issuer", "https://gitlab.com"}, exitUsage, "at least one --claim NAME=PATTERN is required"},
		{[]string{"trust-policy", "create", "acme", "--claim", "a=b"}, exitUsage, "--issuer is required"},
		{[]string{"trust-policy", "create", "acme", "--issuer", "https://gitlab.com", "--claim", "nopattern"}, exitUsage, "want NAME=PATTERN"},
		{[]string{"trust-policy", "create", "acme", "--issuer", "https://gitlab.com", "--claim", "ref=*"}, exitError, "matches every value"},
		{[]string{"trust-policy", "delete", "acme", "tok_1"}, exitUsage, "invalid trust policy ID"},
		{[]string{"trust-policy", "delete", "acme", "tp_0000000000000000"}, exitError, "namespace acme has no trust policy tp_0000000000000000"},
	} {
		if r := runTrove(t, admin, "", tc.args...); r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("trove %s: exit %d, want %d with %q\n%s", strings.Join(tc.args, " "), r.code, tc.code, tc.want, r.stderr)
		}
	}
	if r := runTrove(t, admin, "", "trust-policy", "delete", "acme", p.ID); r.code != exitOK || !strings.Contains(r.stdout, "Deleted trust policy "+p.ID) {
		t.Errorf("delete: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
