package server

// handlerStack is the stack room growStack makes. 6 KB already covers
// an anonymous cached answer's chain below the middleware, down through
// net/http's HTTP/2 response writer (BenchmarkEndToEndHTTP2Versions30
// profiles no stack growth below growStack with it); 14 KB leaves room
// for the deeper chains (a token's authentication, the web UI) at no
// cost per request, since the one growth copies the same few frames
// whatever its size. The price is 16 KB of stack per HTTP/2 request in
// flight.
const handlerStack = 14 << 10

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
