package apispec

import (
	"net/url"
	"strings"
	"testing"
)

// TestCheckRepeats refuses a query parameter given twice, but the ones a
// route takes more than once.
func TestCheckRepeats(t *testing.T) {
	for _, c := range []struct {
		route, query string
		refused      string // "": accepted
	}{
		{RouteNamespaces, "", ""},
		{RouteNamespaces, "limit=1&offset=2", ""},
		{RouteModules, "limit=1&limit=1000", `"limit" is given 2 times`},
		{RouteModules, "offset=0&limit=1&offset=5&offset=9", `"offset" is given 3 times`},
		{RouteModules, "b=1&a=1&b=2&a=2", `"a" is given 2 times`},
		{RouteTokens, "namespace=acme&namespace=other", `"namespace"`},
		{RouteBundle, "provider=a/b/c@1.0.0&provider=a/b/d@1.0.0&platform=linux_amd64&platform=darwin_arm64&module=a/b/c@1.0.0&module=a/b/d@2.0.0", ""},
		{RouteBundle, "provider=a/b/c@1.0.0&confirm=x&confirm=y", `"confirm"`},
		{RouteIdentityProviders, "provider=a&provider=b", `"provider"`},
	} {
		q, err := url.ParseQuery(c.query)
		if err != nil {
			t.Fatal(err)
		}
		err = CheckRepeats(c.route, q)
		switch {
		case c.refused == "" && err != nil:
			t.Errorf("%s?%s: %v", c.route, c.query, err)
		case c.refused != "" && (err == nil || !strings.Contains(err.Error(), c.refused)):
			t.Errorf("%s?%s: %v, want an error saying %s", c.route, c.query, err, c.refused)
		}
	}
}
