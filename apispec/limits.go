package apispec

import (
	"net/url"
	"sort"
	"strings"

	"trove.dev/trove/internal/registry"
)

// The limits of internal/registry applied to everything a request of this
// API carries: path values, query values and the fields of the JSON
// request documents. The server checks them before it acts on a request
// (the JSON documents when they are decoded), the client before it sends
// one, so both answer a value that is too long with the same message.

// otherLimit bounds a path or query value this file names no limit for.
const otherLimit = 256

// pathLimits are the limits of the {placeholders} of the route patterns.
var pathLimits = map[string]registry.Limit{
	"namespace":   registry.NamespaceLimit,
	"type":        registry.ProviderTypeLimit,
	"version":     registry.VersionLimit,
	"name":        registry.ModuleNameLimit,
	"system":      registry.ModuleSystemLimit,
	"user":        registry.UserNameLimit,
	"id":          registry.TokenIDLimit,
	"key_id":      registry.KeyIDLimit,
	"host":        registry.HostLimit,
	"policy_id":   registry.TrustPolicyIDLimit,
	"webhook_id":  registry.WebhookIDLimit,
	"delivery_id": registry.DeliveryIDLimit,
}

// queryLimits are the limits of the query parameters of the routes.
var queryLimits = map[string]registry.Limit{
	ModuleQueryParam:  registry.SearchQueryLimit,
	ModuleSystemParam: registry.ModuleSystemLimit,
	ModuleOriginParam: registry.OriginLimit,
	// The full address of a module version: namespace/name/system/version.
	ModuleConfirmParam: {Field: ModuleConfirmParam, Max: registry.MaxNamespaceLength + registry.MaxModuleNameLength +
		registry.MaxModuleSystemLength + registry.MaxVersionLength + 3},
	"namespace":       registry.NamespaceLimit,
	"user":            registry.UserNameLimit,
	"actor":           registry.AuditActorLimit,
	"action":          registry.AuditActionLimit,
	WebhookLimitParam: {Field: WebhookLimitParam, Max: 4},
}

// textParams are the query parameters that carry free text to be stored
// (the origin of a module version): they get registry.CheckText, one line
// of UTF-8 without control characters, not only the length limit.
var textParams = map[string]bool{ModuleOriginParam: true}

// pathGrammars are the placeholders whose values the server only looks up
// (token and key IDs): their grammar is checked with the limit, so that
// neither the client nor the server takes "../namespaces/acme" for an ID.
// Names have their grammar checked by the handlers' Parse functions.
var pathGrammars = map[string]func(string) (string, error){
	"id":          registry.ParseTokenID,
	"key_id":      registry.ParseKeyID,
	"policy_id":   registry.ParseTrustPolicyID,
	"webhook_id":  registry.ParseWebhookID,
	"delivery_id": registry.ParseDeliveryID,
}

// CheckPathValue checks the value of the route placeholder {name} against
// its limit, and token and key IDs against their grammar.
func CheckPathValue(name, value string) error {
	l, ok := pathLimits[name]
	if !ok {
		l = registry.Limit{Field: strings.ReplaceAll(name, "_", " "), Max: otherLimit}
	}
	if parse := pathGrammars[name]; parse != nil {
		_, err := parse(value)
		return err
	}
	return l.Check(value)
}

// CheckQuery checks every value of the query parameters q against the
// limit of its parameter (and the free text of textParams against
// registry.CheckText), in the order of the parameter names.
func CheckQuery(q url.Values) error {
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		l, ok := queryLimits[name]
		if !ok {
			l = registry.Limit{Field: "query parameter " + name, Max: otherLimit}
		}
		check := l.Check
		if textParams[name] {
			check = l.CheckText
		}
		for _, v := range q[name] {
			if err := check(v); err != nil {
				return err
			}
		}
	}
	return nil
}

// repeatable are the query parameters a route (its path, as RouteBundle)
// takes more than once. Any other parameter given more than once is
// refused (CheckRepeats): which of two limits, confirmations or
// namespaces counts would be ambiguous, and a proxy or a log could read
// another one than the server.
var repeatable = map[string]map[string]bool{
	RouteBundle: {BundleProviderParam: true, BundleModuleParam: true, BundlePlatformParam: true},
}

// CheckRepeats refuses a query parameter q gives more than once, unless
// route (the path of a route pattern, as RouteBundle) takes it more than
// once.
func CheckRepeats(route string, q url.Values) error {
	names := make([]string, 0, len(q))
	for name, vs := range q {
		if len(vs) > 1 && !repeatable[route][name] {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	return registry.Errorf(registry.Invalid, "query parameter %q is given %d times: give it once", registry.Elide(names[0]), len(q[names[0]]))
}

// firstError returns the first non-nil error of errs.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Validate checks the limits of the request's fields, and its description
// with registry.CheckText.
func (r CreateNamespaceRequest) Validate() error {
	return firstError(registry.NamespaceLimit.Check(r.Name), registry.DescriptionLimit.CheckText(r.Description))
}

// Validate checks the limits of the request's fields, and its description
// with registry.CheckText.
func (r UpdateNamespaceRequest) Validate() error {
	if r.Description == nil {
		return nil
	}
	return registry.DescriptionLimit.CheckText(*r.Description)
}

// Validate checks the limits of the request's fields, and its description
// with registry.CheckText.
func (r CreateTokenRequest) Validate() error {
	if len(r.Namespaces) > registry.MaxTokenNamespaces {
		return registry.Errorf(registry.Invalid, "a token is bound to at most %d namespaces, not %d: make it global, or use several tokens",
			registry.MaxTokenNamespaces, len(r.Namespaces))
	}
	for _, ns := range r.Namespaces {
		if err := registry.NamespaceLimit.Check(ns); err != nil {
			return err
		}
	}
	return firstError(registry.NamespaceLimit.Check(r.Namespace), registry.UserNameLimit.Check(r.User),
		registry.DescriptionLimit.CheckText(r.Description))
}

// Validate checks the limits of the request's fields. Its messages never
// contain the password.
func (r CreateUserRequest) Validate() error {
	return firstError(registry.UserNameLimit.Check(r.Name), registry.PasswordLimit.Check(r.Password))
}

// Validate checks the limits of the request's fields. Its messages never
// contain a password.
func (r UpdateUserRequest) Validate() error {
	for _, p := range []*string{r.Password, r.CurrentPassword} {
		if p != nil {
			if err := registry.PasswordLimit.Check(*p); err != nil {
				return err
			}
		}
	}
	return nil
}
