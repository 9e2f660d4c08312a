package discovery

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"

	svchost "github.com/hashicorp/terraform-svchost"
)

// URLFields names the fields of object-valued services (login.v1's authz
// and token) that hold URLs, which Absolute resolves like string services.
var URLFields = []string{"authz", "token"}

// Absolute returns services with every relative URL resolved against base,
// the public URL of the server. A CLI configuration host block overrides
// discovery, so the client has no discovery URL to resolve relative values
// against: they must be absolute there.
func Absolute(services map[string]any, base *url.URL) map[string]any {
	resolve := func(v string) string {
		ref, err := url.Parse(v)
		if err != nil {
			return v
		}
		return base.ResolveReference(ref).String()
	}
	out := make(map[string]any, len(services))
	for id, v := range services {
		switch v := v.(type) {
		case string:
			out[id] = resolve(v)
		case map[string]any:
			obj := make(map[string]any, len(v))
			for k, fv := range v {
				if s, ok := fv.(string); ok && slices.Contains(URLFields, k) {
					fv = resolve(s)
				}
				obj[k] = fv
			}
			out[id] = obj
		default:
			out[id] = v
		}
	}
	return out
}

// HostBlock renders a Terraform/OpenTofu CLI configuration `host` block
// that gives the clients the services of hostname without service
// discovery. Values must be absolute (see Absolute); keys are sorted so the
// block is deterministic. Service values may be strings or objects of
// strings, string lists and integer lists (login.v1).
func HostBlock(hostname string, services map[string]any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "host %q {\n  services = {\n", hostname)
	for _, id := range slices.Sorted(maps.Keys(services)) {
		fmt.Fprintf(&b, "    %q = %s\n", id, hclValue(services[id], "    "))
	}
	b.WriteString("  }\n}\n")
	return b.String()
}

// hclValue renders v as an HCL expression; indent is the indentation of
// the line that holds it.
func hclValue(v any, indent string) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case int:
		return fmt.Sprint(v)
	case []string:
		parts := make([]string, len(v))
		for i, s := range v {
			parts[i] = fmt.Sprintf("%q", s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []int:
		parts := make([]string, len(v))
		for i, n := range v {
			parts[i] = fmt.Sprint(n)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		var b strings.Builder
		b.WriteString("{\n")
		for _, k := range slices.Sorted(maps.Keys(v)) {
			fmt.Fprintf(&b, "%s  %q = %s\n", indent, k, hclValue(v[k], indent+"  "))
		}
		b.WriteString(indent + "}")
		return b.String()
	default:
		return fmt.Sprintf("%q", fmt.Sprint(v))
	}
}

// LocalHostName is the host name Terraform and OpenTofu use for a Trove
// whose public URL has no dot in its host (localhost, an IP address):
// module sources need a dotted host name, and a name without a port can be
// given a token in a TF_TOKEN_ variable. Nothing resolves it: the CLI
// configuration that `trove serve` writes maps it to the public URL (a
// host block).
const LocalHostName = "trove.localhost"

// NeedsLocalHostName reports whether the public URL's host cannot be a
// module host by itself.
func NeedsLocalHostName(publicURL string) bool {
	u, err := url.Parse(publicURL)
	if err != nil {
		return false
	}
	host := u.Hostname()
	return !strings.Contains(host, ".") || net.ParseIP(host) != nil
}

// RegistryHost is the host name that source addresses of this registry
// start with: the public URL's host (with its port, if any), or
// LocalHostName when that host cannot be a module host.
func RegistryHost(publicURL string) string {
	if NeedsLocalHostName(publicURL) {
		return LocalHostName
	}
	u, err := url.Parse(publicURL)
	if err != nil {
		return LocalHostName
	}
	return strings.ToLower(u.Host)
}

// IsOwnHost reports whether host (normalized as svchost.ForComparison
// does) is a name that sources use for the Trove at publicURL: the public
// URL's host, or the RegistryHost the banner gives the clients
// (trove.localhost for a public URL on localhost or an IP address). Every
// place that tells Trove's own providers and modules from other
// registries' asks this.
func IsOwnHost(publicURL string, host svchost.Hostname) bool {
	u, err := url.Parse(publicURL)
	if err != nil {
		return false
	}
	if own, err := svchost.ForComparison(u.Host); err == nil && own == host {
		return true
	}
	alias, err := svchost.ForComparison(RegistryHost(publicURL))
	return err == nil && alias == host
}
