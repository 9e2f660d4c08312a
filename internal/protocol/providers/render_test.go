package providers

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestRenderMirrorIndexAsJSON holds renderMirrorIndex to the bytes of
// json.Marshal of the document, hostile versions (of another host's
// mirror) included.
func TestRenderMirrorIndexAsJSON(t *testing.T) {
	for _, vs := range [][]string{
		nil,
		{"1.0.0"},
		{"2.0.0", "1.10.0", "1.2.0", "1.2.0", "1.0.0-rc.1+build_7"},
		{`1.0.0"x`, "<script>", "a\\b", "\x00", "é", "\u2028", "1.0.0", "&amp;", ""},
	} {
		doc := mirrorIndexDoc{Versions: map[string]struct{}{}}
		for _, v := range vs {
			doc.Versions[v] = struct{}{}
		}
		want, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		got, err := renderMirrorIndex(vs)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("renderMirrorIndex(%q) = %s, %v; want %s", vs, got, err, want)
		}
	}
}
