package modules

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"

	"trove.dev/trove/internal/registry"
)

// GitRelease is a module version taken from a Git checkout: the version
// from the tag at HEAD, and the files to pack.
type GitRelease struct {
	Version string   // e.g. "1.2.0" for the tag v1.2.0
	Tag     string   // the tag as written, e.g. "v1.2.0"
	Commit  string   // the full commit ID of HEAD
	Files   []string // tracked files under the module directory, relative to it
}

// Origin describes the release for the version's origin field. It names
// tag and commit but never a remote URL, which can carry credentials.
func (g GitRelease) Origin() string { return "git tag " + g.Tag + ", commit " + g.Commit }

// FromGit reads the release of the module in dir, a directory of a Git
// working tree (the repository root or a subdirectory of it), with the
// git command:
//
//   - HEAD must carry exactly one tag that is a version: vMAJOR.MINOR.PATCH
//     or MAJOR.MINOR.PATCH, with optional -prerelease and +build parts;
//   - no tracked file under dir may differ from HEAD (staged or not), so
//     that what is packed is exactly the tagged commit;
//   - the files to pack are the tracked files under dir (git ls-files);
//     untracked and ignored files are never packed, nor are submodules.
func FromGit(ctx context.Context, dir string) (GitRelease, error) {
	var g GitRelease
	commit, err := git(ctx, dir, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return g, err
	}
	g.Commit = strings.TrimSpace(string(commit))

	status, err := git(ctx, dir, "status", "--porcelain=v1", "-z", "--untracked-files=no", "--", ".")
	if err != nil {
		return g, err
	}
	if len(status) > 0 {
		var changed []string
		for _, rec := range strings.Split(strings.TrimRight(string(status), "\x00"), "\x00") {
			if len(rec) > 3 {
				changed = append(changed, rec[3:])
			}
		}
		if len(changed) > 5 {
			changed = append(changed[:5], "...")
		}
		return g, registry.Errorf(registry.Invalid, "the working tree has uncommitted changes (%s): commit or stash them, so that the published module is exactly the tagged commit", strings.Join(changed, ", "))
	}

	tags, err := git(ctx, dir, "tag", "--points-at", "HEAD")
	if err != nil {
		return g, err
	}
	var versionTags []string
	for _, tag := range strings.Fields(string(tags)) {
		v := strings.TrimPrefix(tag, "v")
		if _, err := registry.ParseVersion(v); err == nil {
			versionTags = append(versionTags, tag)
			g.Tag, g.Version = tag, v
		}
	}
	switch len(versionTags) {
	case 0:
		return GitRelease{}, registry.Errorf(registry.Invalid, "HEAD (%s) carries no version tag such as v1.2.0: tag the commit (git tag v1.2.0) or pass the version explicitly", short(g.Commit))
	case 1:
	default:
		return GitRelease{}, registry.Errorf(registry.Invalid, "HEAD (%s) carries several version tags (%s): pass the version explicitly", short(g.Commit), strings.Join(versionTags, ", "))
	}

	list, err := git(ctx, dir, "ls-files", "-z", "--stage", "--", ".")
	if err != nil {
		return GitRelease{}, err
	}
	for _, rec := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		meta, name, ok := strings.Cut(rec, "\t")
		if !ok {
			continue
		}
		if strings.HasPrefix(meta, "160000 ") { // a submodule (gitlink)
			continue
		}
		g.Files = append(g.Files, name)
	}
	slices.Sort(g.Files)
	g.Files = slices.Compact(g.Files) // unmerged entries are listed once per stage
	if len(g.Files) == 0 {
		return GitRelease{}, registry.Errorf(registry.Invalid, "no tracked files under %s", dir)
	}
	return g, nil
}

// git runs git in dir and returns its standard output.
func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir, "-c", "core.quotePath=false"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if errors.Is(err, exec.ErrNotFound) {
		return nil, registry.Errorf(registry.Invalid, "--git-tag needs the git command, which is not installed or not on the PATH")
	}
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, "not a git repository") {
			return nil, registry.Errorf(registry.Invalid, "%s is not inside a Git working tree", dir)
		}
		return nil, registry.Errorf(registry.Invalid, "git %s failed: %s", strings.Join(args, " "), firstLine(fmt.Sprint(msg, " ", err)))
	}
	return stdout.Bytes(), nil
}

func short(commit string) string { return commit[:min(12, len(commit))] }

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
