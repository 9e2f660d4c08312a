package httpjson

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
)

// TestDecodeRefusesHostileBodies decodes hostile JSON bodies: each is
// refused with its kind, and the accepted ones decode as written.
func TestDecodeRefusesHostileBodies(t *testing.T) {
	type doc struct {
		Name   string   `json:"name"`
		Scopes []string `json:"scopes,omitempty"`
		Inner  *struct {
			Name string `json:"name"`
		} `json:"inner,omitempty"`
	}
	for _, c := range []struct {
		body   string
		length int64         // the declared Content-Length; 0: the body's
		kind   registry.Kind // of the refusal
		want   string        // the name decoded: "" for bodies to refuse
	}{
		{body: `{"name":"a"}`, want: "a"},
		{body: " {\"name\":\"a\"}\n\t", want: "a"},
		{body: `{"name":"a","inner":{"name":"b"}}`, want: "a"},
		{body: `{"name":"a","scopes":["x","x"]}`, want: "a"}, // a repeated value is no repeated member
		{body: `[{"name":"a"},{"name":"a"}]`, kind: registry.Invalid},
		{body: `{"name":"a","name":"b"}`, kind: registry.Invalid},
		{body: `{"name":"a","NAME":"b"}`, kind: registry.Invalid},
		{body: `{"scopes":[],"ſcopes":["admin"]}`, kind: registry.Invalid}, // U+017F folds to "s"
		{body: `{"name":"a","inner":{"name":"b","Name":"c"}}`, kind: registry.Invalid},
		{body: `{"name":"a"}}`, kind: registry.Invalid},
		{body: `{"name":"a"}]`, kind: registry.Invalid},
		{body: `{"name":"a"}{"name":"b"}`, kind: registry.Invalid},
		{body: `{"name":"a"} x`, kind: registry.Invalid},
		{body: `{"name":"a"`, kind: registry.Invalid},
		{body: `{"name":"a","other":1}`, kind: registry.Invalid},
		{body: ``, kind: registry.Invalid},
		{body: `{"name":"` + strings.Repeat("a", 100) + `"}`, kind: registry.TooLarge},
		{body: `{"name":"a"}`, length: 1 << 40, kind: registry.TooLarge},
	} {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(c.body))
		if c.length != 0 {
			r.ContentLength = c.length
		} else {
			r.ContentLength = -1 // as a chunked body: only reading finds its size
		}
		var v doc
		err := Decode(httptest.NewRecorder(), r, 64, &v)
		switch {
		case c.want != "" && err != nil:
			t.Errorf("%q: %v", c.body, err)
		case c.want != "" && v.Name != c.want:
			t.Errorf("%q: name %q, want %q", c.body, v.Name, c.want)
		case c.want == "" && (err == nil || registry.KindOf(err) != c.kind):
			t.Errorf("%q: %v (kind %v), want kind %v", c.body, err, registry.KindOf(err), c.kind)
		}
	}
}
