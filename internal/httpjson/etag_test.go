package httpjson

import "testing"

func TestMatchETag(t *testing.T) {
	const etag = `"abc"`
	tests := map[string]bool{
		``:                 false,
		`"abc"`:            true,
		`W/"abc"`:          true,
		`*`:                true,
		`"x", "abc"`:       true,
		`"x",W/"abc"`:      true,
		`"x"`:              false,
		`"abcd"`:           false,
		`abc`:              false,
		`"abc`:             false,
		` , "abc" `:        true,
		`"ab"c"`:           false,
		`"x", garbage`:     false,
		`W/`:               false,
		"\t\"abc\"":        true,
		`"x", "y", "abc"x`: true,
	}
	for in, want := range tests {
		if got := MatchETag(in, etag); got != want {
			t.Errorf("MatchETag(%q, %q) = %v, want %v", in, etag, got, want)
		}
	}
}
