package server

// handlerStack is the frame growStack makes room for. It sizes the
// stack the runtime grows to, not the room the chain below gets: the
// runtime doubles a stack until the frame fits, so from the 4 KB a new
// goroutine starts with (8 KB once the runtime's estimate rises) a frame
// of 8 KB makes a 16 KB stack, and the chain below the middleware then
// has all of it but the few frames above (about 14 KB: an anonymous
// cached answer needs 6 KB, a token's authentication fits, the profiles
// of BenchmarkEndToEndHTTP2Versions30 and BenchmarkEndToEndHTTP2Guarded
// show no growth below growStack). 16 KB is also the largest stack the
// runtime keeps in per-processor caches: a 32 KB one (the 14 KB frame
// growStack had first made one) is taken from the heap and given back,
// under its lock, on every request, which was a quarter of the growth's
// cost (docs/benchmarks.md; TestGrowStackKeepsCachedStackSize checks the
// size).
const handlerStack = 8 << 10

// growStack grows the calling goroutine's stack, if it must, so that
// handlerStack more bytes fit on it: in one step, while the stack is
// still shallow.
//
// net/http runs every HTTP/2 request on a new goroutine, whose stack
// starts small (the runtime's estimate from the stacks of all
// goroutines) and doubles each time a call needs more. Each doubling
// copies the stack and adjusts every frame on it, so its cost grows with
// the number of frames: grown deep inside the response writer, it cost
// a cached answer about 2.8 µs, 7% of Trove's CPU per request over
// HTTP/2 (docs/benchmarks.md). Grown here, near the top of the chain,
// the copy has four frames to adjust. HTTP/1.1 serves a connection's
// requests on one goroutine, whose stack stays grown.
//
// The frame of growStack holds handlerStack bytes, so its prologue makes
// the room (the runtime grows the stack to fit a frame before the
// function runs); touch is false at every call, so the array is never
// zeroed, and it exists only to size the frame.
//
//go:noinline
func growStack(touch bool) byte {
	if touch {
		var room [handlerStack]byte
		return firstByte(room[:])
	}
	return 0
}

// firstByte reads b: it keeps growStack's array on growStack's frame
// (b does not escape).
//
//go:noinline
func firstByte(b []byte) byte { return b[0] }
