package s3blob

import (
	"context"
	"testing"

	"trove.dev/trove/internal/registry"
)

// TestSettledRead checks when a read that found a blob missing reads
// again: only when a Put of the digest through the same puts ran during
// it, and then after that Put ended.
func TestSettledRead(t *testing.T) {
	const digest = "d"
	missing := registry.Errorf(registry.NotFound, "blob not found")
	// reads answers the i-th read with answers[i] (0: missing), running
	// during[i] during it.
	reads := func(p *puts, answers []int64, during []func()) (int64, int, error) {
		n := 0
		v, err := settledRead(context.Background(), p, digest, func() (int64, error) {
			i := n
			n++
			if i < len(during) && during[i] != nil {
				during[i]()
			}
			if answers[i] == 0 {
				return 0, missing
			}
			return answers[i], nil
		})
		return v, n, err
	}

	t.Run("NoPut", func(t *testing.T) {
		var p puts
		if v, n, err := reads(&p, []int64{0}, nil); !registry.IsKind(err, registry.NotFound) || n != 1 {
			t.Errorf("read without a Put = %d, %v after %d reads; want NotFound after 1", v, err, n)
		}
		if len(p.m) != 0 {
			t.Errorf("%d entries left", len(p.m))
		}
	})
	t.Run("PutOfAnotherDigest", func(t *testing.T) {
		var p puts
		end := p.begin("other")
		defer end()
		if v, n, err := reads(&p, []int64{0}, nil); !registry.IsKind(err, registry.NotFound) || n != 1 {
			t.Errorf("read during a Put of another digest = %d, %v after %d reads; want NotFound after 1", v, err, n)
		}
	})
	t.Run("PutRunning", func(t *testing.T) {
		var p puts
		end := p.begin(digest)
		// The Put ends only after the first read: the second read must
		// wait for it.
		ended := false
		v, n, err := reads(&p, []int64{0, 42}, []func(){func() { go func() { ended = true; end() }() }, func() {
			if !ended {
				t.Error("read again before the Put ended")
			}
		}})
		if err != nil || v != 42 || n != 2 {
			t.Errorf("read during a Put = %d, %v after %d reads; want 42 after 2", v, err, n)
		}
		if len(p.m) != 0 {
			t.Errorf("%d entries left", len(p.m))
		}
	})
	t.Run("PutWithinTheRead", func(t *testing.T) {
		var p puts
		v, n, err := reads(&p, []int64{0, 42}, []func(){func() { p.begin(digest)() }})
		if err != nil || v != 42 || n != 2 {
			t.Errorf("read overlapping a whole Put = %d, %v after %d reads; want 42 after 2", v, err, n)
		}
	})
	t.Run("MissingAfterThePut", func(t *testing.T) {
		var p puts
		v, n, err := reads(&p, []int64{0, 0}, []func(){func() { p.begin(digest)() }})
		if !registry.IsKind(err, registry.NotFound) || n != 2 {
			t.Errorf("read of a blob a failed Put left missing = %d, %v after %d reads; want NotFound after 2", v, err, n)
		}
	})
	t.Run("ContextEnds", func(t *testing.T) {
		var p puts
		end := p.begin(digest)
		defer end()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := settledRead(ctx, &p, digest, func() (int64, error) { return 0, missing }); !registry.IsKind(err, registry.NotFound) {
			t.Errorf("read with an ended context = %v, want NotFound", err)
		}
	})
}
