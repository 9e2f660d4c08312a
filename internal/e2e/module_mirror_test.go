package e2e

import (
	"fmt"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitUpstream is a modules.v1 registry written for the test (plain http
// on loopback) whose download answers are git sources at a tag of a real
// git server (git http-backend behind net/http/cgi), as the public
// registry answers for modules hosted on a code forge.
type gitUpstream struct {
	srv *httptest.Server
	src string // the repository the tags are made in
}

func gitCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func startGitUpstream(t *testing.T) *gitUpstream {
	t.Helper()
	root := t.TempDir()
	u := &gitUpstream{src: filepath.Join(root, "src")}
	gitCmd(t, root, "init", "-q", "-b", "main", u.src)
	writeFile(t, u.src, "main.tf", []byte("output \"text\" {\n  value = \"vpc from git 1.0.0\"\n}\n"))
	gitCmd(t, u.src, "add", ".")
	gitCmd(t, u.src, "commit", "-q", "-m", "one")
	gitCmd(t, u.src, "tag", "v1.0.0")
	gitCmd(t, root, "clone", "-q", "--bare", u.src, filepath.Join(root, "vpc.git"))
	backend := filepath.Join(gitCmd(t, ".", "--exec-path"), "git-http-backend")
	mux := http.NewServeMux()
	mux.Handle("/git/", http.StripPrefix("/git", &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}))
	mux.HandleFunc("GET /.well-known/terraform.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"modules.v1":"/v1/modules/","providers.v1":"/v1/providers/"}`)
	})
	mux.HandleFunc("GET /v1/modules/acme/vpc/aws/versions", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"modules":[{"versions":[{"version":"1.0.0"}]}]}`)
	})
	mux.HandleFunc("GET /v1/modules/acme/vpc/aws/1.0.0/download", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Terraform-Get", "git::http://"+r.Host+"/git/vpc.git?ref=v1.0.0")
		w.WriteHeader(http.StatusNoContent)
	})
	u.srv = httptest.NewServer(mux)
	t.Cleanup(u.srv.Close)
	return u
}

// moveTag re-tags v1.0.0 on a commit with other files.
func (u *gitUpstream) moveTag(t *testing.T) {
	t.Helper()
	writeFile(t, u.src, "main.tf", []byte("output \"text\" {\n  value = \"tampered\"\n}\n"))
	gitCmd(t, u.src, "commit", "-q", "-am", "moved")
	gitCmd(t, u.src, "tag", "-f", "v1.0.0")
	gitCmd(t, u.src, "push", "-q", "--force", filepath.Join(filepath.Dir(u.src), "vpc.git"), "refs/tags/v1.0.0")
}

// writeMirroredModuleRoot writes a root configuration calling source.
func writeMirroredModuleRoot(t *testing.T, source, constraint string) string {
	t.Helper()
	dir := t.TempDir()
	writeFile(t, dir, "main.tf", []byte(fmt.Sprintf("module \"m\" {\n  source  = %q\n  version = %q\n}\n\noutput \"greeting\" {\n  value = module.m.text\n}\n", source, constraint)))
	return dir
}

// TestModuleMirror is the story of a company that installs public modules
// through Trove: namespaces of Trove mapped to module namespaces of two
// upstreams (a second Trove, whose downloads are https archives, and a
// registry whose downloads are git tags), installed with plain module
// blocks by terraform and tofu; installed again with both upstreams
// stopped; and a tag moved upstream after the first install changes
// nothing Trove serves.
func TestModuleMirror(t *testing.T) {
	requireTerraform(t)
	up := startTrove(t, filepath.Join(t.TempDir(), "upstream"))
	up.mustCLI(t, up.AdminToken, "namespace", "create", namespace, "--visibility", "public")
	upToken := createToken(t, up, "publish")
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0"} {
		up.mustCLI(t, upToken, "module", "publish", namespace+"/network/aws", v, writeModuleDir(t, "network", v, ""))
	}
	git := startGitUpstream(t)

	m := startTrove(t, filepath.Join(t.TempDir(), "mirror"),
		"--module-mirror", "tfup="+upstreamHost+"/"+namespace, "--module-mirror", "tfgit=git.example/"+namespace)
	m.mustCLI(t, m.AdminToken, "mirror", "upstream", "set", upstreamHost,
		"--service-url", up.Addr+"/v1/providers/", "--upstream-ca-file", up.CAFile, "--allow", namespace+"/*")
	m.mustCLI(t, m.AdminToken, "mirror", "upstream", "set", "git.example",
		"--service-url", git.srv.URL+"/v1/providers/", "--allow", namespace+"/vpc=~> 1.0")
	for _, ns := range []string{"tfup", "tfgit"} {
		m.mustCLI(t, m.AdminToken, "namespace", "create", ns, "--visibility", "public")
	}
	archiveSource := moduleHost + "/tfup/network/aws"
	gitSource := moduleHost + "/tfgit/vpc/aws"

	install := func(t *testing.T, client string) {
		tf := newClient(t, client, m, "")
		addModuleHost(t, tf, m)
		dir := writeMirroredModuleRoot(t, archiveSource, "~> 1.0")
		tf.mustRun(t, dir, "init", "-input=false")
		if got := readModulesManifest(t, dir)["m"]; got != "1.1.0" {
			t.Errorf("installed %s %q, want 1.1.0", archiveSource, got)
		}
		if res := tf.mustRun(t, dir, "plan", "-input=false"); !strings.Contains(res.Flat, `greeting = "network 1.1.0"`) {
			t.Errorf("plan of the mirrored archive module:\n%s", res.Output)
		}
		dir = writeMirroredModuleRoot(t, gitSource, "~> 1.0")
		tf.mustRun(t, dir, "init", "-input=false")
		if res := tf.mustRun(t, dir, "plan", "-input=false"); !strings.Contains(res.Flat, `greeting = "vpc from git 1.0.0"`) {
			t.Errorf("plan of the mirrored git module:\n%s", res.Output)
		}
	}
	t.Run("first install", func(t *testing.T) { forEachClient(t, install) })

	vs := m.get(t, m.Addr+"/v1/modules/tfup/network/aws/versions")
	if vs.Status != http.StatusOK || !strings.Contains(string(vs.Body), `"2.0.0"`) {
		t.Errorf("versions of the mirrored module: %d %s, want the upstream's versions", vs.Status, vs.Body)
	}

	// A tag moved upstream: Trove serves what it fetched first.
	git.moveTag(t)
	t.Run("tag moved", func(t *testing.T) { forEachClient(t, install) })

	// A bundle export fetches a mirrored version Trove does not hold yet.
	bundle := filepath.Join(t.TempDir(), "mods.tar")
	m.mustCLI(t, m.AdminToken, "bundle", "export", "--output", bundle, "--module", "tfup/network/aws@2.0.0")
	if _, err := os.Stat(bundle); err != nil {
		t.Fatal(err)
	}

	// Both upstreams stop: what Trove holds installs.
	up.stop(t)
	git.srv.Close()
	t.Run("upstreams down", func(t *testing.T) { forEachClient(t, install) })

	t.Run("held by the export, not fetched, upstream down", func(t *testing.T) {
		tf := newClient(t, clientTerraform, m, "")
		addModuleHost(t, tf, m)
		dir := writeMirroredModuleRoot(t, archiveSource, "2.0.0")
		tf.mustRun(t, dir, "init", "-input=false")
		if res := tf.mustRun(t, dir, "plan", "-input=false"); !strings.Contains(res.Flat, `greeting = "network 2.0.0"`) {
			t.Errorf("plan of the version the export fetched:\n%s", res.Output)
		}
		res := tf.run(t, writeMirroredModuleRoot(t, archiveSource, "1.0.0"), "init", "-input=false")
		if res.Code == 0 {
			t.Errorf("init of a version the mirror never fetched, with its upstream down, succeeded:\n%s", res.Output)
		}
	})
	// Each fetched version is audited as a publish by the mirror.
	audit := m.mustCLI(t, m.AdminToken, "audit", "--actor", "mirror", "--action", "module.publish")
	for _, want := range []string{"tfup/network/aws 1.1.0", "tfup/network/aws 2.0.0", "tfgit/vpc/aws 1.0.0"} {
		if !strings.Contains(audit, want) {
			t.Errorf("trove audit lacks the mirror's publish of %s:\n%s", want, audit)
		}
	}
	if log := m.log(); !strings.Contains(log, "mirrored a module version") {
		t.Errorf("the mirror's log does not record the fetches:\n%s", log)
	}
}
