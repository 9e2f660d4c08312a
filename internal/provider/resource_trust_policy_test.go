package provider_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"trove.dev/trove/client"
)

const trustAddr = "trove_trust_policy.test"

// trustConfig declares the namespace acme and a trust policy of it for
// GitHub Actions with the conditions (HCL map body) and extra arguments.
func trustConfig(conditions, extra string) string {
	return fmt.Sprintf(`resource "trove_namespace" "acme" {
  name = "acme"
}

resource "trove_trust_policy" "test" {
  namespace  = trove_namespace.acme.name
  issuer     = "https://token.actions.githubusercontent.com"
  conditions = {
%s
  }
%s
}`, conditions, extra)
}

// checkTrustPolicy checks through the API that the policy of the state
// exists with the conditions (name=pattern, sorted, joined by ", ").
func (e *accEnv) checkTrustPolicy(t *testing.T, conditions string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs, ok := s.RootModule().Resources[trustAddr]
		if !ok {
			return fmt.Errorf("%s is not in the state", trustAddr)
		}
		ns, id, _ := strings.Cut(rs.Primary.ID, "/")
		p, err := e.api.GetTrustPolicy(t.Context(), ns, id)
		if err != nil {
			return fmt.Errorf("trust policy %s through the API: %w", rs.Primary.ID, err)
		}
		var got []string
		for _, k := range []string{"environment", "ref", "repository"} {
			if v, ok := p.Conditions[k]; ok {
				got = append(got, k+"="+v)
			}
		}
		if strings.Join(got, ", ") != conditions || len(got) != len(p.Conditions) {
			return fmt.Errorf("trust policy %s has conditions %v in Trove, want %s", id, p.Conditions, conditions)
		}
		return nil
	}
}

func TestAccTrustPolicy(t *testing.T) {
	e := newAccEnv(t)
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config:      e.config(trustConfig(``, ``)),
				ExpectError: wrapped(`would trust every pipeline of the issuer`),
			},
			{
				Config:      e.config(trustConfig(`    repository = "*"`, ``)),
				ExpectError: wrapped(`matches every value`),
			},
			{
				Config:      e.config(trustConfig(`    aud = "x"`, ``)),
				ExpectError: wrapped(`claim aud is checked by the verification itself`),
			},
			{
				Config:      e.config(trustConfig(`    repository = "acme/infra"`, `  token_ttl_seconds = 7200`)),
				ExpectError: regexp.MustCompile(`expected token_ttl_seconds to be in the range \(60 - 3600\)`),
			},
			{
				Config: e.config(trustConfig(`    repository = "acme/infra"
    ref        = "refs/tags/v*"`, ``)),
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkTrustPolicy(t, "ref=refs/tags/v*, repository=acme/infra"),
					resource.TestCheckResourceAttr(trustAddr, "namespace", "acme"),
					resource.TestCheckResourceAttr(trustAddr, "audience", e.srv.URL),
					resource.TestCheckResourceAttr(trustAddr, "scope", "publish"),
					resource.TestCheckResourceAttr(trustAddr, "token_ttl_seconds", "900"),
					resource.TestCheckResourceAttr(trustAddr, "conditions.%", "2"),
					resource.TestMatchResourceAttr(trustAddr, "policy_id", regexp.MustCompile(`^tp_[0-9a-f]{16}$`)),
					resource.TestMatchResourceAttr(trustAddr, "id", regexp.MustCompile(`^acme/tp_[0-9a-f]{16}$`)),
					resource.TestCheckResourceAttrSet(trustAddr, "created_at"),
				),
			},
			{
				// A policy cannot change: new conditions replace it.
				Config: e.config(trustConfig(`    repository  = "acme/infra"
    environment = "production"`, `  audience          = "https://registry.example"
  token_ttl_seconds = 300
  description       = "releases"`)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(trustAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkTrustPolicy(t, "environment=production, repository=acme/infra"),
					resource.TestCheckResourceAttr(trustAddr, "audience", "https://registry.example"),
					resource.TestCheckResourceAttr(trustAddr, "token_ttl_seconds", "300"),
				),
			},
			{
				ResourceName:      trustAddr,
				ImportState:       true,
				ImportStateVerify: true,
			},
			{
				ResourceName:  trustAddr,
				ImportState:   true,
				ImportStateId: "acme",
				ExpectError:   wrapped(`invalid trust policy ID "acme": want <namespace>/<policy_id>`),
			},
		},
	})
}

// TestAccTrustPolicyDrift deletes the policy through the API between
// steps: the next plan creates it again.
func TestAccTrustPolicyDrift(t *testing.T) {
	e := newAccEnv(t)
	cfg := e.config(trustConfig(`    repository = "acme/infra"`, ``))
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{Config: cfg, Check: e.checkTrustPolicy(t, "repository=acme/infra")},
			{
				PreConfig: func() {
					ps, err := e.api.ListTrustPolicies(t.Context(), "acme")
					if err != nil || len(ps) != 1 {
						t.Fatalf("policies of acme: %v, %v", ps, err)
					}
					if err := e.api.DeleteTrustPolicy(t.Context(), "acme", ps[0].ID); err != nil && !client.IsNotFound(err) {
						t.Fatal(err)
					}
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(trustAddr, plancheck.ResourceActionCreate),
				}},
				Check: e.checkTrustPolicy(t, "repository=acme/infra"),
			},
		},
	})
}
