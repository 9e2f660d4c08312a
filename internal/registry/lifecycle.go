package registry

import (
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of the lifecycle of versions (see docs/lifecycle.md).
const (
	// MaxLifecycleReason bounds the reason of a deprecation or a
	// revocation, in characters (runes).
	MaxLifecycleReason = 500
	// MaxLifecycleLink bounds the link of a deprecation, in bytes.
	MaxLifecycleLink = 2048
	// MaxLifecycleBy bounds who is recorded for a change, in bytes (the
	// longer part is cut).
	MaxLifecycleBy = 256
)

// LifecycleLinkLimit is the limit of a deprecation's link, checked by
// CheckLifecycleLink.
var LifecycleLinkLimit = Limit{"link", MaxLifecycleLink}

// Deprecation marks a published provider or module version as one its
// users should move away from. The version stays listed and installable;
// Terraform and OpenTofu show Reason and Link where they can (see
// docs/lifecycle.md).
type Deprecation struct {
	Reason string    // one line, 1 to MaxLifecycleReason characters
	Link   string    // "" or an https URL with more information
	At     time.Time // when it was deprecated
	By     string    // who deprecated it (a user or a token), for people
}

// Revocation marks a published version as one that new resolutions must
// not choose: it is left out of the version lists of the protocols, but
// its download documents and archives stay available.
type Revocation struct {
	Reason string    // one line, 1 to MaxLifecycleReason characters
	At     time.Time // when it was revoked
	By     string    // who revoked it, for people
}

// CheckLifecycleReason checks the reason of a deprecation or revocation:
// required, one line of at most MaxLifecycleReason characters without
// control characters.
func CheckLifecycleReason(reason string) error {
	if strings.TrimSpace(reason) == "" {
		return Errorf(Invalid, "a reason is required: say in one line why the version should not be used (and what to use instead)")
	}
	if err := CheckText("reason", reason, 4*MaxLifecycleReason); err != nil {
		return err
	}
	if n := utf8.RuneCountInString(reason); n > MaxLifecycleReason {
		return Errorf(Invalid, "reason is too long: %d characters, the limit is %d", n, MaxLifecycleReason)
	}
	return nil
}

// CheckLifecycleLink checks the optional link of a deprecation: "" or an
// absolute https URL with a host and without credentials, at most
// MaxLifecycleLink bytes, without spaces or control characters.
func CheckLifecycleLink(link string) error {
	if link == "" {
		return nil
	}
	if err := CheckText(LifecycleLinkLimit.Field, link, LifecycleLinkLimit.Max); err != nil {
		return err
	}
	if strings.ContainsAny(link, " \u00a0") {
		return Errorf(Invalid, "link %s contains a space: percent-encode it as %%20", quote(link))
	}
	u, err := url.Parse(link)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.Opaque != "" {
		return Errorf(Invalid, "link %s is not an absolute https URL: give one such as https://example.com/upgrade-guide", quote(link))
	}
	if u.User != nil {
		return Errorf(Invalid, "link %s carries credentials: give a URL without user name or password", quote(link))
	}
	return nil
}

// CheckDeprecation checks the reason and link of d.
func CheckDeprecation(d Deprecation) error {
	if err := CheckLifecycleReason(d.Reason); err != nil {
		return err
	}
	return CheckLifecycleLink(d.Link)
}

// LifecycleBy cuts who made a lifecycle change to MaxLifecycleBy bytes
// (at a character boundary).
func LifecycleBy(by string) string {
	if len(by) <= MaxLifecycleBy {
		return by
	}
	cut := MaxLifecycleBy
	for cut > 0 && !utf8.RuneStart(by[cut]) {
		cut--
	}
	return by[:cut]
}

// DeprecationWarning is the text of the providers.v1 "warnings" entry for
// a deprecated version of provider namespace/typ: Terraform and OpenTofu
// print each entry after "- " under "The remote registry returned
// warnings for <host>/<namespace>/<type>:", for every version a
// configuration uses, so the text names the version.
func DeprecationWarning(namespace, typ, version string, d Deprecation) string {
	s := fmt.Sprintf("Version %s of %s/%s is deprecated: %s", version, namespace, typ, d.Reason)
	if d.Link != "" {
		s += " (more: " + d.Link + ")"
	}
	return s
}
