package s3blob

import (
	"context"
	"sync"

	"trove.dev/trove/internal/registry"
)

// Overwrites. Put uploads a blob that exists already once more, to renew
// its LastModified, and not every S3-compatible server replaces an object
// atomically: versitygw's POSIX backend (1.8.0) removes the old file
// before it links the new one, so that a HEAD or GET in between answers
// 404 for a blob that was never missing. Concurrent publishes of one
// release upload the same blobs while each of them checks, in its index
// transaction, that its blobs are stored (store.BlobsPresent), and the
// check of one would fail on another's overwrite: a 503 "removed by the
// garbage collector" among identical publishes. So a read that finds a
// blob missing while a Put of that digest by the same Store ran answers
// only after those Puts ended, from a second read. The overwrites of
// other processes cannot be seen this way; on servers whose overwrites
// are atomic (AWS S3, among others) the second read never happens.

// puts tracks, per digest, this Store's Puts under way and the reads
// that may have to wait for them.
type puts struct {
	mu sync.Mutex
	m  map[string]*putState // entries live while users > 0
}

type putState struct {
	users   int           // Puts and reads holding the entry
	running int           // Puts under way
	started uint64        // Puts started since the entry was made
	idle    chan struct{} // closed when running drops to 0
}

// hold returns the entry of digest, making it if missing; pass it to
// release when done. p.mu must be held.
func (p *puts) hold(digest string) *putState {
	if p.m == nil {
		p.m = map[string]*putState{}
	}
	st := p.m[digest]
	if st == nil {
		st = &putState{}
		p.m[digest] = st
	}
	st.users++
	return st
}

// release lets go of an entry hold returned. p.mu must be held.
func (p *puts) release(digest string, st *putState) {
	if st.users--; st.users == 0 {
		delete(p.m, digest)
	}
}

// begin records that a Put of digest starts; call the function it
// returns when the Put has ended.
func (p *puts) begin(digest string) (end func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.hold(digest)
	st.started++
	if st.running++; st.running == 1 {
		st.idle = make(chan struct{})
	}
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if st.running--; st.running == 0 {
			close(st.idle)
		}
		p.release(digest, st)
	}
}

// settledRead runs read, a HEAD or GET of digest, and returns its
// result, unless it is NotFound while a Put of digest through p ran
// (started before the read ended and had not ended before it started):
// then it waits for the Puts under way to end, if any, and reads again.
func settledRead[T any](ctx context.Context, p *puts, digest string, read func() (T, error)) (T, error) {
	p.mu.Lock()
	st := p.hold(digest)
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.release(digest, st)
		p.mu.Unlock()
	}()
	for {
		p.mu.Lock()
		started, running := st.started, st.running
		p.mu.Unlock()
		v, err := read()
		if !registry.IsKind(err, registry.NotFound) {
			return v, err
		}
		p.mu.Lock()
		overlapped := running > 0 || st.started != started
		idle := st.idle
		p.mu.Unlock()
		if !overlapped {
			return v, err
		}
		if idle != nil {
			select {
			case <-idle:
			case <-ctx.Done():
				return v, err
			}
		}
	}
}
