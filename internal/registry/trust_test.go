package registry

import (
	"strings"
	"testing"
	"time"
)

func TestMatchClaim(t *testing.T) {
	for _, tc := range []struct {
		pattern, value string
		want           bool
	}{
		{"acme/infra", "acme/infra", true},
		{"acme/infra", "acme/infra2", false},
		{"acme/infra", "Acme/infra", false},
		{"acme/*", "acme/infra", true},
		{"acme/*", "acme/", true},
		{"acme/*", "acmex/infra", false},
		{"refs/tags/v*", "refs/tags/v1.2.0", true},
		{"refs/tags/v*", "refs/heads/main", false},
		{"refs/tags/v?.*", "refs/tags/v1.2", true},
		{"refs/tags/v?.*", "refs/tags/v10.2", false},
		{"*/deploy.yml@refs/heads/main", "acme/infra/.github/workflows/deploy.yml@refs/heads/main", true},
		{"a*b*c", "aXbYbZc", true},
		{"a*b*c", "aXbYbZ", false},
		{"", "", true},
		{"", "x", false},
		{"é?", "éü", true},
	} {
		if got := MatchClaim(tc.pattern, tc.value); got != tc.want {
			t.Errorf("MatchClaim(%q, %q) = %v, want %v", tc.pattern, tc.value, got, tc.want)
		}
	}
}

func validPolicy() TrustPolicy {
	return TrustPolicy{
		ID: "tp_0123456789abcdef", Namespace: "acme", Issuer: "https://token.actions.githubusercontent.com",
		Audience: "https://registry.example", Conditions: map[string]string{"repository": "acme/infra"},
		Scope: ScopePublish, TokenTTL: DefaultTrustTokenTTL, CreatedAt: time.Now(),
	}
}

func TestCheckTrustPolicy(t *testing.T) {
	if err := CheckTrustPolicy(validPolicy()); err != nil {
		t.Fatalf("valid policy: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(*TrustPolicy)
		want   string
	}{
		{"no conditions", func(p *TrustPolicy) { p.Conditions = nil }, "would trust every pipeline of the issuer"},
		{"match-all pattern", func(p *TrustPolicy) { p.Conditions = map[string]string{"repository": "**"} }, "matches every value"},
		{"any non-empty value", func(p *TrustPolicy) { p.Conditions = map[string]string{"repository": "?*"} }, "matches every value"},
		{"any non-empty value, star first", func(p *TrustPolicy) { p.Conditions = map[string]string{"repository": "*?"} }, "matches every value"},
		{"any value of a length", func(p *TrustPolicy) { p.Conditions = map[string]string{"ref": "???"} }, "matches every value"},
		{"reserved claim", func(p *TrustPolicy) { p.Conditions = map[string]string{"aud": "x"} }, "checked by the verification itself"},
		{"bad claim name", func(p *TrustPolicy) { p.Conditions = map[string]string{"repo sitory": "x"} }, "invalid claim name"},
		{"http issuer", func(p *TrustPolicy) { p.Issuer = "http://issuer.example" }, "http is only allowed for a loopback host"},
		{"relative issuer", func(p *TrustPolicy) { p.Issuer = "token.actions.githubusercontent.com" }, "not an absolute URL"},
		{"issuer with query", func(p *TrustPolicy) { p.Issuer = "https://issuer.example/?a=b" }, "no user information, query or fragment"},
		{"issuer with user", func(p *TrustPolicy) { p.Issuer = "https://u:p@issuer.example" }, "no user information, query or fragment"},
		{"ftp issuer", func(p *TrustPolicy) { p.Issuer = "ftp://issuer.example" }, "want an https URL"},
		{"no audience", func(p *TrustPolicy) { p.Audience = " " }, "needs an audience"},
		{"admin scope", func(p *TrustPolicy) { p.Scope = ScopeAdmin }, "publish or read"},
		{"ttl too long", func(p *TrustPolicy) { p.TokenTTL = 2 * time.Hour }, "between 1m0s and 1h0m0s"},
		{"ttl too short", func(p *TrustPolicy) { p.TokenTTL = time.Second }, "between 1m0s and 1h0m0s"},
		{"bad namespace", func(p *TrustPolicy) { p.Namespace = "a/b" }, "namespace"},
		{"control character", func(p *TrustPolicy) { p.Conditions = map[string]string{"ref": "a\nb"} }, "claim pattern"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := validPolicy()
			tc.change(&p)
			err := CheckTrustPolicy(p)
			if err == nil || !IsKind(err, Invalid) || !strings.Contains(Message(err), tc.want) {
				t.Errorf("CheckTrustPolicy = %v, want Invalid with %q", err, tc.want)
			}
		})
	}
	p := validPolicy()
	p.Issuer = "http://127.0.0.1:8080"
	if err := CheckTrustPolicy(p); err != nil {
		t.Errorf("loopback http issuer: %v", err)
	}
}

func TestMatchClaims(t *testing.T) {
	p := validPolicy()
	p.Conditions = map[string]string{"repository": "acme/infra", "ref": "refs/tags/v*"}
	ok := map[string]any{"repository": "acme/infra", "ref": "refs/tags/v1.0.0"}
	if m := p.MatchClaims(ok); m != "" {
		t.Errorf("matching claims: %s", m)
	}
	for _, tc := range []struct {
		claims map[string]any
		want   string
	}{
		{map[string]any{"repository": "acme/other", "ref": "refs/tags/v1"}, "claim repository=acme/other is not allowed"},
		{map[string]any{"repository": "acme/infra", "ref": "refs/heads/main"}, "claim ref=refs/heads/main is not allowed"},
		{map[string]any{"repository": "acme/infra"}, "the token has no claim ref"},
		{map[string]any{"repository": "acme/infra", "ref": true}, "claim ref is not a string"},
	} {
		if got := p.MatchClaims(tc.claims); got != tc.want {
			t.Errorf("MatchClaims(%v) = %q, want %q", tc.claims, got, tc.want)
		}
	}
}

func TestParseTrustPolicyID(t *testing.T) {
	if _, err := ParseTrustPolicyID("tp_0123456789abcdef"); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "tp_", "tok_0123456789abcdef", "tp_0123456789ABCDEF", "../tp_0123456789abcdef"} {
		if _, err := ParseTrustPolicyID(bad); err == nil {
			t.Errorf("ParseTrustPolicyID(%q) accepted", bad)
		}
	}
}
