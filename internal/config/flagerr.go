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
		return "unknown flag --" + strings.TrimPrefix(name, "-")
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
