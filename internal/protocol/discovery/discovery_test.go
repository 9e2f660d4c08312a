package discovery

import (
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	svchost "github.com/hashicorp/terraform-svchost"
	"github.com/hashicorp/terraform-svchost/disco"
)

// newTLSServer serves h at Path over TLS, as the real clients require.
func newTLSServer(t *testing.T, h *Handler) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("GET "+Path, h)
	ts := httptest.NewTLSServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

func TestDiscoveryWithTerraformClient(t *testing.T) {
	h, err := New(map[string]any{ProvidersV1: "/v1/providers/"})
	if err != nil {
		t.Fatal(err)
	}
	ts := newTLSServer(t, h)

	d := disco.New()
	d.Transport = ts.Client().Transport // trusts the test certificate
	host, err := svchost.ForComparison(strings.TrimPrefix(ts.URL, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.DiscoverServiceURL(host, ProvidersV1)
	if err != nil {
		t.Fatalf("DiscoverServiceURL: %v", err)
	}
	if want := ts.URL + "/v1/providers/"; got.String() != want {
		t.Fatalf("providers.v1 = %s, want %s", got, want)
	}
	var notProvided *disco.ErrServiceNotProvided
	if u, err := d.DiscoverServiceURL(host, "modules.v1"); !errors.As(err, &notProvided) {
		t.Fatalf("modules.v1 = %v, %v; want ErrServiceNotProvided", u, err)
	}
}

func TestDiscoveryResponse(t *testing.T) {
	h, err := New(map[string]any{ProvidersV1: "/v1/providers/"})
	if err != nil {
		t.Fatal(err)
	}
	ts := newTLSServer(t, h)
	c := ts.Client()

	resp, err := c.Get(ts.URL + Path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		t.Fatalf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
	var doc map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if len(doc) != 1 || doc[ProvidersV1] != "/v1/providers/" {
		t.Fatalf("document %v", doc)
	}
	etag := resp.Header.Get("ETag")
	if !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `"`) || len(etag) < 3 {
		t.Fatalf("ETag %q is not a strong quoted tag", etag)
	}

	for _, tc := range []struct {
		inm  string
		want int
	}{
		{etag, http.StatusNotModified},
		{"W/" + etag, http.StatusNotModified},
		{`"other"`, http.StatusOK},
	} {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+Path, nil)
		req.Header.Set("If-None-Match", tc.inm)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("If-None-Match %s: status %d, want %d", tc.inm, resp.StatusCode, tc.want)
		}
	}

	req, _ := http.NewRequest(http.MethodHead, ts.URL+Path, nil)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ContentLength != int64(len(h.Body())) {
		t.Fatalf("HEAD: status %d, length %d, want 200 and %d", resp.StatusCode, resp.ContentLength, len(h.Body()))
	}
}

func TestNewRejectsBadBases(t *testing.T) {
	tests := map[string]bool{
		"/v1/providers/":                 true,
		"https://trove.example/v1/p/":    true,
		"/v1/providers":                  false, // clients append without adding "/"
		"v1/providers/":                  false, // would resolve under /.well-known/
		"//evil.example/v1/":             false,
		"ftp://trove.example/v1/":        false,
		"https:///v1/":                   false,
		"https://trove.example/v1/p?x=1": false,
	}
	for base, ok := range tests {
		_, err := New(map[string]any{ProvidersV1: base})
		if (err == nil) != ok {
			t.Errorf("New(%q) error = %v, want ok=%v", base, err, ok)
		}
	}
	// Object values (login.v1) are passed through untouched.
	h, err := New(map[string]any{ProvidersV1: "/v1/providers/", "login.v1": map[string]any{"client": "trove"}})
	if err != nil || !strings.Contains(string(h.Body()), `"login.v1":{"client":"trove"}`) {
		t.Fatalf("New with an object service: %v, body %s", err, h.Body())
	}
}
