package provider_test

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/auth"
)

const userAddr = "trove_user.test"

// userConfig declares the user trove_user.test.
func userConfig(name, password string, admin, disabled bool) string {
	return fmt.Sprintf(`resource "trove_user" "test" {
  name     = %q
  password = %q
  admin    = %t
  disabled = %t
}`, name, password, admin, disabled)
}

// userState is what checkUser expects of a user in Trove.
type userState struct {
	admin, disabled bool
	password        string // the password that must match
}

// checkUser checks through the API that the user exists with the flags,
// and in the server's index that its password hash matches the password:
// the API never shows a password, not even its hash.
func (e *accEnv) checkUser(t *testing.T, name string, want userState) resource.TestCheckFunc {
	return func(*terraform.State) error {
		u, err := e.api.GetUser(t.Context(), name)
		if err != nil {
			return fmt.Errorf("user %s through the API: %w", name, err)
		}
		if u.Admin != want.admin || u.Disabled != want.disabled || !u.HasPassword {
			return fmt.Errorf("user %s in Trove: admin %t, disabled %t, has password %t; want admin %t, disabled %t, a password",
				name, u.Admin, u.Disabled, u.HasPassword, want.admin, want.disabled)
		}
		stored, err := e.srv.Index.GetUser(t.Context(), name)
		if err != nil {
			return err
		}
		if !auth.VerifyPassword(stored.PasswordHash, want.password) {
			return fmt.Errorf("the password of user %s in Trove is not the one configured", name)
		}
		return nil
	}
}

// checkUserDisabled checks through the API that the user exists and is
// disabled: what destroying a trove_user leaves.
func (e *accEnv) checkUserDisabled(t *testing.T, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		u, err := e.api.GetUser(t.Context(), name)
		if err != nil {
			return fmt.Errorf("user %s through the API: %w", name, err)
		}
		if !u.Disabled {
			return fmt.Errorf("user %s is still enabled in Trove", name)
		}
		return nil
	}
}

func TestAccUser(t *testing.T) {
	e := newAccEnv(t)
	createdAt := statecheck.CompareValue(compare.ValuesSame())
	const first, second = "first password", "second password"
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				// Trove stores the name in lowercase; the configured
				// spelling stays no change.
				Config: e.config(userConfig("Acc.User", first, false, false)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectSensitiveValue(userAddr, tfjsonpath.New("password")),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkUser(t, "acc.user", userState{password: first}),
					resource.TestCheckResourceAttr(userAddr, "id", "acc.user"),
					resource.TestCheckResourceAttr(userAddr, "name", "acc.user"),
					resource.TestCheckResourceAttr(userAddr, "password", first),
					resource.TestCheckResourceAttr(userAddr, "admin", "false"),
					resource.TestCheckResourceAttr(userAddr, "disabled", "false"),
					resource.TestCheckResourceAttrSet(userAddr, "created_at"),
				),
				ConfigStateChecks: []statecheck.StateCheck{createdAt.AddStateValue(userAddr, tfjsonpath.New("created_at"))},
			},
			{
				// A new password is set in place.
				Config: e.config(userConfig("acc.user", second, false, false)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(userAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkUser(t, "acc.user", userState{password: second}),
					resource.TestCheckResourceAttr(userAddr, "password", second),
				),
				ConfigStateChecks: []statecheck.StateCheck{createdAt.AddStateValue(userAddr, tfjsonpath.New("created_at"))},
			},
			{
				// So are the flags.
				Config: e.config(userConfig("acc.user", second, true, true)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(userAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkUser(t, "acc.user", userState{admin: true, disabled: true, password: second}),
					resource.TestCheckResourceAttr(userAddr, "admin", "true"),
					resource.TestCheckResourceAttr(userAddr, "disabled", "true"),
				),
				ConfigStateChecks: []statecheck.StateCheck{createdAt.AddStateValue(userAddr, tfjsonpath.New("created_at"))},
			},
			{
				// Trove never reveals the password: an import leaves it
				// unknown.
				ResourceName:            userAddr,
				ImportState:             true,
				ImportStateId:           "ACC.USER",
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"password"},
			},
			{
				// A new name replaces the user; the old one, which Trove
				// cannot delete, is disabled.
				Config: e.config(userConfig("acc.renamed", second, false, false)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(userAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkUserDisabled(t, "acc.user"),
					e.checkUser(t, "acc.renamed", userState{password: second}),
					resource.TestCheckResourceAttr(userAddr, "id", "acc.renamed"),
				),
			},
		},
	})
}

// TestAccUserDrift changes the user through the API between steps, and
// destroys it and creates it again.
func TestAccUserDrift(t *testing.T) {
	e := newAccEnv(t)
	const password = "drifting password"
	cfg := e.config(userConfig("drifter", password, false, false))
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check:  e.checkUser(t, "drifter", userState{password: password}),
			},
			{
				// Disabled outside Terraform: apply enables it again.
				PreConfig: func() {
					disabled := true
					if _, err := e.api.UpdateUser(t.Context(), "drifter", apispec.UpdateUserRequest{Disabled: &disabled}); err != nil {
						t.Fatal(err)
					}
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(userAddr, plancheck.ResourceActionUpdate),
				}},
				Check: e.checkUser(t, "drifter", userState{password: password}),
			},
			{
				// Destroyed: disabled, and its name stays taken.
				Config: e.config(""),
				Check:  e.checkUserDisabled(t, "drifter"),
			},
			{
				Config:      cfg,
				ExpectError: wrapped("user drifter already exists"),
			},
			{
				// What the error advises: import it. The password is
				// unknown then ...
				Config:             cfg,
				ResourceName:       userAddr,
				ImportState:        true,
				ImportStateId:      "drifter",
				ImportStatePersist: true,
			},
			{
				// ... and the next apply sets it, and enables the user.
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(userAddr, plancheck.ResourceActionUpdate),
				}},
				Check: e.checkUser(t, "drifter", userState{password: password}),
			},
		},
	})
}

func TestAccUserInvalid(t *testing.T) {
	e := newAccEnv(t)
	tests := map[string]struct{ name, password, want string }{
		"name starts with a dot": {".alice", "long enough password", "invalid user name"},
		"name with a space":      {"alice smith", "long enough password", "invalid user name"},
		"empty name":             {"", "long enough password", "invalid user name"},
		"short password":         {"alice", "too short", "the password is shorter than 10 characters"},
		"padded password":        {"alice", " long enough password", "starts or ends with white space"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV5ProviderFactories: factories(),
				Steps: []resource.TestStep{{
					Config:      e.config(userConfig(tc.name, tc.password, false, false)),
					ExpectError: wrapped(tc.want),
				}},
			})
		})
	}
}
