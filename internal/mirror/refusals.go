package mirror

import (
	"container/list"
	"sync"
	"time"

	"trove.dev/trove/internal/registry"
)

// A package the mirror refused for its bytes (a checksum that differs
// from the signed SHA256SUMS, no zip directory, a zip it cannot unpack
// within its limits, more bytes than its size limit) is remembered for
// a while, so that a hostile or broken upstream does not make it
// download the package again on every client request: while remembered, the package is answered with the
// same refusal without asking the upstream. Only refusals are kept, never
// failures that a retry may mend (the network, timeouts, stalls, the
// upstream's 5xx answers): those are fetched again on the next request,
// as before.
//
// A refusal is known by the package's origin (host, namespace, type,
// version, platform) and its signed SHA-256: a version the upstream
// re-signs with other packages is a new package. The set is bounded
// (oldest forgotten first) and lives in this process only; each replica
// asks the upstream once per TTL.

// DefaultRefusalTTL is how long a refused package is answered from
// memory (Options.RefusalTTL).
const DefaultRefusalTTL = 10 * time.Minute

// maxRefusals bounds the refusals remembered.
const maxRefusals = 1024

// refusalKey names a refused package.
type refusalKey struct {
	origin registry.PackageOrigin
	digest string // the SHA-256 its signed SHA256SUMS lists
}

// refusal is one remembered refusal.
type refusal struct {
	key       refusalKey
	msg       string    // what the refusal said
	at, until time.Time // when it was refused; when it is forgotten
}

// err is the refusal as answered from memory: its message, with when it
// was refused and when the upstream is asked again.
func (r refusal) err() error {
	return registry.Errorf(registry.UpstreamInvalid, "%s (refused at %s; retried after %s)",
		r.msg, r.at.UTC().Format(time.RFC3339), r.until.UTC().Format(time.RFC3339))
}

// refusals is the set of remembered refusals, safe for concurrent use.
// It reads no clock: its callers pass the time.
type refusals struct {
	ttl time.Duration // how long a refusal is remembered; <= 0: none is
	max int           // how many are remembered at most

	mu    sync.Mutex
	byKey map[refusalKey]*list.Element // into order
	order list.List                    // of refusal, oldest first
}

func newRefusals(ttl time.Duration, max int) *refusals {
	return &refusals{ttl: ttl, max: max, byKey: make(map[refusalKey]*list.Element)}
}

// add remembers that key was refused at now with msg, forgetting an
// earlier refusal of key, those that expired and, over the bound, the
// oldest.
func (s *refusals) add(key refusalKey, msg string, now time.Time) {
	if s.ttl <= 0 || s.max <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.byKey[key]; e != nil {
		s.remove(e)
	}
	// Every refusal lives for the same TTL: the oldest expire first.
	for e := s.order.Front(); e != nil && (!now.Before(e.Value.(refusal).until) || s.order.Len() >= s.max); e = s.order.Front() {
		s.remove(e)
	}
	s.byKey[key] = s.order.PushBack(refusal{key: key, msg: msg, at: now, until: now.Add(s.ttl)})
}

// get returns the refusal of key remembered at now, if there is one.
func (s *refusals) get(key refusalKey, now time.Time) (refusal, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byKey[key]
	if e == nil {
		return refusal{}, false
	}
	r := e.Value.(refusal)
	if !now.Before(r.until) {
		s.remove(e)
		return refusal{}, false
	}
	return r, true
}

// count returns how many refusals are remembered (expired ones too, until
// they are dropped).
func (s *refusals) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.order.Len()
}

// remove forgets e (called with s.mu held).
func (s *refusals) remove(e *list.Element) {
	delete(s.byKey, e.Value.(refusal).key)
	s.order.Remove(e)
}
