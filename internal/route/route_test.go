package route

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

func TestRecorderRegistersAndRecords(t *testing.T) {
	rec := &Recorder{Mux: http.NewServeMux()}
	var reg Registrar = rec
	reg.HandleFunc("GET /a/{x}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	reg.Handle("/b/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) }))
	if got, want := rec.Patterns(), []string{"GET /a/{x}", "/b/"}; !slices.Equal(got, want) {
		t.Fatalf("patterns %q, want %q", got, want)
	}
	for path, want := range map[string]int{"/a/1": http.StatusTeapot, "/b/c": http.StatusAccepted, "/c": http.StatusNotFound} {
		w := httptest.NewRecorder()
		rec.Mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != want {
			t.Errorf("GET %s: %d, want %d", path, w.Code, want)
		}
	}
	rec.Patterns()[0] = "changed"
	if rec.Patterns()[0] != "GET /a/{x}" {
		t.Error("Patterns shares its slice with the recorder")
	}
}

// TestAllowed lists the methods a path is routed for beside the
// catch-alls, sorted as an Allow header, and none for a path only a
// catch-all takes.
func TestAllowed(t *testing.T) {
	mux := http.NewServeMux()
	ok := func(http.ResponseWriter, *http.Request) {}
	mux.HandleFunc("GET /a/{x}", ok)
	mux.HandleFunc("POST /a/{x}", ok)
	mux.HandleFunc("DELETE /a/b", ok)
	mux.HandleFunc("POST /only-post", ok)
	mux.HandleFunc("/", ok)
	mux.HandleFunc("/api/", ok)
	for _, c := range []struct {
		method, path string
		want         []string
	}{
		{http.MethodPut, "/a/1", []string{"GET", "HEAD", "POST"}},
		{http.MethodPut, "/a/b", []string{"DELETE", "GET", "HEAD", "POST"}},
		{http.MethodGet, "/only-post", []string{"POST"}},
		{http.MethodHead, "/only-post", []string{"POST"}},
		{http.MethodGet, "/nothing", nil},
		{http.MethodPost, "/api/x", nil},
		{"BREW", "/a/1", []string{"GET", "HEAD", "POST"}},
	} {
		if got := Allowed(mux, httptest.NewRequest(c.method, c.path, nil), "/", "/api/"); !slices.Equal(got, c.want) {
			t.Errorf("%s %s: %q, want %q", c.method, c.path, got, c.want)
		}
	}
}
