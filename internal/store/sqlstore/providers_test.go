package sqlstore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"trove.dev/trove/internal/registry"
)

// TestPlatformSet checks that every version gets exactly its platforms,
// each slice capped at its length, whatever the order the rows come in
// and however the chunks cut the runs: runs that fit a chunk, runs moved
// to the next chunk, runs too long to move, interleaved versions.
func TestPlatformSet(t *testing.T) {
	type row struct {
		i int32
		p registry.Platform
	}
	for _, tc := range []struct {
		name       string
		chunk      int
		maxPerVer  int
		shuffle    bool // every row anywhere
		late       bool // one row of the middle comes last
		contiguous bool // whether the runs stay in the chunks
	}{
		{"grouped, large chunks", 1024, 6, false, false, true},
		{"grouped, a smaller first chunk", 4096, 20, false, false, true},
		{"grouped, runs moved to the next chunk", 8, 3, false, false, true},
		{"grouped, runs moved, then one row late", 8, 3, false, true, false},
		{"grouped, runs longer than half a chunk", 4, 9, false, false, false},
		{"interleaved", 8, 5, true, false, false},
		{"interleaved, one platform a chunk", 1, 3, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(tc.chunk)))
			const versions = 300
			want := make([][]registry.Platform, versions)
			var rows []row
			for i := range versions {
				for j := range rng.IntN(tc.maxPerVer + 1) {
					p := registry.Platform{OS: fmt.Sprint("os", j), Arch: "amd64", Filename: fmt.Sprintf("f-%d-%d.zip", i, j),
						SHA256: fmt.Sprintf("%064x", i*100+j), Size: int64(i*100 + j), H1: fmt.Sprint("h1:", i, j)}
					if j%3 == 2 {
						p.H1 = ""
					}
					want[i] = append(want[i], p)
					rows = append(rows, row{int32(i), p})
				}
			}
			if tc.shuffle {
				rng.Shuffle(len(rows), func(a, b int) { rows[a], rows[b] = rows[b], rows[a] })
			}
			if tc.late {
				for m := len(rows) / 2; ; m++ { // a row of a version with more than one
					if rows[m].i == rows[m+1].i {
						r := rows[m]
						rows = append(slices.Delete(rows, m, m+1), r)
						break
					}
				}
			}
			s := newPlatformSet(versions, tc.chunk, &rowText{})
			for _, r := range rows {
				s.add(r.i, r.p.OS, r.p.Arch, r.p.Size, []byte(r.p.Filename), []byte(r.p.SHA256), []byte(r.p.H1))
			}
			s.finish()
			if s.contiguous != tc.contiguous {
				t.Errorf("contiguous = %v, want %v", s.contiguous, tc.contiguous)
			}
			for i := range versions {
				got := s.of(i)
				sortPlatforms(got)
				sortPlatforms(want[i])
				if !slices.Equal(got, want[i]) {
					t.Fatalf("version %d: got %+v\nwant %+v", i, got, want[i])
				}
				if cap(got) != len(got) {
					t.Errorf("version %d: capacity %d for %d platforms", i, cap(got), len(got))
				}
			}
		})
	}
}
