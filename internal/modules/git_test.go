package modules

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
)

// gitRepo creates a repository with files committed.
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	writeTree(t, dir, files)
	runGit(t, dir, "init", "-q", "-b", "main")
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-q", "-m", "first")
	return dir
}

func runGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=Test", "-c", "user.email=test@trove.test", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
	cmd.Env = append(cmd.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestFromGit(t *testing.T) {
	t.Setenv("GIT_CONFIG_GLOBAL", "/dev/null")
	files := map[string]string{
		"main.tf": mainTF, ".gitignore": "*.secret\n", "infra/net/main.tf": mainTF, "infra/net/README.md": "# net\n",
		"infra/other/main.tf": mainTF,
	}
	dir := gitRepo(t, files)
	head := runGit(t, dir, "rev-parse", "HEAD")

	_, err := FromGit(t.Context(), dir)
	if !registry.IsKind(err, registry.Invalid) || !strings.Contains(err.Error(), "no version tag") {
		t.Fatalf("untagged HEAD: %v, want an error about the missing tag", err)
	}

	runGit(t, dir, "tag", "v1.2.0-rc.1")
	runGit(t, dir, "tag", "not-a-version")
	writeTree(t, dir, map[string]string{"untracked.tf": "# not committed\n", "prod.secret": "hunter2"})
	g, err := FromGit(t.Context(), dir)
	if err != nil {
		t.Fatalf("FromGit: %v", err)
	}
	wantFiles := []string{".gitignore", "infra/net/README.md", "infra/net/main.tf", "infra/other/main.tf", "main.tf"}
	if g.Version != "1.2.0-rc.1" || g.Tag != "v1.2.0-rc.1" || g.Commit != head || !slices.Equal(g.Files, wantFiles) {
		t.Errorf("FromGit = %+v, want version 1.2.0-rc.1 at %s with files %q", g, head, wantFiles)
	}
	if g.Origin() != "git tag v1.2.0-rc.1, commit "+head {
		t.Errorf("Origin = %q", g.Origin())
	}

	// A module in a subdirectory: only its files, relative to it.
	sub, err := FromGit(t.Context(), filepath.Join(dir, "infra", "net"))
	if err != nil || !slices.Equal(sub.Files, []string{"README.md", "main.tf"}) {
		t.Errorf("FromGit of a subdirectory = %+v, %v; want README.md and main.tf", sub, err)
	}

	// A change to a tracked file elsewhere does not block the
	// subdirectory, but blocks the root.
	writeTree(t, dir, map[string]string{"infra/other/main.tf": "# changed\n"})
	if _, err := FromGit(t.Context(), filepath.Join(dir, "infra", "net")); err != nil {
		t.Errorf("FromGit of a clean subdirectory with changes elsewhere: %v", err)
	}
	_, err = FromGit(t.Context(), dir)
	if !registry.IsKind(err, registry.Invalid) || !strings.Contains(err.Error(), "uncommitted changes (infra/other/main.tf)") {
		t.Errorf("dirty tree: %v, want an error naming the changed file", err)
	}
	runGit(t, dir, "checkout", "-q", "--", ".")

	runGit(t, dir, "add", "untracked.tf")
	if _, err := FromGit(t.Context(), dir); !registry.IsKind(err, registry.Invalid) {
		t.Errorf("staged change: %v, want an Invalid error", err)
	}
	runGit(t, dir, "reset", "-q")

	runGit(t, dir, "tag", "1.2.0")
	_, err = FromGit(t.Context(), dir)
	if !registry.IsKind(err, registry.Invalid) || !strings.Contains(err.Error(), "several version tags") {
		t.Errorf("two version tags: %v, want an error", err)
	}

	if _, err := FromGit(t.Context(), t.TempDir()); !registry.IsKind(err, registry.Invalid) {
		t.Errorf("outside a repository: %v, want an Invalid error", err)
	}
}
