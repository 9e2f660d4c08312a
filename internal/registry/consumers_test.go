package registry

import (
	"strings"
	"testing"
	"time"
)

func TestParseClient(t *testing.T) {
	for _, c := range []struct{ agent, client, version string }{
		{"Terraform/1.9.5 (+https://www.terraform.io)", ClientTerraform, "1.9.5"},
		{"Terraform/1.10.0-beta1", ClientTerraform, "1.10.0-beta1"},
		{"OpenTofu/1.12.6", ClientOpenTofu, "1.12.6"},
		{"opentofu/1.12.6 extra", ClientOpenTofu, "1.12.6"},
		{"Terraform", ClientTerraform, ""},
		{"Terraform/", ClientTerraform, ""},
		{"Terraform/1.9.5<script>", ClientTerraform, ""},
		{"Terraform/" + strings.Repeat("1", 33), ClientTerraform, ""},
		{"Terraform/1.9.5\x00", ClientTerraform, ""},
		{"Terraform/1 .9", ClientTerraform, "1"},
		{"curl/8.0", ClientOther, ""},
		{"", ClientOther, ""},
		{"TerraformX/1.0", ClientOther, ""},
		{"Go-http-client/1.1", ClientOther, ""},
	} {
		client, version := ParseClient(c.agent)
		if client != c.client || version != c.version {
			t.Errorf("ParseClient(%q) = %q, %q; want %q, %q", c.agent, client, version, c.client, c.version)
		}
	}
}

func TestDays(t *testing.T) {
	at := time.Date(2026, 11, 28, 23, 30, 0, 0, time.FixedZone("UTC-2", -2*3600))
	if d := DayOf(at); d != "2026-11-29" {
		t.Errorf("DayOf(%v) = %q, want the UTC day 2026-11-29", at, d)
	}
	if _, err := ParseDay("2026-11-29"); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "2026-13-01", "29.11.2026", "2026-11-29T00:00:00Z"} {
		if _, err := ParseDay(bad); !IsKind(err, Invalid) {
			t.Errorf("ParseDay(%q) = %v, want Invalid", bad, err)
		}
	}
	if c := CIConsumer(CIClaims{Issuer: "https://ci.test", Repository: "acme/infra", Workflow: "deploy.yml"}); c != "ci:acme/infra (deploy.yml)" {
		t.Errorf("CIConsumer = %q", c)
	}
	if c := CIConsumer(CIClaims{Issuer: "https://ci.test"}); c != "ci:https://ci.test" {
		t.Errorf("CIConsumer without a repository = %q", c)
	}
}
