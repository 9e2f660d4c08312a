package web

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

type digestInner struct {
	Name  string
	Count int64
}

type digestData struct {
	Title   string
	Items   []digestInner
	Ptr     *digestInner
	Counts  map[string]int64
	When    time.Time
	Any     any
	Raw     []byte
	private string
}

func newDigestData() digestData {
	return digestData{
		Title: "t", Items: []digestInner{{"a", 1}, {"b", 2}}, Ptr: &digestInner{"p", 3},
		Counts: map[string]int64{"linux_amd64": 4, "darwin_arm64": 5, "windows_amd64": 6},
		When:   time.Unix(1.7e9, 5).UTC(), Any: int64(7), Raw: []byte("raw"), private: "x",
	}
}

// Equal data has one digest, whatever its maps' order and its times'
// monotonic readings; any change of a value it holds, however deep,
// gives another; data that holds what cannot be compared has none.
func TestDataDigest(t *testing.T) {
	base, ok := dataDigest("page", "Title", newDigestData())
	if !ok {
		t.Fatal("no digest")
	}
	for range 20 { // map order varies between iterations
		d := newDigestData()
		d.Counts = map[string]int64{"windows_amd64": 6, "linux_amd64": 4, "darwin_arm64": 5}
		d.When = time.Unix(1.7e9, 5) // Local, with no monotonic reading
		d.When = d.When.UTC()
		if got, ok := dataDigest("page", "Title", d); !ok || got != base {
			t.Fatal("equal data, another digest")
		}
	}
	now := time.Now()
	a, _ := dataDigest("page", "", struct{ T time.Time }{now})
	b, _ := dataDigest("page", "", struct{ T time.Time }{now.Round(0)})
	if a != b {
		t.Error("a monotonic reading changed the digest")
	}
	for name, change := range map[string]func(*digestData){
		"nested string":     func(d *digestData) { d.Items[1].Name = "c" },
		"nested count":      func(d *digestData) { d.Items[0].Count = 9 },
		"one more item":     func(d *digestData) { d.Items = append(d.Items, digestInner{}) },
		"nil slice":         func(d *digestData) { d.Items = nil },
		"empty slice":       func(d *digestData) { d.Items = []digestInner{} },
		"pointed to":        func(d *digestData) { d.Ptr.Count = 0 },
		"nil pointer":       func(d *digestData) { d.Ptr = nil },
		"map value":         func(d *digestData) { d.Counts["linux_amd64"] = 40 },
		"map key":           func(d *digestData) { delete(d.Counts, "linux_amd64"); d.Counts["linux_arm64"] = 4 },
		"time":              func(d *digestData) { d.When = d.When.Add(time.Nanosecond) },
		"time location":     func(d *digestData) { d.When = d.When.In(time.FixedZone("X", 0)) },
		"interface type":    func(d *digestData) { d.Any = int32(7) },
		"interface value":   func(d *digestData) { d.Any = int64(8) },
		"bytes":             func(d *digestData) { d.Raw = []byte("rax") },
		"unexported string": func(d *digestData) { d.private = "y" },
		"strings regrouped": func(d *digestData) { d.Items[0].Name, d.Title = "ta", "" },
	} {
		d := newDigestData()
		change(&d)
		if got, ok := dataDigest("page", "Title", d); !ok || got == base {
			t.Errorf("%s: the same digest (or none)", name)
		}
	}
	if got, _ := dataDigest("page", "Other", newDigestData()); got == base {
		t.Error("another title, the same digest")
	}
	if got, _ := dataDigest("other", "Title", newDigestData()); got == base {
		t.Error("another template, the same digest")
	}
	type deep struct{ Next *deep }
	var chain *deep
	for range maxDigestDepth + 1 {
		chain = &deep{chain}
	}
	for name, data := range map[string]any{
		"func":            struct{ F func() }{func() {}},
		"channel":         struct{ C chan int }{make(chan int)},
		"unexported time": struct{ t time.Time }{time.Now()},
		"too deep":        chain,
	} {
		if _, ok := dataDigest("page", "Title", data); ok {
			t.Errorf("%s: a digest", name)
		}
	}
}

// countedPage is the data of the "error" template whose Message the
// template reads through a method that counts the executions.
type countedPage struct {
	Title  string
	Status int
	Text   string
}

var countedMessages atomic.Int64

func (p countedPage) Message() string { countedMessages.Add(1); return p.Text }

// A page rendered again on age whose data did not change is kept as it
// was (same bytes, same ETag) without running its template; one whose
// data changed is rendered.
func TestPageRenderedAgainKeepsUnchangedData(t *testing.T) {
	c := &clock{t: time.Unix(1e9, 0)}
	s := cacheService(t, c, pageCacheBytes)
	text := "downloads: 1"
	builds := 0
	build := func(context.Context) (string, string, any, error) {
		builds++
		return "Page", "error", countedPage{Title: "Page", Status: 200, Text: text}, nil
	}
	countedMessages.Store(0)
	first := get(t, s, &visit{}, "/p", "k", build)
	if countedMessages.Load() != 1 || !strings.Contains(first.Body.String(), text) {
		t.Fatalf("first render: %d executions\n%s", countedMessages.Load(), first.Body)
	}
	again := func() *httptest.ResponseRecorder {
		c.add(pageCacheMaxAge)
		get(t, s, &visit{}, "/p", "k", build) // stale: rendered again in the background
		settle(t, s)
		return get(t, s, &visit{}, "/p", "k", build)
	}
	w := again()
	if builds != 2 || countedMessages.Load() != 1 {
		t.Errorf("same data: %d builds, %d executions of the template; want 2 and 1", builds, countedMessages.Load())
	}
	if w.Body.String() != first.Body.String() || w.Header().Get("Etag") != first.Header().Get("Etag") {
		t.Errorf("same data: another page")
	}
	if st := s.pages.Stats(); st.Entries != 1 {
		t.Errorf("entries %+v", st)
	}
	text = "downloads: 2"
	w = again()
	if builds != 3 || countedMessages.Load() != 2 || !strings.Contains(w.Body.String(), text) || w.Header().Get("Etag") == first.Header().Get("Etag") {
		t.Errorf("changed data: %d builds, %d executions, ETag %s (was %s)\n%s", builds, countedMessages.Load(), w.Header().Get("Etag"), first.Header().Get("Etag"), w.Body)
	}
	// A fresh request renders (a Load, not a rendering again): the
	// template runs.
	s.pages.InvalidateAll()
	get(t, s, &visit{}, "/p", "k", build)
	if countedMessages.Load() != 3 {
		t.Errorf("after an invalidation: %d executions, want 3", countedMessages.Load())
	}
}

// The data of real module and provider pages has a digest,
// so that their renderings again on age can keep them.
func TestPageDataDigests(t *testing.T) {
	x := &storeIndex{}
	var logged strings.Builder
	s := storeService(t, x, &logged)
	publishWidgetAndNetwork(t, s, x, `{"readme":"# network","inputs":[{"name":"cidr","type":"string"}]}`)
	md, err := s.moduleData(t.Context(), "acme", "network", "aws", "")
	if err != nil {
		t.Fatal(err)
	}
	pd, err := s.providerData(t.Context(), "acme", "widget", "")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]any{"module": md, "provider": pd} {
		if _, ok := dataDigest(name, "t", data); !ok {
			t.Errorf("%s page: no digest", name)
		}
	}
}
