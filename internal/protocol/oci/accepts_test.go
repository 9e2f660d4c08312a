package oci

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAccepts holds accepts to the strings.Split form it replaced, on
// hostile and ordinary Accept headers.
func TestAccepts(t *testing.T) {
	split := func(vals []string, mediaType string) bool {
		if len(vals) == 0 {
			return true
		}
		for _, v := range vals {
			for _, t := range strings.Split(v, ",") {
				t, _, _ = strings.Cut(t, ";")
				t = strings.TrimSpace(t)
				if t == "" || t == "*/*" || t == mediaType {
					return true
				}
			}
		}
		return false
	}
	mt := MediaTypeManifest
	for _, c := range []struct {
		vals []string
		want bool
	}{
		{nil, true},
		{[]string{MediaTypeIndex + ", " + MediaTypeManifest}, true},
		{[]string{MediaTypeIndex}, false},
		{[]string{MediaTypeIndex, MediaTypeManifest}, true},
		{[]string{MediaTypeIndex + ";q=0.5," + MediaTypeManifest + ";q=0.9"}, true},
		{[]string{"*/*"}, true},
		{[]string{"application/json, */*;q=0.1"}, true},
		{[]string{""}, true},                        // an empty item admits anything, as before
		{[]string{MediaTypeIndex + ","}, true},      // a trailing comma is an empty item
		{[]string{",,,"}, true},                     // only empty items
		{[]string{"application/json;" + mt}, false}, // a parameter is no type
		{[]string{"application/json," + mt + "x"}, false},
		{[]string{strings.Repeat("a/b,", 1000) + mt}, true},
		{[]string{strings.Repeat("a/b,", 1000) + "c/d"}, false},
		{[]string{"  " + mt + "  ; q=1 "}, true},
		{[]string{"\t" + mt}, true},
		{[]string{strings.ToUpper(mt)}, false}, // as before: compared exactly
	} {
		r := httptest.NewRequest("GET", "/v2/", nil)
		for _, v := range c.vals {
			r.Header.Add("Accept", v)
		}
		if got := accepts(r, mt); got != c.want || got != split(c.vals, mt) {
			t.Errorf("accepts(%q) = %v, want %v (strings.Split form: %v)", c.vals, got, c.want, split(c.vals, mt))
		}
	}
}

// TestAcceptsZeroWeight: q=0 refuses what it names, and the type named
// itself overrides */*.
func TestAcceptsZeroWeight(t *testing.T) {
	mt := MediaTypeManifest
	for v, want := range map[string]bool{
		mt + ";q=0":                  false,
		mt + "; q=0.000":             false,
		mt + ";Q=0":                  false,
		mt + ";q=0.001":              true,
		mt + ";q=0.5":                true,
		mt + ";level=1;q=0":          false,
		"*/*;q=0":                    false,
		"*/*;q=0, " + mt:             true,
		mt + ";q=0, */*":             false,
		"*/*, " + mt + ";q=0":        false,
		MediaTypeIndex + ";q=0, */*": true,
		mt + ";q=0.0000":             true, // not a qvalue: no weight
		mt + ";q=00":                 true, // not a qvalue either
		mt + ";q=0," + mt + ";q=1":   true, // named twice: acceptable once is enough
	} {
		r := httptest.NewRequest("GET", "/v2/", nil)
		r.Header.Set("Accept", v)
		if got := accepts(r, mt); got != want {
			t.Errorf("accepts(%q) = %v, want %v", v, got, want)
		}
	}
}
