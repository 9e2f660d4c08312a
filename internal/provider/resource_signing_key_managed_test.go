package provider_test

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"trove.dev/trove/client"
	"trove.dev/trove/internal/signing/signingtest"
)

const managedKeyConfig = `resource "trove_namespace" "keys" {
  name = "keys"
}

resource "trove_signing_key" "test" {
  namespace = trove_namespace.keys.name
  managed   = true
}`

// checkManagedKey checks through the API that the namespace's key in the
// state is its managed key and that the state holds its public half only.
func (e *accEnv) checkManagedKey(t *testing.T) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs, ok := s.RootModule().Resources[keyAddr]
		if !ok {
			return fmt.Errorf("%s is not in the state", keyAddr)
		}
		keyID := rs.Primary.Attributes["key_id"]
		got, err := e.api.GetSigningKey(t.Context(), "keys", keyID)
		if err != nil {
			return fmt.Errorf("key %s through the API: %w", keyID, err)
		}
		if !got.Managed || got.Fingerprint != rs.Primary.Attributes["fingerprint"] || got.ASCIIArmor != rs.Primary.Attributes["ascii_armor"] {
			return fmt.Errorf("key %s in Trove = %+v, want the managed key of the state", keyID, got)
		}
		for name, v := range rs.Primary.Attributes {
			if strings.Contains(v, "PRIVATE") {
				return fmt.Errorf("state attribute %s holds private key material", name)
			}
		}
		return nil
	}
}

func TestAccSigningKeyManaged(t *testing.T) {
	e := newAccEnv(t)
	var first string
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy: resource.ComposeAggregateTestCheckFunc(e.checkDestroyed(t), func(*terraform.State) error {
			// Destroyed with its private half: the namespace is gone.
			if _, err := e.api.ListSigningKeys(t.Context(), "keys"); !client.IsNotFound(err) {
				return fmt.Errorf("namespace keys after destroy: %v, want not found", err)
			}
			return nil
		}),
		Steps: []resource.TestStep{
			{
				Config: e.config(managedKeyConfig),
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkManagedKey(t),
					resource.TestCheckResourceAttr(keyAddr, "managed", "true"),
					resource.TestCheckResourceAttr(keyAddr, "namespace", "keys"),
					resource.TestMatchResourceAttr(keyAddr, "key_id", regexp.MustCompile(`^[0-9A-F]{16}$`)),
					resource.TestMatchResourceAttr(keyAddr, "fingerprint", regexp.MustCompile(`^[0-9A-F]{40}$`)),
					resource.TestMatchResourceAttr(keyAddr, "ascii_armor", regexp.MustCompile(`^-----BEGIN PGP PUBLIC KEY BLOCK-----`)),
					resource.TestCheckResourceAttr(keyAddr, "expires_at", ""),
					func(s *terraform.State) error {
						first = s.RootModule().Resources[keyAddr].Primary.Attributes["key_id"]
						return nil
					},
				),
			},
			{
				// The generated key reads back unchanged.
				Config:   e.config(managedKeyConfig),
				PlanOnly: true,
			},
			{
				ResourceName:      keyAddr,
				ImportState:       true,
				ImportStateVerify: true,
			},
			{
				// A second managed key in the namespace is refused.
				Config: e.config(managedKeyConfig + `

resource "trove_signing_key" "second" {
  namespace = trove_namespace.keys.name
  managed   = true
}`),
				ExpectError: regexp.MustCompile(`already has a managed signing key`),
			},
			{
				// Removed outside Terraform: the plan generates a new key.
				PreConfig: func() {
					if err := e.api.DeleteSigningKey(t.Context(), "keys", first); err != nil {
						t.Fatal(err)
					}
				},
				Config: e.config(managedKeyConfig),
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkManagedKey(t),
					func(s *terraform.State) error {
						if id := s.RootModule().Resources[keyAddr].Primary.Attributes["key_id"]; id == first {
							return fmt.Errorf("key_id is still %s after the key was removed", id)
						}
						return nil
					},
				),
			},
		},
	})
}

func TestAccSigningKeyManagedInvalid(t *testing.T) {
	e := newAccEnv(t)
	armor := signingtest.NewKey(t, "both").ArmoredPublic
	tests := map[string]string{ // resource body -> error
		fmt.Sprintf("managed     = true\n  ascii_armor = %q", armor): "not both",
		"managed   = false": "set ascii_armor",
		"":                  "set ascii_armor",
	}
	for body, want := range tests {
		t.Run(want+"/"+strings.Fields(body + " none")[0], func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV5ProviderFactories: factories(),
				Steps: []resource.TestStep{{
					Config: e.config(fmt.Sprintf(`resource "trove_namespace" "keys" {
  name = "keys"
}

resource "trove_signing_key" "test" {
  namespace = trove_namespace.keys.name
  %s
}`, body)),
					ExpectError: wrapped(want),
				}},
			})
		})
	}
}
