package provider_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"trove.dev/trove/client"
)

const webhookAddr = "trove_webhook.test"

// webhookConfig declares the namespace acme and a webhook of it with the
// given arguments (HCL body lines).
func webhookConfig(args string) string {
	return fmt.Sprintf(`resource "trove_namespace" "acme" {
  name = "acme"
}

resource "trove_webhook" "test" {
  namespace = trove_namespace.acme.name
%s
}`, args)
}

// checkWebhook checks through the API that the webhook of the state
// exists with url, the events (sorted, comma-separated) and active.
func (e *accEnv) checkWebhook(t *testing.T, url, events string, active bool) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs, ok := s.RootModule().Resources[webhookAddr]
		if !ok {
			return fmt.Errorf("%s is not in the state", webhookAddr)
		}
		w, err := e.api.GetWebhook(t.Context(), rs.Primary.ID)
		if err != nil {
			return fmt.Errorf("webhook %s through the API: %w", rs.Primary.ID, err)
		}
		got := slices.Sorted(slices.Values(w.Events))
		if w.URL != url || strings.Join(got, ",") != events || w.Active != active || w.Namespace != "acme" {
			return fmt.Errorf("webhook in Trove = %+v, want url %s, events %s, active %v", w, url, events, active)
		}
		return nil
	}
}

func TestAccWebhook(t *testing.T) {
	e := newAccEnv(t)
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				// Refused at plan: the URL's shape and the event types
				// are no server setting.
				Config:      e.config(webhookConfig(`  url = "file:///etc/passwd"`)),
				PlanOnly:    true,
				ExpectError: wrapped(`want an https:// URL`),
			},
			{
				Config:      e.config(webhookConfig(`  url = "not a url"`)),
				PlanOnly:    true,
				ExpectError: wrapped(`want an https:// URL`),
			},
			{
				Config:      e.config(webhookConfig(`  url = "https://169.254.169.254/latest"`)),
				ExpectError: wrapped(`non-public address`),
			},
			{
				Config: e.config(webhookConfig(`  url    = "https://hooks.example/trove"
  events = ["provider.exploded"]`)),
				PlanOnly:    true,
				ExpectError: wrapped(`unknown event type`),
			},
			{
				Config: e.config(webhookConfig(`  url    = "https://hooks.example/trove"
  secret = "short"`)),
				ExpectError: wrapped(`at least 16`),
			},
			{
				Config: e.config(webhookConfig(`  url         = "https://hooks.example/trove"
  events      = ["provider.published", "module.*"]
  description = "chat"`)),
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkWebhook(t, "https://hooks.example/trove", "module.*,provider.published", true),
					resource.TestMatchResourceAttr(webhookAddr, "id", regexp.MustCompile(`^wh_[0-9a-f]{16}$`)),
					resource.TestCheckResourceAttrPair(webhookAddr, "id", webhookAddr, "webhook_id"),
					resource.TestMatchResourceAttr(webhookAddr, "secret", regexp.MustCompile(`^whsec_[0-9a-f]{64}$`)),
					resource.TestCheckResourceAttr(webhookAddr, "events.#", "2"),
					resource.TestCheckResourceAttr(webhookAddr, "active", "true"),
					resource.TestCheckResourceAttrSet(webhookAddr, "created_at"),
				),
			},
			{
				// URL, events, activity and secret change in place.
				Config: e.config(webhookConfig(`  url    = "https://hooks.example/other"
  active = false
  secret = "our-own-secret-0123456789"`)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(webhookAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkWebhook(t, "https://hooks.example/other", "", false),
					resource.TestCheckResourceAttr(webhookAddr, "secret", "our-own-secret-0123456789"),
					resource.TestCheckResourceAttr(webhookAddr, "events.#", "0"),
				),
			},
			{
				ResourceName:            webhookAddr,
				ImportState:             true,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"secret"},
			},
			{
				ResourceName:  webhookAddr,
				ImportState:   true,
				ImportStateId: "acme/wh_1",
				ExpectError:   wrapped(`invalid webhook ID`),
			},
		},
	})
}

// TestAccWebhookDrift deletes the webhook through the API between steps:
// the next plan creates it again.
func TestAccWebhookDrift(t *testing.T) {
	e := newAccEnv(t)
	cfg := e.config(webhookConfig(`  url = "https://hooks.example/trove"`))
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{Config: cfg, Check: e.checkWebhook(t, "https://hooks.example/trove", "", true)},
			{
				PreConfig: func() {
					ws, err := e.api.ListWebhooks(t.Context(), "acme")
					if err != nil || len(ws) != 1 {
						t.Fatalf("webhooks of acme: %v, %v", ws, err)
					}
					if err := e.api.DeleteWebhook(t.Context(), ws[0].ID); err != nil && !client.IsNotFound(err) {
						t.Fatal(err)
					}
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(webhookAddr, plancheck.ResourceActionCreate),
				}},
				Check: e.checkWebhook(t, "https://hooks.example/trove", "", true),
			},
		},
	})
}
