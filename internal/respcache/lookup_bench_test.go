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

// BenchmarkLookupPageKeys is a hit's Lookup among 50,000 documents keyed
// by one string each, as the web UI's pages and the modules.v1 documents
// are: stored as the documents of one owner (what those caches do: one
// map look-up) and as one owner per document (a look-up by the key, then
// one in that owner's own map, a cache miss more under load). So many
// documents that their maps outgrow the processor's caches, as under a
// server's load, where the rest of each request evicts them: with a few
// hundred both shapes stay hot and cost the same.
func BenchmarkLookupPageKeys(b *testing.B) {
	keys := make([]string, 50_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("module\x00acme\x00network%d\x00aws\x001.%d.0", i, i%7)
	}
	render := func(context.Context) (Rendered[int], error) { return Rendered[int]{Body: []byte("<html>")}, nil }
	// order visits the keys in a fixed scattered order, as a load's
	// random documents are.
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i * 7919 % len(keys)
	}
	b.Run("OneOwner", func(b *testing.B) {
		c := New[struct{}, string, int](Options{MaxAge: maxAge})
		for _, k := range keys {
			if _, err := c.Load(context.Background(), struct{}{}, k, nil, render); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if c.Lookup(struct{}{}, keys[order[i]]) == nil {
				b.Fatal("miss")
			}
			if i++; i == len(order) {
				i = 0
			}
		}
	})
	b.Run("OwnerPerDocument", func(b *testing.B) {
		c := New[string, struct{}, int](Options{MaxAge: maxAge})
		for _, k := range keys {
			if _, err := c.Load(context.Background(), k, struct{}{}, nil, render); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if c.Lookup(keys[order[i]], struct{}{}) == nil {
				b.Fatal("miss")
			}
			if i++; i == len(order) {
				i = 0
			}
		}
	})
}
