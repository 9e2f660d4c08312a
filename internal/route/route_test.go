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
