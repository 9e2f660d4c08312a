package auth

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// staleIfUnavailable is how long past its TTL a cached visibility still
// answers while the index is unavailable, so that cached protocol
// documents stay served through a short outage of the index.
const staleIfUnavailable = time.Minute

// maxCachedNamespaces bounds the visibility cache; when it is full it is
// emptied, so that requests for made-up namespaces cannot grow it.
const maxCachedNamespaces = 10000

// Access adds namespace visibility to Principal.Allows: anyone may read a
// public namespace. It caches what it reads (visibility and token
// lookups) for up to the TTL of its Authenticator, so that the protocol
// routes stay a few map lookups away from memory-speed; Invalidate makes
// a change visible at once on this replica.
type Access struct {
	authn        *Authenticator
	ns           store.Namespaces
	mirrorPublic atomic.Bool

	// vis caches namespace visibility (string -> visibility): read
	// without a lock on every protocol request; visCount bounds it.
	vis      sync.Map
	visCount atomic.Int64
}

type visibility struct {
	exists, public bool
	until          int64 // Unix nanoseconds
}

// NewAccess returns an Access that authenticates with authn and reads
// namespaces from ns.
func NewAccess(authn *Authenticator, ns store.Namespaces) *Access {
	return &Access{authn: authn, ns: ns}
}

// Authenticator returns the Authenticator Access uses.
func (a *Access) Authenticator() *Authenticator { return a.authn }

// visibility returns whether the namespace (normalized) exists and is
// public, from the cache when it is fresh.
func (a *Access) visibility(ctx context.Context, namespace string, now time.Time) (exists, public bool, err error) {
	nanos := now.UnixNano()
	cached, hit := a.vis.Load(namespace)
	if hit {
		if v := cached.(visibility); nanos < v.until {
			return v.exists, v.public, nil
		}
	}
	var v visibility
	ns, err := a.ns.GetNamespace(ctx, namespace)
	switch {
	case registry.IsKind(err, registry.NotFound):
		v = visibility{}
	case err != nil:
		// While the index is unreachable, what was read last serves
		// for a while, as the cached documents it guards do.
		if hit && registry.IsKind(err, registry.Unavailable) {
			if v := cached.(visibility); nanos < v.until+int64(staleIfUnavailable) {
				return v.exists, v.public, nil
			}
		}
		return false, false, err
	default:
		v = visibility{exists: true, public: ns.Public()}
	}
	if ttl := a.authn.ttl; ttl > 0 {
		v.until = nanos + int64(ttl)
		if a.visCount.Load() >= maxCachedNamespaces {
			a.vis.Clear()
			a.visCount.Store(0)
		}
		if _, loaded := a.vis.Swap(namespace, v); !loaded {
			a.visCount.Add(1)
		}
	}
	return v.exists, v.public, nil
}

// InvalidateNamespace forgets the cached visibility of a namespace. Call
// it after creating, updating or deleting one.
func (a *Access) InvalidateNamespace(namespace string) {
	if _, loaded := a.vis.LoadAndDelete(namespace); loaded {
		a.visCount.Add(-1)
	}
}

// ApplyChange forgets what the committed change c makes stale: a
// namespace's visibility, and every cached token lookup when tokens,
// users, memberships or namespaces changed (store.ChangeAccess,
// store.ChangeNamespace), everything when changes may have been missed
// (store.ChangeAll). It is how writes reach these caches: register it
// with the index's store.ChangeHook (the server's change channel does),
// not called after each write. It only takes the caches' locks.
func (a *Access) ApplyChange(c store.Change) {
	switch c.Kind {
	case store.ChangeProvider, store.ChangeModule, store.ChangeMirrored:
	case store.ChangeNamespace:
		a.InvalidateNamespace(c.Namespace)
		a.authn.Invalidate() // a deleted namespace's tokens and members
	case store.ChangeAccess:
		a.authn.Invalidate()
	default: // changes may have been missed
		a.Invalidate()
	}
}

// Invalidate forgets every cached visibility and token lookup.
func (a *Access) Invalidate() {
	a.vis.Clear()
	a.visCount.Store(0)
	a.authn.Invalidate()
}

// CanRead reports whether p may read the namespace (normalized): p holds
// read on it, or it is public.
func (a *Access) CanRead(ctx context.Context, p Principal, namespace string) (bool, error) {
	now := a.authn.clock.Now()
	if p.Allows(registry.ScopeRead, namespace, now) {
		return true, nil
	}
	exists, public, err := a.visibility(ctx, namespace, now)
	return exists && public, err
}

// ErrCredentialsRequired is the answer to an anonymous protocol request
// for a namespace that is not public. It is Unauthenticated, so clients
// tell their user to log in.
var ErrCredentialsRequired = registry.Errorf(registry.Unauthenticated,
	"this registry needs credentials for that namespace: run `terraform login <host>` or configure a token for this host")

// errNotReadable is the answer to a protocol request whose token may not
// read the namespace. Callers answer it exactly as if the namespace did
// not exist.
var errNotReadable = registry.Errorf(registry.NotFound, "not found")

// SetMirrorPublic sets whether anonymous requests may install the
// providers the mirror fetches from upstream registries (MirrorRead).
func (a *Access) SetMirrorPublic(public bool) { a.mirrorPublic.Store(public) }

// MirrorPublic reports whether anonymous requests may read the providers
// the mirror fetches from upstream registries (SetMirrorPublic).
func (a *Access) MirrorPublic() bool { return a.mirrorPublic.Load() }

// ErrMirrorCredentialsRequired is the answer to an anonymous request for a
// mirrored provider when the mirror is not public.
var ErrMirrorCredentialsRequired = registry.Errorf(registry.Unauthenticated,
	"this registry's mirror needs credentials: run `terraform login <host>` or configure a token for this host")

// MirrorRead decides whether the protocol request r may read providers
// the mirror fetches from upstream registries (public ones: they belong to
// no namespace of this registry). A token that is presented must be
// valid, and any valid token may; an anonymous request may only when the
// mirror is public (SetMirrorPublic), else it gets
// ErrMirrorCredentialsRequired (Unauthenticated), so the client asks its
// user to log in.
func (a *Access) MirrorRead(r *http.Request) error {
	if len(r.Header["Authorization"]) > 0 {
		p, err := a.authn.AuthenticateCached(r)
		if err != nil || !p.Anonymous() {
			return err
		}
		// An empty Authorization header authenticates no one: it is
		// anonymous, not a token.
	}
	if a.mirrorPublic.Load() {
		return nil
	}
	return ErrMirrorCredentialsRequired
}

// Reader is what ProtocolRead found out about a protocol request it let
// read a namespace, for the handler to use without authenticating the
// request again. Its zero value is an anonymous reader of a public
// namespace.
type Reader struct {
	// Private reports that the namespace is not public: its download
	// URLs get the short private lifetime.
	Private bool
	// Consumer names who made the request, for the consumer records of
	// downloads (package downloads): the Actor of the token it presents
	// ("user:<name>", or "token:<id>", which the index records as the CI
	// pipeline of a keyless token), registry.AnonymousConsumer without
	// one. It is made once per cached token lookup, not per request.
	Consumer string
}

// ProtocolRead decides whether the protocol request r may read the
// namespace (a normalized name), and returns who reads it (Reader: whether
// the namespace is private, and the consumer the request's download is
// recorded for).
//
//   - A token that is presented must be valid, whatever the namespace:
//     otherwise Unauthenticated, so the client says it was rejected.
//   - A public namespace is readable by anyone.
//   - An anonymous request for any other name, existing or not, gets
//     ErrCredentialsRequired (Unauthenticated): which private namespaces
//     exist is not revealed to anonymous callers.
//   - A valid token that may not read the namespace, or a name that does
//     not exist, gets a NotFound error; callers must answer it as they
//     answer an unknown provider, byte for byte.
//
// On an error the Reader says only whether the namespace is private.
// A request that is allowed costs map lookups and no allocation.
func (a *Access) ProtocolRead(r *http.Request, namespace string) (Reader, error) {
	return a.ProtocolReadAt(r, namespace, a.authn.clock.Now())
}

// ProtocolReadAt is ProtocolRead for a request that arrived at now
// (reqtime.Of: the server reads the clock once per request), so that a
// cached answer's access check does not read it again. Namespace
// visibility and token expiry are judged at now, unless the
// Authenticator's clock was set (SetClock).
func (a *Access) ProtocolReadAt(r *http.Request, namespace string, now time.Time) (Reader, error) {
	now = a.authn.clock.At(now)
	exists, public, err := a.visibility(r.Context(), namespace, now)
	if err != nil {
		return Reader{}, err
	}
	var p Principal
	consumer := registry.AnonymousConsumer
	if len(r.Header["Authorization"]) > 0 {
		if p, consumer, err = a.authn.authenticateCachedActor(r, now); err != nil {
			return Reader{}, err
		}
	}
	switch {
	case exists && public:
		return Reader{Consumer: consumer}, nil
	case p.Anonymous():
		return Reader{Private: true}, ErrCredentialsRequired
	case exists && p.Allows(registry.ScopeRead, namespace, now):
		return Reader{Private: true, Consumer: consumer}, nil
	}
	return Reader{Private: true}, errNotReadable
}
