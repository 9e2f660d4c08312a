package registry

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// TrustPolicy lets a CI system publish to a namespace without a stored
// secret ("keyless publishing"): an OpenID Connect ID token of Issuer,
// minted for Audience, whose claims match every one of Conditions, is
// exchanged for a short-lived service token bound to Namespace with
// Scope, living TokenTTL.
type TrustPolicy struct {
	ID        string // "tp_" and 16 hex digits, see ParseTrustPolicyID
	Namespace string
	// Issuer is the issuer URL exactly as the tokens' "iss" claim writes
	// it, compared byte for byte (no trailing slash is added or removed:
	// GitHub Actions writes https://token.actions.githubusercontent.com,
	// GitLab https://gitlab.com). https only; http for a loopback host.
	Issuer string
	// Audience is a value the tokens' "aud" claim must contain; the API
	// stores the registry's public URL when none is given.
	Audience string
	// Conditions map a claim name to a pattern its value must match (see
	// MatchClaim). Only string claims match. A policy has at least one.
	Conditions map[string]string
	// Scope is what the issued token may do: ScopePublish or ScopeRead.
	Scope Scope
	// TokenTTL is how long an issued token lives.
	TokenTTL    time.Duration
	Description string
	CreatedAt   time.Time
}

// Limits of trust policies.
const (
	// DefaultTrustTokenTTL is the lifetime of issued tokens when a policy
	// names none.
	DefaultTrustTokenTTL = 15 * time.Minute
	// MinTrustTokenTTL and MaxTrustTokenTTL bound TrustPolicy.TokenTTL.
	MinTrustTokenTTL = time.Minute
	MaxTrustTokenTTL = time.Hour
	// MaxTrustConditions bounds the conditions of one policy.
	MaxTrustConditions = 32
	// MaxTrustPolicies bounds the policies of one namespace.
	MaxTrustPolicies = 100
	// MaxIssuerLength bounds an issuer URL and an audience.
	MaxIssuerLength = 512
	// MaxClaimNameLength and MaxClaimPatternLength bound a condition.
	MaxClaimNameLength    = 64
	MaxClaimPatternLength = 512
)

// Limits of the fields of a trust policy, for requests.
var (
	IssuerLimit        = Limit{"issuer", MaxIssuerLength}
	AudienceLimit      = Limit{"audience", MaxIssuerLength}
	ClaimNameLimit     = Limit{"claim name", MaxClaimNameLength}
	ClaimPatternLimit  = Limit{"claim pattern", MaxClaimPatternLength}
	TrustPolicyIDLimit = Limit{"trust policy ID", 32}
	ScopeLimit         = Limit{"scope", 16}
)

// MaxIDTokenBytes bounds the CI ID tokens an exchange reads. GitHub's and
// GitLab's are 1 to 3 KiB.
const MaxIDTokenBytes = 16 << 10

// reservedClaims are the claims that the verification itself checks;
// conditions on them are refused (the audience has its own field).
var reservedClaims = []string{"iss", "aud", "exp", "nbf", "iat", "jti"}

var claimNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.:-]*$`)

var trustPolicyIDPattern = regexp.MustCompile(`^tp_[0-9a-f]{16}$`)

// ParseTrustPolicyID checks the ID of a trust policy in a request: "tp_"
// and 16 lower-case hex digits.
func ParseTrustPolicyID(s string) (string, error) {
	if err := TrustPolicyIDLimit.Check(s); err != nil {
		return "", err
	}
	if !trustPolicyIDPattern.MatchString(s) {
		return "", Errorf(Invalid, "invalid trust policy ID %s: want the ID that trove trust-policy list shows, such as tp_0123456789abcdef", quote(s))
	}
	return s, nil
}

// CheckIssuer validates an issuer URL: absolute, https (http only for a
// loopback host: localhost, 127.0.0.1, ::1), without user information,
// query or fragment.
func CheckIssuer(issuer string) error {
	if err := IssuerLimit.CheckText(issuer); err != nil {
		return err
	}
	u, err := url.Parse(issuer)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return Errorf(Invalid, "issuer %s is not an absolute URL: write it as the tokens' iss claim does, such as https://token.actions.githubusercontent.com", quote(issuer))
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(issuer, "#") {
		return Errorf(Invalid, "issuer %s: an issuer URL has no user information, query or fragment", quote(issuer))
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && loopbackHost(u.Hostname()):
	case u.Scheme == "http":
		return Errorf(Invalid, "issuer %s: http is only allowed for a loopback host (localhost, 127.0.0.1, ::1); use https", quote(issuer))
	default:
		return Errorf(Invalid, "issuer %s: want an https URL", quote(issuer))
	}
	return nil
}

func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckTrustPolicy validates p as it is about to be stored: namespace,
// issuer, a non-empty audience, one to MaxTrustConditions conditions with
// valid claim names (none of the reserved iss, aud, exp, nbf, iat, jti)
// and patterns that do not match everything, scope read or publish, a
// TokenTTL between MinTrustTokenTTL and MaxTrustTokenTTL, and the
// description.
func CheckTrustPolicy(p TrustPolicy) error {
	if _, err := ParseNamespace(p.Namespace); err != nil {
		return err
	}
	if err := CheckIssuer(p.Issuer); err != nil {
		return err
	}
	if strings.TrimSpace(p.Audience) == "" {
		return Errorf(Invalid, "a trust policy needs an audience: the aud the CI system puts in its tokens (default: this registry's URL)")
	}
	if err := AudienceLimit.CheckText(p.Audience); err != nil {
		return err
	}
	if len(p.Conditions) == 0 {
		return Errorf(Invalid, "a trust policy needs at least one condition on the token's claims (such as repository = \"acme/infra\"): "+
			"without one it would trust every pipeline of the issuer")
	}
	if len(p.Conditions) > MaxTrustConditions {
		return Errorf(Invalid, "a trust policy has at most %d conditions, not %d", MaxTrustConditions, len(p.Conditions))
	}
	for _, name := range slices.Sorted(mapKeys(p.Conditions)) {
		if err := checkCondition(name, p.Conditions[name]); err != nil {
			return err
		}
	}
	switch p.Scope {
	case ScopePublish, ScopeRead:
	default:
		return Errorf(Invalid, "a trust policy's scope is publish or read, not %s", quote(string(p.Scope)))
	}
	if p.TokenTTL < MinTrustTokenTTL || p.TokenTTL > MaxTrustTokenTTL {
		return Errorf(Invalid, "a trust policy's token lifetime is between %s and %s, not %s", MinTrustTokenTTL, MaxTrustTokenTTL, p.TokenTTL)
	}
	return DescriptionLimit.CheckText(p.Description)
}

func checkCondition(name, pattern string) error {
	if err := ClaimNameLimit.Check(name); err != nil {
		return err
	}
	if !claimNamePattern.MatchString(name) {
		return Errorf(Invalid, "invalid claim name %s: use letters, digits, '_', '.', ':' and '-', as the issuer names its claims (repository, ref, project_path)", quote(name))
	}
	if slices.Contains(reservedClaims, name) {
		return Errorf(Invalid, "claim %s is checked by the verification itself and cannot be a condition (the audience has its own field)", name)
	}
	if err := ClaimPatternLimit.CheckText(pattern); err != nil {
		return err
	}
	if strings.Trim(pattern, "*?") == "" {
		// Wildcards alone ("*", "?*", "*?*") match every value, or
		// every value of a length: no condition at all.
		return Errorf(Invalid, "condition %s = %s matches every value: name the values to trust (wildcards * and ? may stand for parts)", name, quote(pattern))
	}
	return nil
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// MatchClaim reports whether value matches pattern: "*" stands for any
// run of characters ("/" included), "?" for exactly one character; every
// other character stands for itself (no escapes, case-sensitive).
func MatchClaim(pattern, value string) bool {
	p, v := []rune(pattern), []rune(value)
	pi, vi := 0, 0
	star, mark := -1, 0
	for vi < len(v) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == v[vi]):
			pi++
			vi++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, vi
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			vi = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}

// MatchClaims checks the claims of a verified token against the policy's
// conditions in the order of the claim names. It returns "" when all
// match, else why the first one does not, naming the claim and the
// token's value but not the pattern (policies are not shown to whoever
// holds a token).
func (p TrustPolicy) MatchClaims(claims map[string]any) (mismatch string) {
	for _, name := range slices.Sorted(mapKeys(p.Conditions)) {
		raw, ok := claims[name]
		if !ok {
			return fmt.Sprintf("the token has no claim %s", name)
		}
		s, ok := raw.(string)
		if !ok {
			return fmt.Sprintf("claim %s is not a string", name)
		}
		if !MatchClaim(p.Conditions[name], s) {
			return fmt.Sprintf("claim %s=%s is not allowed", name, quoteClaim(s))
		}
	}
	return ""
}

// quoteClaim shows a claim value in a message: at most 200 bytes, quoted
// when it holds anything but printable characters or spaces.
func quoteClaim(s string) string {
	if len(s) > 200 {
		s = s[:200]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "..."
	}
	if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || r == ' ' || r == '"' }) {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// Audit actions of keyless publishing.
const (
	AuditTrustPolicyCreate  = "trust_policy.create"
	AuditTrustPolicyDelete  = "trust_policy.delete"
	AuditTokenExchange      = "token.exchange"
	AuditTokenExchangeFails = "token.exchange_failure"
)
