package store

import (
	"context"
	"sync"

	"trove.dev/trove/internal/registry"
)

// Effects are what a write records besides its change: its audit entries
// and the webhook events it announces. Carried in the context of the
// write (WithEffects), they are committed in the write's own transaction,
// so that a change is never kept without them, nor they without it.
//
// The contract of an Index honouring effects (the SQL index does):
//
//   - the first write transaction run with the context that commits
//     inserts the effects in it, just before its commit, and marks them
//     taken (Taken); a transaction that fails or is rolled back leaves no
//     audit row and no event, and the effects untaken for the next one;
//   - each audit event is stored as AuditLog.AppendAudit stores it (its
//     ID is assigned then, in commit order);
//   - each webhook event is stored as Webhooks.EnqueueEvent stores it: one
//     pending delivery per active webhook that wants it (IDs from NewID),
//     and the event only if some webhook wants it; Deliveries then says
//     how many were enqueued.
//
// Attach effects to the context of the one store call that makes the
// change. A call that writes nothing (an idempotent repeat, say) leaves
// them untaken: the caller decides whether to record them anyway (see
// audit.Recorder.Done and webhook.Emitter.Done). Effects are safe for
// concurrent use, but only one transaction takes them.
type Effects struct {
	// Audit are the audit entries of the change, complete (time, actor,
	// source address).
	Audit []registry.AuditEvent
	// Events are the webhook events of the change, with their ID, time
	// and payload.
	Events []registry.WebhookEvent
	// NewID returns the IDs of the deliveries; nil uses the event ID with
	// a counter.
	NewID func() string
	// Bind, if not nil, is called by the writes that know more than
	// their caller, so that the effects can name it (the signing key, the
	// archive digest, a count); it may change the effects. Before their
	// transaction: CreateProviderVersion and CreateModuleVersion with the
	// registry.ProviderVersion or registry.ModuleVersion they store,
	// AddManagedSigningKey with its registry.SigningKey, SetProviderDocs
	// with the DocsDigest. In their transaction (again if it is run
	// again): DeleteProvider and DeleteModule with the DeletedVersions
	// they delete, ImportBundle with its BundleImport,
	// SSO.CreateRoleMapping with the registry.RoleMapping it stores, its
	// ID set, SSO.PutIdentityProvider with IdentityProviderCreated, and
	// SSO.ReconcileRoles with the []registry.RoleChange it
	// makes. Layers above the store that know more call it too, before
	// the write: keyless.Exchanger with the keyless.Result of the token
	// it issues. Effects with a Bind are taken by the first write that
	// commits even while empty.
	Bind func(record any)

	mu         sync.Mutex
	claimed    bool
	taken      bool
	deliveries int
}

// DeletedVersions is the number of versions a delete of a whole
// provider or module removed (Effects.Bind).
type DeletedVersions int

// DocsDigest is the digest of the documentation archive SetProviderDocs
// records (Effects.Bind).
type DocsDigest string

type effectsKey struct{}

// WithEffects returns ctx carrying fx for the write made with it (nil fx
// carries none).
func WithEffects(ctx context.Context, fx *Effects) context.Context {
	if fx == nil {
		return ctx
	}
	return context.WithValue(ctx, effectsKey{}, fx)
}

// WithoutEffects returns ctx carrying no effects: for a write that must
// not take those of the change it follows.
func WithoutEffects(ctx context.Context) context.Context {
	if EffectsFrom(ctx) == nil {
		return ctx
	}
	return context.WithValue(ctx, effectsKey{}, (*Effects)(nil))
}

// EffectsFrom returns the effects ctx carries, or nil.
func EffectsFrom(ctx context.Context) *Effects {
	fx, _ := ctx.Value(effectsKey{}).(*Effects)
	return fx
}

// Claim is for an Index: it reserves fx for the transaction about to
// commit and reports whether it got them (false if fx is nil, taken or
// reserved by another transaction, or empty without a Bind). Release or
// Commit must follow a claim.
func (fx *Effects) Claim() bool {
	if fx == nil {
		return false
	}
	fx.mu.Lock()
	defer fx.mu.Unlock()
	if fx.claimed || fx.taken || fx.Bind == nil && len(fx.Audit) == 0 && len(fx.Events) == 0 {
		return false
	}
	fx.claimed = true
	return true
}

// Release is for an Index: it gives back effects claimed by a
// transaction that did not commit.
func (fx *Effects) Release() {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	fx.claimed = false
}

// Commit is for an Index: it marks claimed effects taken by a
// transaction that committed them with deliveries webhook deliveries.
func (fx *Effects) Commit(deliveries int) {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	fx.claimed, fx.taken, fx.deliveries = false, true, deliveries
}

// Taken reports whether a write committed fx.
func (fx *Effects) Taken() bool {
	if fx == nil {
		return false
	}
	fx.mu.Lock()
	defer fx.mu.Unlock()
	return fx.taken
}

// Deliveries returns the number of webhook deliveries the write that took
// fx enqueued.
func (fx *Effects) Deliveries() int {
	if fx == nil {
		return 0
	}
	fx.mu.Lock()
	defer fx.mu.Unlock()
	return fx.deliveries
}

// Bound calls fx.Bind with record, if fx and its Bind are not nil: for an
// Index creating a version.
func (fx *Effects) Bound(record any) {
	if fx != nil && fx.Bind != nil {
		fx.Bind(record)
	}
}

// Empty reports whether fx has nothing to record.
func (fx *Effects) Empty() bool {
	return fx == nil || len(fx.Audit) == 0 && len(fx.Events) == 0
}
