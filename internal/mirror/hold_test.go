package mirror

import (
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
)

func TestJudge(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	week := registry.MirrorRule{Provider: "hashicorp/*", MinAge: 7 * 24 * time.Hour}
	none := registry.MirrorRule{Provider: "*/*"}
	deny := func(c string) registry.MirrorDecision {
		return registry.MirrorDecision{Namespace: "hashicorp", Type: "aws", Kind: registry.MirrorDeny, Versions: c, Reason: "compromised", CreatedBy: "user:sec"}
	}
	approve := func(v string) registry.MirrorDecision {
		return registry.MirrorDecision{Namespace: "hashicorp", Type: "aws", Kind: registry.MirrorApprove, Versions: v, CreatedBy: "user:ops"}
	}
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	cases := []struct {
		name      string
		rule      registry.MirrorRule
		decisions []registry.MirrorDecision
		version   string
		seen      Seen
		want      HoldStatus
		until     time.Time
		reason    string
	}{
		{name: "no min age", rule: none, version: "5.0.0", want: Available},
		{name: "no min age, first seen now", rule: none, version: "5.0.0", seen: Seen{FirstSeen: now}, want: Available},
		{name: "young by first sight", rule: week, version: "5.0.0", seen: Seen{FirstSeen: ago(time.Hour)}, want: Held,
			until: ago(time.Hour).Add(week.MinAge), reason: "first seen by this mirror"},
		{name: "old by first sight", rule: week, version: "5.0.0", seen: Seen{FirstSeen: ago(8 * 24 * time.Hour)}, want: Available},
		{name: "exactly min age is released", rule: week, version: "5.0.0", seen: Seen{FirstSeen: ago(week.MinAge)}, want: Available},
		{name: "one nanosecond short", rule: week, version: "5.0.0", seen: Seen{FirstSeen: ago(week.MinAge - 1)}, want: Held},
		{name: "publish time wins over first sight", rule: week, version: "5.0.0",
			seen: Seen{PublishedAt: ago(30 * 24 * time.Hour), FirstSeen: ago(time.Minute)}, want: Available},
		{name: "young by publish time though seen long ago", rule: week, version: "5.0.0",
			seen: Seen{PublishedAt: ago(time.Hour), FirstSeen: ago(30 * 24 * time.Hour)}, want: Held, reason: "published upstream"},
		{name: "publish time in the future", rule: week, version: "5.0.0", seen: Seen{PublishedAt: now.Add(24 * time.Hour)}, want: Held,
			until: now.Add(8 * 24 * time.Hour)},
		{name: "never seen counts from now", rule: week, version: "5.0.0", want: Held, until: now.Add(week.MinAge)},
		{name: "approved early", rule: week, decisions: []registry.MirrorDecision{approve("5.0.0")}, version: "5.0.0",
			seen: Seen{FirstSeen: now}, want: Available, reason: "approved by user:ops"},
		{name: "approval of another version", rule: week, decisions: []registry.MirrorDecision{approve("5.0.1")}, version: "5.0.0",
			seen: Seen{FirstSeen: now}, want: Held},
		{name: "approval of another provider", rule: week, decisions: []registry.MirrorDecision{{Namespace: "hashicorp", Type: "google",
			Kind: registry.MirrorApprove, Versions: "5.0.0"}}, version: "5.0.0", seen: Seen{FirstSeen: now}, want: Held},
		{name: "approval needs the exact string", rule: week, decisions: []registry.MirrorDecision{approve("5.0")}, version: "5.0.0",
			seen: Seen{FirstSeen: now}, want: Held},
		{name: "denied exact", rule: none, decisions: []registry.MirrorDecision{deny("5.81.0")}, version: "5.81.0", want: Denied,
			reason: "denied (5.81.0) by user:sec: compromised"},
		{name: "deny another version", rule: none, decisions: []registry.MirrorDecision{deny("5.81.0")}, version: "5.81.1", want: Available},
		{name: "denied range", rule: none, decisions: []registry.MirrorDecision{deny(">= 5.81.0, < 5.81.3")}, version: "5.81.2", want: Denied},
		{name: "range end not denied", rule: none, decisions: []registry.MirrorDecision{deny(">= 5.81.0, < 5.81.3")}, version: "5.81.3", want: Available},
		{name: "deny beats approval", rule: week, decisions: []registry.MirrorDecision{approve("5.81.0"), deny("5.81.0")}, version: "5.81.0",
			seen: Seen{FirstSeen: ago(30 * 24 * time.Hour)}, want: Denied},
		{name: "deny beats age", rule: week, decisions: []registry.MirrorDecision{deny("~> 5.81")}, version: "5.90.0",
			seen: Seen{FirstSeen: ago(365 * 24 * time.Hour)}, want: Denied},
		{name: "deny of a release denies its pre-release", rule: none, decisions: []registry.MirrorDecision{deny("5.81.0")}, version: "5.81.0-rc1", want: Denied},
		{name: "deny range covers pre-releases", rule: none, decisions: []registry.MirrorDecision{deny(">= 5.0")}, version: "6.0.0-beta1", want: Denied},
		{name: "deny of another provider", rule: none, decisions: []registry.MirrorDecision{{Namespace: "acme", Type: "aws", Kind: registry.MirrorDeny, Versions: ">= 0"}},
			version: "5.0.0", want: Available},
		{name: "decision case-insensitive", rule: none, decisions: []registry.MirrorDecision{{Namespace: "HashiCorp", Type: "AWS", Kind: registry.MirrorDeny, Versions: "5.0.0"}},
			version: "5.0.0", want: Denied},
		{name: "unparsable denial fails closed", rule: none, decisions: []registry.MirrorDecision{deny("not a constraint")}, version: "1.0.0", want: Denied},
		{name: "unknown decision kind ignored", rule: none, decisions: []registry.MirrorDecision{{Namespace: "hashicorp", Type: "aws", Kind: "allow", Versions: "1.0.0"}},
			version: "1.0.0", want: Available},
		{name: "not a version", rule: none, version: "latest", want: Denied, reason: "not a semantic version"},
		{name: "empty version", rule: none, version: "", want: Denied},
		{name: "hostile version", rule: week, version: "1.0.0\x00; rm -rf /", want: Denied},
		{name: "approval does not rescue a non-version", rule: week, decisions: []registry.MirrorDecision{approve("latest")}, version: "latest", want: Denied},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Judge(now, c.rule, c.decisions, "hashicorp", "aws", c.version, c.seen)
			if got.Status != c.want {
				t.Fatalf("status %s (%s), want %s", got.Status, got.Reason, c.want)
			}
			if !c.until.IsZero() && !got.Until.Equal(c.until) {
				t.Errorf("until %s, want %s", got.Until, c.until)
			}
			if c.reason != "" && !strings.Contains(got.Reason, c.reason) {
				t.Errorf("reason %q, want it to say %q", got.Reason, c.reason)
			}
			if got.Status == Held && (got.Reason == "" || !strings.Contains(got.Reason, "approve")) {
				t.Errorf("a held version's reason must say how to release it: %q", got.Reason)
			}
		})
	}
}

func TestParseAge(t *testing.T) {
	good := map[string]time.Duration{
		"0": 0, "": 0, "7d": 7 * 24 * time.Hour, "36h": 36 * time.Hour, "1d12h": 36 * time.Hour, "90m": 90 * time.Minute,
		"365d": 365 * 24 * time.Hour, " 2d ": 48 * time.Hour,
	}
	for in, want := range good {
		got, err := registry.ParseAge(in)
		if err != nil || got != want {
			t.Errorf("ParseAge(%q) = %v, %v; want %v", in, got, err, want)
		}
		if back, err := registry.ParseAge(registry.FormatAge(got)); err != nil || back != got {
			t.Errorf("FormatAge(%v) = %q does not parse back: %v, %v", got, registry.FormatAge(got), back, err)
		}
	}
	for _, in := range []string{"-1d", "-5h", "d", "7days", "1h2d", "366d", "8761h", "9223372036854775807d", "1e9d", "7 d", "\x00", "1d-1h", "abc"} {
		if _, err := registry.ParseAge(in); !registry.IsKind(err, registry.Invalid) {
			t.Errorf("ParseAge(%q) = %v, want Invalid", in, err)
		}
	}
}

func TestCheckMirrorDecision(t *testing.T) {
	ok := []registry.MirrorDecision{
		{Namespace: "hashicorp", Type: "aws", Kind: registry.MirrorApprove, Versions: "5.81.0"},
		{Namespace: "hashicorp", Type: "aws", Kind: registry.MirrorDeny, Versions: "5.81.0", Reason: "CVE-2026-1"},
		{Namespace: "hashicorp", Type: "aws", Kind: registry.MirrorDeny, Versions: ">= 5.81.0, < 5.81.3"},
	}
	for _, d := range ok {
		if err := registry.CheckMirrorDecision(d); err != nil {
			t.Errorf("%+v: %v", d, err)
		}
	}
	bad := []registry.MirrorDecision{
		{Namespace: "hashicorp", Type: "aws", Kind: registry.MirrorApprove, Versions: "~> 5.0"},
		{Namespace: "hashicorp", Type: "aws", Kind: registry.MirrorApprove, Versions: ""},
		{Namespace: "hashicorp", Type: "aws", Kind: registry.MirrorDeny, Versions: ""},
		{Namespace: "hashicorp", Type: "aws", Kind: registry.MirrorDeny, Versions: "not a constraint"},
		{Namespace: "hashicorp", Type: "aws", Kind: registry.MirrorDeny, Versions: strings.Repeat("1", 10000)},
		{Namespace: "hashicorp", Type: "aws", Kind: "allow", Versions: "1.0.0"},
		{Namespace: "*", Type: "aws", Kind: registry.MirrorDeny, Versions: "1.0.0"},
		{Namespace: "hashicorp", Type: "../x", Kind: registry.MirrorDeny, Versions: "1.0.0"},
		{Namespace: "hashicorp", Type: "aws", Kind: registry.MirrorDeny, Versions: "1.0.0", Reason: "two\nlines"},
	}
	for _, d := range bad {
		if err := registry.CheckMirrorDecision(d); !registry.IsKind(err, registry.Invalid) {
			t.Errorf("%+v: got %v, want Invalid", d, err)
		}
	}
}
