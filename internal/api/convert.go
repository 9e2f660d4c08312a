package api

import (
	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

// The conversions between the public documents of package apispec, which
// name no internal type so that code outside the module can use them,
// and the domain's types.

// deprecationDoc returns the document of d, nil for nil.
func deprecationDoc(d *registry.Deprecation) *apispec.Deprecation {
	if d == nil {
		return nil
	}
	return &apispec.Deprecation{Reason: d.Reason, Link: d.Link, DeprecatedAt: d.At, DeprecatedBy: d.By}
}

// revocationDoc returns the document of r, nil for nil.
func revocationDoc(r *registry.Revocation) *apispec.Revocation {
	if r == nil {
		return nil
	}
	return &apispec.Revocation{Reason: r.Reason, RevokedAt: r.At, RevokedBy: r.By}
}

// identityProvider returns the request r as the identity provider name.
func identityProvider(r apispec.PutIdentityProviderRequest, name string) registry.IdentityProvider {
	return registry.IdentityProvider{Name: name, DisplayName: r.DisplayName, Issuer: r.Issuer, ClientID: r.ClientID,
		ClientSecretEnv: r.ClientSecretEnv, Scopes: r.Scopes, UsernameClaim: r.UsernameClaim}
}

// roleMapping returns the request r as a role mapping.
func roleMapping(r apispec.CreateRoleMappingRequest) registry.RoleMapping {
	return registry.RoleMapping{Provider: r.Provider, Claim: r.Claim, Value: r.Value, Namespace: r.Namespace, Role: registry.Role(r.Role)}
}

// retentionRule returns the rule the request r sets on namespace,
// checked (registry.CheckRetentionRule).
func retentionRule(r apispec.RetentionRequest, namespace string) (registry.RetentionRule, error) {
	within, err := apispec.ParseRetentionDuration(r.KeepWithin)
	if err != nil {
		return registry.RetentionRule{}, err
	}
	rule := registry.RetentionRule{Namespace: namespace, KeepLast: r.KeepLast, KeepWithin: within, Pin: r.Pin}
	return rule, registry.CheckRetentionRule(rule)
}
