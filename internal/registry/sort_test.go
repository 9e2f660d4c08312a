package registry

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	version "github.com/hashicorp/go-version"
)

// TestSortNewestFirstAgreesWithGoVersion holds SortNewestFirst's fast
// comparisons to go-version's Compare (as SortNewestFirst compared
// before): the same order, stable, for releases, pre-releases, build
// metadata, duplicates, versions of other segment counts and junk.
func TestSortNewestFirstAgreesWithGoVersion(t *testing.T) {
	parts := []string{"0", "1", "2", "10", "11"}
	pres := []string{"", "", "", "-rc.1", "-rc.2", "-rc.10", "-beta", "-alpha.1", "-1", "-alpha.beta"}
	metas := []string{"", "", "+build.1", "+b2"}
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 50 {
		var vs []string
		for range 1 + rng.IntN(60) {
			switch rng.IntN(20) {
			case 0:
				vs = append(vs, "junk"+parts[rng.IntN(len(parts))])
			case 1:
				vs = append(vs, parts[rng.IntN(len(parts))]+"."+parts[rng.IntN(len(parts))])
			case 2:
				vs = append(vs, []string{"v1.2.3", "01.2.3", "1.02.3", "1.2.03", "1.2.3.4", "1.2.3.", ".1.2.3", "1..2", "1.2.3x",
					"1234567890123456789.0.0", "123456789012345678.0.0", "00.0.0", "0.0.0"}[rng.IntN(13)])
			default:
				vs = append(vs, parts[rng.IntN(len(parts))]+"."+parts[rng.IntN(len(parts))]+"."+parts[rng.IntN(len(parts))]+
					pres[rng.IntN(len(pres))]+metas[rng.IntN(len(metas))])
			}
		}
		type item struct {
			v string
			i int // the position before sorting: stability
		}
		items := make([]item, len(vs))
		for i, v := range vs {
			items[i] = item{v, i}
		}
		want := slices.Clone(items)
		slices.SortStableFunc(want, func(a, b item) int {
			pa, ea := version.NewSemver(a.v)
			pb, eb := version.NewSemver(b.v)
			switch {
			case ea != nil && eb != nil:
				return strings.Compare(a.v, b.v)
			case ea != nil:
				return 1
			case eb != nil:
				return -1
			}
			return pb.Compare(pa)
		})
		got := slices.Clone(items)
		SortNewestFirst(got, func(it item) string { return it.v })
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: SortNewestFirst(%q)\n got  %v\n want %v", round, vs, got, want)
		}
	}
}
