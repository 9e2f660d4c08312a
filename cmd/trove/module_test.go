package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/trovetest"
)

func writeModule(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var cliModule = map[string]string{
	"main.tf":   "variable \"name\" {\n  type    = string\n  default = \"x\"\n}\n\noutput \"name\" {\n  value       = var.name\n  description = \"The name.\"\n}\n",
	"README.md": "# Labels\n\nMakes labels.\n",
}

// TestModuleCommandsAgainstTrove drives module publish (directory,
// archive and Git tag), list, show and delete against a real Trove.
func TestModuleCommandsAgainstTrove(t *testing.T) {
	s := trovetest.Start(t)
	admin := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile}
	ok := func(args ...string) string {
		t.Helper()
		r := runTrove(t, admin, "", args...)
		if r.code != exitOK {
			t.Fatalf("trove %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
		return r.stdout
	}
	ok("namespace", "create", "acme")

	dir := t.TempDir()
	writeModule(t, dir, cliModule)
	writeModule(t, dir, map[string]string{".terraform/modules/x.tf": "cached", "terraform.tfstate": "{}"})
	out := ok("module", "publish", "acme/labels/null", "1.0.0", dir)
	var packed bytes.Buffer
	if _, err := modules.PackArchive(&packed, dir); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out, "Published acme/labels/null 1.0.0 (tar.gz, ") || !strings.Contains(out, sha256Hex(packed.Bytes())) {
		t.Errorf("module publish printed %q, want the digest of the deterministic pack", out)
	}
	if out := ok("module", "publish", "acme/labels/null", "1.0.0", dir); out != "acme/labels/null 1.0.0 was already published with identical content; nothing changed\n" {
		t.Errorf("second publish printed %q", out)
	}

	// An archive file as it is.
	archive := filepath.Join(t.TempDir(), "labels.tar.gz")
	if err := os.WriteFile(archive, packed.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var res apispec.ModulePublishResult
	if err := json.Unmarshal([]byte(ok("module", "publish", "acme/labels/null", "1.0.1", archive, "--json")), &res); err != nil {
		t.Fatal(err)
	}
	if !res.Created || res.Version.Origin != "archive labels.tar.gz" || res.Version.ArchiveDigest != sha256Hex(packed.Bytes()) {
		t.Errorf("publish of an archive = %+v", res)
	}

	// From a Git tag.
	repo := t.TempDir()
	writeModule(t, repo, cliModule)
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=T", "-c", "user.email=t@trove.test", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "labels")
	r := runTrove(t, admin, "", "module", "publish", "acme/labels/null", "--git-tag", "--repo", repo)
	if r.code != exitError || !strings.Contains(r.stderr, "no version tag") {
		t.Errorf("--git-tag without a tag = %d %q", r.code, r.stderr)
	}
	git("tag", "v1.1.0")
	if out := ok("module", "publish", "acme/labels/null", "--git-tag", "--repo", repo); !strings.HasPrefix(out, "Published acme/labels/null 1.1.0 ") {
		t.Errorf("--git-tag publish printed %q", out)
	}
	var v apispec.ModuleVersion
	if err := json.Unmarshal([]byte(ok("module", "show", "acme/labels/null", "1.1.0", "--json")), &v); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v.Origin, "git tag v1.1.0, commit ") || v.ArchiveDigest != res.Version.ArchiveDigest {
		t.Errorf("git-tag version = %+v; want its origin recorded and the same bytes as the same tree packed from a directory", v)
	}
	if r := runTrove(t, admin, "", "module", "publish", "acme/labels/null", "1.2.0", "--git-tag", "--repo", repo); r.code != exitUsage {
		t.Errorf("--git-tag with a VERSION = %d, want a usage error", r.code)
	}

	// Reading.
	if out := ok("module", "list", "acme"); !strings.Contains(out, "acme/labels/null") || !strings.Contains(out, "1.1.0") || !strings.Contains(out, "Makes labels.") {
		t.Errorf("module list printed %q", out)
	}
	if out := ok("module", "show", "acme/labels/null"); !strings.Contains(out, "1.0.1") || !strings.Contains(out, "archive labels.tar.gz") {
		t.Errorf("module show printed %q", out)
	}
	if out := ok("module", "show", "acme/labels/null", "1.0.0"); !strings.Contains(out, "Inputs:") || !strings.Contains(out, `"x"`) || !strings.Contains(out, "The name.") {
		t.Errorf("module show VERSION printed %q", out)
	}

	// Refusals.
	bad := t.TempDir()
	writeModule(t, bad, map[string]string{"sub/main.tf": "# not at the root\n"})
	if r := runTrove(t, admin, "", "module", "publish", "acme/labels/null", "2.0.0", bad); r.code != exitError || !strings.Contains(r.stderr, "no Terraform configuration file") {
		t.Errorf("publish without .tf at the root = %d %q", r.code, r.stderr)
	}
	if r := runTrove(t, admin, "", "module", "publish", "acme/labels", "2.0.0", dir); r.code != exitUsage {
		t.Errorf("publish with a two-part address = %d, want a usage error", r.code)
	}
	if r := runTrove(t, admin, "", "module", "publish", "acme/labels/null", "v2.0.0", dir); r.code != exitUsage || !strings.Contains(r.stderr, `drop the leading "v"`) {
		t.Errorf("publish of v2.0.0 = %d %q", r.code, r.stderr)
	}
	if r := runTrove(t, admin, "", "module", "delete", "acme/labels/null", "1.0.0"); r.code != exitUsage || !strings.Contains(r.stderr, "--confirm") {
		t.Errorf("delete without --confirm = %d %q, want a usage error asking for --confirm", r.code, r.stderr)
	}
	if out := ok("module", "delete", "acme/labels/null", "1.0.0", "--confirm"); out != "Deleted acme/labels/null 1.0.0\n" {
		t.Errorf("module delete printed %q", out)
	}
	if r := runTrove(t, admin, "", "module", "show", "acme/labels/null", "1.0.0"); r.code != exitError {
		t.Errorf("show after delete = %d, want 1", r.code)
	}
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
