package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"trove.dev/trove/internal/ciissuer/ciissuertest"
)

// keylessCLI runs `trove` as a GitHub Actions job with "permissions:
// id-token: write" runs it: ACTIONS_ID_TOKEN_REQUEST_URL and
// ACTIONS_ID_TOKEN_REQUEST_TOKEN point at the CI issuer process, and no
// Trove token is set anywhere (no TROVE_TOKEN, a fresh HOME).
func keylessCLI(t *testing.T, s *troveServer, iss *ciissuertest.Process, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, troveBin, args...)
	cmd.Env = append(baseEnv(t.TempDir()), "TROVE_ADDR="+s.Addr, "TROVE_CA_FILE="+s.CAFile,
		"GITHUB_ACTIONS=true", "ACTIONS_ID_TOKEN_REQUEST_URL="+iss.RequestURL, "ACTIONS_ID_TOKEN_REQUEST_TOKEN="+iss.RequestToken)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	res := cliResult{}
	err := cmd.Run()
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	if exit, ok := err.(*exec.ExitError); ok {
		res.Code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("trove %s: %v\n%s", strings.Join(args, " "), err, res.Stderr)
	}
	return res
}

// TestKeylessPublish is keyless publishing end to end: an admin trusts a
// CI issuer's tokens of one repository's tags; a pipeline without any
// stored secret publishes a provider release with `trove publish` and a
// module with `trove module publish`, each exchanging the job's ID token;
// terraform and tofu then install both. A namespace that trusts another
// repository refuses the pipeline.
func TestKeylessPublish(t *testing.T) {
	requireTerraform(t)
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	iss := ciissuertest.Start(t)
	key, _ := setupNamespace(t, srv)
	out := srv.mustCLI(t, srv.AdminToken, "trust-policy", "create", namespace, "--issuer", iss.URL,
		"--claim", "repository=acme/infra", "--claim", "ref=refs/tags/v*", "--description", "release pipeline")
	if !strings.Contains(out, "audience "+srv.Addr) {
		t.Fatalf("trust-policy create printed %q, want the default audience %s", out, srv.Addr)
	}

	res := keylessCLI(t, srv, iss, "publish", "--namespace", namespace, packageRelease(t, key, releaseSpec{Version: "1.0.0"}).Dir)
	if res.Code != 0 || !strings.Contains(res.Stderr, "Exchanged the GitHub Actions ID token (audience "+srv.Addr+") for a publish token of namespace acme") ||
		!strings.Contains(res.Stdout, "Published acme/"+providerType+" 1.0.0") {
		t.Fatalf("keyless trove publish: exit %d\nstdout: %s\nstderr: %s", res.Code, res.Stdout, res.Stderr)
	}
	res = keylessCLI(t, srv, iss, "module", "publish", namespace+"/labels/null", "1.0.0", writeModuleDir(t, "labels", "1.0.0", ""))
	if res.Code != 0 || !strings.Contains(res.Stderr, "Exchanged the GitHub Actions ID token") || !strings.Contains(res.Stdout, "Published acme/labels/null 1.0.0") {
		t.Fatalf("keyless trove module publish: exit %d\nstdout: %s\nstderr: %s", res.Code, res.Stdout, res.Stderr)
	}

	// A namespace that trusts another repository refuses this pipeline,
	// saying which claim of its token no policy allows.
	srv.mustCLI(t, srv.AdminToken, "namespace", "create", "labs")
	srv.mustCLI(t, srv.AdminToken, "trust-policy", "create", "labs", "--issuer", iss.URL, "--claim", "repository=acme/other-repo")
	res = keylessCLI(t, srv, iss, "module", "publish", "labs/labels/null", "1.0.0", writeModuleDir(t, "labels", "1.0.0", ""))
	if res.Code != 1 || !strings.Contains(res.Stderr, "no trust policy of namespace labs matches the ID token: claim repository=acme/infra is not allowed") {
		t.Errorf("keyless publish to a namespace trusting another repository: exit %d\n%s", res.Code, res.Stderr)
	}
	audit := srv.mustCLI(t, srv.AdminToken, "audit", "--namespace", namespace, "--action", "token.exchange")
	if strings.Count(audit, "token.exchange") != 2 || !strings.Contains(audit, "repository acme/infra") {
		t.Errorf("audit of the exchanges:\n%s", audit)
	}

	forEachClient(t, func(t *testing.T, client string) {
		tf := newClient(t, client, srv, "")
		addModuleHost(t, tf, srv)
		dir := writeProject(t, srv, "1.0.0", "keyless")
		writeFile(t, dir, "labels.tf", []byte("module \"labels\" {\n  source  = \""+moduleHost+"/acme/labels/null\"\n  version = \"1.0.0\"\n}\n"))
		init := tf.mustRun(t, dir, "init", "-input=false")
		if !strings.Contains(init.Flat, "Downloading "+moduleHost+"/acme/labels/null 1.0.0 for labels...") {
			t.Errorf("%s init did not install the keyless module:\n%s", client, init.Output)
		}
		if got := readModulesManifest(t, dir)["labels"]; got != "1.0.0" {
			t.Errorf("installed labels %q, want 1.0.0", got)
		}
		applyAndCheck(t, tf, dir, "keyless")
	})
}
