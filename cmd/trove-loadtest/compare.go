package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"trove.dev/trove/internal/loadtest"
)

// runCompare builds trove at two commits and runs the load harness
// against each, alternating (A B B A ...), then prints per row how B's
// Trove-to-baseline ratio, p99 and maximum compare with A's.
func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("trove-loadtest compare", flag.ContinueOnError)
	opt, timeout := loadFlags(fs)
	rounds := fs.Int("compare-rounds", 2, "harness runs per commit, alternating A B B A ...")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: trove-loadtest compare [flags] COMMIT-A COMMIT-B")
		fs.PrintDefaults()
	}
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return err
		}
		return errUsage
	}
	if fs.NArg() != 2 {
		fmt.Fprintln(stderr, "trove-loadtest compare: want two commits, A (reference) and B (candidate)")
		fs.Usage()
		return errUsage
	}
	if *rounds < 1 || *rounds > 10 {
		fmt.Fprintf(stderr, "trove-loadtest compare: -compare-rounds must be between 1 and 10, got %d\n", *rounds)
		return errUsage
	}
	if opt.TroveBinary != "" {
		fmt.Fprintln(stderr, "trove-loadtest compare: -trove does not apply; the commits are built")
		return errUsage
	}
	if err := finishLoadOptions(fs, opt, stderr); err != nil {
		return err
	}
	opt.Progress = stderr
	limit, err := runTimeout(*opt, *timeout)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Duration(2**rounds)*limit)
	defer cancel()

	tmp, err := os.MkdirTemp("", "trove-compare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	commits := [2]string{fs.Arg(0), fs.Arg(1)}
	var bins [2]string
	for i, c := range commits {
		fmt.Fprintf(stderr, "trove-loadtest: building %s (%s)\n", loadtest.CompareSide(i), c)
		bin, err := buildCommit(ctx, opt.ModuleDir, c, filepath.Join(tmp, loadtest.CompareSide(i).String()))
		if err != nil {
			return err
		}
		bins[i] = bin
	}
	var reports [2][]loadtest.Report
	var rss [2]int64
	for i, side := range loadtest.CompareSchedule(*rounds) {
		fmt.Fprintf(stderr, "trove-loadtest: run %d of %d: %s (%s)\n", i+1, 2**rounds, side, commits[side])
		o := *opt
		o.TroveBinary = bins[side]
		rep, err := loadtest.Run(ctx, o)
		if err != nil {
			return fmt.Errorf("run %d (%s, %s): %w", i+1, side, commits[side], err)
		}
		reports[side] = append(reports[side], rep)
		if rep.RSS != nil {
			rss[side] = max(rss[side], rep.RSS.Current)
		}
	}
	rows := loadtest.CompareReports(reports[loadtest.SideA], reports[loadtest.SideB])
	if err := loadtest.RenderComparison(stdout, commits[0], commits[1], rows); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "largest RSS at the end of a run: A %.1f MiB, B %.1f MiB\n", float64(rss[0])/(1<<20), float64(rss[1])/(1<<20))
	return err
}

// buildCommit checks commit of the repository in moduleDir out into a
// temporary worktree under dir, builds its ./cmd/trove and removes the
// worktree again; it returns the binary's path.
func buildCommit(ctx context.Context, moduleDir, commit, dir string) (string, error) {
	if strings.HasPrefix(commit, "-") {
		return "", fmt.Errorf("commit %q: not a commit", commit)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	src := filepath.Join(dir, "src")
	git := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", moduleDir}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := git("worktree", "add", "--detach", src, commit+"^{commit}"); err != nil {
		return "", err
	}
	defer func() { _ = git("worktree", "remove", "--force", src) }()
	bin := filepath.Join(dir, "trove")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/trove")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", commit, err, out)
	}
	return bin, nil
}
