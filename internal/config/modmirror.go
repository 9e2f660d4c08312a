package config

import (
	"strings"

	"trove.dev/trove/internal/registry"
)

// moduleMirrors is the repeatable --module-mirror flag: each value (or
// comma-separated list of values, as TROVE_MODULE_MIRROR gives them) adds
// mappings NAMESPACE=HOST/UPSTREAM_NAMESPACE, kept comma-separated (a
// Config stays comparable); internal/mirror parses them.
type moduleMirrors string

func (m *moduleMirrors) String() string {
	if m == nil {
		return ""
	}
	return string(*m)
}

func (m *moduleMirrors) Set(s string) error {
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		ns, rest, ok := strings.Cut(part, "=")
		host, upns, ok2 := strings.Cut(rest, "/")
		if !ok || !ok2 || ns == "" || host == "" || upns == "" {
			return registry.Errorf(registry.Invalid, "module mirror %q: want NAMESPACE=HOST/UPSTREAM_NAMESPACE, e.g. tfaws=registry.terraform.io/terraform-aws-modules", registry.Elide(part))
		}
		if *m != "" {
			*m += ","
		}
		*m += moduleMirrors(part)
	}
	return nil
}

// ModuleMirrorList returns the mappings of c.ModuleMirrors, one a string.
func (c Config) ModuleMirrorList() []string {
	var out []string
	for _, part := range strings.Split(c.ModuleMirrors, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
