package web

import (
	"net/http/httptest"
	"testing"
)

// TestIsRequestURI holds isRequestURI to url.URL.RequestURI on the
// request targets a client can send, hostile ones included: a cached
// page is served as it is only to the address it was made for.
func TestIsRequestURI(t *testing.T) {
	targets := []string{
		"/", "/search", "/search?q=vpc", "/search?q=vpc&kind=module", "/search?", "/search?q=%2F%3F&x=%00",
		"/modules/acme/network/aws", "/modules/acme/net%20work/aws", "/a%2Fb", "/a/b?c", "/%E2%82%AC?q=%E2%82%AC",
		"/search?q=a+b#frag", "//evil.example/x", "/a?b?c", "/a;b?c=d",
	}
	for _, target := range targets {
		r := httptest.NewRequest("GET", target, nil)
		want := r.URL.RequestURI()
		for _, uri := range append(targets, want, want+"x", want+"?", "", "?"+r.URL.RawQuery) {
			if got := isRequestURI(r.URL, uri); got != (uri == want) {
				t.Errorf("isRequestURI(%q, %q) = %v, RequestURI is %q", target, uri, got, want)
			}
		}
	}
}
