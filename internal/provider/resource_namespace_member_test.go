package provider_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
)

const memberAddr = "trove_namespace_member.test"

// memberConfig declares the namespace "team", the users alice and bob, and
// the membership of user (a user's name) with the role.
func memberConfig(user, role string) string {
	return fmt.Sprintf(`resource "trove_namespace" "team" {
  name = "team"
}

resource "trove_user" "alice" {
  name     = "alice"
  password = "alice's password"
}

resource "trove_user" "bob" {
  name     = "bob"
  password = "bob's password"
}

resource "trove_namespace_member" "test" {
  namespace  = trove_namespace.team.name
  user       = %q
  role       = %q
  depends_on = [trove_user.alice, trove_user.bob]
}`, user, role)
}

// member returns the membership of user in namespace through the API;
// found is false when the user is no member or the namespace is gone.
func (e *accEnv) member(ctx context.Context, namespace, user string) (m apispec.Membership, found bool, err error) {
	members, err := e.api.ListMembers(ctx, namespace)
	if client.IsNotFound(err) {
		return apispec.Membership{}, false, nil
	}
	if err != nil {
		return apispec.Membership{}, false, fmt.Errorf("members of namespace %s through the API: %w", namespace, err)
	}
	for _, m := range members {
		if m.User == user {
			return m, true, nil
		}
	}
	return apispec.Membership{}, false, nil
}

// checkMember checks through the API that user is a member of namespace
// with the role, or no member for role "".
func (e *accEnv) checkMember(t *testing.T, namespace, user, role string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		m, found, err := e.member(t.Context(), namespace, user)
		switch {
		case err != nil:
			return err
		case role == "" && found:
			return fmt.Errorf("user %s is still a member of namespace %s in Trove (role %s)", user, namespace, m.Role)
		case role != "" && !found:
			return fmt.Errorf("user %s is no member of namespace %s in Trove, want role %s", user, namespace, role)
		case m.Role != role:
			return fmt.Errorf("user %s has role %s in namespace %s in Trove, want %s", user, m.Role, namespace, role)
		}
		return nil
	}
}

func TestAccNamespaceMember(t *testing.T) {
	e := newAccEnv(t)
	createdAt := statecheck.CompareValue(compare.ValuesSame())
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config:      e.config(memberConfig("alice", "owner")),
				ExpectError: wrapped(`invalid role "owner": use reader, publisher or admin`),
			},
			{
				// Another spelling of the user's name is the same user.
				Config: e.config(memberConfig("Alice", "reader")),
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkMember(t, "team", "alice", "reader"),
					resource.TestCheckResourceAttr(memberAddr, "id", "team/alice"),
					resource.TestCheckResourceAttr(memberAddr, "namespace", "team"),
					resource.TestCheckResourceAttr(memberAddr, "user", "alice"),
					resource.TestCheckResourceAttr(memberAddr, "role", "reader"),
					resource.TestCheckResourceAttrSet(memberAddr, "created_at"),
				),
				ConfigStateChecks: []statecheck.StateCheck{createdAt.AddStateValue(memberAddr, tfjsonpath.New("created_at"))},
			},
			{
				// The role changes in place.
				Config: e.config(memberConfig("alice", "publisher")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(memberAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkMember(t, "team", "alice", "publisher"),
					resource.TestCheckResourceAttr(memberAddr, "role", "publisher"),
				),
				ConfigStateChecks: []statecheck.StateCheck{createdAt.AddStateValue(memberAddr, tfjsonpath.New("created_at"))},
			},
			{
				// Another user replaces the membership.
				Config: e.config(memberConfig("bob", "publisher")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(memberAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkMember(t, "team", "alice", ""),
					e.checkMember(t, "team", "bob", "publisher"),
					resource.TestCheckResourceAttr(memberAddr, "id", "team/bob"),
				),
			},
			{
				ResourceName:      memberAddr,
				ImportState:       true,
				ImportStateVerify: true,
			},
			{
				ResourceName:      memberAddr,
				ImportState:       true,
				ImportStateId:     "Team/Bob",
				ImportStateVerify: true,
			},
			{
				ResourceName:  memberAddr,
				ImportState:   true,
				ImportStateId: "team",
				ExpectError:   wrapped(`invalid membership ID "team": want <namespace>/<user>`),
			},
		},
	})
}

// TestAccNamespaceMemberDrift changes and removes the membership through
// the API between steps: the next plan must notice and apply must put it
// back.
func TestAccNamespaceMemberDrift(t *testing.T) {
	e := newAccEnv(t)
	cfg := e.config(memberConfig("alice", "reader"))
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check:  e.checkMember(t, "team", "alice", "reader"),
			},
			{
				PreConfig: func() {
					if _, err := e.api.SetMember(t.Context(), "team", "alice", "admin"); err != nil {
						t.Fatal(err)
					}
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(memberAddr, plancheck.ResourceActionUpdate),
				}},
				Check: e.checkMember(t, "team", "alice", "reader"),
			},
			{
				PreConfig: func() {
					if err := e.api.RemoveMember(t.Context(), "team", "alice"); err != nil {
						t.Fatal(err)
					}
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(memberAddr, plancheck.ResourceActionCreate),
				}},
				Check: e.checkMember(t, "team", "alice", "reader"),
			},
		},
	})
}
