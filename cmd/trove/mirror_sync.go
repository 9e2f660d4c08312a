package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	tfaddr "github.com/hashicorp/terraform-registry-address"

	"trove.dev/trove/client"
	"trove.dev/trove/internal/lockfile"
	"trove.dev/trove/internal/protocol/discovery"
	"trove.dev/trove/internal/registry"
)

// `trove mirror sync` warms the provider mirror: it asks Trove, through
// the network mirror protocol the clients speak, for every package a
// configuration (or a lock file, or a list of providers) needs, so that
// the mirror fetches and keeps those it does not hold yet. For each
// provider it reads index.json, picks the versions, reads each version's
// <version>.json and downloads each chosen package it does not hold yet
// through its URL (client.FetchMirrorPackage: the bytes stream through
// the mirror while it fetches, checks and stores the package; the command
// checks their zh: hash, throws them away and waits until the mirror
// lists the package as held).

// syncParallelism is how many packages are asked for at once: the server
// fetches each from its upstream while the HEAD waits.
const syncParallelism = 4

func mirrorSyncCommand() *command {
	return &command{
		name: "mirror sync", args: "[DIR] [--lock-file FILE] [--provider SOURCE[=CONSTRAINT] ...] [--platform OS_ARCH ...] [--all-versions]",
		maxArgs: 1, client: true,
		summary: "Make the provider mirror fetch and keep every package a configuration, a lock file or a list of providers needs, before any init asks for it.",
		examples: []string{
			"trove mirror sync infra/prod",
			"trove mirror sync --lock-file infra/prod/.terraform.lock.hcl --platform linux_amd64 --platform darwin_arm64",
			"trove mirror sync --provider 'hashicorp/aws=~> 5.0' --all-versions",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			var platforms []string
			fs.Func("platform", "`os_arch` whose packages to sync (repeat it; default: every platform of each version)", func(v string) error {
				if err := checkPlatform(v); err != nil {
					return err
				}
				platforms = append(platforms, v)
				return nil
			})
			var reqs []lockfile.Requirement
			fs.Func("provider", "`source[=constraint]` to sync instead of reading the configuration (repeat it)", func(v string) error {
				source, constraint, _ := strings.Cut(v, "=")
				r, err := lockfile.ParseRequirement(source, constraint)
				if err != nil {
					return errors.New(registry.Message(err))
				}
				reqs = append(reqs, r)
				return nil
			})
			lockFile := fs.String("lock-file", "", "dependency lock `file` whose versions to sync, exactly (instead of the configuration)")
			allVersions := fs.Bool("all-versions", false, "sync every version the constraints allow, not only the newest")
			return func(ctx context.Context, args []string) error {
				switch {
				case *lockFile != "" && len(reqs) > 0:
					return usagef("--lock-file and --provider both name what to sync: give one of them")
				case *lockFile != "" && *allVersions:
					return usagef("--all-versions does not apply to --lock-file, which names exact versions")
				case len(args) == 1 && (*lockFile != "" || len(reqs) > 0):
					return usagef("DIR names the configuration to read: leave it out with --lock-file or --provider")
				}
				targets, err := syncTargets(args, *lockFile, reqs)
				if err != nil {
					return err
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				if !cl.jsonOut {
					fmt.Fprintf(cl.stderr, "Syncing %d provider(s) through the mirror of %s (it fetches every package it does not hold yet: the first sync of a public provider can take a while)...\n", len(targets), c.Addr())
				}
				s := &mirrorSync{c: c, addr: c.Addr(), platforms: platforms, allVersions: *allVersions}
				bar := newProgress(cl, "Downloaded", 0) // the packages' sizes are unknown up front
				if !cl.jsonOut {
					s.progress = func(r syncResult) { bar.println(cl.stdout, printable(r.line())) }
					s.bytes = bar.writer(io.Discard)
				}
				results := s.run(ctx, targets)
				bar.finish()
				sum := summarize(results)
				if cl.jsonOut {
					if err := cl.printJSON(sum); err != nil {
						return err
					}
				} else {
					sum.print(cl)
				}
				if sum.Failed > 0 {
					return fmt.Errorf("the mirror does not hold everything asked for: %d failure(s), listed above", sum.Failed)
				}
				return nil
			}
		},
	}
}

// checkPlatform checks an "os_arch" of --platform.
func checkPlatform(v string) error {
	goos, arch, ok := strings.Cut(v, "_")
	if !ok {
		return fmt.Errorf("platform %q: write it as os_arch, such as linux_amd64", v)
	}
	if err := registry.ValidatePlatform(goos, arch); err != nil {
		return fmt.Errorf("platform %q: %s", v, registry.Message(err))
	}
	return nil
}

// syncTarget is one provider to sync: the versions its constraints allow,
// or exactly one version (from a lock file).
type syncTarget struct {
	source      tfaddr.Provider
	constraints string
	version     string // set: exactly this version
}

// syncTargets reads what to sync: the lock file, the --providers, or the
// configuration in DIR (args[0], default ".").
func syncTargets(args []string, lockFile string, reqs []lockfile.Requirement) ([]syncTarget, error) {
	var targets []syncTarget
	switch {
	case lockFile != "":
		src, err := os.ReadFile(lockFile)
		if err != nil {
			return nil, err
		}
		entries, err := lockfile.Parse(src, lockFile)
		if err != nil {
			return nil, err
		}
		if len(entries) == 0 {
			return nil, registry.Errorf(registry.Invalid, "%s locks no provider", lockFile)
		}
		for _, e := range entries {
			targets = append(targets, syncTarget{source: e.Source, version: e.Version})
		}
		return targets, nil
	case len(reqs) == 0:
		dir := "."
		if len(args) == 1 {
			dir = args[0]
		}
		var err error
		if reqs, err = lockfile.Requirements(dir); err != nil {
			return nil, err
		}
	}
	seen := map[tfaddr.Provider]bool{}
	for _, r := range reqs {
		if seen[r.Source] {
			return nil, usagef("provider %s is named twice; give it one constraint (join them with a comma)", r.Source)
		}
		seen[r.Source] = true
		targets = append(targets, syncTarget{source: r.Source, constraints: r.Constraints})
	}
	return targets, nil
}

// syncStatus is what became of one sync.
type syncStatus string

const (
	syncHeld    syncStatus = "held"    // the mirror held the package already
	syncFetched syncStatus = "fetched" // the mirror fetched it now
	syncSkipped syncStatus = "skipped" // the version has no package for a --platform (--all-versions)
	syncFailed  syncStatus = "failed"  // the provider, version or package could not be synced
)

// syncResult is the outcome of one package, or of a provider or version
// that failed before its packages were known (Version or Platform "").
type syncResult struct {
	Source   string     `json:"source"`
	Version  string     `json:"version,omitempty"`
	Platform string     `json:"platform,omitempty"`
	Status   syncStatus `json:"status"`
	Error    string     `json:"error,omitempty"`
}

// name is "source version platform", as far as they are known.
func (r syncResult) name() string {
	return strings.Join(slices.DeleteFunc([]string{r.Source, r.Version, r.Platform}, func(s string) bool { return s == "" }), " ")
}

// line is the progress line of r.
func (r syncResult) line() string {
	switch r.Status {
	case syncHeld:
		return "Held    " + r.name()
	case syncFetched:
		return "Fetched " + r.name()
	case syncSkipped:
		return "Skipped " + r.name() + ": " + r.Error
	default:
		return "Failed  " + r.name() + ": " + r.Error
	}
}

// mirrorSync syncs targets through one server.
type mirrorSync struct {
	c           *client.Client
	addr        string   // the server address: its own providers (discovery.IsOwnHost) are held
	platforms   []string // empty: every platform
	allVersions bool
	progress    func(syncResult) // called as each result is known, one at a time; may be nil
	// bytes counts the bytes of the packages downloaded (a progress
	// writer); nil counts nothing.
	bytes io.Writer

	mu      sync.Mutex
	results []syncResult
}

// run syncs every target, each failure recorded and the rest tried, and
// returns the results in the order they completed.
func (s *mirrorSync) run(ctx context.Context, targets []syncTarget) []syncResult {
	sem := make(chan struct{}, syncParallelism)
	var wg sync.WaitGroup
	for _, t := range targets {
		for _, version := range s.versions(ctx, t) {
			archives, err := s.c.MirrorArchives(ctx, t.source.Hostname.String(), t.source.Namespace, t.source.Type, version)
			if err != nil {
				s.record(syncResult{Source: t.source.String(), Version: version, Status: syncFailed, Error: err.Error()})
				continue
			}
			for _, a := range s.chosen(t, version, archives) {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer func() { <-sem; wg.Done() }()
					s.record(s.syncPackage(ctx, t, version, a))
				}()
			}
		}
	}
	wg.Wait()
	return s.results
}

// versions returns the versions of t to sync, recording a failure when
// there are none.
func (s *mirrorSync) versions(ctx context.Context, t syncTarget) []string {
	if t.version != "" {
		return []string{t.version}
	}
	fail := func(err error) []string {
		s.record(syncResult{Source: t.source.String(), Status: syncFailed, Error: err.Error()})
		return nil
	}
	listed, err := s.c.MirrorVersions(ctx, t.source.Hostname.String(), t.source.Namespace, t.source.Type)
	if err != nil {
		return fail(err)
	}
	if !s.allVersions {
		v, err := lockfile.Newest(listed, t.constraints)
		if err != nil {
			return fail(errors.New(registry.Message(err)))
		}
		return []string{v}
	}
	all, err := lockfile.Allowed(listed, t.constraints)
	if err != nil {
		return fail(errors.New(registry.Message(err)))
	}
	return all
}

// chosen returns the archives of the --platforms (all without), and
// records each --platform the version has no package for: a failure, or
// with --all-versions, where older versions may lack a newer platform, a
// skip.
func (s *mirrorSync) chosen(t syncTarget, version string, archives []client.MirrorArchive) []client.MirrorArchive {
	if len(s.platforms) == 0 {
		return archives
	}
	var out []client.MirrorArchive
	for _, p := range s.platforms {
		i := slices.IndexFunc(archives, func(a client.MirrorArchive) bool { return a.Platform == p })
		if i >= 0 {
			out = append(out, archives[i])
			continue
		}
		var have []string
		for _, a := range archives {
			have = append(have, a.Platform)
		}
		r := syncResult{Source: t.source.String(), Version: version, Platform: p, Status: syncFailed,
			Error: fmt.Sprintf("no package for %s (it has: %s)", p, strings.Join(have, ", "))}
		if s.allVersions {
			r.Status = syncSkipped
		}
		s.record(r)
	}
	return out
}

// syncPackage makes the server hold one package, unless it holds it.
func (s *mirrorSync) syncPackage(ctx context.Context, t syncTarget, version string, a client.MirrorArchive) syncResult {
	r := syncResult{Source: t.source.String(), Version: version, Platform: a.Platform, Status: syncHeld}
	// An own provider's package is stored when it is published, even
	// before its h1 is computed (for packages published by old versions).
	if a.Held() || discovery.IsOwnHost(s.addr, t.source.Hostname) {
		return r
	}
	w := s.bytes
	if w == nil {
		w = io.Discard
	}
	if err := s.c.CopyMirrorPackage(ctx, a, w); err != nil {
		r.Status, r.Error = syncFailed, err.Error()
		return r
	}
	if err := s.waitHeld(ctx, t, version, a.Platform); err != nil {
		r.Status, r.Error = syncFailed, err.Error()
		return r
	}
	r.Status = syncFetched
	return r
}

// heldWait bounds how long a sync waits for the server to record a
// package it has just downloaded (it answers the download as soon as the
// bytes matched SHA256SUMS, and stores the package right after).
const heldWait = time.Minute

// waitHeld waits until the mirror lists platform's package of version as
// held.
func (s *mirrorSync) waitHeld(ctx context.Context, t syncTarget, version, platform string) error {
	ctx, cancel := context.WithTimeout(ctx, heldWait)
	defer cancel()
	for pause := 20 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		archives, err := s.c.MirrorArchives(ctx, t.source.Hostname.String(), t.source.Namespace, t.source.Type, version)
		if err == nil {
			for _, a := range archives {
				if a.Platform == platform && a.Held() {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("downloaded the %s package, but the server did not record it as held within %s (its log says why)", platform, heldWait)
		case <-time.After(pause):
		}
	}
}

// record keeps a result and reports it.
func (s *mirrorSync) record(r syncResult) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.results = append(s.results, r)
	if s.progress != nil {
		s.progress(r)
	}
}

// syncSummary is what a sync did, counted (and its --json output).
type syncSummary struct {
	Held     int          `json:"held"`
	Fetched  int          `json:"fetched"`
	Skipped  int          `json:"skipped"`
	Failed   int          `json:"failed"`
	Failures []syncResult `json:"failures"`
	Results  []syncResult `json:"results"`
}

func summarize(results []syncResult) syncSummary {
	sum := syncSummary{Failures: []syncResult{}, Results: nonNil(results)}
	for _, r := range results {
		switch r.Status {
		case syncHeld:
			sum.Held++
		case syncFetched:
			sum.Fetched++
		case syncSkipped:
			sum.Skipped++
		default:
			sum.Failed++
			sum.Failures = append(sum.Failures, r)
		}
	}
	return sum
}

// print writes the final summary: the counts, then each failure.
func (sum syncSummary) print(cl *cli) {
	line := fmt.Sprintf("Synced %d package(s): %d held already, %d fetched now", sum.Held+sum.Fetched, sum.Held, sum.Fetched)
	if sum.Skipped > 0 {
		line += fmt.Sprintf(", %d skipped", sum.Skipped)
	}
	if sum.Failed == 0 {
		fmt.Fprintln(cl.stdout, line+".")
		return
	}
	fmt.Fprintf(cl.stdout, "%s; %d failed:\n", line, sum.Failed)
	for _, r := range sum.Failures {
		fmt.Fprintln(cl.stdout, printable("  "+r.name()+": "+r.Error))
	}
}
