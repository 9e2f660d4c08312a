package respcache

import (
	"context"
	"fmt"
	"testing"
)

// benchOwner and benchDoc are keys shaped like the providers.v1 cache's:
// a namespace and type, a version, OS and architecture.
type (
	benchOwner struct{ ns, typ string }
	benchDoc   struct{ version, os, arch string }
)

// lookupBench returns a cache holding 300 entries (10 owners of 30
// documents, like BenchmarkServeDefaults and the load harness's mix) and
// fresh copies of their keys (as a request's path values are).
func lookupBench(b *testing.B) (*Cache[benchOwner, benchDoc, int], []benchOwner, []benchDoc) {
	c := New[benchOwner, benchDoc, int](Options{MaxAge: maxAge})
	var owners []benchOwner
	var docs []benchDoc
	for p := range 10 {
		for v := range 30 {
			o := benchOwner{"open", fmt.Sprintf("widget%d", p)}
			d := benchDoc{fmt.Sprintf("1.%d.%d", v/10, v%10), "linux", "amd64"}
			if _, err := c.Load(context.Background(), o, d, nil, func(context.Context) (Rendered[int], error) {
				return Rendered[int]{Body: []byte("{}")}, nil
			}); err != nil {
				b.Fatal(err)
			}
			owners = append(owners, benchOwner{string([]byte(o.ns)), string([]byte(o.typ))})
			docs = append(docs, benchDoc{string([]byte(d.version)), string([]byte(d.os)), string([]byte(d.arch))})
		}
	}
	return c, owners, docs
}

// BenchmarkLookup is a hit's Lookup over 300 documents, one goroutine.
func BenchmarkLookup(b *testing.B) {
	c, owners, docs := lookupBench(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if c.Lookup(owners[i], docs[i]) == nil {
			b.Fatal("miss")
		}
		if i++; i == len(owners) {
			i = 0
		}
	}
}

// BenchmarkLookupParallel is BenchmarkLookup on every core at once, as
// the requests of a loaded server look up.
func BenchmarkLookupParallel(b *testing.B) {
	c, owners, docs := lookupBench(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if c.Lookup(owners[i], docs[i]) == nil {
				panic("miss")
			}
			if i++; i == len(owners) {
				i = 0
			}
		}
	})
}
