package registry

import (
	"errors"
	"strings"
	"testing"
)

func TestParseScope(t *testing.T) {
	for _, s := range Scopes {
		if got, err := ParseScope(string(s)); err != nil || got != s {
			t.Errorf("ParseScope(%q) = %q, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "Admin", "write", " read"} {
		if _, err := ParseScope(s); !IsKind(err, Invalid) || !strings.Contains(Message(err), "use read, publish or admin") {
			t.Errorf("ParseScope(%q) = %v, want Invalid", s, err)
		}
	}
}

func TestCheckDigest(t *testing.T) {
	good := strings.Repeat("0123456789abcdef", 4)
	if err := CheckDigest(good); err != nil {
		t.Errorf("CheckDigest(%s): %v", good, err)
	}
	for _, bad := range []string{"", good[:63], good + "0", strings.ToUpper(good), "../" + good[3:], good[:63] + "g"} {
		if err := CheckDigest(bad); !IsKind(err, Invalid) {
			t.Errorf("CheckDigest(%q) = %v, want Invalid", bad, err)
		}
	}
}

func TestSortNewestFirstModules(t *testing.T) {
	vs := []ModuleVersion{{Version: "0.1.0"}, {Version: "junk"}, {Version: "1.0.0-rc.1"}, {Version: "1.0.0"}}
	SortNewestFirst(vs, func(v ModuleVersion) string { return v.Version })
	want := []string{"1.0.0", "1.0.0-rc.1", "0.1.0", "junk"}
	for i, v := range vs {
		if v.Version != want[i] {
			t.Fatalf("position %d = %s, want %s (all: %v)", i, v.Version, want[i], vs)
		}
	}
}

func TestCheckPrecedence(t *testing.T) {
	id := func(s string) string { return s }
	stored := func() ([]string, error) { return []string{"1.0.0+build.1", "2.0.0"}, nil }
	if err := CheckPrecedence("provider acme/foo", "1.0.0", stored, id); !IsKind(err, Conflict) ||
		!strings.Contains(err.Error(), "provider acme/foo version 1.0.0 has the same precedence as the published version 1.0.0+build.1") {
		t.Errorf("1.0.0 beside 1.0.0+build.1: %v", err)
	}
	if err := CheckPrecedence("provider acme/foo", "1.1.0", stored, id); err != nil {
		t.Errorf("1.1.0: %v", err)
	}
	none := func() ([]string, error) { return nil, Errorf(NotFound, "no provider") }
	if err := CheckPrecedence("provider acme/foo", "1.0.0", none, id); err != nil {
		t.Errorf("first version: %v", err)
	}
	broken := errors.New("index down")
	if err := CheckPrecedence("provider acme/foo", "1.0.0", func() ([]string, error) { return nil, broken }, id); !errors.Is(err, broken) {
		t.Errorf("failing list: %v", err)
	}
}

func TestResolveCreateConflict(t *testing.T) {
	createErr := Errorf(Conflict, "same precedence")
	existing := func(v string) (PublishResult[string], error) { return PublishResult[string]{Version: v}, nil }
	if _, err := ResolveCreateConflict(createErr, func() (string, error) { return "", Errorf(NotFound, "none") }, existing); err != createErr {
		t.Errorf("no version of that name: %v, want the create error", err)
	}
	if res, err := ResolveCreateConflict(createErr, func() (string, error) { return "1.0.0", nil }, existing); err != nil || res.Version != "1.0.0" || res.Created {
		t.Errorf("a concurrent publish won: %+v, %v", res, err)
	}
}
