package web

import (
	"fmt"
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
)

// TestNameMemo holds each memo to its parser on hostile names, asked
// twice (the second time a remembered name answers), and checks that
// only names the parser returns unchanged are remembered, at most
// maxKnownNames of them.
func TestNameMemo(t *testing.T) {
	hostile := []string{"acme", "ACME", "Acme", "acme-corp", "-acme", "acme-", "a--b", "xn--bcher-kva", "bücher", "ac me",
		"acme\x00", "acme/x", "../acme", "", strings.Repeat("a", 64), strings.Repeat("a", 65), strings.Repeat("a", 10000),
		"terraform-aws", "aws", "AWS", "aws_2", "my_module", "_x", "x_", "%61cme", "acme\n", "\u0430cme", "１２３"}
	for _, c := range []struct {
		name  string
		memo  *nameMemo
		parse func(string) (string, error)
	}{
		{"namespace", namespaceNames, registry.ParseNamespace},
		{"module name", moduleNames, registry.ParseModuleName},
		{"module system", moduleSystems, registry.ParseModuleSystem},
		{"provider type", providerTypes, registry.ParseProviderType},
	} {
		for _, in := range hostile {
			want, wantErr := c.parse(in)
			for round := range 2 {
				got, err := c.memo.get(in)
				if got != want || (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error() {
					t.Errorf("%s %q, round %d: %q, %v; the parser says %q, %v", c.name, in, round, got, err, want, wantErr)
				}
			}
			c.memo.mu.RLock()
			_, known := c.memo.known[in]
			c.memo.mu.RUnlock()
			if known != (wantErr == nil && want == in) {
				t.Errorf("%s %q: remembered %v, want %v (the parser gives %q, %v)", c.name, in, known, !known, want, wantErr)
			}
		}
	}

	m := &nameMemo{parse: registry.ParseNamespace}
	for i := range 3 * maxKnownNames {
		name := fmt.Sprintf("ns%d", i)
		if got, err := m.get(name); err != nil || got != name {
			t.Fatalf("%q: %q, %v", name, got, err)
		}
		if n := len(m.known); n > maxKnownNames {
			t.Fatalf("%d names remembered, want at most %d", n, maxKnownNames)
		}
	}
}
