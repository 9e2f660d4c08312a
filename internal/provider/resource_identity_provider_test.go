package provider_test

import (
	"fmt"
	"regexp"
	"strconv"
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

const (
	idpAddr     = "trove_identity_provider.corp"
	mappingAddr = "trove_role_mapping.platform"
)

// idpConfig is a trove_identity_provider "corp" with the given arguments
// ("" leaves one out; scopes nil leaves them out).
func idpConfig(name, issuer, clientID, secretEnv, displayName string, scopes []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "resource \"trove_identity_provider\" \"corp\" {\n  name = %q\n  issuer = %q\n  client_id = %q\n", name, issuer, clientID)
	if secretEnv != "" {
		fmt.Fprintf(&b, "  client_secret_env = %q\n", secretEnv)
	}
	if displayName != "" {
		fmt.Fprintf(&b, "  display_name = %q\n", displayName)
	}
	if scopes != nil {
		quoted := make([]string, len(scopes))
		for i, s := range scopes {
			quoted[i] = strconv.Quote(s)
		}
		fmt.Fprintf(&b, "  scopes = [%s]\n", strings.Join(quoted, ", "))
	}
	b.WriteString("}\n")
	return b.String()
}

// checkIdentityProvider checks through the API that the provider exists
// with the issuer, secret variable and scopes.
func (e *accEnv) checkIdentityProvider(t *testing.T, name, issuer, secretEnv string, scopes ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		p, err := e.api.GetIdentityProvider(t.Context(), name)
		if err != nil {
			return fmt.Errorf("identity provider %s through the API: %w", name, err)
		}
		if p.Issuer != issuer || p.ClientSecretEnv != secretEnv || fmt.Sprint(p.Scopes) != fmt.Sprint(scopes) {
			return fmt.Errorf("identity provider %s in Trove = %+v, want issuer %q, secret variable %q, scopes %v", name, p, issuer, secretEnv, scopes)
		}
		return nil
	}
}

func TestAccIdentityProvider(t *testing.T) {
	e := newAccEnv(t)
	createdAt := statecheck.CompareValue(compare.ValuesSame())
	const issuer = "https://login.example.com/realms/corp"
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config: e.config(idpConfig("corp", issuer, "trove", "TROVE_OIDC_SECRET_CORP", "Example Corp", []string{"profile", "email", "groups"})),
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkIdentityProvider(t, "corp", issuer, "TROVE_OIDC_SECRET_CORP", "profile", "email", "groups"),
					resource.TestCheckResourceAttr(idpAddr, "id", "corp"),
					resource.TestCheckResourceAttr(idpAddr, "display_name", "Example Corp"),
					resource.TestCheckResourceAttr(idpAddr, "scopes.#", "3"),
					resource.TestCheckResourceAttr(idpAddr, "scopes.2", "groups"),
					resource.TestCheckResourceAttr(idpAddr, "redirect_uri", e.srv.URL+"/oauth/sso/corp/callback"),
					resource.TestCheckResourceAttrSet(idpAddr, "created_at"),
					resource.TestCheckResourceAttrSet(idpAddr, "updated_at"),
				),
				ConfigStateChecks: []statecheck.StateCheck{createdAt.AddStateValue(idpAddr, tfjsonpath.New("created_at"))},
			},
			{
				// Everything but the name changes in place: the whole
				// configuration is replaced, a public client now.
				Config: e.config(idpConfig("corp", "http://localhost:5556/dex", "trove-public", "", "", nil)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(idpAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkIdentityProvider(t, "corp", "http://localhost:5556/dex", ""),
					resource.TestCheckResourceAttr(idpAddr, "client_id", "trove-public"),
					resource.TestCheckResourceAttr(idpAddr, "client_secret_env", ""),
					resource.TestCheckResourceAttr(idpAddr, "display_name", ""),
					resource.TestCheckResourceAttr(idpAddr, "scopes.#", "0"),
				),
				ConfigStateChecks: []statecheck.StateCheck{createdAt.AddStateValue(idpAddr, tfjsonpath.New("created_at"))},
			},
			{
				ResourceName:      idpAddr,
				ImportState:       true,
				ImportStateVerify: true,
			},
			{
				// A new name replaces the provider, with a new redirect URI.
				Config: e.config(idpConfig("corp2", issuer, "trove", "", "", []string{"groups"})),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(idpAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkIdentityProvider(t, "corp2", issuer, "", "groups"),
					e.checkIdentityProviderGone(t, "corp"),
					resource.TestCheckResourceAttr(idpAddr, "redirect_uri", e.srv.URL+"/oauth/sso/corp2/callback"),
				),
			},
		},
	})
}

// checkIdentityProviderGone checks through the API that name is gone.
func (e *accEnv) checkIdentityProviderGone(t *testing.T, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		if _, err := e.api.GetIdentityProvider(t.Context(), name); err == nil {
			return fmt.Errorf("identity provider %s still exists in Trove", name)
		}
		return nil
	}
}

// TestAccIdentityProviderRefused: invalid names, issuers, secret
// variables and scopes fail at plan with the API's messages; a provider
// made outside Terraform must be imported, not created.
func TestAccIdentityProviderRefused(t *testing.T) {
	e := newAccEnv(t)
	if _, err := e.api.PutIdentityProvider(t.Context(), "existing", apispec.PutIdentityProviderRequest{Issuer: "https://login.example.com", ClientID: "trove"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.api.DeleteIdentityProvider(t.Context(), "existing") })
	const issuer = "https://login.example.com"
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config:      e.config(idpConfig("Corp_1", issuer, "trove", "", "", nil)),
				PlanOnly:    true,
				ExpectError: wrapped("invalid identity provider name"),
			},
			{
				Config:      e.config(idpConfig("corp", "http://login.example.com", "trove", "", "", nil)),
				PlanOnly:    true,
				ExpectError: wrapped("(http only for localhost)"),
			},
			{
				Config:      e.config(idpConfig("corp", issuer, "trove", "AWS_SECRET_ACCESS_KEY", "", nil)),
				PlanOnly:    true,
				ExpectError: wrapped("that starts with TROVE_OIDC_SECRET_"),
			},
			{
				Config:      e.config(idpConfig("corp", issuer, "trove", "", "", []string{"profile", `gr"oups`})),
				PlanOnly:    true,
				ExpectError: wrapped("a scope is one word of printable ASCII"),
			},
			{
				Config:      e.config(idpConfig("corp", issuer, "", "", "", nil)),
				PlanOnly:    true,
				ExpectError: wrapped("the client ID is missing"),
			},
			{
				Config:      e.config(strings.Replace(idpConfig("existing", issuer, "trove", "", "", nil), `"corp"`, `"other"`, 1)),
				ExpectError: regexp.MustCompile(`already exists in Trove: import it`),
			},
		},
	})
}

// mappingConfig is trove_identity_provider "corp" with a namespace and a
// trove_role_mapping "platform" of it.
func mappingConfig(claim, value, namespace, role string) string {
	claimLine := ""
	if claim != "" {
		claimLine = fmt.Sprintf("  claim = %q\n", claim)
	}
	return idpConfig("corp", "https://login.example.com", "trove", "", "", []string{"groups"}) + fmt.Sprintf(`
resource "trove_namespace" "platform" {
  name = "platform"
}

resource "trove_role_mapping" "platform" {
  identity_provider = trove_identity_provider.corp.name
%s  value = %q
  namespace = %s
  role = %q
}
`, claimLine, value, namespace, role)
}

// checkRoleMapping checks through the API that the mapping in the state
// exists with these fields.
func (e *accEnv) checkRoleMapping(t *testing.T, claim, value, namespace, role string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs, ok := s.RootModule().Resources[mappingAddr]
		if !ok {
			return fmt.Errorf("%s is not in the state", mappingAddr)
		}
		id, err := strconv.ParseInt(rs.Primary.ID, 10, 64)
		if err != nil {
			return fmt.Errorf("%s has ID %q, want a number", mappingAddr, rs.Primary.ID)
		}
		m, err := e.api.GetRoleMapping(t.Context(), id)
		if err != nil {
			return fmt.Errorf("role mapping %d through the API: %w", id, err)
		}
		if m.Provider != "corp" || m.Claim != claim || m.Value != value || m.Namespace != namespace || m.Role != role {
			return fmt.Errorf("role mapping %d in Trove = %+v, want corp %s=%s gives %s in %s", id, m, claim, value, role, namespace)
		}
		return nil
	}
}

func TestAccRoleMapping(t *testing.T) {
	e := newAccEnv(t)
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config: e.config(mappingConfig("", "platform", "trove_namespace.platform.name", "reader")),
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkRoleMapping(t, "groups", "platform", "platform", "reader"),
					resource.TestCheckResourceAttr(mappingAddr, "claim", "groups"),
					resource.TestCheckResourceAttr(mappingAddr, "identity_provider", "corp"),
					resource.TestCheckResourceAttrSet(mappingAddr, "created_at"),
				),
			},
			{
				// Trove cannot change a mapping: a new role replaces it.
				Config: e.config(mappingConfig("", "platform", "trove_namespace.platform.name", "publisher")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(mappingAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: e.checkRoleMapping(t, "groups", "platform", "platform", "publisher"),
			},
			{
				// Another spelling of the namespace is no change.
				Config:   e.config(mappingConfig("", "platform", `"Platform"`, "publisher")),
				PlanOnly: true,
			},
			{
				ResourceName:      mappingAddr,
				ImportState:       true,
				ImportStateVerify: true,
			},
			{
				// The global admin flag, from another claim.
				Config: e.config(mappingConfig("roles", "registry-admins", `"*"`, "admin")),
				Check:  e.checkRoleMapping(t, "roles", "registry-admins", "*", "admin"),
			},
			{
				ResourceName:      mappingAddr,
				ImportState:       true,
				ImportStateVerify: true,
			},
		},
	})
}

// TestAccRoleMappingRefused: invalid claims, values, namespaces, roles and
// a global admin mapping without the admin role fail at plan; a mapping
// to a namespace that does not exist fails at apply with the API's
// message; an import ID must be a number.
func TestAccRoleMappingRefused(t *testing.T) {
	e := newAccEnv(t)
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config:      e.config(mappingConfig("groups claim", "platform", `"platform"`, "reader")),
				PlanOnly:    true,
				ExpectError: wrapped(`invalid claim "groups claim"`),
			},
			{
				Config:      e.config(mappingConfig("", "", `"platform"`, "reader")),
				PlanOnly:    true,
				ExpectError: wrapped("the claim value is missing"),
			},
			{
				Config:      e.config(mappingConfig("", "platform", `"-platform"`, "reader")),
				PlanOnly:    true,
				ExpectError: wrapped(`invalid namespace "-platform"`),
			},
			{
				Config:      e.config(mappingConfig("", "platform", `"platform"`, "owner")),
				PlanOnly:    true,
				ExpectError: wrapped(`invalid role "owner": use reader, publisher or admin`),
			},
			{
				Config:      e.config(mappingConfig("", "admins", `"*"`, "reader")),
				PlanOnly:    true,
				ExpectError: wrapped(`(the global admin flag) must have role = "admin"`),
			},
			{
				Config:      e.config(mappingConfig("", "platform", `"nowhere"`, "reader")),
				ExpectError: regexp.MustCompile(`Trove: creating a role mapping of identity provider corp failed`),
			},
			{
				Config:        e.config(mappingConfig("", "platform", "trove_namespace.platform.name", "reader")),
				ResourceName:  mappingAddr,
				ImportState:   true,
				ImportStateId: "first",
				ExpectError:   wrapped(`invalid role mapping ID "first"`),
			},
		},
	})
}
