package modules

import (
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
)

// TestPackedNames holds module.index on packed names to a scan of the
// versions themselves, on ordinary and odd version lists.
func TestPackedNames(t *testing.T) {
	for _, c := range [][]string{
		nil,
		{"1.0.0"},
		{"2.0.0", "1.10.0", "1.9.0", "1.0.0-rc.1+build.5"},
		{"1.0.0", "1.0.0"}, // a duplicate: the first wins, as before
		{"", "1.0.0", ""},  // empty strings (the index holds none)
		{strings.Repeat("9", 300), "1.2.3", "0.0.1"},
	} {
		vs := make([]registry.ModuleVersion, len(c))
		for i, v := range c {
			vs[i].Version = v
		}
		m := &module{versions: vs, names: packedNames(vs)}
		if len(m.names) != len(vs) {
			t.Fatalf("%q: %d names", c, len(m.names))
		}
		for _, q := range append(append([]string{}, c...), "1.0", "1.0.0 ", "1.0.00", "2.0.0\x00", "x") {
			want := -1
			for i := range vs {
				if vs[i].Version == q {
					want = i
					break
				}
			}
			if got := m.index(q); got != want {
				t.Errorf("%q: index(%q) = %d, want %d", c, q, got, want)
			}
		}
	}
}
