package oci

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestReferenceGrammar holds tagRE and digestRE to the regular
// expressions of the specification they are written out from, on hostile
// and random references.
func TestReferenceGrammar(t *testing.T) {
	tagSpec := regexp.MustCompile(`^[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}$`)
	digestSpec := regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
	hex64 := strings.Repeat("0123456789abcdef", 4)
	refs := []string{
		"", "1.0.0", "v1.2.3_beta", "latest", "_x", ".x", "-x", "x-", "x.", "a/b", "../x", "x y", "x\n",
		"x\x00", "é", "1.0.0+meta", "A_Z-0.9", strings.Repeat("a", 128), strings.Repeat("a", 129),
		"sha256:" + hex64, "sha256:" + strings.ToUpper(hex64), "sha256:" + hex64[:63], "sha256:" + hex64 + "0",
		"sha512:" + hex64, "SHA256:" + hex64, "sha256:" + hex64[:63] + "g", "sha256:", ":" + hex64,
		"sha256:" + hex64 + "\n",
	}
	const alphabet = "aZ09_.-:/ \x00\xffé+sha256f"
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		refs = append(refs, string(b), "sha256:"+hex64[:60]+string(b))
	}
	for _, ref := range refs {
		if got, want := tagRE.MatchString(ref), tagSpec.MatchString(ref); got != want {
			t.Errorf("tagRE.MatchString(%q) = %v, the specification's expression says %v", ref, got, want)
		}
		if got, want := digestRE.MatchString(ref), digestSpec.MatchString(ref); got != want {
			t.Errorf("digestRE.MatchString(%q) = %v, the specification's expression says %v", ref, got, want)
		}
	}
}
