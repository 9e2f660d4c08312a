package retention_test

import (
	"slices"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/retention"
)

var now = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

// v is a version published age ago.
func v(s string, age time.Duration) retention.Version {
	return retention.Version{Version: s, PublishedAt: now.Add(-age)}
}

func TestExpired(t *testing.T) {
	deprecated := v("1.1.0", 300*day)
	deprecated.Deprecated = true
	revoked := v("1.1.0", 300*day)
	revoked.Deprecated, revoked.Revoked = true, true
	// Five versions, one a month apart, the highest the newest.
	five := []retention.Version{v("1.0.0", 120*day), v("1.1.0", 90*day), v("1.2.0", 60*day), v("2.0.0", 30*day), v("2.1.0", 0)}
	for _, tc := range []struct {
		name     string
		rule     registry.RetentionRule
		versions []retention.Version
		want     []string
	}{
		{"keep last 2", registry.RetentionRule{KeepLast: 2}, five, []string{"1.2.0", "1.1.0", "1.0.0"}},
		{"keep last 5 of 5", registry.RetentionRule{KeepLast: 5}, five, nil},
		{"keep last 1 keeps the highest", registry.RetentionRule{KeepLast: 1}, five, []string{"2.0.0", "1.2.0", "1.1.0", "1.0.0"}},
		{"keep within 45 days", registry.RetentionRule{KeepWithin: 45 * day}, five, []string{"1.2.0", "1.1.0", "1.0.0"}},
		{"keep within 1 day still keeps the newest", registry.RetentionRule{KeepWithin: day}, five, []string{"2.0.0", "1.2.0", "1.1.0", "1.0.0"}},
		{"both: deleted only when beyond N and older than D", registry.RetentionRule{KeepLast: 2, KeepWithin: 75 * day}, five, []string{"1.1.0", "1.0.0"}},
		{"pins keep matching versions", registry.RetentionRule{KeepLast: 1, Pin: []string{"~> 1.1.0", "1.0.0"}}, five, []string{"2.0.0", "1.2.0"}},
		{"pin ranges", registry.RetentionRule{KeepLast: 1, Pin: []string{">= 1.2.0, < 2.0.0"}}, five, []string{"2.0.0", "1.1.0", "1.0.0"}},
		{"the highest version is kept even when published long ago",
			registry.RetentionRule{KeepWithin: 10 * day},
			[]retention.Version{v("3.0.0", 400*day), v("1.0.0", 500*day), v("2.9.0", 1*day)}, []string{"1.0.0"}},
		{"the most recently published is kept even when not the highest",
			registry.RetentionRule{KeepLast: 1},
			[]retention.Version{v("3.0.0", 400*day), v("1.5.1", 2*day), v("1.5.0", 300*day)}, []string{"1.5.0"}},
		{"deprecated, not revoked, is kept", registry.RetentionRule{KeepLast: 1}, []retention.Version{v("2.0.0", 0), deprecated, v("1.0.0", 400*day)}, []string{"1.0.0"}},
		{"deprecated and revoked is not", registry.RetentionRule{KeepLast: 1}, []retention.Version{v("2.0.0", 0), revoked, v("1.0.0", 400*day)}, []string{"1.1.0", "1.0.0"}},
		{"pre-releases count by precedence", registry.RetentionRule{KeepLast: 2},
			[]retention.Version{v("2.0.0-beta.1", 10*day), v("2.0.0", 5*day), v("1.9.0", 20*day), v("2.0.0-alpha", 15*day)}, []string{"2.0.0-alpha", "1.9.0"}},
		{"a single version is kept", registry.RetentionRule{KeepLast: 1}, []retention.Version{v("0.1.0", 900*day)}, nil},
		{"no versions", registry.RetentionRule{KeepLast: 1}, nil, nil},
		{"unparsable versions are never deleted", registry.RetentionRule{KeepLast: 1}, []retention.Version{v("2.0.0", 0), v("not-a-version", 900*day)}, nil},
		{"input order does not matter", registry.RetentionRule{KeepLast: 2}, []retention.Version{five[3], five[0], five[4], five[2], five[1]}, []string{"1.2.0", "1.1.0", "1.0.0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := retention.Expired(tc.rule, tc.versions, now)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("Expired = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestInvalidRules(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule registry.RetentionRule
	}{
		{"keeps nothing by count or age", registry.RetentionRule{Pin: []string{"1.0.0"}}},
		{"negative count", registry.RetentionRule{KeepLast: -1}},
		{"count too large", registry.RetentionRule{KeepLast: registry.MaxRetentionKeepLast + 1}},
		{"age under a day", registry.RetentionRule{KeepWithin: time.Hour}},
		{"negative age", registry.RetentionRule{KeepLast: 1, KeepWithin: -day}},
		{"bad pin", registry.RetentionRule{KeepLast: 1, Pin: []string{"~> banana"}}},
		{"empty pin", registry.RetentionRule{KeepLast: 1, Pin: []string{""}}},
		{"pin with a newline", registry.RetentionRule{KeepLast: 1, Pin: []string{"1.0.0\n"}}},
		{"too many pins", registry.RetentionRule{KeepLast: 1, Pin: make([]string, registry.MaxRetentionPins+1)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := retention.Expired(tc.rule, []retention.Version{v("1.0.0", 0)}, now); !registry.IsKind(err, registry.Invalid) {
				t.Errorf("err = %v, want Invalid", err)
			}
		})
	}
}
