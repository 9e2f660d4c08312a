package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"trove.dev/trove/internal/registry"
)

// A package the mirror does not hold is downloaded once per origin by a
// download, which runs on its own (no request's context ends it) into a
// staged file. Every request for the package while it runs reads that
// file as it grows (a packageReader), so each one gets the bytes as they
// arrive from the upstream, however many wait and whichever came first.
//
// Nothing unverified may look like a whole package: a reader gets the
// last HoldBack bytes only after all of them matched the signed
// SHA256SUMS, and an error instead if they did not. Its caller (the file
// route) thus never ends an unverified response cleanly: it aborts the
// connection on the error, before the client has every byte.
//
// The staged file is removed when the download ends (stored or refused);
// readers keep reading through the open file until the last one closes.

// HoldBack is how many of a package's last bytes a reader gets only once
// the whole package is verified.
const HoldBack = 64 << 10

type download struct {
	m      *Mirror
	origin registry.PackageOrigin
	mv     registry.MirroredVersion
	pl     registry.Platform

	mu       sync.Mutex
	progress chan struct{} // closed and replaced whenever a field below changes
	refs     int           // the download itself and each reader or waiter
	f        *os.File      // the staged file, closed with the last reference
	started  bool          // the upstream answered (size is known), or the download ended
	size     int64         // the upstream's Content-Length, -1 if it sent none
	n        int64         // bytes in f
	verified bool          // the n bytes matched the signed SHA256SUMS
	stored   bool          // the package was in the blob store already: read it there
	failed   error         // the download or its check failed before it was verified
	done     bool          // the download ended: stored and recorded, or failed
	err      error         // its result, once done
}

// update changes d's fields with fn and wakes everything waiting on d.
func (d *download) update(fn func()) {
	d.mu.Lock()
	fn()
	close(d.progress)
	d.progress = make(chan struct{})
	d.mu.Unlock()
}

// wait returns once ready (called with d.mu held) is true, or with
// ctx's error.
func (d *download) wait(ctx context.Context, ready func() bool) error {
	for {
		d.mu.Lock()
		ok, ch := ready(), d.progress
		d.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return registry.Wrap(registry.Unavailable, ctx.Err(), "the request ended while the package was fetched from its upstream; the fetch goes on")
		}
	}
}

// release drops one reference; the last closes the staged file.
func (d *download) release() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.refs--
	if d.refs == 0 && d.f != nil {
		d.f.Close()
		d.f = nil
	}
}

// join returns the running download of a package, or starts one, with a
// reference for the caller (release it). A download that failed but is
// not yet removed is not joined: its failure is the previous request's,
// which this one would get without a try. One that succeeded is (its
// package is stored; a new download would hash it again).
func (m *Mirror) join(mv registry.MirroredVersion, pl registry.Platform) *download {
	o := registry.PackageOrigin{Host: mv.Host, Namespace: mv.Namespace, Type: mv.Type, Version: mv.Version, OS: pl.OS, Arch: pl.Arch}
	key := o.String()
	m.dlMu.Lock()
	defer m.dlMu.Unlock()
	if d := m.downloads[key]; d != nil {
		d.mu.Lock()
		joinable := !d.done || d.err == nil
		if joinable {
			d.refs++
		}
		d.mu.Unlock()
		if joinable {
			return d
		}
	}
	d := &download{m: m, origin: o, mv: mv, pl: pl, progress: make(chan struct{}), refs: 2, size: -1}
	m.downloads[key] = d
	m.running.Add(1)
	go d.run(key)
	return d
}

// run downloads, checks and stores the package, then ends the download.
// No request's context ends it; Mirror.Close does.
func (d *download) run(key string) {
	defer d.m.running.Done()
	ctx, cancel := context.WithTimeout(d.m.stop, d.m.fetchTimeout)
	defer cancel()
	err := d.m.fetchPackage(ctx, d)
	d.update(func() {
		d.done, d.err, d.started = true, err, true
		if err != nil && !d.verified && !d.stored {
			d.failed = err
		}
	})
	d.m.dlMu.Lock()
	if d.m.downloads[key] == d { // else a later download took its place
		delete(d.m.downloads, key)
	}
	d.m.dlMu.Unlock()
	d.release()
}

// write appends p to the staged file and lets the readers see it.
func (d *download) Write(p []byte) (int, error) {
	n, err := d.f.Write(p)
	d.update(func() { d.n += int64(n) })
	return n, err
}

// packageReader reads a package while its download runs: see download.
type packageReader struct {
	d      *download
	ctx    context.Context
	off    int64
	blob   io.ReadCloser // the stored package, when it was stored already
	closed bool
}

// Read returns the next bytes of the package: only those the HoldBack
// leaves readable until the package is verified, then the rest and
// io.EOF. Any other error means the package is refused or its download
// failed: what was read must not be taken for (part of) the package.
func (r *packageReader) Read(p []byte) (int, error) {
	if r.blob != nil {
		return r.blob.Read(p)
	}
	if len(p) == 0 {
		return 0, nil
	}
	d := r.d
	for {
		d.mu.Lock()
		if d.stored {
			d.mu.Unlock()
			b, err := d.m.opt.Blobs.Open(r.ctx, d.pl.SHA256)
			if err != nil {
				return 0, err
			}
			r.blob = b.Content
			return r.blob.Read(p)
		}
		if d.failed != nil {
			err := d.failed
			d.mu.Unlock()
			return 0, err
		}
		readable := d.n
		if !d.verified {
			readable -= HoldBack
		}
		if r.off < readable {
			f := d.f
			d.mu.Unlock()
			n, err := f.ReadAt(p[:min(int64(len(p)), readable-r.off)], r.off)
			r.off += int64(n)
			if n > 0 {
				return n, nil
			}
			return 0, registry.Wrap(registry.Internal, err, "reading a staged package")
		}
		if d.verified && r.off >= d.n {
			d.mu.Unlock()
			return 0, io.EOF
		}
		ch := d.progress
		d.mu.Unlock()
		select {
		case <-ch:
		case <-r.ctx.Done():
			return 0, r.ctx.Err()
		}
	}
}

// Close releases the reader's reference to the download.
func (r *packageReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	if r.blob != nil {
		r.blob.Close()
	}
	r.d.release()
	return nil
}

// idleBody is an upstream response body whose reads give up when no byte
// arrives for idle: the timer cancels the request (and with it the read
// waiting for the upstream).
type idleBody struct {
	r       io.Reader
	idle    time.Duration
	timer   *time.Timer
	stalled atomic.Bool
	what    string // the upstream and the file, for the error
}

// newIdleBody returns a timer that calls cancel after idle, armed at
// once (it covers the wait for the response headers too), and the body
// to wrap around the response once it arrived (setBody).
func newIdleBody(idle time.Duration, cancel context.CancelFunc, what string) *idleBody {
	b := &idleBody{idle: idle, what: what}
	b.timer = time.AfterFunc(idle, func() {
		b.stalled.Store(true)
		cancel()
	})
	return b
}

func (b *idleBody) Read(p []byte) (int, error) {
	b.timer.Reset(b.idle)
	n, err := b.r.Read(p)
	b.timer.Stop()
	if err != nil && b.stalled.Load() {
		err = b.stallErr(err)
	}
	return n, err
}

func (b *idleBody) stallErr(err error) error {
	return registry.Wrap(registry.Unavailable, err, fmt.Sprintf("%s sent nothing for %s: the download was given up", b.what, b.idle))
}

// stop disarms the timer for good.
func (b *idleBody) stop() { b.timer.Stop() }

// errStalled reports whether err is the idle timeout's.
func (b *idleBody) errStalled(err error) bool {
	return err != nil && b.stalled.Load() && !errors.Is(err, io.EOF)
}
