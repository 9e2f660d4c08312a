package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	gst "trove.dev/trove/internal/gitsource/gitsourcetest"
)

// gitModuleTF is version v of a module served from Git.
func gitModuleTF(v string) map[string]string {
	return map[string]string{"main.tf": fmt.Sprintf("output \"text\" {\n  value = \"git %s\"\n}\n", v), "README.md": "# from git\n"}
}

// TestGitModulesFromTrove is the story of a team whose module lives in a
// Git repository: they point Trove at it with `trove module source add`,
// the semver tags become versions, and terraform and tofu install the
// version a constraint selects, which neither can do with a git::
// source. A tag moved afterwards is refused: the version users installed
// keeps its content.
func TestGitModulesFromTrove(t *testing.T) {
	requireTerraform(t)
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"), "--git-source-allow-private") // the git server is on loopback
	srv.mustCLI(t, srv.AdminToken, "namespace", "create", namespace, "--visibility", "public")

	root := t.TempDir()
	repo := gst.NewRepo(t, root, "gitnet", gitModuleTF("1.0.0"))
	gst.Git(t, repo, "tag", "v1.0.0")
	for _, v := range []string{"1.1.0", "2.0.0"} {
		gst.Commit(t, repo, gitModuleTF(v))
		gst.Git(t, repo, "tag", "v"+v)
	}
	gst.Git(t, repo, "tag", "nightly") // no version: ignored
	base := gst.Daemon(t, root)

	out := srv.mustCLI(t, srv.AdminToken, "module", "source", "add", namespace+"/gitnet/aws", base+"gitnet", "--poll-interval", "never")
	if !strings.Contains(out, "Added git source") {
		t.Fatalf("module source add printed %q", out)
	}
	// The add starts a sync in the background; this one waits for it, then
	// has nothing left to do, or does it itself.
	srv.mustCLI(t, srv.AdminToken, "module", "source", "sync", namespace+"/gitnet/aws")
	if show := srv.mustCLI(t, srv.AdminToken, "module", "show", namespace+"/gitnet/aws"); !strings.Contains(show, "1.0.0") || !strings.Contains(show, "1.1.0") || !strings.Contains(show, "2.0.0") {
		t.Fatalf("module show after the sync:\n%s", show)
	}

	config := func(constraint string) string {
		dir := t.TempDir()
		writeFile(t, dir, "main.tf", []byte(fmt.Sprintf("module \"net\" {\n  source  = \"%s/%s/gitnet/aws\"\n  version = %q\n}\n\noutput \"text\" {\n  value = module.net.text\n}\n", moduleHost, namespace, constraint)))
		return dir
	}
	install := func(t *testing.T, client, constraint, want string) {
		t.Helper()
		tf := newClient(t, client, srv, "")
		addModuleHost(t, tf, srv)
		dir := config(constraint)
		tf.mustRun(t, dir, "init", "-input=false")
		if got := readModulesManifest(t, dir)["net"]; got != want {
			t.Errorf("%s installed %q for %q, want %s", client, got, constraint, want)
		}
		if res := tf.mustRun(t, dir, "plan", "-input=false"); !strings.Contains(res.Flat, `text = "git `+want+`"`) {
			t.Errorf("%s plan:\n%s", client, res.Output)
		}
	}
	forEachClient(t, func(t *testing.T, client string) {
		install(t, client, "~> 1.0", "1.1.0")
		install(t, client, ">= 2.0.0", "2.0.0")
	})

	t.Run("a moved tag is refused and the version keeps its content", func(t *testing.T) {
		gst.Commit(t, repo, gitModuleTF("tampered"))
		gst.Git(t, repo, "tag", "-f", "v1.1.0")
		res := srv.cli(t, srv.AdminToken, "module", "source", "sync", namespace+"/gitnet/aws")
		if res.Code != 1 || !strings.Contains(res.Stderr, "tag v1.1.0 moved") {
			t.Fatalf("sync after moving a tag: exit %d\n%s%s", res.Code, res.Stdout, res.Stderr)
		}
		forEachClient(t, func(t *testing.T, client string) {
			install(t, client, "~> 1.0", "1.1.0")
		})
	})
}
