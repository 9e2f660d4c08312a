package httpjson

import "strings"

// MatchETag reports whether an If-None-Match header value matches etag (a
// quoted entity tag) with the weak comparison RFC 9110 prescribes for
// If-None-Match: "*", or any listed tag equal to etag ignoring a W/ prefix.
// A malformed list never matches. It does not allocate, so cached
// responses can use it on their hot path.
func MatchETag(ifNoneMatch, etag string) bool {
	s := ifNoneMatch
	for {
		s = strings.TrimLeft(s, " \t,")
		if s == "" {
			return false
		}
		if s[0] == '*' {
			return true
		}
		s = strings.TrimPrefix(s, "W/")
		if s == "" || s[0] != '"' {
			return false
		}
		end := strings.IndexByte(s[1:], '"')
		if end < 0 {
			return false
		}
		if s[:end+2] == etag {
			return true
		}
		s = s[end+2:]
	}
}
