package registry

import (
	"time"

	version "github.com/hashicorp/go-version"
)

// Limits of a RetentionRule.
const (
	// MaxRetentionKeepLast bounds RetentionRule.KeepLast.
	MaxRetentionKeepLast = 10000
	// MinRetentionKeepWithin is the shortest RetentionRule.KeepWithin: a
	// rule never reaches a version published less than a day ago.
	MinRetentionKeepWithin = 24 * time.Hour
	// MaxRetentionPins bounds the constraints of RetentionRule.Pin, and
	// MaxRetentionPinLength each of them.
	MaxRetentionPins      = 50
	MaxRetentionPinLength = 128
)

// RetentionRule says which provider and module versions of a namespace
// the garbage collector deletes (docs/lifecycle.md, package retention):
// for each provider and module, every version that none of the rule's
// keeps holds. A version is kept while it is among the KeepLast highest
// versions (KeepLast > 0), or was published within KeepWithin (> 0), or
// matches one of the Pin constraints (hashicorp/go-version syntax:
// "~> 1.0", ">= 2.0, < 3.0", "2.3.4"); the highest and the most recently
// published version, and versions deprecated but not revoked (their users
// are being warned, not yet cut off), are always kept. A rule has
// KeepLast or KeepWithin (or both).
type RetentionRule struct {
	Namespace  string
	KeepLast   int
	KeepWithin time.Duration
	Pin        []string
	UpdatedAt  time.Time
	UpdatedBy  string
}

// CheckRetentionRule refuses a rule that keeps nothing by count or age,
// or has a limit out of range or a constraint that does not parse.
func CheckRetentionRule(r RetentionRule) error {
	switch {
	case r.KeepLast == 0 && r.KeepWithin == 0:
		return Errorf(Invalid, "a retention rule needs keep_last or keep_within (or both)")
	case r.KeepLast < 0 || r.KeepLast > MaxRetentionKeepLast:
		return Errorf(Invalid, "keep_last must be from 1 to %d, got %d", MaxRetentionKeepLast, r.KeepLast)
	case r.KeepWithin < 0 || (r.KeepWithin > 0 && r.KeepWithin < MinRetentionKeepWithin):
		return Errorf(Invalid, "keep_within must be at least %s, got %s", MinRetentionKeepWithin, r.KeepWithin)
	case len(r.Pin) > MaxRetentionPins:
		return Errorf(Invalid, "a retention rule takes at most %d pins, got %d", MaxRetentionPins, len(r.Pin))
	}
	for _, p := range r.Pin {
		if _, err := ParsePin(p); err != nil {
			return err
		}
	}
	return nil
}

// ParsePin parses one version constraint of RetentionRule.Pin.
func ParsePin(p string) (version.Constraints, error) {
	if p == "" || len(p) > MaxRetentionPinLength || !isPrintable(p) {
		return nil, Errorf(Invalid, "a pin must be a version constraint of at most %d printable characters, such as \"~> 1.0\" or \"2.3.4\", got %q", MaxRetentionPinLength, Elide(p))
	}
	c, err := version.NewConstraint(p)
	if err != nil {
		return nil, Errorf(Invalid, "pin %q is not a version constraint (such as \"~> 1.0\", \">= 2.0, < 3.0\" or \"2.3.4\")", p)
	}
	return c, nil
}

func isPrintable(s string) bool {
	for _, r := range s {
		if r < ' ' || r == 0x7f {
			return false
		}
	}
	return true
}
