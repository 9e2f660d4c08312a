package registry

import (
	"crypto/x509"
	"encoding/pem"
	"net/url"
	"strconv"
	"strings"
	"time"

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
	if err := CheckMirrorMinAge(r.MinAge); err != nil {
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

// MaxMirrorMinAge bounds a MirrorRule's MinAge.
const MaxMirrorMinAge = 365 * 24 * time.Hour

// ParseAge parses a minimum age as operators write it: a Go duration
// ("36h", "90m") whose units may include days ("7d", "1d12h"), or "0".
// Negative ages and ages over MaxMirrorMinAge are Invalid.
func ParseAge(s string) (time.Duration, error) {
	bad := func(why string) error {
		return Errorf(Invalid, "min age %q %s: write a duration such as 7d, 36h or 1d12h (0 for none, at most 365d)", Elide(s), why)
	}
	s = strings.TrimSpace(s)
	if s == "" || s == "0" {
		return 0, nil
	}
	var days int64
	rest := s
	if i := strings.IndexByte(rest, 'd'); i >= 0 {
		n, err := strconv.ParseInt(rest[:i], 10, 64)
		if err != nil || n < 0 || n > int64(MaxMirrorMinAge/(24*time.Hour)) {
			return 0, bad("does not parse")
		}
		days, rest = n, rest[i+1:]
	}
	var d time.Duration
	if rest != "" {
		var err error
		if d, err = time.ParseDuration(rest); err != nil || d < 0 {
			return 0, bad("does not parse")
		}
	}
	if d > MaxMirrorMinAge {
		return 0, bad("is too long")
	}
	total := time.Duration(days)*24*time.Hour + d
	if total > MaxMirrorMinAge {
		return 0, bad("is too long")
	}
	return total, nil
}

// FormatAge writes a minimum age as ParseAge reads it: whole days as
// "7d", anything else as a Go duration ("1d12h" is "36h0m0s"); "0" for
// none.
func FormatAge(d time.Duration) string {
	switch {
	case d == 0:
		return "0"
	case d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

// CheckMirrorMinAge validates a MirrorRule's MinAge.
func CheckMirrorMinAge(d time.Duration) error {
	if d < 0 || d > MaxMirrorMinAge {
		return Errorf(Invalid, "min age %s: it must be between 0 and 365d", d)
	}
	return nil
}

// MirrorDecisionKind is what an operator decided about versions of a
// mirrored provider.
type MirrorDecisionKind string

// The decisions about mirrored versions.
const (
	// MirrorApprove releases one version before its minimum age.
	MirrorApprove MirrorDecisionKind = "approve"
	// MirrorDeny keeps the versions a constraint matches from being
	// listed, fetched or served, whatever their age or approval.
	MirrorDeny MirrorDecisionKind = "deny"
)

// MirrorDecision is an approval of one version of a mirrored provider,
// or a denial of the versions a constraint matches. Host, Namespace and
// Type are normalized (lowercase). Versions is the approved version, or
// the denied version or constraint ("5.81.0", ">= 5.81.0, < 5.81.3").
type MirrorDecision struct {
	Host, Namespace, Type string
	Kind                  MirrorDecisionKind
	Versions              string
	Reason                string
	CreatedBy             string
	CreatedAt             time.Time
}

// MaxMirrorDecisions bounds the decisions of one mirrored provider.
const MaxMirrorDecisions = 1000

// CheckMirrorDecision validates a decision as an operator writes it: a
// known kind, a provider namespace and type, an approval of one exact
// version or a denial of a version or constraint, and a one-line reason.
func CheckMirrorDecision(d MirrorDecision) error {
	if _, err := ParseNamespace(d.Namespace); err != nil {
		return err
	}
	if _, err := ParseProviderType(d.Type); err != nil {
		return err
	}
	switch d.Kind {
	case MirrorApprove:
		if _, err := ParseVersion(d.Versions); err != nil {
			return Errorf(Invalid, "an approval names one version, such as 5.81.0: %s", Message(err))
		}
	case MirrorDeny:
		if strings.TrimSpace(d.Versions) == "" {
			return Errorf(Invalid, "a denial names a version or a version constraint, such as 5.81.0 or \">= 5.81.0, < 5.81.3\"")
		}
		if err := VersionConstraintLimit.CheckText(d.Versions); err != nil {
			return err
		}
		if err := CheckVersionConstraint(d.Versions); err != nil {
			return err
		}
	default:
		return Errorf(Invalid, "unknown mirror decision %q: approve or deny", Elide(string(d.Kind)))
	}
	return DescriptionLimit.CheckText(d.Reason)
}

// CheckMirrorServiceURL accepts "" or an absolute https URL without user
// information, query or fragment, within ServiceURLLimit; http only for
// a loopback host (a test upstream on this machine), since the mirror
// trusts what it fetches only as far as its signature and TLS go.
func CheckMirrorServiceURL(s string) error {
	if err := ServiceURLLimit.CheckText(s); err != nil || s == "" {
		return err
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" {
		return Errorf(Invalid, "service_url %.300q is not an absolute URL: write the upstream's providers.v1 base URL, such as https://registry.example.com/v1/providers/", s)
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return Errorf(Invalid, "service_url %.300q: a service URL has no user information, query or fragment", s)
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !isLoopback(u.Hostname()) {
			return Errorf(Invalid, "service_url %.300q: http is only allowed for a loopback host (localhost, 127.0.0.1, ::1); use https", s)
		}
	default:
		return Errorf(Invalid, "service_url %.300q: the scheme must be https", s)
	}
	return nil
}

// CheckMirrorCACertificates accepts "" or PEM whose blocks are all
// certificates, at least one, within CACertificatesLimit. Any other block
// (a private key pasted by mistake) is refused: the configuration is
// shown to every global admin.
func CheckMirrorCACertificates(s string) error {
	if err := CACertificatesLimit.CheckLines(s); err != nil || s == "" {
		return err
	}
	n := 0
	for rest := []byte(s); ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		n++
		if block.Type != "CERTIFICATE" {
			return Errorf(Invalid, "ca_certificates: PEM block %d is a %.40q, not a CERTIFICATE: only the CA certificates to trust belong there", n, block.Type)
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return Errorf(Invalid, "ca_certificates: certificate %d does not parse: %v", n, err)
		}
	}
	if n == 0 {
		return Errorf(Invalid, "ca_certificates holds no PEM certificate: paste the CA certificates, each from -----BEGIN CERTIFICATE----- to -----END CERTIFICATE-----")
	}
	return nil
}
