// Package operations owns the rules of every write Trove makes: who may
// make it (auth.Principal.Allows, the one rights decision), which inputs
// are valid (the domain's rules in internal/registry), and the one index
// transaction that makes it together with its audit entry and webhook
// event (store.WithEffects with audit.Recorder and webhook.Emitter
// effects). The change records of that transaction drop every cache
// (token and visibility caches, response caches) through the index's
// commit hook and change feed; no operation drops a cache itself.
//
// The entrances are thin adapters over it: the management API
// (internal/api) decodes JSON, calls an operation and encodes its
// result; the web UI's forms (internal/web) call operations directly;
// `trove admin token` (cmd/trove) calls the token operation on a data
// directory; login.v1's token endpoint (internal/protocol/login) calls
// the sign-in operations. So a rule is written once and no entrance can skip it.
//
// Each subject has its own file: tokens.go (tokens, web sessions,
// signing out), members.go (namespace members), lifecycle.go
// (deprecation and revocation of provider and module versions),
// namespaces.go, keys.go (signing keys), users.go, webhooks.go
// (webhooks, their test deliveries and redeliveries), trust.go (trust
// policies of keyless publishing), retention.go (retention rules),
// identityproviders.go (single sign-on's identity providers and role
// mappings), signin.go (the tokens of sign-ins: login.v1 codes, also
// after a single sign-on, and device codes), mirror.go (the mirror's
// upstreams and its approvals and denials of upstream versions),
// deletes.go (provider and module versions, whole providers and modules,
// and the versions retention rules expire), collect.go (garbage
// collections), publish.go (provider, module and provider documentation
// publishes), bundle.go (air-gap bundle import) and keyless.go (the
// keyless token exchange). An operation refused for rights or input
// stores nothing: no row, no audit entry, no event.
package operations

import (
	"context"
	"log/slog"
	"net"
	"net/url"
	"time"

	"trove.dev/trove/internal/audit"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/gc"
	"trove.dev/trove/internal/gitsource"
	"trove.dev/trove/internal/keyless"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/publish"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/webhook"
)

// Index is the part of the index the operations read and write. A
// store.Index is one.
type Index interface {
	store.Namespaces
	store.SigningKeys
	store.Tokens
	store.PersonalTokens
	store.Users
	store.Memberships
	store.Lifecycle
	store.Webhooks
	store.TrustPolicies
	store.RetentionRules
	store.SSO
	store.MirrorUpstreams
	store.MirrorHolds
	store.Providers
	store.Modules
	// For the publishes (publish.go, bundle.go): the CI claims of the
	// publishing token (provenance) and the bundle import.
	store.Provenance
	store.Bundles
	store.ProvenancePolicies
}

// Options configures New.
type Options struct {
	Index Index
	// Access decides reads of namespaces; pass the server's. The
	// operations never drop its token and visibility caches themselves:
	// their writes reach them through the index's commit hook
	// (store.ChangeHook, on which the server registers Access.ApplyChange),
	// like every other cache. nil means auth.NewAccess on Index, following
	// the index's commits when it is a store.ChangeHook.
	Access *auth.Access
	// Audit records the audit entries; nil means a Recorder on Index's
	// audit log when it is one (store.AuditLog).
	Audit *audit.Recorder
	// Events turns changes into webhook events; nil sends none.
	Events *webhook.Emitter
	// Managed generates registry-managed signing keys; nil refuses to
	// generate one.
	Managed *signing.Managed
	// Publisher publishes provider releases and their documentation
	// (publish.go) and checks a bundle's packages (bundle.go); nil
	// refuses them.
	Publisher *publish.Publisher
	// Modules publishes module versions and checks a bundle's (publish.go,
	// bundle.go); nil refuses them.
	Modules *modules.Publisher
	// Blobs stores the files of an imported bundle (bundle.go).
	Blobs store.Blobs
	// Keyless checks the ID tokens of a keyless token exchange
	// (keyless.go); nil means one on Index when it holds trust policies
	// and the replay guard (a store.Index does).
	Keyless *keyless.Exchanger
	// NoLocalPasswords refuses to set or check passwords of local
	// accounts (--local-passwords=false).
	NoLocalPasswords bool
	// WebhookURLs are the rules webhook target URLs must follow.
	WebhookURLs registry.WebhookURLRules
	// PublicURL is the origin clients reach Trove at: the default
	// audience of trust policies, and the origin of the links in a test
	// event when Events is nil.
	PublicURL *url.URL
	// CheckIssuer, if set, checks the issuer of an identity provider
	// being set against the provider's discovery document
	// (sso.CheckIssuer): an error refuses the write, a warning is
	// returned with the stored provider.
	CheckIssuer func(ctx context.Context, issuer string) (warning string, err error)
	// SignInTokenTTL is the longest life of a token a sign-in grants
	// (--login-token-ttl), and so of a token a web session creates;
	// <= 0 means DefaultSignInTokenTTL.
	SignInTokenTTL time.Duration
	// GitSources keeps the git sources of modules (nil: this Trove
	// takes no modules from git; the git source operations are then
	// Unavailable).
	GitSources *gitsource.Service
	// OnMirrorChange, if set, is called after the mirror's upstreams
	// were changed, so that the running mirror reads them again at once.
	OnMirrorChange func()
	// GC runs the garbage collections of CollectGarbage; nil refuses
	// them.
	GC *gc.Collector
	// Consumers reads who downloaded what, for the in-use check of
	// deletes (a *downloads.Counter: the index's records and this
	// process's pending ones); nil reads the index's when it has them.
	Consumers Consumers
	Logger    *slog.Logger
	Now       func() time.Time
}

// DefaultSignInTokenTTL is Options.SignInTokenTTL's default, the default
// lifetime of a login.v1 token.
const DefaultSignInTokenTTL = 30 * 24 * time.Hour

// Consumers reads consumer records (store.Downloads.ConsumerDownloads).
type Consumers interface {
	ConsumerDownloads(ctx context.Context, q registry.ConsumerQuery) ([]registry.ConsumerCount, error)
}

// Operations makes the writes of every entrance. Create it with New; it
// is safe for concurrent use.
type Operations struct {
	opt Options
}

// New returns the operations on opt.Index.
func New(opt Options) *Operations {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.SignInTokenTTL <= 0 {
		opt.SignInTokenTTL = DefaultSignInTokenTTL
	}
	if opt.Access == nil {
		opt.Access = auth.NewAccess(auth.NewAuthenticator(opt.Index), opt.Index)
		// Its caches follow the index's commits, as the server's do.
		if h, ok := opt.Index.(store.ChangeHook); ok {
			h.OnCommit(opt.Access.ApplyChange)
		}
	}
	if opt.Keyless == nil {
		if ki, ok := opt.Index.(keyless.Index); ok {
			opt.Keyless = keyless.New(keyless.Options{Index: ki, Now: opt.Now})
		}
	}
	if opt.Consumers == nil {
		if c, ok := opt.Index.(Consumers); ok {
			opt.Consumers = c
		}
	}
	if opt.Audit == nil {
		l, _ := opt.Index.(store.AuditLog)
		opt.Audit = audit.New(l, opt.Logger)
	}
	return &Operations{opt: opt}
}

// Actor is who asks for an operation: the authenticated principal of the
// request and the network address it came from, both recorded in the
// audit entry.
type Actor struct {
	Principal auth.Principal
	// Addr is the request's remote address (host:port or a bare host).
	Addr string
	// Operator, when set, names the operator of the data directory
	// (`trove admin token`: "local-admin"), who holds every right and is
	// audited under that name. Only cmd/trove's data-directory commands
	// set it, and the server's own processes acting on what an admin
	// configured (a git source's sync publishing its tags, named after
	// the source).
	Operator string
}

// name is the actor as the audit log and webhook payloads name it.
func (a Actor) name() string {
	if a.Operator != "" {
		return a.Operator
	}
	return a.Principal.Actor()
}

// source is the IP address of the actor, as audit entries record it.
func (a Actor) source() string {
	if host, _, err := net.SplitHostPort(a.Addr); err == nil {
		return host
	}
	return a.Addr
}

// require returns nil if a holds scope on namespace ("" for a global
// right), an error saying why not otherwise.
func (o *Operations) require(a Actor, scope registry.Scope, namespace string) error {
	if a.Operator != "" {
		return nil
	}
	return a.Principal.Require(scope, namespace, o.opt.Now())
}

// effects returns the effects of a write by a: the audit entries and the
// webhook events to commit with it (store.WithEffects).
func (o *Operations) effects(ctx context.Context, a Actor, events []registry.AuditEvent, evs ...webhook.Event) *store.Effects {
	fx := &store.Effects{}
	for _, e := range events {
		o.addAudit(fx, a, e)
	}
	for _, ev := range evs {
		if ev.Actor == "" {
			ev.Actor = a.name()
		}
		o.opt.Events.Add(ctx, fx, nil, ev)
	}
	return fx
}

// addAudit adds the audit entry e by a to fx.
func (o *Operations) addAudit(fx *store.Effects, a Actor, e registry.AuditEvent) {
	if e.Actor == "" {
		e.Actor = a.name()
	}
	if e.SourceAddr == "" {
		e.SourceAddr = a.source()
	}
	o.opt.Audit.Add(fx, nil, e)
}

// done completes the effects of a write that succeeded: it logs the
// audit entries and wakes the webhook worker (audit.Recorder.Done,
// webhook.Emitter.Done).
func (o *Operations) done(ctx context.Context, fx *store.Effects) {
	o.opt.Audit.Done(ctx, fx)
	o.opt.Events.Done(ctx, fx)
}

// Namespace validates the namespace name and checks that a holds scope
// on it; every actor may read a public namespace. An actor who may not
// read the namespace gets NotFound rather than Forbidden, so that names
// do not leak. Entrances call it before they read a request's body, and
// every operation on a namespace calls it again.
func (o *Operations) Namespace(ctx context.Context, a Actor, name string, scope registry.Scope) (string, error) {
	ns, err := registry.ParseNamespace(name)
	if err != nil {
		return "", err
	}
	if a.Operator == "" {
		if ok, err := o.opt.Access.CanRead(ctx, a.Principal, ns); err != nil || !ok {
			if err != nil {
				return "", err
			}
			return "", registry.Errorf(registry.NotFound, "namespace %q not found", ns)
		}
	}
	if scope == registry.ScopeRead {
		return ns, nil // CanRead covers public namespaces
	}
	if err := o.require(a, scope, ns); err != nil {
		return "", err
	}
	return ns, nil
}
