package providers

import (
	"net/http"
	"testing"

	"trove.dev/trove/internal/downloads"
	"trove.dev/trove/internal/registry"
)

// TestDownloadsCounted: a download document answered with 200 to a GET
// counts, from the cache or not; HEAD, 304, a missing platform and the
// versions document do not.
func TestDownloadsCounted(t *testing.T) {
	idx := newIndex(t, version("1.0.0", "linux_amd64", "darwin_arm64"))
	counter, err := downloads.New(downloads.Options{Store: idx.Index})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, idx, WithDownloadCounter(counter))
	const path = "/v1/providers/acme/widget/1.0.0/download/linux/amd64"
	var etag string
	for range 3 {
		r := f.do(t, http.MethodGet, path)
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: %d", path, r.status)
		}
		etag = r.header.Get("ETag")
	}
	for _, c := range []struct {
		r    response
		want int
	}{
		{f.do(t, http.MethodHead, path), http.StatusOK},
		{f.do(t, http.MethodGet, path, "If-None-Match", etag), http.StatusNotModified},
		{f.do(t, http.MethodGet, "/v1/providers/acme/widget/1.0.0/download/windows/amd64"), http.StatusNotFound},
		{f.do(t, http.MethodGet, "/v1/providers/acme/widget/9.0.0/download/linux/amd64"), http.StatusNotFound},
		{f.do(t, http.MethodGet, "/v1/providers/acme/widget/versions"), http.StatusOK},
	} {
		if c.r.status != c.want {
			t.Fatalf("answer %d %s, want %d", c.r.status, c.r.body, c.want)
		}
	}
	if r := f.do(t, http.MethodGet, "/v1/providers/ACME/widget/1.0.0/download/darwin/arm64"); r.status != http.StatusOK {
		t.Fatalf("GET of another spelling: %d", r.status)
	}
	got, err := counter.ProviderDownloads(t.Context(), "acme", "widget")
	if err != nil {
		t.Fatal(err)
	}
	want := map[registry.DownloadKey]int64{
		registry.ProviderDownload("acme", "widget", "1.0.0", "linux", "amd64"):  3,
		registry.ProviderDownload("acme", "widget", "1.0.0", "darwin", "arm64"): 1, // counted under the normalized names
	}
	if len(got) != len(want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	for _, c := range got {
		if want[c.DownloadKey] != c.Count {
			t.Errorf("count %+v, want %d", c, want[c.DownloadKey])
		}
	}
	if err := counter.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	stored, err := idx.ProviderDownloads(t.Context(), "acme", "widget")
	if err != nil || registry.DownloadTotal(stored) != 4 {
		t.Errorf("stored after the flush: %v, %v; want 4 in all", stored, err)
	}
}
