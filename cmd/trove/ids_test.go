package main

import (
	"strings"
	"testing"
)

// TestIDsNeverReachTheServer: a token or key ID that is not one (a path
// above all) is refused by the client before any request.
func TestIDsNeverReachTheServer(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"token", "revoke", "../namespaces/acme"}, `trove: invalid token ID "../namespaces/acme": want the ID that trove token list shows`},
		{[]string{"token", "expire", "tok_1/x", "--in", "1h"}, "trove: invalid token ID"},
		{[]string{"key", "remove", "acme", "../../x"}, `trove: invalid key ID "../../x": want the 16 hex digits that trove key list shows`},
	} {
		f := newFakeAPI(t)
		r := runTrove(t, f.env(), "", tc.args...)
		if r.code != exitError || !strings.HasPrefix(r.stderr, tc.want) {
			t.Errorf("trove %q: exit %d, stderr %q; want exit 1 and %q", tc.args, r.code, r.stderr, tc.want)
		}
		if f.last.method != "" {
			t.Errorf("trove %q sent %s %s", tc.args, f.last.method, f.last.path)
		}
	}
}
