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
	"trove.dev/trove/client"
)

const namespaceAddr = "trove_namespace.test"

func namespaceConfig(name, description string) string {
	return fmt.Sprintf(`resource "trove_namespace" "test" {
  name        = %q
  description = %q
}`, name, description)
}

// checkNamespace checks through the API that the namespace exists with the
// description.
func (e *accEnv) checkNamespace(t *testing.T, name, description string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ns, err := e.api.GetNamespace(t.Context(), name)
		if err != nil {
			return fmt.Errorf("namespace %s through the API: %w", name, err)
		}
		if ns.Description != description {
			return fmt.Errorf("namespace %s has description %q in Trove, want %q", name, ns.Description, description)
		}
		return nil
	}
}

// checkNamespaceGone checks through the API that the namespace is gone.
func (e *accEnv) checkNamespaceGone(t *testing.T, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		_, err := e.api.GetNamespace(t.Context(), name)
		if !client.IsNotFound(err) {
			return fmt.Errorf("namespace %s through the API: got error %v, want not found", name, err)
		}
		return nil
	}
}

func TestAccNamespace(t *testing.T) {
	e := newAccEnv(t)
	createdAt := statecheck.CompareValue(compare.ValuesSame())
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config: e.config(namespaceConfig("acc-one", "first")),
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkNamespace(t, "acc-one", "first"),
					resource.TestCheckResourceAttr(namespaceAddr, "id", "acc-one"),
					resource.TestCheckResourceAttr(namespaceAddr, "name", "acc-one"),
					resource.TestCheckResourceAttr(namespaceAddr, "description", "first"),
					resource.TestCheckResourceAttrSet(namespaceAddr, "created_at"),
				),
				ConfigStateChecks: []statecheck.StateCheck{createdAt.AddStateValue(namespaceAddr, tfjsonpath.New("created_at"))},
			},
			{
				// The description changes in place.
				Config: e.config(namespaceConfig("acc-one", "second")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(namespaceAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkNamespace(t, "acc-one", "second"),
					resource.TestCheckResourceAttr(namespaceAddr, "description", "second"),
				),
				ConfigStateChecks: []statecheck.StateCheck{createdAt.AddStateValue(namespaceAddr, tfjsonpath.New("created_at"))},
			},
			{
				// Another spelling of the same name is no change.
				Config:   e.config(namespaceConfig("ACC-One", "second")),
				PlanOnly: true,
			},
			{
				// A new name replaces the namespace.
				Config: e.config(namespaceConfig("acc-two", "second")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(namespaceAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkNamespaceGone(t, "acc-one"),
					e.checkNamespace(t, "acc-two", "second"),
					resource.TestCheckResourceAttr(namespaceAddr, "id", "acc-two"),
				),
			},
			{
				ResourceName:      namespaceAddr,
				ImportState:       true,
				ImportStateVerify: true,
			},
			{
				// Import IDs are names, in any case.
				ResourceName:      namespaceAddr,
				ImportState:       true,
				ImportStateId:     "ACC-TWO",
				ImportStateVerify: true,
			},
		},
	})
}

// TestAccNamespaceDrift changes and deletes the namespace through the API
// between steps: the next plan must notice and apply must put it back.
func TestAccNamespaceDrift(t *testing.T) {
	e := newAccEnv(t)
	cfg := e.config(namespaceConfig("drift", "managed"))
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check:  e.checkNamespace(t, "drift", "managed"),
			},
			{
				PreConfig: func() {
					changed := "changed outside Terraform"
					if _, err := e.api.UpdateNamespace(t.Context(), "drift", apispec.UpdateNamespaceRequest{Description: &changed}); err != nil {
						t.Fatal(err)
					}
				},
				Config:             cfg,
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(namespaceAddr, plancheck.ResourceActionUpdate),
				}},
				Check: e.checkNamespace(t, "drift", "managed"),
			},
			{
				PreConfig: func() {
					if err := e.api.DeleteNamespace(t.Context(), "drift"); err != nil {
						t.Fatal(err)
					}
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(namespaceAddr, plancheck.ResourceActionCreate),
				}},
				Check: e.checkNamespace(t, "drift", "managed"),
			},
		},
	})
}

func TestAccNamespaceInvalidName(t *testing.T) {
	e := newAccEnv(t)
	tests := map[string]string{ // name -> error
		"-dash-first": "invalid namespace",
		"has space":   "invalid namespace",
		"":            "namespace name is empty",
	}
	for name, want := range tests {
		t.Run(name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV5ProviderFactories: factories(),
				Steps: []resource.TestStep{{
					Config:      e.config(namespaceConfig(name, "")),
					ExpectError: wrapped(want),
				}},
			})
		})
	}
}

// namespaceVisibilityConfig declares the namespace "vis" with the
// visibility ("" leaves the attribute out) and a data source reading it
// once the namespace is applied.
func namespaceVisibilityConfig(visibility string) string {
	attr := ""
	if visibility != "" {
		attr = fmt.Sprintf("\n  visibility = %q", visibility)
	}
	return fmt.Sprintf(`resource "trove_namespace" "test" {
  name = "vis"%s
}

data "trove_namespace" "test" {
  name       = trove_namespace.test.name
  depends_on = [trove_namespace.test]
}`, attr)
}

// checkVisibility checks through the API that the namespace has the
// visibility.
func (e *accEnv) checkVisibility(t *testing.T, name, visibility string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		ns, err := e.api.GetNamespace(t.Context(), name)
		if err != nil {
			return fmt.Errorf("namespace %s through the API: %w", name, err)
		}
		if ns.Visibility != visibility {
			return fmt.Errorf("namespace %s is %s in Trove, want %s", name, ns.Visibility, visibility)
		}
		return nil
	}
}

func TestAccNamespaceVisibility(t *testing.T) {
	e := newAccEnv(t)
	createdAt := statecheck.CompareValue(compare.ValuesSame())
	const dataAddr = "data.trove_namespace.test"
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config:      e.config(namespaceVisibilityConfig("internal")),
				ExpectError: wrapped(`invalid visibility "internal": use public or private`),
			},
			{
				// New namespaces are private unless configured otherwise.
				Config: e.config(namespaceVisibilityConfig("")),
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkVisibility(t, "vis", "private"),
					resource.TestCheckResourceAttr(namespaceAddr, "visibility", "private"),
					resource.TestCheckResourceAttr(dataAddr, "visibility", "private"),
				),
				ConfigStateChecks: []statecheck.StateCheck{createdAt.AddStateValue(namespaceAddr, tfjsonpath.New("created_at"))},
			},
			{
				// The visibility changes in place.
				Config: e.config(namespaceVisibilityConfig("public")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(namespaceAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkVisibility(t, "vis", "public"),
					resource.TestCheckResourceAttr(namespaceAddr, "visibility", "public"),
					resource.TestCheckResourceAttr(dataAddr, "visibility", "public"),
				),
				ConfigStateChecks: []statecheck.StateCheck{createdAt.AddStateValue(namespaceAddr, tfjsonpath.New("created_at"))},
			},
			{
				ResourceName:      namespaceAddr,
				ImportState:       true,
				ImportStateVerify: true,
			},
			{
				// Made private through the API: the plan makes it public
				// again.
				PreConfig: func() {
					private := "private"
					if _, err := e.api.UpdateNamespace(t.Context(), "vis", apispec.UpdateNamespaceRequest{Visibility: &private}); err != nil {
						t.Fatal(err)
					}
				},
				Config: e.config(namespaceVisibilityConfig("public")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(namespaceAddr, plancheck.ResourceActionUpdate),
				}},
				Check: e.checkVisibility(t, "vis", "public"),
			},
			{
				// Leaving the attribute out means the default: private.
				Config: e.config(namespaceVisibilityConfig("")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(namespaceAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkVisibility(t, "vis", "private"),
					resource.TestCheckResourceAttr(dataAddr, "visibility", "private"),
				),
				ConfigStateChecks: []statecheck.StateCheck{createdAt.AddStateValue(namespaceAddr, tfjsonpath.New("created_at"))},
			},
		},
	})
}
