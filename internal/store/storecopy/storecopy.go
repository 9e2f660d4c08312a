// Package storecopy copies a whole registry from one index and blob store
// to another (the embedded SQLite and filesystem to PostgreSQL and S3, or
// back), so that a registry can change backends without re-publishing
// anything. It owns the order of the copy and the rules that make it safe
// to repeat:
//
//   - Nothing is written before the whole source and target have been read
//     and compared. The target may be empty or hold a part of the source
//     (an interrupted or earlier copy); if it holds anything the source
//     does not, or a different immutable record under the same name (a
//     provider version with other digests, a token with another hash, ...),
//     Copy refuses with a Conflict that lists the differences.
//   - Blobs are copied first, each verified against its digest by the
//     target's Put while it streams, so that the target index never names
//     a blob the target store lacks. Blobs already in the target are
//     skipped if their size is the source's; a blob of another size (a
//     damaged copy) stops the copy with a Conflict before any index record
//     is written.
//   - Index records follow in dependency order (namespaces, users,
//     memberships, signing keys, trust policies, webhooks, retention rules, tokens, provider and module versions, the
//     mirror's versions and upstreams, the audit log, server secrets).
//     Records already in the target are skipped; mutable fields the source
//     changed since an earlier copy (a namespace's description, a user's
//     password hash, a revoked token, ...) are brought up to date, and so
//     is what the source learnt since (a package's h1 hash, a mirrored
//     package fetched, a provider version's documentation uploaded).
//   - The mirror's upstreams and the namespaces' retention rules are
//     configuration, not records: the target ends with the source's, its
//     own (the defaults its first migration stored) replaced or deleted.
//
// Tokens are copied as stored: by the hash of their secret, never the
// secret, with the CI claims of a keyless token. A provider or module
// version is copied with its signed provenance (docs/provenance.md), and a
// mirrored provider version or a module version that an air-gap bundle
// brought with the keys that verify it (the exporting Trove's); a
// provider or module version the target holds already keeps its own (the
// index never adds provenance to a stored version), a mirrored version the
// target holds without provenance gains the source's (as a later bundle
// would add it), and one whose provenance or keys differ from the
// source's is a Conflict. OAuth authorization codes are not copied: they live for minutes;
// neither are the records of exchanged CI ID tokens (store.ReplayGuard),
// which live until those tokens expire, minutes: a copy is made with the
// source stopped, and the replicas on the target start later. Webhooks
// are copied with their secrets, not their delivery logs: deliveries
// still pending in the source are not sent by the target. Neither are the
// source's releases of blobs (store.GarbageCollection): a released blob
// is named by no record the target gets, and the target's collector
// counts its grace period from the blob's write into the target, which
// comes after the release.
package storecopy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// Store is one side of a copy.
type Store struct {
	Index store.Index
	Blobs store.Blobs
}

// Options tunes Copy.
type Options struct {
	// Secrets names the server secrets to copy (store.Secrets), such as
	// the URL-signing key, so that URLs signed before the move stay valid.
	Secrets []string
	// Concurrency is the number of blobs copied at once (default 4).
	Concurrency int
	// Logger receives progress; nil logs nothing.
	Logger *slog.Logger
}

// Count tells how many records of one kind Copy wrote to the target and
// how many were there already.
type Count struct {
	Copied  int
	Present int
}

// Report is what Copy did.
type Report struct {
	Namespaces       Count
	Users            Count
	Memberships      Count
	SigningKeys      Count
	Tokens           Count
	ProviderVersions Count
	ModuleVersions   Count
	MirroredVersions Count
	MirrorUpstreams  Count
	TrustPolicies    Count
	Webhooks         Count
	RetentionRules   Count
	AuditEvents      Count
	Secrets          Count
	Blobs            Count
	// BlobBytes is the size of the blobs copied.
	BlobBytes int64
	// Updated counts records present in the target whose mutable fields
	// were brought up to date with the source.
	Updated int
}

// maxListed bounds the differences a refusal lists.
const maxListed = 20

// Copy copies the registry in from into to, as the package comment
// describes, and reports what it did. It returns a Conflict error, having
// written nothing, when the target holds data the source does not; NotFound
// when a blob the source index names is missing from the source store; and
// the backends' errors otherwise. After a failure it can simply be run
// again.
func Copy(ctx context.Context, from, to Store, opt Options) (Report, error) {
	if opt.Concurrency <= 0 {
		opt.Concurrency = 4
	}
	log := opt.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log.InfoContext(ctx, "reading the source index")
	src, err := read(ctx, from.Index, opt.Secrets)
	if err != nil {
		return Report{}, fmt.Errorf("reading the source index: %w", err)
	}
	log.InfoContext(ctx, "reading the target index")
	dst, err := read(ctx, to.Index, opt.Secrets)
	if err != nil {
		return Report{}, fmt.Errorf("reading the target index: %w", err)
	}
	p := compare(src, dst)
	if len(p.conflicts) > 0 {
		return Report{}, refusal(p.conflicts)
	}
	if src.access && !dst.access && (len(src.users) > 0 || len(src.memberships) > 0 || len(src.audit) > 0) {
		return Report{}, registry.Errorf(registry.Invalid, "the source index has users, memberships or audit events, but the target index cannot store them")
	}

	log.InfoContext(ctx, "listing the source blobs")
	blobs := map[string]int64{}
	if err := from.Blobs.Walk(ctx, func(d string, size int64) error { blobs[d] = size; return nil }); err != nil {
		return Report{}, fmt.Errorf("listing the source blobs: %w", err)
	}
	if err := checkReferenced(src, blobs); err != nil {
		return Report{}, err
	}

	var r Report
	log.InfoContext(ctx, "copying blobs", "count", len(blobs))
	if r.Blobs, r.BlobBytes, err = copyBlobs(ctx, from.Blobs, to.Blobs, blobs, opt.Concurrency, log); err != nil {
		return r, err
	}
	log.InfoContext(ctx, "copying the index")
	if err := p.apply(ctx, to.Index, &r); err != nil {
		return r, err
	}
	log.InfoContext(ctx, "copy complete", "blobs_copied", r.Blobs.Copied, "blob_bytes", r.BlobBytes,
		"provider_versions_copied", r.ProviderVersions.Copied, "module_versions_copied", r.ModuleVersions.Copied)
	return r, nil
}

func refusal(conflicts []string) error {
	sort.Strings(conflicts)
	more := ""
	if len(conflicts) > maxListed {
		more = fmt.Sprintf("\n  ... and %d more", len(conflicts)-maxListed)
		conflicts = conflicts[:maxListed]
	}
	return registry.Errorf(registry.Conflict,
		"the target index is not empty and holds data the source does not; copy into an empty index, or remove these from the target:\n  %s%s",
		strings.Join(conflicts, "\n  "), more)
}

// snapshot is everything an index holds that Copy copies.
type snapshot struct {
	namespaces  []registry.Namespace
	keys        []registry.SigningKey
	sealed      map[string][]byte // namespace -> sealed private key of its managed key
	access      bool              // the index implements store.Access
	users       []registry.User
	memberships []registry.Membership
	tokens      []registry.Token
	providers   []registry.ProviderVersion
	modules     []registry.ModuleVersion
	mirrored    []registry.MirroredVersion
	upstreams   []registry.MirrorUpstream
	trust       []registry.TrustPolicy
	webhooks    []registry.Webhook // without their deliveries
	retention   []registry.RetentionRule
	audit       []registry.AuditEvent // oldest first
	secrets     map[string][]byte     // absent ones left out
}

// errAbsent makes reading a secret fail instead of creating it.
var errAbsent = errors.New("storecopy: secret absent")

// read takes a snapshot of idx.
func read(ctx context.Context, idx store.Index, secrets []string) (*snapshot, error) {
	s := &snapshot{secrets: map[string][]byte{}, sealed: map[string][]byte{}}
	var err error
	if s.namespaces, err = idx.ListNamespaces(ctx); err != nil {
		return nil, err
	}
	for _, ns := range s.namespaces {
		keys, err := idx.ListSigningKeys(ctx, ns.Name)
		if err != nil {
			return nil, err
		}
		s.keys = append(s.keys, keys...)
		for _, k := range keys {
			if k.Managed {
				// Copied sealed, as stored: the target needs the same
				// --signing-secret-file to sign with it.
				if _, s.sealed[ns.Name], err = idx.ManagedSigningKey(ctx, ns.Name); err != nil {
					return nil, err
				}
			}
		}
		trust, err := idx.ListTrustPolicies(ctx, ns.Name)
		if err != nil {
			return nil, err
		}
		s.trust = append(s.trust, trust...)
		hooks, err := idx.ListWebhooks(ctx, ns.Name)
		if err != nil {
			return nil, err
		}
		s.webhooks = append(s.webhooks, hooks...)
		providers, err := idx.ListProviders(ctx, ns.Name)
		if err != nil {
			return nil, err
		}
		for _, p := range providers {
			versions, err := idx.ListProviderVersions(ctx, ns.Name, p.Type)
			if err != nil {
				return nil, err
			}
			for i, v := range versions {
				// The signed provenance comes with its version
				// (CreateProviderVersion stores it in the same write),
				// read for the versions the list says have one.
				if !v.HasProvenance {
					continue
				}
				env, err := idx.ProviderProvenance(ctx, v.Namespace, v.Type, v.Version)
				switch {
				case registry.IsKind(err, registry.NotFound):
				case err != nil:
					return nil, err
				default:
					versions[i].Provenance = env
				}
			}
			s.providers = append(s.providers, versions...)
		}
	}
	if s.modules, err = readModules(ctx, idx); err != nil {
		return nil, err
	}
	if s.mirrored, err = idx.ListAllMirroredVersions(ctx); err != nil {
		return nil, err
	}
	for i, v := range s.mirrored {
		// The provenance an air-gap bundle carried, with the exporting
		// Trove's keys that verify it (ImportBundle stored both), read
		// for the versions the list says have one.
		if !v.HasProvenance {
			continue
		}
		env, keys, err := idx.MirroredProvenance(ctx, v.Host, v.Namespace, v.Type, v.Version)
		switch {
		case registry.IsKind(err, registry.NotFound):
		case err != nil:
			return nil, err
		default:
			s.mirrored[i].Provenance, s.mirrored[i].ProvenanceKeys = env, keys
		}
	}
	if s.upstreams, err = idx.ListMirrorUpstreams(ctx); err != nil {
		return nil, err
	}
	if s.retention, err = idx.ListRetentionRules(ctx); err != nil {
		return nil, err
	}
	if s.tokens, err = idx.ListTokens(ctx, ""); err != nil {
		return nil, err
	}
	for i, t := range s.tokens {
		// The CI claims of a keyless token name the builder of what it
		// publishes (docs/provenance.md); CreateToken stores them with it.
		c, ok, err := idx.TokenCIClaims(ctx, t.ID)
		if err != nil {
			return nil, err
		}
		if ok {
			s.tokens[i].CI = &c
		}
	}
	global, err := idx.ListWebhooks(ctx, "")
	if err != nil {
		return nil, err
	}
	s.webhooks = append(s.webhooks, global...)
	if a, ok := idx.(store.Access); ok {
		s.access = true
		if s.users, err = a.ListUsers(ctx); err != nil {
			return nil, err
		}
		if s.memberships, err = a.ListMemberships(ctx, "", ""); err != nil {
			return nil, err
		}
		if s.audit, err = readAudit(ctx, a); err != nil {
			return nil, err
		}
	}
	for _, name := range secrets {
		v, err := idx.Secret(ctx, name, func() ([]byte, error) { return nil, errAbsent })
		switch {
		case errors.Is(err, errAbsent):
		case err != nil:
			return nil, err
		default:
			s.secrets[name] = v
		}
	}
	return s, nil
}

// readModules returns every module version with its metadata.
func readModules(ctx context.Context, idx store.Index) ([]registry.ModuleVersion, error) {
	var out []registry.ModuleVersion
	seen := map[string]bool{}
	for offset := 0; ; {
		mods, total, err := idx.ListModules(ctx, registry.ModuleFilter{Offset: offset, Limit: 100})
		if err != nil {
			return nil, err
		}
		for _, m := range mods {
			k := m.Namespace + "/" + m.Name + "/" + m.System
			if seen[k] {
				continue
			}
			seen[k] = true
			versions, err := idx.ListModuleVersions(ctx, m.Namespace, m.Name, m.System)
			if err != nil {
				return nil, err
			}
			for _, v := range versions {
				full, err := idx.GetModuleVersion(ctx, v.Namespace, v.Name, v.System, v.Version)
				if err != nil {
					return nil, err
				}
				// The signed provenance comes with its version
				// (CreateModuleVersion stores it in the same write).
				env, err := idx.ModuleProvenance(ctx, v.Namespace, v.Name, v.System, v.Version)
				switch {
				case registry.IsKind(err, registry.NotFound):
				case err != nil:
					return nil, err
				default:
					full.Provenance = env
					// An imported version's provenance is verified by
					// the exporting Trove's keys, stored with it.
					keys, err := idx.ModuleProvenanceKeys(ctx, v.Namespace, v.Name, v.System, v.Version)
					switch {
					case registry.IsKind(err, registry.NotFound):
					case err != nil:
						return nil, err
					default:
						full.ProvenanceKeys = keys
					}
				}
				out = append(out, full)
			}
		}
		offset += len(mods)
		if len(mods) == 0 || offset >= total {
			return out, nil
		}
	}
}

// readAudit returns the whole audit log, oldest event first.
func readAudit(ctx context.Context, a store.Access) ([]registry.AuditEvent, error) {
	var out []registry.AuditEvent
	var before int64
	for {
		page, err := a.ListAudit(ctx, registry.AuditFilter{BeforeID: before, Limit: 1000})
		if err != nil {
			return nil, err
		}
		if len(page) == 0 {
			break
		}
		out = append(out, page...)
		before = page[len(page)-1].ID
		if before <= 1 {
			break
		}
	}
	slices.Reverse(out)
	return out, nil
}

// plan is what the target lacks, what it has in an older state, and what
// makes the copy unsafe.
type plan struct {
	src, dst  *snapshot
	conflicts []string

	namespaces, namespaceUpdates   []registry.Namespace
	users, userUpdates             []registry.User
	memberships, membershipUpdates []registry.Membership
	keys                           []registry.SigningKey
	trust                          []registry.TrustPolicy
	webhooks, webhookUpdates       []registry.Webhook
	tokens                         []registry.Token
	tokenRevokes, tokenExpiries    []registry.Token
	providers                      []registry.ProviderVersion
	packageHashes                  map[string]string          // digest -> h1 the target lacks
	providerDocs                   []registry.ProviderVersion // present, with documentation the target lacks
	modules                        []registry.ModuleVersion
	mirrored                       []registry.MirroredVersion
	mirroredHeld                   []registry.MirroredVersion // present, with only the packages the target does not hold
	mirroredProvenance             []registry.MirroredVersion // present without the provenance the source has
	upstreams                      []registry.MirrorUpstream  // to put: missing or changed
	upstreamDeletes                []string                   // hosts only the target has
	retention                      []registry.RetentionRule   // to put: missing or changed
	retentionDeletes               []string                   // namespaces whose rule only the target has
	audit                          []registry.AuditEvent      // to append, oldest first
	secrets                        []string                   // names to store
}

// verdict is how a target record compares with the source's.
type verdict int

const (
	same     verdict = iota
	outdated         // differs in mutable fields the source wins
	differs          // differs in an immutable field
)

// match pairs the records of src and dst by key. It reports the source
// records the target lacks and the pairs that differ, and adds a conflict
// for every target record the source lacks and every pair judged
// differs.
func match[T any](p *plan, what string, src, dst []T, key func(T) string, judge func(s, d T) (verdict, string)) (missing []T, outdatedPairs [][2]T, present int) {
	byKey := make(map[string]T, len(dst))
	for _, d := range dst {
		byKey[key(d)] = d
	}
	inSource := make(map[string]bool, len(src))
	for _, s := range src {
		k := key(s)
		inSource[k] = true
		d, ok := byKey[k]
		if !ok {
			missing = append(missing, s)
			continue
		}
		present++
		switch v, why := judge(s, d); v {
		case outdated:
			outdatedPairs = append(outdatedPairs, [2]T{s, d})
		case differs:
			p.conflicts = append(p.conflicts, fmt.Sprintf("%s %s differs: %s", what, k, why))
		}
	}
	for _, d := range dst {
		if k := key(d); !inSource[k] {
			p.conflicts = append(p.conflicts, fmt.Sprintf("%s %s exists only in the target", what, k))
		}
	}
	return missing, outdatedPairs, present
}

// compare plans the copy of src into dst.
func compare(src, dst *snapshot) *plan {
	p := &plan{src: src, dst: dst}
	var pairsNS [][2]registry.Namespace
	p.namespaces, pairsNS, _ = match(p, "namespace", src.namespaces, dst.namespaces,
		func(n registry.Namespace) string { return n.Name }, judgeNamespace)
	for _, pr := range pairsNS {
		p.namespaceUpdates = append(p.namespaceUpdates, pr[0])
	}
	var pairsU [][2]registry.User
	p.users, pairsU, _ = match(p, "user", src.users, dst.users,
		func(u registry.User) string { return u.Name }, judgeUser)
	for _, pr := range pairsU {
		p.userUpdates = append(p.userUpdates, pr[0])
	}
	var pairsM [][2]registry.Membership
	p.memberships, pairsM, _ = match(p, "membership", src.memberships, dst.memberships,
		func(m registry.Membership) string { return m.User + " in " + m.Namespace }, judgeMembership)
	for _, pr := range pairsM {
		p.membershipUpdates = append(p.membershipUpdates, pr[0])
	}
	p.keys, _, _ = match(p, "signing key", src.keys, dst.keys,
		func(k registry.SigningKey) string { return k.Namespace + "/" + k.KeyID }, judgeKey)
	p.trust, _, _ = match(p, "trust policy", src.trust, dst.trust,
		func(tp registry.TrustPolicy) string { return tp.Namespace + "/" + tp.ID }, judgeTrustPolicy)
	var pairsW [][2]registry.Webhook
	p.webhooks, pairsW, _ = match(p, "webhook", src.webhooks, dst.webhooks,
		func(w registry.Webhook) string { return w.ID }, judgeWebhook)
	for _, pr := range pairsW {
		p.webhookUpdates = append(p.webhookUpdates, pr[0])
	}
	var pairsT [][2]registry.Token
	p.tokens, pairsT, _ = match(p, "token", src.tokens, dst.tokens,
		func(t registry.Token) string { return t.ID }, judgeToken)
	for _, pr := range pairsT {
		s, d := pr[0], pr[1]
		if !s.RevokedAt.IsZero() && d.RevokedAt.IsZero() {
			p.tokenRevokes = append(p.tokenRevokes, s)
		}
		if !s.ExpiresAt.IsZero() && (d.ExpiresAt.IsZero() || s.ExpiresAt.Before(d.ExpiresAt)) {
			p.tokenExpiries = append(p.tokenExpiries, s)
		}
	}
	var pairsP [][2]registry.ProviderVersion
	p.providers, pairsP, _ = match(p, "provider version", src.providers, dst.providers,
		func(v registry.ProviderVersion) string { return v.Namespace + "/" + v.Type + " " + v.Version }, judgeProvider)
	p.packageHashes = map[string]string{}
	for _, pr := range pairsP {
		if pr[0].DocsDigest != "" && pr[1].DocsDigest == "" {
			p.providerDocs = append(p.providerDocs, pr[0])
		}
		for _, sp := range pr[0].Platforms {
			if dp, _ := pr[1].Platform(sp.OS, sp.Arch); sp.H1 != "" && dp.H1 == "" {
				p.packageHashes[sp.SHA256] = sp.H1
			}
		}
	}
	var pairsMV [][2]registry.MirroredVersion
	p.mirrored, pairsMV, _ = match(p, "mirrored version", src.mirrored, dst.mirrored,
		func(v registry.MirroredVersion) string {
			return v.Host + "/" + v.Namespace + "/" + v.Type + " " + v.Version
		}, judgeMirrored)
	for _, pr := range pairsMV {
		if len(pr[0].Provenance) > 0 && len(pr[1].Provenance) == 0 {
			p.mirroredProvenance = append(p.mirroredProvenance, pr[0])
		}
		v := pr[0]
		v.Platforms = slices.DeleteFunc(slices.Clone(v.Platforms), func(sp registry.Platform) bool {
			dp, _ := pr[1].Platform(sp.OS, sp.Arch)
			return !sp.Held() || dp.Held()
		})
		p.mirroredHeld = append(p.mirroredHeld, v)
	}
	have := make(map[string]registry.MirrorUpstream, len(dst.upstreams))
	for _, u := range dst.upstreams {
		have[u.Host] = u
	}
	for _, u := range src.upstreams {
		if d, ok := have[u.Host]; !ok || !sameUpstream(u, d) {
			p.upstreams = append(p.upstreams, u)
		}
		delete(have, u.Host)
	}
	for host := range have {
		p.upstreamDeletes = append(p.upstreamDeletes, host)
	}
	sort.Strings(p.upstreamDeletes)
	// Retention rules are configuration, as upstreams: the source's win.
	rules := make(map[string]registry.RetentionRule, len(dst.retention))
	for _, r := range dst.retention {
		rules[r.Namespace] = r
	}
	for _, r := range src.retention {
		if d, ok := rules[r.Namespace]; !ok || !sameRetention(r, d) {
			p.retention = append(p.retention, r)
		}
		delete(rules, r.Namespace)
	}
	for ns := range rules {
		p.retentionDeletes = append(p.retentionDeletes, ns)
	}
	sort.Strings(p.retentionDeletes)
	p.modules, _, _ = match(p, "module version", src.modules, dst.modules,
		func(v registry.ModuleVersion) string {
			return v.Namespace + "/" + v.Name + "/" + v.System + " " + v.Version
		}, judgeModule)

	// The target's audit log must be the start of the source's.
	if len(dst.audit) > len(src.audit) {
		p.conflicts = append(p.conflicts, fmt.Sprintf("audit log: the target has %d events, the source only %d", len(dst.audit), len(src.audit)))
	} else {
		for i, d := range dst.audit {
			if !sameEvent(src.audit[i], d) {
				p.conflicts = append(p.conflicts, fmt.Sprintf("audit log: event %d of the target (%s by %s at %s) is not the source's", i+1, d.Action, d.Actor, d.Time.UTC().Format(time.RFC3339)))
				break
			}
		}
		p.audit = src.audit[len(dst.audit):]
	}

	names := make([]string, 0, len(src.secrets))
	for name := range src.secrets {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		d, ok := dst.secrets[name]
		switch {
		case !ok:
			p.secrets = append(p.secrets, name)
		case !bytes.Equal(d, src.secrets[name]):
			p.conflicts = append(p.conflicts, fmt.Sprintf("secret %s differs (was Trove started on the target before the copy?)", name))
		}
	}
	return p
}

// sameTime compares times at the microsecond precision every backend keeps.
func sameTime(a, b time.Time) bool {
	return a.Truncate(time.Microsecond).Equal(b.Truncate(time.Microsecond))
}

func visibility(v registry.Visibility) registry.Visibility {
	if v == "" {
		return registry.VisibilityPrivate
	}
	return v
}

func judgeNamespace(s, d registry.Namespace) (verdict, string) {
	switch {
	case !sameTime(s.CreatedAt, d.CreatedAt):
		return differs, "created at another time (another namespace of the same name?)"
	case s.Description != d.Description || visibility(s.Visibility) != visibility(d.Visibility):
		return outdated, ""
	}
	return same, ""
}

func judgeUser(s, d registry.User) (verdict, string) {
	switch {
	case !sameTime(s.CreatedAt, d.CreatedAt):
		return differs, "created at another time (another user of the same name?)"
	case s.PasswordHash != d.PasswordHash || s.Admin != d.Admin || s.Disabled != d.Disabled:
		return outdated, ""
	}
	return same, ""
}

func judgeMembership(s, d registry.Membership) (verdict, string) {
	switch {
	case !sameTime(s.CreatedAt, d.CreatedAt):
		return differs, "created at another time"
	case s.Role != d.Role:
		return outdated, ""
	}
	return same, ""
}

func judgeKey(s, d registry.SigningKey) (verdict, string) {
	if s.Fingerprint != d.Fingerprint || s.ASCIIArmor != d.ASCIIArmor || !sameTime(s.CreatedAt, d.CreatedAt) || !sameTime(s.ExpiresAt, d.ExpiresAt) {
		return differs, "another key under the same key ID"
	}
	if s.Managed != d.Managed {
		return differs, "the same key, registry-managed on one side only"
	}
	return same, ""
}

// judgeTrustPolicy: a policy never changes (it is replaced instead).
func judgeTrustPolicy(s, d registry.TrustPolicy) (verdict, string) {
	if s.Issuer != d.Issuer || s.Audience != d.Audience || !maps.Equal(s.Conditions, d.Conditions) || s.Scope != d.Scope ||
		s.TokenTTL != d.TokenTTL || s.Description != d.Description || !sameTime(s.CreatedAt, d.CreatedAt) {
		return differs, "its issuer, audience, conditions, scope, lifetime, description or creation time"
	}
	return same, ""
}

// judgeWebhook: URL, events, secret, activity and description change;
// the namespace and creation do not.
func judgeWebhook(s, d registry.Webhook) (verdict, string) {
	switch {
	case s.Namespace != d.Namespace || !sameTime(s.CreatedAt, d.CreatedAt) || s.CreatedBy != d.CreatedBy:
		return differs, "its namespace or creation"
	case s.URL != d.URL || !slices.Equal(s.Events, d.Events) || s.Secret != d.Secret || s.Active != d.Active ||
		s.Description != d.Description || s.DisabledReason != d.DisabledReason:
		return outdated, ""
	}
	return same, ""
}

func judgeToken(s, d registry.Token) (verdict, string) {
	switch {
	case s.Hash != d.Hash:
		return differs, "another secret"
	case !slices.Equal(s.Namespaces, d.Namespaces) || s.User != d.User || !sameScopes(s.Scopes, d.Scopes) || s.Description != d.Description || !sameTime(s.CreatedAt, d.CreatedAt):
		return differs, "another namespace, user, scope, description or creation time"
	case s.CI != nil && d.CI != nil && *s.CI != *d.CI:
		return differs, "other CI claims"
	case !d.RevokedAt.IsZero() && (s.RevokedAt.IsZero() || !sameTime(s.RevokedAt, d.RevokedAt)):
		return differs, "revoked in the target only, or at another time"
	case !d.ExpiresAt.IsZero() && (s.ExpiresAt.IsZero() || s.ExpiresAt.After(d.ExpiresAt)):
		return differs, "expires earlier in the target"
	case !sameTime(s.RevokedAt, d.RevokedAt) || !sameTime(s.ExpiresAt, d.ExpiresAt):
		return outdated, ""
	}
	return same, ""
}

func sameScopes(a, b []registry.Scope) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// judgeProvider compares two versions; a package whose h1 hash only the
// source knows (the target's backfill has not reached it yet) is
// outdated, another hash differs.
func judgeProvider(s, d registry.ProviderVersion) (verdict, string) {
	switch {
	case s.SHASumsDigest != d.SHASumsDigest || s.SHASumsSignatureDigest != d.SHASumsSignatureDigest:
		return differs, "another release (other SHA256SUMS)"
	case !slices.Equal(s.Protocols, d.Protocols) || s.SigningKey.KeyID != d.SigningKey.KeyID || !sameTime(s.PublishedAt, d.PublishedAt):
		return differs, "other protocols, signing key or publication time"
	case d.DocsDigest != "" && (s.DocsDigest != d.DocsDigest || s.DocsSize != d.DocsSize):
		return differs, "other documentation"
	case len(s.Provenance) > 0 && len(d.Provenance) > 0 && !bytes.Equal(s.Provenance, d.Provenance):
		return differs, "another signed provenance"
	}
	ps, pd := sortedPlatforms(s.Platforms), sortedPlatforms(d.Platforms)
	if !slices.EqualFunc(ps, pd, func(a, b registry.Platform) bool { a.H1, b.H1 = "", ""; return a == b }) {
		return differs, "other platforms"
	}
	v := same
	if s.DocsDigest != "" && d.DocsDigest == "" {
		v = outdated // documentation uploaded after an earlier copy
	}
	for i := range ps {
		switch {
		case ps[i].H1 == pd[i].H1 || ps[i].H1 == "":
		case pd[i].H1 == "":
			v = outdated
		default:
			return differs, "another h1 hash of package " + ps[i].Filename
		}
	}
	return v, ""
}

// judgeMirrored compares two mirrored versions; one whose package only
// the source holds is outdated, a package held with another size or hash
// differs.
func judgeMirrored(s, d registry.MirroredVersion) (verdict, string) {
	switch {
	case s.SHASumsDigest != d.SHASumsDigest || s.SHASumsSignatureDigest != d.SHASumsSignatureDigest:
		return differs, "another release (other SHA256SUMS)"
	case !slices.Equal(s.Protocols, d.Protocols) || s.SigningKey.KeyID != d.SigningKey.KeyID || !sameTime(s.PublishedAt, d.PublishedAt):
		return differs, "other protocols, signing key or fetch time"
	}
	ps, pd := sortedPlatforms(s.Platforms), sortedPlatforms(d.Platforms)
	unheld := func(p registry.Platform) registry.Platform { p.Size, p.H1 = 0, ""; return p }
	if !slices.EqualFunc(ps, pd, func(a, b registry.Platform) bool { return unheld(a) == unheld(b) }) {
		return differs, "other platforms"
	}
	if v, why := judgeProvenance(s.Provenance, d.Provenance, s.ProvenanceKeys, d.ProvenanceKeys); v == differs {
		return v, why
	}
	v := same
	if len(s.Provenance) > 0 && len(d.Provenance) == 0 {
		v = outdated // a bundle brought it to the source after an earlier copy
	}
	for i := range ps {
		switch {
		case ps[i] == pd[i] || !ps[i].Held():
		case !pd[i].Held():
			v = outdated
		default:
			return differs, "package " + ps[i].Filename + " held with another size or hash"
		}
	}
	return v, ""
}

// sameRetention compares every field of two retention rules.
func sameRetention(s, d registry.RetentionRule) bool {
	return s.KeepLast == d.KeepLast && s.KeepWithin == d.KeepWithin && slices.Equal(s.Pin, d.Pin) &&
		sameTime(s.UpdatedAt, d.UpdatedAt) && s.UpdatedBy == d.UpdatedBy
}

// sameUpstream compares every field of two upstreams but their times.
func sameUpstream(s, d registry.MirrorUpstream) bool {
	return s.ServiceURL == d.ServiceURL && s.CACertificates == d.CACertificates && s.Description == d.Description &&
		slices.Equal(s.Allow, d.Allow)
}

func sortedPlatforms(ps []registry.Platform) []registry.Platform {
	ps = slices.Clone(ps)
	slices.SortFunc(ps, func(a, b registry.Platform) int { return strings.Compare(a.OS+"_"+a.Arch, b.OS+"_"+b.Arch) })
	return ps
}

func judgeModule(s, d registry.ModuleVersion) (verdict, string) {
	if s.ArchiveDigest != d.ArchiveDigest || s.ArchiveFormat != d.ArchiveFormat || s.ArchiveSize != d.ArchiveSize ||
		!bytes.Equal(s.Metadata, d.Metadata) || s.Description != d.Description || s.Origin != d.Origin || !sameTime(s.PublishedAt, d.PublishedAt) {
		return differs, "another archive or metadata"
	}
	if v, why := judgeProvenance(s.Provenance, d.Provenance, s.ProvenanceKeys, d.ProvenanceKeys); v == differs {
		return v, why
	}
	if len(s.ProvenanceKeys) > 0 && len(d.Provenance) > 0 && len(d.ProvenanceKeys) == 0 {
		// A copy by an earlier Trove dropped them: the target would
		// verify the exporting Trove's signature with its own keys.
		return differs, "the same provenance without the keys that verify it (an air-gap bundle brought them; delete the version from the target and copy again)"
	}
	return same, ""
}

// judgeProvenance compares the provenance two versions carry: when both
// have one, another envelope, or the same verified by other keys (an
// imported version's), differs. A version only one side has provenance
// for is left to the caller's rule.
func judgeProvenance(s, d []byte, sk, dk []registry.SigningKey) (verdict, string) {
	if len(s) == 0 || len(d) == 0 {
		return same, ""
	}
	if !bytes.Equal(s, d) {
		return differs, "another signed provenance"
	}
	if len(sk) > 0 && len(dk) > 0 && !sameProvenanceKeys(sk, dk) {
		return differs, "the same provenance with other keys that verify it"
	}
	return same, ""
}

// sameProvenanceKeys compares two sets of provenance keys by key ID and
// public key.
func sameProvenanceKeys(a, b []registry.SigningKey) bool {
	key := func(k registry.SigningKey) string { return k.KeyID + "\x00" + k.ASCIIArmor }
	as, bs := make([]string, len(a)), make([]string, len(b))
	for i, k := range a {
		as[i] = key(k)
	}
	for i, k := range b {
		bs[i] = key(k)
	}
	slices.Sort(as)
	slices.Sort(bs)
	return slices.Equal(as, bs)
}

func sameEvent(a, b registry.AuditEvent) bool {
	return sameTime(a.Time, b.Time) && a.Action == b.Action && a.Actor == b.Actor && a.SourceAddr == b.SourceAddr &&
		a.Namespace == b.Namespace && a.Target == b.Target && a.Details == b.Details
}

// checkReferenced fails if a blob the source index names is missing from
// the source store: the copy would carry a broken version along.
func checkReferenced(src *snapshot, blobs map[string]int64) error {
	var missing []string
	src.eachBlob(func(digest, what string) {
		if _, ok := blobs[digest]; !ok {
			missing = append(missing, fmt.Sprintf("%s (%s)", digest, what))
		}
	})
	if len(missing) == 0 {
		return nil
	}
	sort.Strings(missing)
	if len(missing) > maxListed {
		missing = append(missing[:maxListed], fmt.Sprintf("... and %d more", len(missing)-maxListed))
	}
	return registry.Errorf(registry.NotFound, "the source blob store lacks blobs its index names; restore them (or delete those versions) before copying:\n  %s", strings.Join(missing, "\n  "))
}

// eachBlob calls fn for every blob the snapshot's records name, with what
// names it; a blob named by several records is reported for each.
func (s *snapshot) eachBlob(fn func(digest, what string)) {
	for _, v := range s.providers {
		name := v.Namespace + "/" + v.Type + " " + v.Version
		fn(v.SHASumsDigest, name+" "+v.SHASumsFilename())
		fn(v.SHASumsSignatureDigest, name+" "+v.SHASumsSignatureFilename())
		for _, pl := range v.Platforms {
			fn(pl.SHA256, name+" "+pl.Filename)
		}
		if v.DocsDigest != "" {
			fn(v.DocsDigest, name+" documentation")
		}
	}
	for _, m := range s.modules {
		fn(m.ArchiveDigest, m.Namespace+"/"+m.Name+"/"+m.System+" "+m.Version+" archive")
	}
	for _, v := range s.mirrored {
		name := v.Host + "/" + v.Namespace + "/" + v.Type + " " + v.Version
		fn(v.SHASumsDigest, name+" "+v.SHASumsFilename())
		fn(v.SHASumsSignatureDigest, name+" "+v.SHASumsSignatureFilename())
		for _, pl := range v.Platforms {
			if pl.Held() { // a package not held yet is fetched on request
				fn(pl.SHA256, name+" "+pl.Filename)
			}
		}
	}
}

// Contents is what an index holds, as far as a backup needs to know.
type Contents struct {
	// Blobs maps every blob the index names to the first record found
	// naming it ("acme/foo 1.0.0 terraform-provider-foo_1.0.0_linux_amd64.zip").
	Blobs            map[string]string
	Namespaces       int
	ProviderVersions int
	ModuleVersions   int
	MirroredVersions int
	// ManagedSigningKeys counts the registry-managed signing keys, whose
	// private halves only the signing secret unseals.
	ManagedSigningKeys int
}

// Inventory reads idx as Copy reads a source (record kind by record kind,
// so it describes one point in time only if nothing writes idx meanwhile:
// give it a snapshot) and returns what it holds.
func Inventory(ctx context.Context, idx store.Index) (Contents, error) {
	s, err := read(ctx, idx, nil)
	if err != nil {
		return Contents{}, err
	}
	c := Contents{
		Blobs:            map[string]string{},
		Namespaces:       len(s.namespaces),
		ProviderVersions: len(s.providers),
		ModuleVersions:   len(s.modules),
		MirroredVersions: len(s.mirrored),
	}
	for _, k := range s.keys {
		if k.Managed {
			c.ManagedSigningKeys++
		}
	}
	s.eachBlob(func(digest, what string) {
		if _, ok := c.Blobs[digest]; !ok {
			c.Blobs[digest] = what
		}
	})
	return c, nil
}

// copyBlobs copies the blobs the target lacks, concurrency at a time,
// and stops at the first failure.
func copyBlobs(ctx context.Context, from, to store.Blobs, blobs map[string]int64, concurrency int, log *slog.Logger) (Count, int64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	digests := make([]string, 0, len(blobs))
	for d := range blobs {
		digests = append(digests, d)
	}
	sort.Strings(digests)
	work := make(chan string)
	var (
		mu    sync.Mutex
		count Count
		total int64
		first error
		wg    sync.WaitGroup
	)
	for range min(concurrency, max(len(digests), 1)) {
		wg.Go(func() {
			for d := range work {
				n, copied, err := copyBlob(ctx, from, to, d, blobs[d])
				mu.Lock()
				switch {
				case err != nil:
					if first == nil {
						first = err
						cancel(err)
					}
				case copied:
					count.Copied++
					total += n
					log.DebugContext(ctx, "copied blob", "digest", d, "bytes", n)
				default:
					count.Present++
				}
				done := count.Copied + count.Present
				mu.Unlock()
				if done%500 == 0 {
					log.InfoContext(ctx, "copying blobs", "done", done, "of", len(digests))
				}
			}
		})
	}
feed:
	for _, d := range digests {
		select {
		case work <- d:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = registry.Wrap(registry.Unavailable, ctx.Err(), "copying blobs")
	}
	return count, total, first
}

// copyBlob copies one blob of the given source size unless the target
// has it already; the target's Put verifies the content against the
// digest while it streams. A blob already in the target must have the
// source's size: one that does not (cut short by a broken store, say) is
// refused rather than trusted, since Put never replaces a present blob.
func copyBlob(ctx context.Context, from, to store.Blobs, digest string, size int64) (int64, bool, error) {
	if have, err := to.Stat(ctx, digest); err == nil {
		if have != size {
			return 0, false, registry.Errorf(registry.Conflict,
				"blob %s is already in the target with %d bytes, but the source's has %d: the target's copy is damaged; delete it from the target store and run the copy again", digest, have, size)
		}
		return 0, false, nil
	} else if !registry.IsKind(err, registry.NotFound) {
		return 0, false, fmt.Errorf("checking blob %s in the target: %w", digest, err)
	}
	b, err := from.Open(ctx, digest)
	if err != nil {
		return 0, false, fmt.Errorf("opening blob %s in the source: %w", digest, err)
	}
	defer b.Close()
	if err := to.Put(ctx, digest, b.Size, b.Content); err != nil {
		if registry.IsKind(err, registry.Invalid) {
			return 0, false, registry.Wrap(registry.Invalid, err, "blob "+digest+" of the source does not match its digest (corrupted?); nothing was stored for it")
		}
		return 0, false, fmt.Errorf("copying blob %s: %w", digest, err)
	}
	return b.Size, true, nil
}

// setHeld records the held packages of v in idx (again: that is not an
// error) and returns how many it recorded.
func setHeld(ctx context.Context, idx store.Index, v registry.MirroredVersion) (int, error) {
	n := 0
	for _, pl := range v.Platforms {
		if !pl.Held() {
			continue
		}
		if err := idx.SetMirroredPackage(ctx, v.Host, v.Namespace, v.Type, v.Version, pl.OS, pl.Arch, pl.Size, pl.H1); err != nil {
			return n, fmt.Errorf("recording package %s of mirrored version %s/%s/%s %s: %w", pl.Filename, v.Host, v.Namespace, v.Type, v.Version, err)
		}
		n++
	}
	return n, nil
}

// apply writes the plan into idx, counting into r.
func (p *plan) apply(ctx context.Context, idx store.Index, r *Report) error {
	r.Namespaces = Count{len(p.namespaces), len(p.src.namespaces) - len(p.namespaces)}
	for _, ns := range p.namespaces {
		if err := idx.CreateNamespace(ctx, ns); err != nil {
			return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
		}
	}
	for _, ns := range p.namespaceUpdates {
		if err := idx.UpdateNamespace(ctx, ns); err != nil {
			return fmt.Errorf("updating namespace %s: %w", ns.Name, err)
		}
		r.Updated++
	}

	// Copy checked that the target is an Access if the source has any of it.
	a, _ := idx.(store.Access)
	if a != nil {
		r.Users = Count{len(p.users), len(p.src.users) - len(p.users)}
		for _, u := range p.users {
			if err := a.CreateUser(ctx, u); err != nil {
				return fmt.Errorf("creating user %s: %w", u.Name, err)
			}
		}
		for _, u := range p.userUpdates {
			if err := a.UpdateUser(ctx, u); err != nil {
				return fmt.Errorf("updating user %s: %w", u.Name, err)
			}
			r.Updated++
		}
		r.Memberships = Count{len(p.memberships), len(p.src.memberships) - len(p.memberships)}
		for _, m := range p.memberships {
			if err := a.SetMembership(ctx, m); err != nil {
				return fmt.Errorf("setting the membership of %s in %s: %w", m.User, m.Namespace, err)
			}
		}
		for _, m := range p.membershipUpdates {
			if err := a.SetMembership(ctx, m); err != nil {
				return fmt.Errorf("changing the role of %s in %s: %w", m.User, m.Namespace, err)
			}
			r.Updated++
		}
	}

	r.SigningKeys = Count{len(p.keys), len(p.src.keys) - len(p.keys)}
	for _, k := range p.keys {
		var err error
		if k.Managed {
			err = idx.AddManagedSigningKey(ctx, k, p.src.sealed[k.Namespace])
		} else {
			err = idx.AddSigningKey(ctx, k)
		}
		if err != nil {
			return fmt.Errorf("adding signing key %s of %s: %w", k.KeyID, k.Namespace, err)
		}
	}

	r.TrustPolicies = Count{len(p.trust), len(p.src.trust) - len(p.trust)}
	for _, tp := range p.trust {
		if err := idx.CreateTrustPolicy(ctx, tp); err != nil {
			return fmt.Errorf("creating trust policy %s of %s: %w", tp.ID, tp.Namespace, err)
		}
	}

	r.Webhooks = Count{len(p.webhooks), len(p.src.webhooks) - len(p.webhooks)}
	for _, w := range p.webhooks {
		if err := idx.CreateWebhook(ctx, w); err != nil {
			return fmt.Errorf("creating webhook %s: %w", w.ID, err)
		}
	}
	for _, w := range p.webhookUpdates {
		if _, err := idx.UpdateWebhook(ctx, w.ID, func(d *registry.Webhook) error {
			d.URL, d.Events, d.Active, d.Description, d.Secret, d.DisabledReason = w.URL, w.Events, w.Active, w.Description, w.Secret, w.DisabledReason
			return nil
		}); err != nil {
			return fmt.Errorf("updating webhook %s: %w", w.ID, err)
		}
		r.Updated++
	}

	r.RetentionRules = Count{len(p.retention), len(p.src.retention) - len(p.retention)}
	for _, rule := range p.retention {
		if err := idx.PutRetentionRule(ctx, rule); err != nil {
			return fmt.Errorf("storing the retention rule of %s: %w", rule.Namespace, err)
		}
	}
	for _, ns := range p.retentionDeletes {
		if err := idx.DeleteRetentionRule(ctx, ns); err != nil && !registry.IsKind(err, registry.NotFound) {
			return fmt.Errorf("deleting the retention rule of %s: %w", ns, err)
		}
		r.Updated++
	}

	r.Tokens = Count{len(p.tokens), len(p.src.tokens) - len(p.tokens)}
	for _, t := range p.tokens {
		if err := idx.CreateToken(ctx, t); err != nil {
			return fmt.Errorf("creating token %s: %w", t.ID, err)
		}
	}
	for _, t := range p.tokenRevokes {
		if err := idx.RevokeToken(ctx, t.ID, t.RevokedAt); err != nil {
			return fmt.Errorf("revoking token %s: %w", t.ID, err)
		}
		r.Updated++
	}
	if len(p.tokenExpiries) > 0 {
		if a == nil {
			return registry.Errorf(registry.Invalid, "token expiries changed in the source, but the target index cannot change them")
		}
		for _, t := range p.tokenExpiries {
			if err := a.ExpireToken(ctx, t.ID, t.ExpiresAt); err != nil {
				return fmt.Errorf("expiring token %s: %w", t.ID, err)
			}
			r.Updated++
		}
	}

	r.ProviderVersions = Count{len(p.providers), len(p.src.providers) - len(p.providers)}
	for _, v := range p.providers {
		if err := idx.CreateProviderVersion(ctx, v); err != nil {
			return fmt.Errorf("creating provider version %s/%s %s: %w", v.Namespace, v.Type, v.Version, err)
		}
		// The lifecycle of a copied version comes with it (a version the
		// target has already keeps its own).
		if err := copyLifecycle(
			func() error { return idx.SetProviderDeprecation(ctx, v.Namespace, v.Type, v.Version, v.Deprecation) },
			func() error { return idx.SetProviderRevocation(ctx, v.Namespace, v.Type, v.Version, v.Revocation) },
			v.Deprecation != nil, v.Revocation != nil); err != nil {
			return fmt.Errorf("copying the lifecycle of provider version %s/%s %s: %w", v.Namespace, v.Type, v.Version, err)
		}
	}
	for _, v := range p.providerDocs {
		if _, err := idx.SetProviderDocs(ctx, v.Namespace, v.Type, v.Version, v.DocsDigest, v.DocsSize); err != nil {
			return fmt.Errorf("recording the documentation of provider version %s/%s %s: %w", v.Namespace, v.Type, v.Version, err)
		}
		r.Updated++
	}
	digests := slices.Sorted(maps.Keys(p.packageHashes))
	for _, d := range digests {
		if err := idx.SetPackageHash(ctx, d, p.packageHashes[d]); err != nil {
			return fmt.Errorf("recording the hash of package %s: %w", d, err)
		}
		r.Updated++
	}
	r.ModuleVersions = Count{len(p.modules), len(p.src.modules) - len(p.modules)}
	for _, v := range p.modules {
		if err := idx.CreateModuleVersion(ctx, v); err != nil {
			return fmt.Errorf("creating module version %s/%s/%s %s: %w", v.Namespace, v.Name, v.System, v.Version, err)
		}
		if err := copyLifecycle(
			func() error {
				return idx.SetModuleDeprecation(ctx, v.Namespace, v.Name, v.System, v.Version, v.Deprecation)
			},
			func() error {
				return idx.SetModuleRevocation(ctx, v.Namespace, v.Name, v.System, v.Version, v.Revocation)
			},
			v.Deprecation != nil, v.Revocation != nil); err != nil {
			return fmt.Errorf("copying the lifecycle of module version %s/%s/%s %s: %w", v.Namespace, v.Name, v.System, v.Version, err)
		}
	}

	r.MirroredVersions = Count{len(p.mirrored), len(p.src.mirrored) - len(p.mirrored)}
	for _, v := range p.mirrored {
		if _, err := idx.PutMirroredVersion(ctx, v); err != nil {
			return fmt.Errorf("storing mirrored version %s/%s/%s %s: %w", v.Host, v.Namespace, v.Type, v.Version, err)
		}
		if _, err := setHeld(ctx, idx, v); err != nil {
			return err
		}
	}
	for _, v := range p.mirroredHeld {
		n, err := setHeld(ctx, idx, v)
		if err != nil {
			return err
		}
		r.Updated += n
	}
	for _, v := range p.mirroredProvenance {
		// PutMirroredVersion adds the provenance (and its keys) to the
		// stored version, or refuses another.
		if _, err := idx.PutMirroredVersion(ctx, v); err != nil {
			return fmt.Errorf("storing the provenance of mirrored version %s/%s/%s %s: %w", v.Host, v.Namespace, v.Type, v.Version, err)
		}
		r.Updated++
	}
	r.MirrorUpstreams = Count{len(p.upstreams), len(p.src.upstreams) - len(p.upstreams)}
	for _, u := range p.upstreams {
		if err := idx.PutMirrorUpstream(ctx, u); err != nil {
			return fmt.Errorf("storing mirror upstream %s: %w", u.Host, err)
		}
	}
	for _, host := range p.upstreamDeletes {
		if err := idx.DeleteMirrorUpstream(ctx, host); err != nil && !registry.IsKind(err, registry.NotFound) {
			return fmt.Errorf("deleting mirror upstream %s: %w", host, err)
		}
		r.Updated++
	}

	if len(p.audit) > 0 && a != nil {
		for _, e := range p.audit {
			if _, err := a.AppendAudit(ctx, e); err != nil {
				return fmt.Errorf("appending audit event %d: %w", e.ID, err)
			}
		}
	}
	r.AuditEvents = Count{len(p.audit), len(p.src.audit) - len(p.audit)}

	r.Secrets = Count{len(p.secrets), len(p.src.secrets) - len(p.secrets)}
	for _, name := range p.secrets {
		want := p.src.secrets[name]
		got, err := idx.Secret(ctx, name, func() ([]byte, error) { return want, nil })
		if err != nil {
			return fmt.Errorf("storing secret %s: %w", name, err)
		}
		if !bytes.Equal(got, want) {
			return registry.Errorf(registry.Conflict, "secret %s was created in the target during the copy (is Trove running on it?)", name)
		}
	}
	return nil
}

// copyLifecycle runs deprecate if deprecated and revoke if revoked.
func copyLifecycle(deprecate, revoke func() error, deprecated, revoked bool) error {
	if deprecated {
		if err := deprecate(); err != nil {
			return err
		}
	}
	if revoked {
		return revoke()
	}
	return nil
}
