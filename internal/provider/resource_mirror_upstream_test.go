package provider_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"trove.dev/trove/apispec"
)

const upstreamAddr = "trove_mirror_upstream.test"

// upstreamConfig is a trove_mirror_upstream with the given arguments (""
// leaves one out) and rules ("provider" or "provider=versions", with
// "@min_age" after either).
func upstreamConfig(host, serviceURL, caPEM, description string, rules ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "resource \"trove_mirror_upstream\" \"test\" {\n  host = %q\n", host)
	if serviceURL != "" {
		fmt.Fprintf(&b, "  service_url = %q\n", serviceURL)
	}
	if caPEM != "" {
		fmt.Fprintf(&b, "  ca_certificates = %q\n", caPEM)
	}
	if description != "" {
		fmt.Fprintf(&b, "  description = %q\n", description)
	}
	for _, r := range rules {
		r, age, _ := strings.Cut(r, "@")
		p, v, _ := strings.Cut(r, "=")
		fmt.Fprintf(&b, "  allow {\n    provider = %q\n", p)
		if v != "" {
			fmt.Fprintf(&b, "    versions = %q\n", v)
		}
		if age != "" {
			fmt.Fprintf(&b, "    min_age = %q\n", age)
		}
		b.WriteString("  }\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// checkUpstream checks through the API that the upstream exists with the
// service URL and rules.
func (e *accEnv) checkUpstream(t *testing.T, host, serviceURL string, rules ...apispec.MirrorRule) resource.TestCheckFunc {
	return func(*terraform.State) error {
		u, err := e.api.GetMirrorUpstream(t.Context(), host)
		if err != nil {
			return fmt.Errorf("mirror upstream %s through the API: %w", host, err)
		}
		if u.ServiceURL != serviceURL || fmt.Sprint(u.Allow) != fmt.Sprint(rules) {
			return fmt.Errorf("mirror upstream %s in Trove = %+v, want service URL %q and rules %v", host, u, serviceURL, rules)
		}
		return nil
	}
}

func TestAccMirrorUpstream(t *testing.T) {
	e := newAccEnv(t)
	createdAt := statecheck.CompareValue(compare.ValuesSame())
	const svc = "https://mirror.example:8443/v1/providers/"
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config: e.config(upstreamConfig("Mirror.Example:8443", svc, e.caPEM, "ACME's registry", "hashicorp/*", "acme/widget=~> 1.2")),
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkUpstream(t, "mirror.example:8443", svc, apispec.MirrorRule{Provider: "hashicorp/*"},
						apispec.MirrorRule{Provider: "acme/widget", Versions: "~> 1.2"}),
					resource.TestCheckResourceAttr(upstreamAddr, "id", "mirror.example:8443"),
					resource.TestCheckResourceAttr(upstreamAddr, "host", "mirror.example:8443"),
					resource.TestCheckResourceAttr(upstreamAddr, "ca_certificates", e.caPEM),
					resource.TestCheckResourceAttr(upstreamAddr, "allow.#", "2"),
					resource.TestCheckResourceAttr(upstreamAddr, "allow.1.provider", "acme/widget"),
					resource.TestCheckResourceAttr(upstreamAddr, "allow.1.versions", "~> 1.2"),
					resource.TestCheckResourceAttrSet(upstreamAddr, "created_at"),
					resource.TestCheckResourceAttrSet(upstreamAddr, "updated_at"),
				),
				ConfigStateChecks: []statecheck.StateCheck{createdAt.AddStateValue(upstreamAddr, tfjsonpath.New("created_at"))},
			},
			{
				// Other line endings and blank lines around the PEM, and
				// another spelling of the host, are no change.
				Config: e.config(upstreamConfig("MIRROR.example:8443", svc, "\n"+strings.ReplaceAll(e.caPEM, "\n", "\r\n")+"\n\n",
					"ACME's registry", "hashicorp/*", "acme/widget=~> 1.2")),
				PlanOnly: true,
			},
			{
				// Everything but the host changes in place: the whole
				// configuration is replaced.
				Config: e.config(upstreamConfig("mirror.example:8443", "", "", "", "*/*=>= 1.0")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(upstreamAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkUpstream(t, "mirror.example:8443", "", apispec.MirrorRule{Provider: "*/*", Versions: ">= 1.0"}),
					resource.TestCheckResourceAttr(upstreamAddr, "ca_certificates", ""),
					resource.TestCheckResourceAttr(upstreamAddr, "allow.#", "1"),
				),
				ConfigStateChecks: []statecheck.StateCheck{createdAt.AddStateValue(upstreamAddr, tfjsonpath.New("created_at"))},
			},
			{
				// No rules: the upstream allows nothing.
				Config: e.config(upstreamConfig("mirror.example:8443", "", "", "nothing from here")),
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkUpstream(t, "mirror.example:8443", ""),
					resource.TestCheckResourceAttr(upstreamAddr, "allow.#", "0"),
				),
			},
			{
				// A new host replaces the upstream.
				Config: e.config(upstreamConfig("other.example", "", "", "", "*/*")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(upstreamAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkUpstream(t, "other.example", "", apispec.MirrorRule{Provider: "*/*"}),
					resource.TestCheckResourceAttr(upstreamAddr, "id", "other.example"),
				),
			},
			{
				ResourceName:      upstreamAddr,
				ImportState:       true,
				ImportStateVerify: true,
			},
			{
				// Import IDs are hosts, in any spelling.
				ResourceName:      upstreamAddr,
				ImportState:       true,
				ImportStateId:     "Other.Example:443",
				ImportStateVerify: true,
			},
		},
	})
}

// TestAccMirrorUpstreamRefused: an invalid host fails at plan, invalid
// rules, URLs and certificates at apply with the API's message, and an
// upstream that exists (a default) must be imported, not created.
func TestAccMirrorUpstreamRefused(t *testing.T) {
	e := newAccEnv(t)
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config:      e.config(upstreamConfig("https://mirror.example", "", "", "", "*/*")),
				PlanOnly:    true,
				ExpectError: wrapped("is not a registry host name"),
			},
			{
				Config:      e.config(upstreamConfig("mirror.example", "", "", "", "hashicorp")),
				ExpectError: wrapped(`mirror rule "hashicorp": write it as namespace/type`),
			},
			{
				Config:      e.config(upstreamConfig("mirror.example", "http://mirror.example/", "", "", "*/*")),
				PlanOnly:    true,
				ExpectError: wrapped("http is only allowed for a loopback host"),
			},
			{
				Config:      e.config(upstreamConfig("mirror.example", "ftp://mirror.example/", "", "", "*/*")),
				PlanOnly:    true,
				ExpectError: wrapped("the scheme must be https"),
			},
			{
				Config:      e.config(upstreamConfig("mirror.example", "", "not a certificate", "", "*/*")),
				PlanOnly:    true,
				ExpectError: wrapped("holds no PEM certificate"),
			},
			{
				Config:      e.config(upstreamConfig("Registry.Terraform.IO", "", "", "", "hashicorp/*")),
				ExpectError: regexp.MustCompile(`already exists in Trove: import it`),
			},
		},
	})
}

// TestAccMirrorUpstreamMinAge: a rule's min_age reaches Trove, another
// spelling of the same age is no change, and a bad one fails the plan.
func TestAccMirrorUpstreamMinAge(t *testing.T) {
	e := newAccEnv(t)
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config:      e.config(upstreamConfig("quarantine.example", "", "", "", "hashicorp/*@soon")),
				ExpectError: regexp.MustCompile(`min age "soon" does not parse`),
			},
			{
				Config: e.config(upstreamConfig("quarantine.example", "", "", "", "hashicorp/*@7d", "acme/widget=~> 1.2@1d12h")),
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkUpstream(t, "quarantine.example", "", apispec.MirrorRule{Provider: "hashicorp/*", MinAge: "7d"},
						apispec.MirrorRule{Provider: "acme/widget", Versions: "~> 1.2", MinAge: "36h0m0s"}),
					resource.TestCheckResourceAttr(upstreamAddr, "allow.0.min_age", "7d"),
				),
			},
			{
				Config:   e.config(upstreamConfig("quarantine.example", "", "", "", "hashicorp/*@168h", "acme/widget=~> 1.2@36h")),
				PlanOnly: true,
			},
		},
	})
}
