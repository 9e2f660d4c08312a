package apispec

import (
	"strconv"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
)

// RouteRetention is the retention rule of a namespace (docs/lifecycle.md):
// GET (read rights) answers a RetentionRule, 404 without one; PUT (admin
// rights) a RetentionRequest creates or replaces it and answers the rule;
// DELETE (admin rights) removes it (204). The garbage collector
// (RouteGC) applies the rules.
const RouteRetention = "/api/v1/namespaces/{namespace}/retention"

// RetentionRequest is the body of PUT RouteRetention. A version is kept
// while it is among the KeepLast highest versions of its provider or
// module, or was published within KeepWithin, or matches a Pin constraint;
// the highest and the most recently published version, and versions
// deprecated but not revoked, are always kept. KeepLast or KeepWithin
// (or both) is required.
type RetentionRequest struct {
	KeepLast int `json:"keep_last,omitempty"`
	// KeepWithin is a duration: "90d" (days) or a Go duration such as
	// "2160h"; at least a day.
	KeepWithin string `json:"keep_within,omitempty"`
	// Pin lists version constraints ("~> 1.0", ">= 2.0, < 3.0",
	// "2.3.4").
	Pin []string `json:"pin,omitempty"`
}

// MaxRetentionDurationLength bounds RetentionRequest.KeepWithin.
const MaxRetentionDurationLength = 32

// ParseRetentionDuration parses "90d" or a Go duration ("2160h"); "" is 0.
func ParseRetentionDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	bad := registry.Errorf(registry.Invalid, "keep_within must be a duration such as 90d or 2160h, got %q", registry.Elide(s))
	if len(s) > MaxRetentionDurationLength {
		return 0, bad
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 100*365 {
			return 0, bad
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, bad
	}
	return d, nil
}

// rule returns the rule the request sets on namespace, checked
// (registry.CheckRetentionRule), for Validate.
func (r RetentionRequest) rule(namespace string) (registry.RetentionRule, error) {
	within, err := ParseRetentionDuration(r.KeepWithin)
	if err != nil {
		return registry.RetentionRule{}, err
	}
	rule := registry.RetentionRule{Namespace: namespace, KeepLast: r.KeepLast, KeepWithin: within, Pin: r.Pin}
	return rule, registry.CheckRetentionRule(rule)
}

// Validate checks the request as the server will.
func (r RetentionRequest) Validate() error {
	_, err := r.rule("")
	return err
}

// RetentionRule answers GET and PUT RouteRetention.
type RetentionRule struct {
	Namespace string `json:"namespace"`
	KeepLast  int    `json:"keep_last,omitempty"`
	// KeepWithin is "90d" for whole days, else a Go duration.
	KeepWithin string    `json:"keep_within,omitempty"`
	Pin        []string  `json:"pin,omitempty"`
	UpdatedAt  time.Time `json:"updated_at"`
	UpdatedBy  string    `json:"updated_by"`
}

// FormatRetentionDuration writes d as ParseRetentionDuration reads it:
// "90d" for whole days, else a Go duration; "" for 0.
func FormatRetentionDuration(d time.Duration) string {
	switch {
	case d == 0:
		return ""
	case d%(24*time.Hour) == 0:
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}
