package server

import (
	"net/url"
	"strings"

	"trove.dev/trove/internal/registry"
)

// Request paths must be canonical. Go's ServeMux answers a path with "."
// or ".." segments or an empty segment with a redirect to the cleaned path,
// an HTML page on which a management API request may land on another
// endpoint (/api/v1/namespaces/../tokens is /api/v1/tokens), and it passes
// encoded forms ("%2e%2e", "%2f") into path values unchanged. No client of
// Trove sends such a path: Terraform, OpenTofu and the Go client build
// every path from names that cannot hold "/" or "." segments. So the
// middleware answers them with the JSON error every route family uses
// (400), before any route sees them, and never with a redirect.

// pathError returns the error for a request URL whose path is not
// canonical, or nil. A canonical path is absolute, has no empty segment
// (a trailing "/" is allowed: base URLs end in one), no "." or ".."
// segment, no backslash or control character, and no percent-encoded
// ".", "/" or "\".
func pathError(u *url.URL) error {
	reason := nonCanonical(u)
	if reason == "" {
		return nil
	}
	return registry.Errorf(registry.Invalid, "the request path is not canonical: %s; send the path without \".\" or \"..\" segments, "+
		"empty segments (\"//\"), backslashes or encoded \".\", \"/\" and \"\\\"", reason)
}

// notInPath marks the bytes a canonical path never has: the ASCII control
// characters and the backslash (which some servers and proxies take for a
// "/").
var notInPath = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t[0x7f], t['\\'] = true, true
	return t
}()

// nonCanonical says why u's path is not canonical, "" if it is. It runs
// on every request, so the common case is a few substring searches.
func nonCanonical(u *url.URL) string {
	p := u.Path
	if u.Opaque != "" || p == "" || p[0] != '/' {
		return "it is not an absolute path"
	}
	if strings.Contains(p, "//") {
		return "it has an empty segment"
	}
	for rest := p; ; {
		i := strings.Index(rest, "/.")
		if i < 0 {
			break
		}
		seg := rest[i+1:]
		if j := strings.IndexByte(seg, '/'); j >= 0 {
			seg = seg[:j]
		}
		if seg == "." || seg == ".." {
			return "it has a \".\" or \"..\" segment"
		}
		rest = rest[i+2:]
	}
	for i := 0; i < len(p); i++ {
		if notInPath[p[i]] {
			return "it holds a control character or a backslash"
		}
	}
	// RawPath is set only when the client encoded the path differently
	// from the default encoding, which never escapes "." or "/".
	for rest := u.RawPath; ; {
		i := strings.IndexByte(rest, '%')
		if i < 0 || i+3 > len(rest) {
			break
		}
		switch rest[i+1 : i+3] {
		case "2e", "2E", "2f", "2F", "5c", "5C":
			return "it holds an encoded \".\", \"/\" or \"\\\""
		}
		rest = rest[i+1:]
	}
	return ""
}
