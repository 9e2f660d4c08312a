package registry

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// IdentityProvider is an OpenID Connect provider people sign in with
// (single sign-on): the web UI's sign-in page and the login page of
// `terraform login` offer one button per provider. It is stored in the
// index, so every replica offers the same ones.
type IdentityProvider struct {
	// Name is the provider's name in URLs (/oauth/sso/<name>/callback):
	// see ParseIdentityProviderName.
	Name string
	// DisplayName is shown on the sign-in buttons ("Sign in with ...");
	// Name when empty.
	DisplayName string
	// Issuer is the issuer URL: its discovery document is at
	// <Issuer>/.well-known/openid-configuration, and ID tokens must carry
	// it as "iss" exactly.
	Issuer string
	// ClientID is Trove's client at the provider; ID tokens must name it
	// in "aud".
	ClientID string
	// ClientSecretEnv names the environment variable (of every replica)
	// that holds the client secret; "" for a public client (PKCE only).
	// The secret is never stored in the index. The name must start with
	// ClientSecretEnvPrefix, so that the setting cannot send another
	// variable of the server's environment to an issuer.
	ClientSecretEnv string
	// Scopes are requested besides "openid" (e.g. profile, email, groups).
	Scopes []string
	// UsernameClaim names the claim a new user's name is derived from
	// (DefaultUsernameClaim when empty); see SSOUserName.
	UsernameClaim string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

// Defaults and bounds of identity providers and role mappings.
const (
	DefaultUsernameClaim  = "preferred_username"
	ClientSecretEnvPrefix = "TROVE_OIDC_SECRET_"
	// GlobalAdminNamespace is the namespace of a role mapping that grants
	// the global admin flag instead of a namespace role.
	GlobalAdminNamespace         = "*"
	MaxIdentityProviderName      = 32
	MaxIdentityProviderScopes    = 20
	MaxRoleMappingsPerProvider   = 1000
	maxIssuerLength              = 512
	maxClaimLength               = 128
	maxClaimValueLength          = 256
	maxClientIDLength            = 256
	maxScopeLength               = 128
	maxDisplayNameLength         = 64
	maxClientSecretEnvNameLength = 128
)

var (
	idpNamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	envNamePattern = regexp.MustCompile(`^[A-Z0-9_]+$`)
	claimPattern   = regexp.MustCompile(`^[A-Za-z0-9_.:/-]+$`)
	scopePattern   = regexp.MustCompile(`^[\x21\x23-\x5b\x5d-\x7e]+$`) // RFC 6749 scope-token
)

// ParseIdentityProviderName validates the name of an identity provider:
// 1 to 32 lowercase letters, digits and '-', starting and ending with a
// letter or digit (it is a path segment of the redirect URI).
func ParseIdentityProviderName(name string) (string, error) {
	if err := CheckLength("identity provider name", name, MaxIdentityProviderName); err != nil {
		return "", err
	}
	if !idpNamePattern.MatchString(name) {
		return "", Errorf(Invalid, "invalid identity provider name %s: use 1 to %d lowercase letters, digits and '-', starting and ending with a letter or digit", quote(name), MaxIdentityProviderName)
	}
	return name, nil
}

// Check validates p as the API, the client and the index accept it.
func (p IdentityProvider) Check() error {
	if _, err := ParseIdentityProviderName(p.Name); err != nil {
		return err
	}
	if err := CheckText("display name", p.DisplayName, maxDisplayNameLength); err != nil {
		return err
	}
	if err := CheckLength("issuer", p.Issuer, maxIssuerLength); err != nil {
		return err
	}
	u, err := url.Parse(p.Issuer)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" ||
		!(u.Scheme == "https" || u.Scheme == "http" && isLoopback(u.Hostname())) {
		return Errorf(Invalid, "invalid issuer %s: use the https URL of the OpenID provider, without query or fragment (http only for localhost)", quote(p.Issuer))
	}
	if p.ClientID == "" {
		return Errorf(Invalid, "the client ID is missing: register Trove as a client at the provider and give its ID")
	}
	if err := CheckText("client ID", p.ClientID, maxClientIDLength); err != nil {
		return err
	}
	if p.ClientSecretEnv != "" {
		if err := CheckLength("client secret variable", p.ClientSecretEnv, maxClientSecretEnvNameLength); err != nil {
			return err
		}
		if !strings.HasPrefix(p.ClientSecretEnv, ClientSecretEnvPrefix) || len(p.ClientSecretEnv) == len(ClientSecretEnvPrefix) || !envNamePattern.MatchString(p.ClientSecretEnv) {
			return Errorf(Invalid, "invalid client secret variable %s: name an environment variable of A-Z, 0-9 and '_' that starts with %s", quote(p.ClientSecretEnv), ClientSecretEnvPrefix)
		}
	}
	if len(p.Scopes) > MaxIdentityProviderScopes {
		return Errorf(Invalid, "too many scopes: %d, the limit is %d", len(p.Scopes), MaxIdentityProviderScopes)
	}
	for _, s := range p.Scopes {
		if len(s) > maxScopeLength || !scopePattern.MatchString(s) {
			return Errorf(Invalid, "invalid scope %s: a scope is one word of printable ASCII without quotes or backslashes", quote(s))
		}
	}
	if p.UsernameClaim != "" {
		if err := checkClaim("user name claim", p.UsernameClaim); err != nil {
			return err
		}
	}
	return nil
}

func checkClaim(field, claim string) error {
	if len(claim) > maxClaimLength || !claimPattern.MatchString(claim) {
		return Errorf(Invalid, "invalid %s %s: use a claim name of letters, digits and _ . : / -, at most %d bytes", field, quote(claim), maxClaimLength)
	}
	return nil
}

// isLoopback reports whether host is localhost or a loopback IP address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Label returns the name shown on the provider's sign-in button.
func (p IdentityProvider) Label() string {
	if p.DisplayName != "" {
		return p.DisplayName
	}
	return p.Name
}

// RoleMapping is a rule of an identity provider: a person whose ID token
// has Value in the claim Claim (a string equal to it, or a list holding
// it) gets Role in Namespace, or the global admin flag when Namespace is
// GlobalAdminNamespace (Role is then RoleAdmin). Rules are evaluated at
// every sign-in through the provider.
type RoleMapping struct {
	ID        int64 // assigned by the index
	Provider  string
	Claim     string // e.g. "groups"
	Value     string // e.g. "platform"
	Namespace string // a namespace name or GlobalAdminNamespace
	Role      Role
	CreatedAt time.Time
}

// Check validates m as the API, the client and the index accept it.
func (m RoleMapping) Check() error {
	if _, err := ParseIdentityProviderName(m.Provider); err != nil {
		return err
	}
	if err := checkClaim("claim", m.Claim); err != nil {
		return err
	}
	if m.Value == "" {
		return Errorf(Invalid, "the claim value is missing")
	}
	if err := CheckText("claim value", m.Value, maxClaimValueLength); err != nil {
		return err
	}
	if _, err := ParseRole(string(m.Role)); err != nil {
		return err
	}
	if m.Namespace == GlobalAdminNamespace {
		if m.Role != RoleAdmin {
			return Errorf(Invalid, "a mapping to %q (global admin) must have the role admin", GlobalAdminNamespace)
		}
		return nil
	}
	if m.Namespace == "" {
		return Errorf(Invalid, "the namespace is missing: name a namespace, or %q for the global admin flag", GlobalAdminNamespace)
	}
	return NamespaceLimit.Check(m.Namespace)
}

// Identity links a person at an identity provider (the issuer's "iss"
// and "sub") to a Trove user. Names and e-mail addresses are never used
// to link: they can change or be reused.
type Identity struct {
	Issuer   string
	Subject  string
	User     string
	Provider string // the provider it was first seen through
	// CreatedAt is the first sign-in, LastLoginAt the latest.
	CreatedAt   time.Time
	LastLoginAt time.Time
}

// RoleGrant is a role the role mappings give a user in a namespace.
type RoleGrant struct {
	Namespace string
	Role      Role
}

// RoleChange is one change of a user's rights made by the role mappings
// at a sign-in: a membership set or removed, or the admin flag.
type RoleChange struct {
	Namespace string // GlobalAdminNamespace for the admin flag
	Role      Role   // the role set; "" when removed
	Removed   bool
}

// String says the change for the audit log.
func (c RoleChange) String() string {
	switch {
	case c.Namespace == GlobalAdminNamespace && c.Removed:
		return "global admin flag cleared by role mapping"
	case c.Namespace == GlobalAdminNamespace:
		return "global admin flag set by role mapping"
	case c.Removed:
		return fmt.Sprintf("removed from namespace %s by role mapping", c.Namespace)
	}
	return fmt.Sprintf("role %s in namespace %s by role mapping", c.Role, c.Namespace)
}

// Audit actions of single sign-on.
const (
	AuditIdentityProviderPut    = "identity_provider.put"
	AuditIdentityProviderDelete = "identity_provider.delete"
	AuditRoleMappingCreate      = "role_mapping.create"
	AuditRoleMappingDelete      = "role_mapping.delete"
	AuditAdminSet               = "user.admin"
)

// SSOUserName derives the name of a user created at a first sign-in
// from a claim value (a preferred_username, or an e-mail address whose
// local part is taken): lowercased, every character ParseUserName
// refuses replaced by '-', trimmed to a letter or digit at both ends and
// to 56 bytes (room for a suffix that makes it unique). It returns
// fallback when nothing is left.
func SSOUserName(claim, fallback string) string {
	if i := strings.IndexByte(claim, '@'); i >= 0 {
		claim = claim[:i]
	}
	var b strings.Builder
	for _, r := range strings.ToLower(claim) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	name := b.String()
	if len(name) > MaxUserNameLength-8 {
		name = name[:MaxUserNameLength-8]
	}
	name = strings.TrimFunc(name, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') })
	if _, err := ParseUserName(name); err != nil {
		return fallback
	}
	return name
}
