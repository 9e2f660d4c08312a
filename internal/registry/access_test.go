package registry

import "testing"

func TestParseUserName(t *testing.T) {
	tests := map[string]string{ // input -> normalized, "" for invalid
		"alice": "alice", "Alice": "alice", "a": "a", "bot.ci-1": "bot.ci-1", "first_last": "first_last",
		"9lives": "9lives", "-alice": "", "alice-": "", ".x": "", "a b": "", "": "", "al/ice": "",
		"ünï": "", "a\x00b": "",
		"a123456789012345678901234567890123456789012345678901234567890123":  "a123456789012345678901234567890123456789012345678901234567890123",
		"a1234567890123456789012345678901234567890123456789012345678901234": "",
	}
	for in, want := range tests {
		got, err := ParseUserName(in)
		if (err == nil) != (want != "") || got != want {
			t.Errorf("ParseUserName(%q) = %q, %v; want %q", in, got, err, want)
		}
		if err != nil && !IsKind(err, Invalid) {
			t.Errorf("ParseUserName(%q): error kind %v, want invalid", in, KindOf(err))
		}
	}
}

func TestParseVisibilityAndRole(t *testing.T) {
	for in, ok := range map[string]bool{"public": true, "private": true, "": false, "Public": false, "internal": false} {
		if v, err := ParseVisibility(in); (err == nil) != ok || ok && string(v) != in {
			t.Errorf("ParseVisibility(%q) = %q, %v", in, v, err)
		}
	}
	scopes := map[string]Scope{"reader": ScopeRead, "publisher": ScopePublish, "admin": ScopeAdmin}
	for in, ok := range map[string]bool{"reader": true, "publisher": true, "admin": true, "": false, "owner": false, "Admin": false} {
		r, err := ParseRole(in)
		if (err == nil) != ok {
			t.Errorf("ParseRole(%q) = %q, %v", in, r, err)
		}
		if r.Scope() != scopes[in] {
			t.Errorf("Role(%q).Scope() = %q, want %q", in, r.Scope(), scopes[in])
		}
	}
	if (Namespace{}).Public() || !(Namespace{Visibility: VisibilityPublic}).Public() {
		t.Error("only an explicitly public namespace is public")
	}
}
