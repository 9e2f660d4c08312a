package api

import (
	"net/http"
	"strings"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/httpjson"
)

// checkLimits returns fn behind a check of the request's path values (the
// {placeholders} of pattern) and query values against their limits (see
// apispec.CheckPathValue and apispec.CheckQuery), and of query parameters
// given more than once (apispec.CheckRepeats), so that no handler sees a
// value longer than its limit or has to choose between two. JSON bodies
// are checked when decoded.
func checkLimits(pattern string, fn httpjson.HandlerFunc) httpjson.HandlerFunc {
	names := placeholders(pattern)
	path := pattern
	if _, p, ok := strings.Cut(pattern, " "); ok {
		path = p
	}
	return func(w http.ResponseWriter, r *http.Request) error {
		for _, name := range names {
			if err := apispec.CheckPathValue(name, r.PathValue(name)); err != nil {
				return err
			}
		}
		if r.URL.RawQuery != "" {
			q := r.URL.Query()
			if err := apispec.CheckQuery(q); err != nil {
				return err
			}
			if err := apispec.CheckRepeats(path, q); err != nil {
				return err
			}
		}
		return fn(w, r)
	}
}

// placeholders returns the names of the {placeholders} of a ServeMux
// pattern, without "..." suffixes.
func placeholders(pattern string) []string {
	var names []string
	for rest := pattern; ; {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			return names
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return names
		}
		if name := strings.TrimSuffix(rest[i+1:i+j], "..."); name != "$" {
			names = append(names, name)
		}
		rest = rest[i+j+1:]
	}
}
