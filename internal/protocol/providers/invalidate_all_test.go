package providers

import (
	"net/http"
	"strings"
	"testing"
)

func TestInvalidateAllDropsEveryProvider(t *testing.T) {
	idx := newIndex(t, version("1.0.0", "linux_amd64"))
	other := version("2.0.0", "linux_amd64")
	other.Type = "gadget"
	idx.put(t, other)
	f := newFixture(t, idx)
	paths := []string{"/v1/providers/acme/widget/versions", "/v1/providers/acme/gadget/versions"}
	for _, p := range paths {
		f.do(t, http.MethodGet, p)
	}
	if n, _ := f.svc.CacheStats(); n != len(paths) {
		t.Fatalf("%d cached documents, want %d", n, len(paths))
	}
	idx.put(t, version("1.1.0", "linux_amd64"))
	f.svc.InvalidateAll()
	if n, bytes := f.svc.CacheStats(); n != 0 || bytes != 0 {
		t.Errorf("after InvalidateAll: %d documents, %d bytes cached; want none", n, bytes)
	}
	if got := f.do(t, http.MethodGet, paths[0]); !strings.Contains(string(got.body), `"1.1.0"`) {
		t.Errorf("after InvalidateAll: %s, want the new version listed", got.body)
	}
}
