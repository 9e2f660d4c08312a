package registry

import (
	"strings"

	goversion "github.com/hashicorp/go-version"
)

// MatchMirrorRule reports whether a MirrorRule's Provider pattern
// ("namespace/type", where "*" stands for any one namespace or type)
// matches namespace/typ.
func MatchMirrorRule(pattern, namespace, typ string) bool {
	pns, ptyp, ok := strings.Cut(pattern, "/")
	if !ok {
		return false
	}
	return (pns == "*" || strings.EqualFold(pns, namespace)) && (ptyp == "*" || strings.EqualFold(ptyp, typ))
}

// CheckMirrorRule validates a MirrorRule as an operator writes it.
func CheckMirrorRule(r MirrorRule) error {
	if err := CheckMirrorPattern(r.Provider); err != nil {
		return err
	}
	if err := CheckVersionConstraint(r.Versions); err != nil {
		return Errorf(Invalid, "mirror rule %q: %s", r.Provider, Message(err))
	}
	return nil
}

// CheckMirrorPattern validates a MirrorRule's Provider pattern.
func CheckMirrorPattern(pattern string) error {
	ns, typ, ok := strings.Cut(pattern, "/")
	if !ok || ns == "" || typ == "" || strings.Contains(typ, "/") {
		return Errorf(Invalid, "mirror rule %q: write it as namespace/type, with * for any namespace or type (hashicorp/*, */*)", Elide(pattern))
	}
	if ns != "*" {
		if _, err := ParseNamespace(ns); err != nil {
			return Errorf(Invalid, "mirror rule %q: %s", Elide(pattern), Message(err))
		}
	}
	if typ != "*" {
		if _, err := ParseProviderType(typ); err != nil {
			return Errorf(Invalid, "mirror rule %q: %s", Elide(pattern), Message(err))
		}
	}
	return nil
}

// CheckVersionConstraint validates a version constraint such as
// "~> 5.0" or ">= 1.2, < 2.0" (empty: any version).
func CheckVersionConstraint(c string) error {
	if c == "" {
		return nil
	}
	if _, err := goversion.NewConstraint(c); err != nil {
		return Errorf(Invalid, "versions %q is not a version constraint (such as \"~> 5.0\" or \">= 1.2, < 2.0\"): %v", Elide(c), err)
	}
	return nil
}
