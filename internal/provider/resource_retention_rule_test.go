package provider_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"trove.dev/trove/apispec"
)

const retentionAddr = "trove_retention_rule.test"

// retentionConfig is a trove_retention_rule of namespace "keep" (keepLast
// 0 and keepWithin "" leave them out).
func retentionConfig(keepLast int, keepWithin string, pins ...string) string {
	var b strings.Builder
	b.WriteString("resource \"trove_retention_rule\" \"test\" {\n  namespace = \"Keep\"\n")
	if keepLast != 0 {
		fmt.Fprintf(&b, "  keep_last = %d\n", keepLast)
	}
	if keepWithin != "" {
		fmt.Fprintf(&b, "  keep_within = %q\n", keepWithin)
	}
	if pins != nil {
		quoted := make([]string, len(pins))
		for i, p := range pins {
			quoted[i] = fmt.Sprintf("%q", p)
		}
		fmt.Fprintf(&b, "  pin = [%s]\n", strings.Join(quoted, ", "))
	}
	b.WriteString("}\n")
	return b.String()
}

// checkRetention checks through the API the rule of namespace "keep".
func (e *accEnv) checkRetention(t *testing.T, keepLast int, keepWithin string, pins ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		r, err := e.api.GetRetentionRule(t.Context(), "keep")
		if err != nil {
			return fmt.Errorf("retention rule through the API: %w", err)
		}
		if r.KeepLast != keepLast || r.KeepWithin != keepWithin || !slices.Equal(r.Pin, pins) {
			return fmt.Errorf("retention rule in Trove = %+v, want keep_last %d, keep_within %q, pins %q", r, keepLast, keepWithin, pins)
		}
		return nil
	}
}

func TestAccRetentionRule(t *testing.T) {
	e := newAccEnv(t)
	if _, err := e.api.CreateNamespace(t.Context(), apispec.CreateNamespaceRequest{Name: "keep"}); err != nil {
		t.Fatal(err)
	}
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config: e.config(retentionConfig(5, "30d", "~> 1.0", ">= 2.0, < 3.0")),
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkRetention(t, 5, "30d", "~> 1.0", ">= 2.0, < 3.0"),
					resource.TestCheckResourceAttr(retentionAddr, "id", "keep"),
					resource.TestCheckResourceAttr(retentionAddr, "pin.#", "2"),
					resource.TestCheckResourceAttr(retentionAddr, "pin.1", ">= 2.0, < 3.0"),
					resource.TestCheckResourceAttrSet(retentionAddr, "updated_at"),
					resource.TestCheckResourceAttrSet(retentionAddr, "updated_by"),
				),
			},
			{
				// Another spelling of the namespace and the duration is no change.
				Config:   e.config(strings.Replace(retentionConfig(5, "720h", "~> 1.0", ">= 2.0, < 3.0"), `"Keep"`, `"KEEP"`, 1)),
				PlanOnly: true,
			},
			{
				// Everything but the namespace changes in place.
				Config: e.config(retentionConfig(2, "", "1.4.2")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(retentionAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkRetention(t, 2, "", "1.4.2"),
					resource.TestCheckResourceAttr(retentionAddr, "keep_within", ""),
				),
			},
			{
				ResourceName:      retentionAddr,
				ImportState:       true,
				ImportStateId:     "KEEP",
				ImportStateVerify: true,
			},
		},
	})
}

// TestAccRetentionRuleRefused: invalid durations and pins fail at plan,
// a rule that keeps nothing by count or age and a missing namespace at
// apply with the API's message.
func TestAccRetentionRuleRefused(t *testing.T) {
	e := newAccEnv(t)
	if _, err := e.api.CreateNamespace(t.Context(), apispec.CreateNamespaceRequest{Name: "keep"}); err != nil {
		t.Fatal(err)
	}
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config:      e.config(retentionConfig(1, "1h")),
				PlanOnly:    true,
				ExpectError: wrapped("keep_within must be at least"),
			},
			{
				Config:      e.config(retentionConfig(1, "forever")),
				PlanOnly:    true,
				ExpectError: wrapped("keep_within must be a duration such as 90d or 2160h"),
			},
			{
				Config:      e.config(retentionConfig(1, "", "~> banana")),
				PlanOnly:    true,
				ExpectError: wrapped(`pin "~> banana" is not a version constraint`),
			},
			{
				// Neither keep_last nor keep_within, or a count out of
				// bounds: refused at plan, not at apply.
				Config:      e.config(retentionConfig(0, "", "1.0.0")),
				PlanOnly:    true,
				ExpectError: wrapped("one of `keep_last,keep_within` must be specified"),
			},
			{
				Config:      e.config(strings.Replace(retentionConfig(0, "30d"), "keep_within", "keep_last = 0\n  keep_within", 1)),
				PlanOnly:    true,
				ExpectError: wrapped("expected keep_last to be in the range (1 - 10000), got 0"),
			},
			{
				Config:      e.config(retentionConfig(100000, "")),
				PlanOnly:    true,
				ExpectError: wrapped("expected keep_last to be in the range (1 - 10000), got 100000"),
			},
			{
				Config:      e.config(strings.Replace(retentionConfig(3, ""), `"Keep"`, `"nobody"`, 1)),
				ExpectError: wrapped(`namespace "nobody" not found`),
			},
		},
	})
}

// TestAccRetentionRuleOfANewNamespace: the rule of a namespace created in
// the same apply under another spelling (Trove stores names in lower
// case) applies the first time, and the next plan is empty.
func TestAccRetentionRuleOfANewNamespace(t *testing.T) {
	e := newAccEnv(t)
	cfg := e.config(`
resource "trove_namespace" "n" {
  name = "Mixed-Case"
}

resource "trove_retention_rule" "test" {
  namespace = trove_namespace.n.name
  keep_last = 5
}
`)
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{Config: cfg, Check: resource.TestCheckResourceAttr(retentionAddr, "namespace", "mixed-case")},
			{Config: cfg, PlanOnly: true},
		},
	})
}
