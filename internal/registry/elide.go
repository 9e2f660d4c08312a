package registry

import "strings"

// Elide returns s for an error message that repeats a name a request
// gave, cut to 64 bytes (at a character boundary, "..." appended), so that
// a huge value does not make a huge message.
func Elide(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	return strings.ToValidUTF8(s[:maxQuoted], "") + "..."
}
