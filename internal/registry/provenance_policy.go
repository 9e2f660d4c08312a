package registry

import (
	"net/url"
	"path"
	"strings"
	"time"
)

// ProvenancePolicy is a namespace's rule for where its releases come from
// (docs/provenance.md): a provider or module publish into the namespace
// is accepted only from a keyless token (docs/keyless.md) whose CI claims
// name Repository, a ref matching Refs and, when set, Issuer. Other
// publishes are refused with the reason.
type ProvenancePolicy struct {
	Namespace string
	// Issuer is the CI issuer URL the build must come from; "" accepts
	// every issuer a trust policy of the namespace accepts.
	Issuer string
	// Repository is the repository the build must come from, exactly
	// ("acme/infra").
	Repository string
	// Refs is a pattern (path.Match: *, ?, [...]) the build's ref must
	// match ("refs/tags/v*"); "" for any ref.
	Refs string
	// ImportKeys are the public keys of the exporting Troves whose
	// provenance the namespace accepts in air-gap bundles (KeyID and
	// ASCIIArmor; Fingerprint when parsed): a bundle's module version is
	// admitted into the namespace only with provenance that verifies with
	// one of them, never with the keys the bundle itself carries. None:
	// every bundle module into the namespace is refused.
	ImportKeys []SigningKey
	UpdatedAt  time.Time
	UpdatedBy  string
}

// MaxPolicyImportKeys bounds a policy's ImportKeys (a few exporting
// Troves, each with a key and its successor).
const MaxPolicyImportKeys = 16

// Limits of a ProvenancePolicy's fields.
var (
	PolicyIssuerLimit     = Limit{"issuer", 512}
	PolicyRepositoryLimit = Limit{"repository", 256}
	PolicyRefsLimit       = Limit{"refs pattern", 256}
)

// Audit actions of provenance policies.
const (
	AuditProvenancePolicySet    = "provenance_policy.set"
	AuditProvenancePolicyDelete = "provenance_policy.delete"
)

// Validate checks a policy's fields (not its namespace, which the caller
// parses).
func (p ProvenancePolicy) Validate() error {
	if p.Repository == "" {
		return Errorf(Invalid, "a provenance policy needs the repository releases must be built from (such as acme/infra)")
	}
	if err := PolicyRepositoryLimit.CheckText(p.Repository); err != nil {
		return err
	}
	if strings.ContainsAny(p.Repository, " \t\n") {
		return Errorf(Invalid, "repository %s has white space", quote(p.Repository))
	}
	if err := PolicyRefsLimit.CheckText(p.Refs); err != nil {
		return err
	}
	if p.Refs != "" {
		if _, err := path.Match(p.Refs, ""); err != nil {
			return Errorf(Invalid, "refs pattern %s is not a pattern (use *, ? and [...], e.g. refs/tags/v*): %v", quote(p.Refs), err)
		}
	}
	if p.Issuer != "" {
		if err := PolicyIssuerLimit.CheckText(p.Issuer); err != nil {
			return err
		}
		u, err := url.Parse(p.Issuer)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
			return Errorf(Invalid, "issuer %s is not an https URL", quote(p.Issuer))
		}
	}
	if len(p.ImportKeys) > MaxPolicyImportKeys {
		return Errorf(Invalid, "a provenance policy has at most %d import keys; this one has %d", MaxPolicyImportKeys, len(p.ImportKeys))
	}
	seen := map[string]bool{}
	for _, k := range p.ImportKeys {
		if _, err := ParseKeyID(k.KeyID); err != nil || k.ASCIIArmor == "" {
			return Errorf(Invalid, "an import key of a provenance policy needs its key ID and ASCII armor (%q)", Elide(k.KeyID))
		}
		if seen[strings.ToUpper(k.KeyID)] {
			return Errorf(Invalid, "the provenance policy lists import key %s twice", k.KeyID)
		}
		seen[strings.ToUpper(k.KeyID)] = true
	}
	return nil
}

// Admits checks a publish whose token carries ci (nil for a token a
// keyless exchange did not issue) against the policy, and says why not.
func (p ProvenancePolicy) Admits(ci *CIClaims) error {
	want := "releases built from " + p.Repository
	if p.Refs != "" {
		want += " on a ref matching " + p.Refs
	}
	if p.Issuer != "" {
		want += " by " + p.Issuer
	}
	refuse := func(why string) error {
		return Errorf(Forbidden, "namespace %s accepts only %s (its provenance policy): %s", p.Namespace, want, why)
	}
	if ci == nil {
		return refuse("this publish does not come from a CI pipeline; publish from CI with a keyless token (trove publish in a pipeline with a trust policy, docs/keyless.md)")
	}
	if p.Issuer != "" && ci.Issuer != p.Issuer {
		return refuse("this build comes from issuer " + Elide(ci.Issuer))
	}
	if ci.Repository != p.Repository {
		return refuse("this build comes from repository " + Elide(ci.Repository))
	}
	if p.Refs != "" {
		if ok, _ := path.Match(p.Refs, ci.Ref); !ok {
			return refuse("this build's ref is " + Elide(ci.Ref))
		}
	}
	return nil
}
