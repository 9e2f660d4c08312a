package server

import (
	"net/url"

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

// nonCanonical says why u's path is not canonical, "" if it is.
func nonCanonical(u *url.URL) string {
	p := u.Path
	if u.Opaque != "" || p == "" || p[0] != '/' {
		return "it is not an absolute path"
	}
	start := 1 // of the current segment
	for i := 1; i <= len(p); i++ {
		if i < len(p) {
			switch c := p[i]; {
			case c < 0x20 || c == 0x7f:
				return "it holds a control character"
			case c == '\\':
				return "it holds a backslash"
			case c != '/':
				continue
			}
		}
		switch p[start:i] {
		case "":
			if i < len(p) {
				return "it has an empty segment"
			}
		case ".", "..":
			return "it has a \".\" or \"..\" segment"
		}
		start = i + 1
	}
	// RawPath is set only when the client encoded the path differently
	// from the default encoding, which never encodes "." or "/".
	raw := u.RawPath
	for i := 0; i+2 < len(raw); i++ {
		if raw[i] != '%' {
			continue
		}
		switch raw[i+1 : i+3] {
		case "2e", "2E", "2f", "2F", "5c", "5C":
			return "it holds an encoded \".\", \"/\" or \"\\\""
		}
	}
	return ""
}
