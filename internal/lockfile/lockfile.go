// Package lockfile writes dependency lock files (.terraform.lock.hcl) for
// the providers Trove serves, its own and those its mirror holds, with the
// hashes of every platform: an "h1:" hash of each platform's package (what
// the clients compare a package they install with) and a "zh:" hash of
// each line of the release's SHA256SUMS. Such a lock file is accepted by
// terraform init and tofu init on any of those platforms without asking
// the internet, unlike one written by an init on a single machine.
//
// It also reads what a configuration requires (Requirements), for the CLI.
package lockfile

import (
	"context"
	"fmt"
	"slices"
	"strings"

	goversion "github.com/hashicorp/go-version"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	tfaddr "github.com/hashicorp/terraform-registry-address"
	"github.com/zclconf/go-cty/cty"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
)

// Entry is one provider of a lock file.
type Entry struct {
	Source      tfaddr.Provider
	Version     string
	Constraints string
	Hashes      []string // sorted, without duplicates
}

// header is what terraform init writes at the top of a lock file.
const header = "# This file is maintained automatically by \"terraform init\".\n# Manual edits may be lost in future updates.\n"

// Render returns the text of a lock file holding entries, ordered by
// source address, in the layout terraform init writes.
func Render(entries []Entry) []byte {
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.Source.String(), b.Source.String()) })
	f := hclwrite.NewEmptyFile()
	body := f.Body()
	for i, e := range entries {
		if i > 0 {
			body.AppendNewline()
		}
		block := body.AppendNewBlock("provider", []string{e.Source.String()})
		b := block.Body()
		b.SetAttributeValue("version", cty.StringVal(e.Version))
		if e.Constraints != "" {
			b.SetAttributeValue("constraints", cty.StringVal(e.Constraints))
		}
		b.SetAttributeRaw("hashes", hashesTokens(e.Hashes))
	}
	return append([]byte(header+"\n"), hclwrite.Format(f.Bytes())...)
}

// hashesTokens writes a list one element per line, with a trailing
// comma, as terraform init does.
func hashesTokens(hashes []string) hclwrite.Tokens {
	toks := hclwrite.Tokens{
		{Type: hclsyntax.TokenOBrack, Bytes: []byte("[")},
		{Type: hclsyntax.TokenNewline, Bytes: []byte("\n")},
	}
	for _, h := range hashes {
		toks = append(toks, hclwrite.TokensForValue(cty.StringVal(h))...)
		toks = append(toks, &hclwrite.Token{Type: hclsyntax.TokenComma, Bytes: []byte(",")}, &hclwrite.Token{Type: hclsyntax.TokenNewline, Bytes: []byte("\n")})
	}
	return append(toks, &hclwrite.Token{Type: hclsyntax.TokenCBrack, Bytes: []byte("]")})
}

// Source is what Resolve reads providers from.
type Source interface {
	// Versions returns the versions of a provider. NotFound if there is
	// no such provider or the caller may not read it.
	Versions(ctx context.Context, p tfaddr.Provider) ([]string, error)
	// Version returns one version with its platforms.
	Version(ctx context.Context, p tfaddr.Provider, version string) (registry.ProviderVersion, error)
	// PackageHash returns the h1 hash of one package of v (fetching or
	// computing it when v does not hold it yet).
	PackageHash(ctx context.Context, p tfaddr.Provider, v registry.ProviderVersion, pl registry.Platform) (string, error)
	// SHASums returns the SHA256SUMS document of v.
	SHASums(ctx context.Context, v registry.ProviderVersion) ([]byte, error)
}

// Requirement is one provider to lock.
type Requirement struct {
	Source      tfaddr.Provider
	Constraints string // empty: any release
	// Pinned, if set, is the version an existing lock file holds: it is
	// locked again (with the hashes of every platform) instead of the
	// newest, and it must still be offered and allowed by Constraints.
	Pinned string
}

// ParseRequirement parses a source address (with registry.terraform.io
// for a "namespace/type" one) and a version constraint.
func ParseRequirement(source, constraints string) (Requirement, error) {
	p, err := tfaddr.ParseProviderSource(strings.TrimSpace(source))
	if err != nil {
		return Requirement{}, registry.Errorf(registry.Invalid, "provider source %q: %v", registry.Elide(source), err)
	}
	if constraints = strings.TrimSpace(constraints); constraints != "" {
		if _, err := goversion.NewConstraint(constraints); err != nil {
			return Requirement{}, registry.Errorf(registry.Invalid, "provider %s: version constraint %q does not parse: %v", p, registry.Elide(constraints), err)
		}
	}
	return Requirement{Source: p, Constraints: constraints}, nil
}

// Resolve picks, for each requirement, the newest version src has that
// its constraints allow (a pre-release only when the constraint names it
// exactly), and collects its hashes: the h1 of each platform in platforms
// ("os_arch"; empty: every platform of the version) and a zh of each line
// of its SHA256SUMS.
func Resolve(ctx context.Context, src Source, reqs []Requirement, platforms []string) ([]Entry, error) {
	for _, pl := range platforms {
		os, arch, ok := strings.Cut(pl, "_")
		if !ok {
			return nil, registry.Errorf(registry.Invalid, "platform %q: write it as os_arch, such as linux_amd64", registry.Elide(pl))
		}
		if err := registry.ValidatePlatform(os, arch); err != nil {
			return nil, registry.Errorf(registry.Invalid, "platform %q: %s", registry.Elide(pl), registry.Message(err))
		}
	}
	var entries []Entry
	seen := map[string]bool{}
	for _, req := range reqs {
		if seen[req.Source.String()] {
			return nil, registry.Errorf(registry.Invalid, "provider %s is named twice; give it one constraint (join them with a comma)", req.Source)
		}
		seen[req.Source.String()] = true
		e, err := resolveOne(ctx, src, req, platforms)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	return entries, nil
}

func resolveOne(ctx context.Context, src Source, req Requirement, platforms []string) (Entry, error) {
	versions, err := src.Versions(ctx, req.Source)
	if err != nil && (req.Pinned == "" || !registry.IsKind(err, registry.NotFound)) {
		return Entry{}, err
	}
	var chosen string
	if req.Pinned != "" {
		if chosen, err = checkPinned(req, versions); err != nil {
			return Entry{}, err
		}
	} else if chosen, err = Newest(versions, req.Constraints); err != nil {
		return Entry{}, registry.Errorf(registry.NotFound, "provider %s: %s", req.Source, registry.Message(err))
	}
	v, err := src.Version(ctx, req.Source, chosen)
	if err != nil {
		return Entry{}, err
	}
	e := Entry{Source: req.Source, Version: v.Version, Constraints: req.Constraints}
	for _, pl := range v.Platforms {
		if len(platforms) > 0 && !slices.Contains(platforms, pl.OS+"_"+pl.Arch) {
			continue
		}
		h1, err := src.PackageHash(ctx, req.Source, v, pl)
		if err != nil {
			return Entry{}, err
		}
		e.Hashes = append(e.Hashes, h1)
	}
	for _, want := range platforms {
		if !slices.ContainsFunc(v.Platforms, func(p registry.Platform) bool { return p.OS+"_"+p.Arch == want }) {
			return Entry{}, registry.Errorf(registry.NotFound, "provider %s %s has no package for %s (it has: %s)", req.Source, v.Version, want, platformList(v))
		}
	}
	sums, err := src.SHASums(ctx, v)
	if err != nil {
		return Entry{}, err
	}
	listed, err := release.ParseSHA256SUMS(sums)
	if err != nil {
		return Entry{}, registry.Wrap(registry.Internal, err, fmt.Sprintf("reading the SHA256SUMS of %s %s", req.Source, v.Version))
	}
	for _, s := range listed {
		e.Hashes = append(e.Hashes, "zh:"+s.Digest)
	}
	slices.Sort(e.Hashes)
	e.Hashes = slices.Compact(e.Hashes)
	return e, nil
}

func platformList(v registry.ProviderVersion) string {
	var names []string
	for _, p := range v.Platforms {
		names = append(names, p.OS+"_"+p.Arch)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// Newest returns the highest version of versions that constraints allow
// (see Allowed): the one terraform init would choose. NotFound when none.
func Newest(versions []string, constraints string) (string, error) {
	allowed, err := Allowed(versions, constraints)
	if err != nil {
		return "", err
	}
	return allowed[len(allowed)-1], nil
}

// Allowed returns the versions of versions that constraints ("" for any)
// allow, oldest first. Pre-releases are allowed only when constraints
// pins one exactly, as the clients choose; strings that are not versions
// are skipped. NotFound when none is allowed, Invalid when constraints
// does not parse.
func Allowed(versions []string, constraints string) ([]string, error) {
	var c goversion.Constraints
	if constraints != "" {
		var err error
		if c, err = goversion.NewConstraint(constraints); err != nil {
			return nil, registry.Errorf(registry.Invalid, "version constraint %q does not parse: %v", constraints, err)
		}
	}
	type candidate struct {
		v   *goversion.Version
		raw string
	}
	var allowed []candidate
	for _, raw := range versions {
		v, err := goversion.NewSemver(raw)
		if err != nil {
			continue
		}
		if v.Prerelease() != "" && !pinned(constraints, raw) {
			continue
		}
		if c != nil && !c.Check(v) {
			continue
		}
		allowed = append(allowed, candidate{v, raw})
	}
	if len(allowed) == 0 {
		if constraints == "" {
			return nil, registry.Errorf(registry.NotFound, "no release (only pre-releases, or none)")
		}
		return nil, registry.Errorf(registry.NotFound, "no version matches %q (it has: %s)", constraints, strings.Join(versions, ", "))
	}
	slices.SortStableFunc(allowed, func(a, b candidate) int { return a.v.Compare(b.v) })
	out := make([]string, len(allowed))
	for i, a := range allowed {
		out[i] = a.raw
	}
	return out, nil
}

// pinned reports whether constraints names version exactly.
func pinned(constraints, version string) bool {
	for _, part := range strings.Split(constraints, ",") {
		part = strings.TrimSpace(part)
		part = strings.TrimSpace(strings.TrimPrefix(part, "="))
		if part == version {
			return true
		}
	}
	return false
}

// checkPinned returns the pinned version of req if versions offers it
// and req's constraints allow it; otherwise an error that says what to do.
func checkPinned(req Requirement, versions []string) (string, error) {
	v, err := registry.ParseVersion(req.Pinned)
	if err != nil {
		return "", registry.Errorf(registry.Invalid, "provider %s: the lock file pins %q, which is not a version: %s", req.Source, registry.Elide(req.Pinned), registry.Message(err))
	}
	if req.Constraints != "" {
		c, err := goversion.NewConstraint(req.Constraints)
		if err != nil {
			return "", registry.Errorf(registry.Invalid, "provider %s: version constraint %q does not parse: %v", req.Source, registry.Elide(req.Constraints), err)
		}
		if !c.Check(v) && !pinned(req.Constraints, req.Pinned) {
			return "", registry.Errorf(registry.Invalid, "provider %s: the lock file pins %s, which the configuration's constraint %q does not allow; run trove lock --upgrade to lock a version it allows",
				req.Source, req.Pinned, req.Constraints)
		}
	}
	if !slices.Contains(versions, req.Pinned) {
		return "", registry.Errorf(registry.NotFound, "provider %s: the lock file pins %s, which this registry no longer offers (held back or denied by its mirror, revoked, or gone upstream); "+
			"run trove lock --upgrade to lock the newest version it offers, or ask an admin why (trove mirror hold list %s)", req.Source, req.Pinned, req.Source)
	}
	return req.Pinned, nil
}
