package respcache

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"
)

// versionsDocument returns a document shaped like a providers.v1
// versions document of n versions with five platforms each.
func versionsDocument(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"versions":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"version":"%d.%d.%d","protocols":["5.0"],"platforms":[{"os":"darwin","arch":"amd64"},{"os":"darwin","arch":"arm64"},{"os":"linux","arch":"amd64"},{"os":"linux","arch":"arm64"},{"os":"windows","arch":"amd64"}]}`, i/100, i/10%10, i%10)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// benchmarkRerender measures what the cache spends on one background
// render of a stale versions document of 2,000 versions, besides the
// render itself (here a copy of the bytes): storing its result and
// answering the first client that asks for it compressed, as Terraform
// and OpenTofu do. next returns the bytes of each render.
func benchmarkRerender(b *testing.B, next func(i int) []byte) {
	clk := &clock{t: time.Unix(1_700_000_000, 0)}
	c := New[string, string, int](Options{
		Name: "bench", MaxAge: maxAge, Now: clk.Now, GzipMinBytes: DefaultGzipMinBytes, Budget: NewBudget(64 << 20),
	})
	i := 0
	render := func(context.Context) (Rendered[int], error) {
		return Rendered[int]{Body: bytes.Clone(next(i))}, nil
	}
	e, err := c.Load(context.Background(), "o", "d", nil, render)
	if err != nil {
		b.Fatal(err)
	}
	e.Gzip()
	b.SetBytes(int64(len(e.Body)))
	b.ReportAllocs()
	for b.Loop() {
		i++
		clk.Add(maxAge * 7 / 8) // stale
		c.Revalidate("o", "d", c.Lookup("o", "d"), render)
		settle(c)
		if c.Lookup("o", "d").Gzip() == nil {
			b.Fatal("no variant")
		}
	}
}

// BenchmarkRerenderUnchanged: the document did not change (the common
// case: a re-render at the maximum age).
func BenchmarkRerenderUnchanged(b *testing.B) {
	doc := versionsDocument(2000)
	benchmarkRerender(b, func(int) []byte { return doc })
}

// BenchmarkRerenderChanged: every render differs from the cached one in
// its last bytes (the comparison's worst case).
func BenchmarkRerenderChanged(b *testing.B) {
	docs := [2][]byte{versionsDocument(2000), versionsDocument(2000)}
	docs[1][len(docs[1])-3] = '1' // "amd64" -> "amd61" in the last platform
	benchmarkRerender(b, func(i int) []byte { return docs[i%2] })
}
