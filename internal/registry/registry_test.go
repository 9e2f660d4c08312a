package registry

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseVersion(t *testing.T) {
	tests := map[string]bool{
		"1.0.0": true, "0.0.1": true, "10.20.30": true, "1.0.0-beta.1": true, "1.0.0+build.5": true,
		"1.0.0-rc1+meta": true, "v1.0.0": false, "1.0": false, "1": false, "01.0.0": false,
		"1.0.0.0": false, "": false, "1.0.0-": false, "1.0.0+": false, "1.0.0 ": false, "1.0.0_1": false,
		"1.0.0-rc.01": false, "1.0.0-00": false, "1.0.0-0": true, "1.0.0-rc.0": true, "1.0.0-0a": true, "1.0.0-01a": true,
		"1.0.0-x-1.2-3": true, "1.0.0-rc..1": false, "1.0.0+build.01": true,
		"1.0.0-beta..1": false, "V1.2.3": false,
	}
	for in, ok := range tests {
		t.Run(in, func(t *testing.T) {
			_, err := ParseVersion(in)
			if (err == nil) != ok {
				t.Fatalf("ParseVersion(%q) error = %v, want ok=%v", in, err, ok)
			}
			if err != nil && !IsKind(err, Invalid) {
				t.Fatalf("error kind = %v, want invalid", KindOf(err))
			}
		})
	}
	// A number too large for the clients: Trove's words, not strconv's.
	_, err := ParseVersion("99999999999999999999.0.0")
	if err == nil || !IsKind(err, Invalid) || !strings.Contains(err.Error(), "too large") || strings.Contains(err.Error(), "strconv") {
		t.Errorf("ParseVersion of an overflowing number = %v, want Trove's own message", err)
	}
}

func TestParseNames(t *testing.T) {
	tests := []struct {
		in, ns, typ string
		nsOK, typOK bool
	}{
		{"acme", "acme", "acme", true, true},
		{"ACME", "acme", "acme", true, true},
		{"my-team", "my-team", "my-team", true, true},
		{"terraform-foo", "terraform-foo", "", true, false},
		{"a_b", "", "", false, false},
		{"-x", "", "", false, false},
		{"a--b", "", "", false, false},
		{"../x", "", "", false, false},
		{"", "", "", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			ns, err := ParseNamespace(tt.in)
			if (err == nil) != tt.nsOK || ns != tt.ns {
				t.Errorf("ParseNamespace(%q) = %q, %v", tt.in, ns, err)
			}
			typ, err := ParseProviderType(tt.in)
			if (err == nil) != tt.typOK || typ != tt.typ {
				t.Errorf("ParseProviderType(%q) = %q, %v", tt.in, typ, err)
			}
		})
	}
}

// TestParseNewNamespace: a namespace to create is ASCII once normalized.
func TestParseNewNamespace(t *testing.T) {
	for in, want := range map[string]string{"acme": "acme", "ACME": "acme", "\uff41\uff43\uff4d\uff45": "acme", "\u0430cme": "", "caf\u00e9": "", "../x": ""} {
		got, err := ParseNewNamespace(in)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("ParseNewNamespace(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestSortNewestFirst(t *testing.T) {
	vs := []ProviderVersion{{Version: "1.2.0"}, {Version: "1.10.0"}, {Version: "1.10.0-beta"}, {Version: "0.9.9"}, {Version: "2.0.0"}}
	SortNewestFirst(vs, func(v ProviderVersion) string { return v.Version })
	want := []string{"2.0.0", "1.10.0", "1.10.0-beta", "1.2.0", "0.9.9"}
	for i, v := range vs {
		if v.Version != want[i] {
			t.Fatalf("position %d = %s, want %s (all: %v)", i, v.Version, want[i], vs)
		}
	}
}

func TestTokenAllows(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	global := Token{ID: "g", Scopes: []Scope{ScopeAdmin}}
	pub := Token{ID: "p", Namespaces: []string{"acme"}, Scopes: []Scope{ScopePublish}}
	two := Token{ID: "two", Namespaces: []string{"acme", "beta"}, Scopes: []Scope{ScopePublish}}
	expired := Token{ID: "e", Scopes: []Scope{ScopeAdmin}, ExpiresAt: now}
	revoked := Token{ID: "r", Scopes: []Scope{ScopeAdmin}, RevokedAt: now.Add(-time.Second)}
	tests := []struct {
		tok   Token
		scope Scope
		ns    string
		want  bool
	}{
		{global, ScopeAdmin, "", true},
		{global, ScopeRead, "acme", true},
		{pub, ScopePublish, "acme", true},
		{pub, ScopeRead, "acme", true},
		{pub, ScopeAdmin, "acme", false},
		{pub, ScopePublish, "other", false},
		{pub, ScopeRead, "", false},
		{expired, ScopeRead, "acme", false},
		{revoked, ScopeRead, "acme", false},
		{pub, Scope("bogus"), "acme", false},
		{two, ScopePublish, "acme", true},
		{two, ScopePublish, "beta", true},
		{two, ScopePublish, "gamma", false},
		{two, ScopeAdmin, "beta", false},
		{two, ScopeRead, "", false},
	}
	for _, tt := range tests {
		if got := tt.tok.Allows(tt.scope, tt.ns, now); got != tt.want {
			t.Errorf("token %s Allows(%s, %q) = %v, want %v", tt.tok.ID, tt.scope, tt.ns, got, tt.want)
		}
	}
}

func TestParseNamespaces(t *testing.T) {
	for _, tt := range []struct {
		in      []string
		want    []string
		invalid bool
	}{
		{in: nil, want: nil},
		{in: []string{"Beta", "acme", "beta", "ACME"}, want: []string{"acme", "beta"}},
		{in: []string{"acme", ""}, invalid: true},
		{in: []string{"acme", "no/slash"}, invalid: true},
	} {
		got, err := ParseNamespaces(tt.in)
		if tt.invalid {
			if KindOf(err) != Invalid {
				t.Errorf("ParseNamespaces(%q) = %q, %v; want an Invalid error", tt.in, got, err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseNamespaces(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestVersionPrecedence(t *testing.T) {
	for in, want := range map[string]string{
		"1.0.0": "1.0.0", "1.0.0+build.5": "1.0.0", "1.0.0-rc.1+meta": "1.0.0-rc.1", "1.0.0-rc.1": "1.0.0-rc.1",
	} {
		if got := VersionPrecedence(in); got != want {
			t.Errorf("VersionPrecedence(%q) = %q, want %q", in, got, want)
		}
	}
	stored := []string{"0.9.0", "1.0.0-rc.1", "1.0.0+build.1"}
	id := func(s string) string { return s }
	if got, ok := SamePrecedence("1.0.0", stored, id); !ok || got != "1.0.0+build.1" {
		t.Errorf("SamePrecedence(1.0.0) = %q, %v; want 1.0.0+build.1", got, ok)
	}
	if got, ok := SamePrecedence("1.0.0-rc.2", stored, id); ok {
		t.Errorf("SamePrecedence(1.0.0-rc.2) = %q, want none", got)
	}
	if err := PrecedenceConflict("provider acme/cloud", "1.0.0+b", "1.0.0"); KindOf(err) != Conflict ||
		!strings.Contains(err.Error(), "same precedence as the published version 1.0.0") {
		t.Errorf("PrecedenceConflict = %v", err)
	}
}
