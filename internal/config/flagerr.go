package config

import (
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"
)

// FlagErrorMessage rewrites an error of fs.Parse into the style of every
// trove command: flags named with two dashes, and a bad value answered
// with what the flag wants:
//
//	unknown flag --bogus
//	--expires-in: want a duration such as 24h, got "abc"
//	--limit needs a value
//
// Other errors keep their text.
func FlagErrorMessage(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		name = strings.TrimPrefix(name, "-")
		var names []string
		fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if near := Closest(name, names); near != "" {
			return "unknown flag --" + name + " (did you mean --" + near + "?)"
		}
		return "unknown flag --" + name
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "--" + strings.TrimPrefix(name, "-") + " needs a value"
	}
	// "invalid value %q for flag -%s: %v", and for a bool flag
	// "invalid boolean value %q for -%s: %v".
	rest, ok := strings.CutPrefix(msg, "invalid value ")
	if !ok {
		if rest, ok = strings.CutPrefix(msg, "invalid boolean value "); !ok {
			return msg
		}
	}
	quoted, err2 := strconv.QuotedPrefix(rest)
	if err2 != nil {
		return msg
	}
	value, _ := strconv.Unquote(quoted)
	rest = rest[len(quoted):]
	if rest, ok = strings.CutPrefix(rest, " for flag -"); !ok {
		if rest, ok = strings.CutPrefix(rest, " for -"); !ok {
			return msg
		}
	}
	name, cause, _ := strings.Cut(rest, ": ")
	var f *flag.Flag
	if fs != nil {
		f = fs.Lookup(name)
	}
	if f == nil {
		return msg
	}
	if want := flagWants(f); want != "" {
		return fmt.Sprintf("--%s: want %s, got %q", name, want, value)
	}
	return fmt.Sprintf("--%s: %s", name, cause)
}

// flagWants says what a flag of a basic type takes ("" for other types,
// whose Set error says it).
func flagWants(f *flag.Flag) string {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return ""
	}
	switch g.Get().(type) {
	case time.Duration:
		return "a duration such as 24h, 90m or 30s"
	case int, int64:
		return "a whole number"
	case uint, uint64:
		return "a whole number, 0 or more"
	case float64:
		return "a number"
	case bool:
		return "true or false"
	case slog.Level, *slog.Level:
		return "debug, info, warn or error"
	}
	return ""
}

// Closest returns the candidate nearest to word, for a "did you mean"
// hint: the one with the fewest single-character edits, if that is at
// most a third of word's length (and at least one), or the one candidate
// word is a prefix of; "" when none is close.
func Closest(word string, candidates []string) string {
	if len(word) > 64 {
		return "" // no name is that long; and the distance costs len(word) × len(candidate)
	}
	best, bestDist := "", len(word)/3
	if bestDist < 1 {
		bestDist = 1
	}
	prefixed := ""
	for _, c := range candidates {
		if d := editDistance(word, c); d <= bestDist && (best == "" || d < bestDist) {
			best, bestDist = c, d
		}
		if len(word) >= 3 && strings.HasPrefix(c, word) {
			if prefixed != "" && prefixed != c {
				prefixed = "\x00" // more than one: no hint
			} else if prefixed == "" {
				prefixed = c
			}
		}
	}
	if best == "" && prefixed != "\x00" {
		best = prefixed
	}
	return best
}

// editDistance is the edit distance of a and b (bytes) counting an
// insertion, a deletion, a substitution or a swap of two neighbours as one
// edit (optimal string alignment): "lsit" is one edit from "list".
func editDistance(a, b string) int {
	rows := make([][]int, len(a)+1)
	for i := range rows {
		rows[i] = make([]int, len(b)+1)
		rows[i][0] = i
	}
	for j := range rows[0] {
		rows[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d := min(rows[i-1][j]+1, rows[i][j-1]+1, rows[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d = min(d, rows[i-2][j-2]+1)
			}
			rows[i][j] = d
		}
	}
	return rows[len(a)][len(b)]
}
