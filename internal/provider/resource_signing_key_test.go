package provider_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"trove.dev/trove/client"
	"trove.dev/trove/internal/signing/signingtest"
)

const keyAddr = "trove_signing_key.test"

// keyConfig declares the namespace "keys" and a signing key of it whose
// armor is given as an HCL heredoc (which ends with a newline).
func keyConfig(armor string) string {
	return fmt.Sprintf(`resource "trove_namespace" "keys" {
  name = "keys"
}

resource "trove_signing_key" "test" {
  namespace   = trove_namespace.keys.name
  ascii_armor = <<-EOT
%s
EOT
}`, strings.TrimRight(armor, "\n"))
}

// checkKey checks through the API that the namespace holds the key.
func (e *accEnv) checkKey(t *testing.T, ns string, key *signingtest.Key) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got, err := e.api.GetSigningKey(t.Context(), ns, key.KeyID)
		if err != nil {
			return fmt.Errorf("key %s of namespace %s through the API: %w", key.KeyID, ns, err)
		}
		if got.Fingerprint != key.Fingerprint {
			return fmt.Errorf("key %s has fingerprint %s in Trove, want %s", key.KeyID, got.Fingerprint, key.Fingerprint)
		}
		return nil
	}
}

func (e *accEnv) checkKeyGone(t *testing.T, ns string, key *signingtest.Key) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if _, err := e.api.GetSigningKey(t.Context(), ns, key.KeyID); !client.IsNotFound(err) {
			return fmt.Errorf("key %s of namespace %s through the API: got error %v, want not found", key.KeyID, ns, err)
		}
		return nil
	}
}

func TestAccSigningKey(t *testing.T) {
	e := newAccEnv(t)
	first := signingtest.NewKey(t, "first")
	second := signingtest.NewKey(t, "second")
	keyID := statecheck.CompareValue(compare.ValuesDiffer())
	// The same key as first, with CRLF line endings, trailing blanks and
	// blank lines around it.
	reformatted := "\n\n" + strings.ReplaceAll(strings.TrimSpace(first.ArmoredPublic), "\n", "  \r\n") + "\n\n"

	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config: e.config(keyConfig(first.ArmoredPublic)),
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkKey(t, "keys", first),
					resource.TestCheckResourceAttr(keyAddr, "id", "keys/"+first.KeyID),
					resource.TestCheckResourceAttr(keyAddr, "namespace", "keys"),
					resource.TestCheckResourceAttr(keyAddr, "key_id", first.KeyID),
					resource.TestCheckResourceAttr(keyAddr, "fingerprint", first.Fingerprint),
					resource.TestCheckResourceAttr(keyAddr, "expires_at", ""),
					resource.TestCheckResourceAttrSet(keyAddr, "created_at"),
				),
				ConfigStateChecks: []statecheck.StateCheck{keyID.AddStateValue(keyAddr, tfjsonpath.New("key_id"))},
			},
			{
				// Formatting is no change.
				Config: e.config(fmt.Sprintf(`resource "trove_namespace" "keys" {
  name = "keys"
}

resource "trove_signing_key" "test" {
  namespace   = "KEYS"
  ascii_armor = %q
}`, reformatted)),
				PlanOnly: true,
			},
			{
				ResourceName:      keyAddr,
				ImportState:       true,
				ImportStateVerify: true,
			},
			{
				ResourceName:      keyAddr,
				ImportState:       true,
				ImportStateId:     "keys/" + strings.ToLower(first.KeyID),
				ImportStateVerify: true,
			},
			{
				// Removed outside Terraform: the plan adds it again.
				PreConfig: func() {
					if err := e.api.DeleteSigningKey(t.Context(), "keys", first.KeyID); err != nil {
						t.Fatal(err)
					}
				},
				Config: e.config(keyConfig(first.ArmoredPublic)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(keyAddr, plancheck.ResourceActionCreate),
				}},
				Check: e.checkKey(t, "keys", first),
			},
			{
				// Another key replaces it.
				Config: e.config(keyConfig(second.ArmoredPublic)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(keyAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkKeyGone(t, "keys", first),
					e.checkKey(t, "keys", second),
					resource.TestCheckResourceAttr(keyAddr, "key_id", second.KeyID),
				),
				ConfigStateChecks: []statecheck.StateCheck{keyID.AddStateValue(keyAddr, tfjsonpath.New("key_id"))},
			},
		},
	})
}

func TestAccSigningKeyExpiring(t *testing.T) {
	e := newAccEnv(t)
	// OpenPGP counts in whole seconds; a creation time in the past shows
	// that expires_at is creation plus lifetime, not the time of the apply.
	created := time.Now().Add(-time.Hour).Truncate(time.Second)
	const lifetime = 90 * 24 * time.Hour
	key := signingtest.NewKeyWith(t, "expiring", signingtest.Options{Created: created, Lifetime: lifetime})
	expiresAt := created.Add(lifetime).UTC().Format(time.RFC3339)

	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config: e.config(keyConfig(key.ArmoredPublic)),
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkKey(t, "keys", key),
					resource.TestCheckResourceAttr(keyAddr, "key_id", key.KeyID),
					resource.TestCheckResourceAttr(keyAddr, "expires_at", expiresAt),
					func(*terraform.State) error {
						got, err := e.api.GetSigningKey(t.Context(), "keys", key.KeyID)
						if err != nil {
							return err
						}
						if want := created.Add(lifetime); got.ExpiresAt == nil || !got.ExpiresAt.Equal(want) {
							return fmt.Errorf("key %s expires at %v in Trove, want %v", key.KeyID, got.ExpiresAt, want)
						}
						return nil
					},
				),
			},
			{
				// The expiry as stored reads back as the same value.
				Config:   e.config(keyConfig(key.ArmoredPublic)),
				PlanOnly: true,
			},
			{
				ResourceName:      keyAddr,
				ImportState:       true,
				ImportStateVerify: true,
			},
		},
	})
}

func TestAccSigningKeyInvalid(t *testing.T) {
	e := newAccEnv(t)
	key := signingtest.NewKey(t, "private")
	tests := map[string]string{ // ascii_armor -> error
		key.ArmoredPrivate: "holds a private key",
		"not a key":        "is not an ASCII-armored public key",
	}
	for armor, want := range tests {
		t.Run(want, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV5ProviderFactories: factories(),
				Steps: []resource.TestStep{{
					Config:      e.config(keyConfig(armor)),
					ExpectError: wrapped(want),
				}},
			})
		})
	}
}
