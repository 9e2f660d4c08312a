package httpjson

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
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
		Tags  map[string]string `json:"tags,omitempty"`
		Raw   json.RawMessage   `json:"raw,omitempty"`
		Items []struct {
			Name string `json:"name"`
		} `json:"items,omitempty"`
		Any any `json:"any,omitempty"`
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
		// Map keys, and what a RawMessage or an interface holds, are not
		// struct fields: keys differing in case are two keys there.
		{body: `{"name":"a","tags":{"Name":"x","name":"y"}}`, want: "a"},
		{body: `{"name":"a","tags":{"k":"x","k":"y"}}`, kind: registry.Invalid},
		{body: `{"name":"a","raw":{"Name":1,"name":2}}`, want: "a"},
		{body: `{"name":"a","any":{"Name":1,"name":2}}`, want: "a"},
		{body: `{"name":"a","any":{"n":1,"n":2}}`, kind: registry.Invalid},
		{body: `{"name":"a","items":[{"name":"b"},{"name":"c","NAME":"d"}]}`, kind: registry.Invalid},
		{body: `{"name":"a","items":[{"name":"b"},{"name":"c"}]}`, want: "a"},
		{body: `{"name":"a"}}`, kind: registry.Invalid},
		{body: `{"name":"a"}]`, kind: registry.Invalid},
		{body: `{"name":"a"}{"name":"b"}`, kind: registry.Invalid},
		{body: `{"name":"a"} x`, kind: registry.Invalid},
		{body: `{"name":"a"`, kind: registry.Invalid},
		{body: `{"name":"a","other":1}`, kind: registry.Invalid},
		{body: ``, kind: registry.Invalid},
		{body: `{"name":"` + strings.Repeat("a", 200) + `"}`, kind: registry.TooLarge},
		{body: `{"name":"a"}`, length: 1 << 40, kind: registry.TooLarge},
	} {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(c.body))
		if c.length != 0 {
			r.ContentLength = c.length
		} else {
			r.ContentLength = -1 // as a chunked body: only reading finds its size
		}
		var v doc
		err := Decode(httptest.NewRecorder(), r, 128, &v)
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

// TestUnmarshalBundleManifestMetadata: a bundle's module metadata is raw
// JSON copied from the stored module, whose variable defaults may hold
// map keys that differ only in case; the manifest is no less valid.
func TestUnmarshalBundleManifestMetadata(t *testing.T) {
	doc := `{"format":"trove-bundle/1","modules":[{"namespace":"acme","name":"net","system":"aws","version":"1.0.0",` +
		`"metadata":{"root":{"inputs":[{"name":"tags","default":{"Name":"a","name":"b"}}]}}}]}`
	var m apispec.BundleManifest
	if err := Unmarshal([]byte(doc), &m, "bundle manifest.json"); err != nil {
		t.Fatalf("Unmarshal = %v, want the manifest accepted", err)
	}
	twice := strings.Replace(doc, `"version":"1.0.0"`, `"version":"1.0.0","Version":"2.0.0"`, 1)
	if err := Unmarshal([]byte(twice), &m, "bundle manifest.json"); err == nil || !strings.Contains(err.Error(), "more than once") {
		t.Errorf("Unmarshal of a module named with two versions = %v, want it refused", err)
	}
}
