package apispec

import "testing"

func TestTokenNamespacesText(t *testing.T) {
	for _, tc := range []struct {
		tok    Token
		global bool
		want   string
	}{
		{Token{}, true, "every namespace"},
		{Token{Namespaces: []string{"acme"}}, false, "namespace acme"},
		{Token{Namespace: "acme"}, false, "namespace acme"},
		{Token{Namespaces: []string{"acme", "labs"}}, false, "namespaces acme, labs"},
		{Token{Namespaces: []string{"acme"}, HiddenNamespaces: 1}, false, "namespaces acme, 1 namespace you may not see"},
		{Token{HiddenNamespaces: 2}, false, "namespaces 2 namespaces you may not see"},
	} {
		if got := tc.tok.Global(); got != tc.global {
			t.Errorf("%+v: Global() = %v, want %v", tc.tok, got, tc.global)
		}
		if got := tc.tok.NamespacesText(); got != tc.want {
			t.Errorf("%+v: NamespacesText() = %q, want %q", tc.tok, got, tc.want)
		}
	}
}
