package provider_test

import (
	"fmt"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"trove.dev/trove/client"
)

const (
	tokenAddr       = "trove_token.ci"
	globalTokenAddr = "trove_token.global"
)

// tokenConfig declares the namespace "tokens", a token of it with the
// scopes (an HCL list) and expiry (none if empty), and a global read token.
func tokenConfig(scopes, expiresAt string) string {
	expiry := ""
	if expiresAt != "" {
		expiry = fmt.Sprintf("\n  expires_at  = %q", expiresAt)
	}
	return fmt.Sprintf(`resource "trove_namespace" "tokens" {
  name = "tokens"
}

resource "trove_token" "ci" {
  namespace   = trove_namespace.tokens.name
  scopes      = %s
  description = "CI publishing"%s
}

resource "trove_token" "global" {
  scopes = ["read"]
}`, scopes, expiry)
}

// checkTokenExpiry checks through the API that the token of addr expires
// at want (never if nil).
func (e *accEnv) checkTokenExpiry(t *testing.T, addr string, want *time.Time) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		id := s.RootModule().Resources[addr].Primary.ID
		tok, err := e.api.GetToken(t.Context(), id)
		if err != nil {
			return err
		}
		if (tok.ExpiresAt == nil) != (want == nil) || want != nil && !tok.ExpiresAt.Equal(*want) {
			return fmt.Errorf("token %s expires at %v in Trove, want %v", id, tok.ExpiresAt, want)
		}
		return nil
	}
}

// checkTokenWorks authenticates with the secret in the state of addr and
// checks through the API that it is the token in the state, with the
// namespace and scopes.
func (e *accEnv) checkTokenWorks(t *testing.T, addr, namespace string, scopes ...string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs, ok := s.RootModule().Resources[addr]
		if !ok {
			return fmt.Errorf("%s is not in the state", addr)
		}
		c, err := client.New(e.srv.URL, rs.Primary.Attributes["token"], client.WithCAFile(e.srv.CAFile))
		if err != nil {
			return err
		}
		who, err := c.WhoAmI(t.Context())
		if err != nil {
			return fmt.Errorf("authenticating with the secret of %s: %w", addr, err)
		}
		slices.Sort(who.Scopes)
		slices.Sort(scopes)
		if who.ID != rs.Primary.ID || who.Namespace != namespace || !slices.Equal(who.Scopes, scopes) {
			return fmt.Errorf("the secret of %s authenticates as token %s of namespace %q with scopes %q; want %s of %q with %q",
				addr, who.ID, who.Namespace, who.Scopes, rs.Primary.ID, namespace, scopes)
		}
		return nil
	}
}

func TestAccToken(t *testing.T) {
	e := newAccEnv(t)
	id := statecheck.CompareValue(compare.ValuesDiffer())
	// +01:00 on purpose: Trove answers in UTC, which must not be a change.
	const expiresAt = "2099-01-02T16:04:05+01:00"
	expiry := time.Date(2099, 1, 2, 15, 4, 5, 0, time.UTC)
	var ciID string

	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config: e.config(tokenConfig(`["publish", "read"]`, expiresAt)),
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkTokenWorks(t, tokenAddr, "tokens", "publish", "read"),
					e.checkTokenWorks(t, globalTokenAddr, "", "read"),
					resource.TestCheckResourceAttr(tokenAddr, "namespace", "tokens"),
					resource.TestCheckResourceAttr(tokenAddr, "scopes.#", "2"),
					resource.TestCheckTypeSetElemAttr(tokenAddr, "scopes.*", "publish"),
					resource.TestCheckResourceAttr(tokenAddr, "description", "CI publishing"),
					resource.TestCheckResourceAttr(tokenAddr, "expires_at", "2099-01-02T15:04:05Z"),
					resource.TestMatchResourceAttr(tokenAddr, "token", regexp.MustCompile(`^trove_\S+$`)),
					resource.TestCheckResourceAttr(globalTokenAddr, "namespace", ""),
					resource.TestCheckResourceAttr(globalTokenAddr, "expires_at", ""),
					e.checkTokenExpiry(t, tokenAddr, &expiry),
					func(s *terraform.State) error {
						ciID = s.RootModule().Resources[tokenAddr].Primary.ID
						return nil
					},
				),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectSensitiveValue(tokenAddr, tfjsonpath.New("token")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{id.AddStateValue(tokenAddr, tfjsonpath.New("id"))},
			},
			{
				ResourceName:            tokenAddr,
				ImportState:             true,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"token"},
			},
			{
				// Revoked outside Terraform: the plan creates a new token.
				PreConfig: func() {
					if err := e.api.RevokeToken(t.Context(), ciID); err != nil {
						t.Fatal(err)
					}
				},
				Config: e.config(tokenConfig(`["publish", "read"]`, expiresAt)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(tokenAddr, plancheck.ResourceActionCreate),
					plancheck.ExpectResourceAction(globalTokenAddr, plancheck.ResourceActionNoop),
				}},
				Check:             e.checkTokenWorks(t, tokenAddr, "tokens", "publish", "read"),
				ConfigStateChecks: []statecheck.StateCheck{id.AddStateValue(tokenAddr, tfjsonpath.New("id"))},
			},
			{
				// Tokens cannot change: other scopes replace it, and the
				// old one is revoked.
				Config: e.config(tokenConfig(`["admin"]`, expiresAt)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(tokenAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkTokenWorks(t, tokenAddr, "tokens", "admin"),
					e.checkTokenRevokedInState(t),
				),
				ConfigStateChecks: []statecheck.StateCheck{id.AddStateValue(tokenAddr, tfjsonpath.New("id"))},
			},
			{
				// expires_at is Optional and Computed: removed from the
				// configuration, it is no change; the token keeps its expiry.
				Config: e.config(tokenConfig(`["admin"]`, "")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(tokenAddr, plancheck.ResourceActionNoop),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(tokenAddr, "expires_at", "2099-01-02T15:04:05Z"),
					e.checkTokenExpiry(t, tokenAddr, &expiry),
				),
			},
			{
				// Only a replacement (here after a taint, as with
				// -replace) creates a token with the server's default.
				Config: e.config(tokenConfig(`["admin"]`, "")),
				Taint:  []string{tokenAddr},
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(tokenAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkTokenWorks(t, tokenAddr, "tokens", "admin"),
					e.checkTokenRevokedInState(t),
					resource.TestCheckResourceAttr(tokenAddr, "expires_at", ""),
					e.checkTokenExpiry(t, tokenAddr, nil),
					func(s *terraform.State) error {
						ciID = s.RootModule().Resources[tokenAddr].Primary.ID
						return nil
					},
				),
				ConfigStateChecks: []statecheck.StateCheck{id.AddStateValue(tokenAddr, tfjsonpath.New("id"))},
			},
			{
				// Expired outside Terraform (trove token expire): as gone
				// as a revoked one, the plan creates a new token.
				PreConfig: func() {
					if _, err := e.api.ExpireToken(t.Context(), ciID, time.Now().Add(-time.Minute)); err != nil {
						t.Fatal(err)
					}
				},
				Config: e.config(tokenConfig(`["admin"]`, "")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(tokenAddr, plancheck.ResourceActionCreate),
				}},
				Check:             e.checkTokenWorks(t, tokenAddr, "tokens", "admin"),
				ConfigStateChecks: []statecheck.StateCheck{id.AddStateValue(tokenAddr, tfjsonpath.New("id"))},
			},
		},
	})
}

// checkTokenRevokedInState checks that every token trove_token.ci had
// before its current one is revoked in Trove.
func (e *accEnv) checkTokenRevokedInState(t *testing.T) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		current := s.RootModule().Resources[tokenAddr].Primary.ID
		tokens, err := e.api.ListTokens(t.Context(), "tokens")
		if err != nil {
			return err
		}
		for _, tok := range tokens {
			if tok.ID != current && tok.RevokedAt == nil {
				return fmt.Errorf("token %s of namespace tokens is not revoked; only %s should be active", tok.ID, current)
			}
		}
		return nil
	}
}

func TestAccTokenInvalid(t *testing.T) {
	e := newAccEnv(t)
	tests := map[string]struct {
		scopes, expiresAt, want string
	}{
		"unknown scope":      {`["write"]`, "2099-01-01T00:00:00Z", `unknown scope "write"`},
		"no scope":           {`[]`, "2099-01-01T00:00:00Z", "Not enough list items"},
		"expiry not RFC3339": {`["read"]`, "tomorrow", "Invalid RFC 3339 time stamp"},
		"expiry in the past": {`["read"]`, "2001-01-01T00:00:00Z", "is not in the future"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			resource.Test(t, resource.TestCase{
				ProtoV5ProviderFactories: factories(),
				CheckDestroy:             e.checkDestroyed(t),
				Steps: []resource.TestStep{{
					Config:      e.config(tokenConfig(tc.scopes, tc.expiresAt)),
					ExpectError: wrapped(tc.want),
				}},
			})
		})
	}
}

// checkPersonalToken authenticates with the secret in the state of addr
// and checks through the API that it is a personal token of user that
// reads the private namespace through the user's membership.
func (e *accEnv) checkPersonalToken(t *testing.T, addr, user, namespace string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs, ok := s.RootModule().Resources[addr]
		if !ok {
			return fmt.Errorf("%s is not in the state", addr)
		}
		c, err := client.New(e.srv.URL, rs.Primary.Attributes["token"], client.WithCAFile(e.srv.CAFile))
		if err != nil {
			return err
		}
		who, err := c.WhoAmI(t.Context())
		if err != nil {
			return fmt.Errorf("authenticating with the secret of %s: %w", addr, err)
		}
		if who.ID != rs.Primary.ID || who.User != user || who.Namespace != namespace {
			return fmt.Errorf("the secret of %s authenticates as token %s of user %q in namespace %q; want %s of %q in %q",
				addr, who.ID, who.User, who.Namespace, rs.Primary.ID, user, namespace)
		}
		if _, err := c.GetNamespace(t.Context(), namespace); err != nil {
			return fmt.Errorf("reading private namespace %s with the personal token of its member %s: %w", namespace, user, err)
		}
		return nil
	}
}

func TestAccTokenPersonal(t *testing.T) {
	e := newAccEnv(t)
	const addr = "trove_token.carol"
	// The user is spelt differently from how Trove stores it: no change.
	cfg := e.config(`resource "trove_namespace" "private" {
  name = "private"
}

resource "trove_user" "carol" {
  name     = "carol"
  password = "carol's password"
}

resource "trove_namespace_member" "carol" {
  namespace = trove_namespace.private.name
  user      = trove_user.carol.name
  role      = "reader"
}

resource "trove_token" "carol" {
  user        = "Carol"
  namespace   = trove_namespace.private.name
  scopes      = ["read"]
  description = "carol's terraform init"
  depends_on  = [trove_namespace_member.carol]
}`)
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config: e.config(`resource "trove_token" "carol" {
  user   = "carol smith"
  scopes = ["read"]
}`),
				ExpectError: wrapped(`invalid user name "carol smith"`),
			},
			{
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkPersonalToken(t, addr, "carol", "private"),
					resource.TestCheckResourceAttr(addr, "user", "carol"),
				),
			},
			{
				ResourceName:            addr,
				ImportState:             true,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"token"},
			},
		},
	})
}

// tokenSetConfig declares the namespaces team-a and team-b, the token
// multi with the namespaces argument given (an HCL list, or "" for none),
// and the token legacy with legacy (the deprecated namespace argument, or
// a namespaces argument).
func tokenSetConfig(namespaces, legacy string) string {
	multi := ""
	if namespaces != "" {
		multi = "\n  namespaces = " + namespaces
	}
	return fmt.Sprintf(`resource "trove_namespace" "a" {
  name = "team-a"
}

resource "trove_namespace" "b" {
  name = "team-b"
}

resource "trove_token" "multi" {%s
  scopes     = ["publish"]
  depends_on = [trove_namespace.a, trove_namespace.b]
}

resource "trove_token" "legacy" {
  %s
  scopes     = ["read"]
  depends_on = [trove_namespace.a]
}`, multi, legacy)
}

// checkTokenNamespaces authenticates with the secret in the state of addr
// and checks through the API that it is the token in the state, bound to
// the namespaces (given sorted; none for a global token).
func (e *accEnv) checkTokenNamespaces(t *testing.T, addr string, namespaces ...string) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		rs, ok := s.RootModule().Resources[addr]
		if !ok {
			return fmt.Errorf("%s is not in the state", addr)
		}
		c, err := client.New(e.srv.URL, rs.Primary.Attributes["token"], client.WithCAFile(e.srv.CAFile))
		if err != nil {
			return err
		}
		who, err := c.WhoAmI(t.Context())
		if err != nil {
			return fmt.Errorf("authenticating with the secret of %s: %w", addr, err)
		}
		if who.ID != rs.Primary.ID || !slices.Equal(who.Namespaces, namespaces) {
			return fmt.Errorf("the secret of %s authenticates as token %s bound to %q; want %s bound to %q",
				addr, who.ID, who.Namespaces, rs.Primary.ID, namespaces)
		}
		return nil
	}
}

func TestAccTokenNamespaces(t *testing.T) {
	e := newAccEnv(t)
	const multi, legacy = "trove_token.multi", "trove_token.legacy"
	// Spelt differently from how Trove stores them: no change.
	both := `[trove_namespace.a.name, "Team-B"]`
	deprecated := `namespace  = "Team-A"`
	id := statecheck.CompareValue(compare.ValuesSame())
	var multiID string
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config:      e.config(tokenSetConfig(`["team-a", "team/b"]`, deprecated)),
				ExpectError: wrapped(`invalid namespace "team/b"`),
			},
			{
				Config:      e.config(tokenSetConfig(both, deprecated+"\n  namespaces = [\"team-a\"]")),
				ExpectError: wrapped(`"namespace": conflicts with namespaces`),
			},
			{
				Config: e.config(tokenSetConfig(both, deprecated)),
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkTokenNamespaces(t, multi, "team-a", "team-b"),
					resource.TestCheckResourceAttr(multi, "namespaces.#", "2"),
					resource.TestCheckTypeSetElemAttr(multi, "namespaces.*", "team-a"),
					resource.TestCheckTypeSetElemAttr(multi, "namespaces.*", "team-b"),
					resource.TestCheckResourceAttr(multi, "namespace", ""),
					// The deprecated argument still works, and fills both.
					e.checkTokenNamespaces(t, legacy, "team-a"),
					resource.TestCheckResourceAttr(legacy, "namespace", "team-a"),
					resource.TestCheckResourceAttr(legacy, "namespaces.#", "1"),
					resource.TestCheckTypeSetElemAttr(legacy, "namespaces.*", "team-a"),
				),
				ConfigStateChecks: []statecheck.StateCheck{id.AddStateValue(legacy, tfjsonpath.New("id"))},
			},
			{
				ResourceName:            multi,
				ImportState:             true,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"token"},
			},
			{
				ResourceName:            legacy,
				ImportState:             true,
				ImportStateVerify:       true,
				ImportStateVerifyIgnore: []string{"token"},
			},
			{
				// From the deprecated argument to its successor: no change.
				Config: e.config(tokenSetConfig(both, `namespaces = ["team-a"]`)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(legacy, plancheck.ResourceActionNoop),
					plancheck.ExpectResourceAction(multi, plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{id.AddStateValue(legacy, tfjsonpath.New("id"))},
				Check: func(s *terraform.State) error {
					multiID = s.RootModule().Resources[multi].Primary.ID
					return nil
				},
			},
			{
				// team-b deleted outside Terraform takes the token with it:
				// the plan creates both again.
				PreConfig: func() {
					if err := e.api.DeleteNamespace(t.Context(), "team-b"); err != nil {
						t.Fatal(err)
					}
					if _, err := e.api.GetToken(t.Context(), multiID); !client.IsNotFound(err) {
						t.Fatalf("token %s after deleting team-b: %v, want not found", multiID, err)
					}
				},
				Config: e.config(tokenSetConfig(both, `namespaces = ["team-a"]`)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("trove_namespace.b", plancheck.ResourceActionCreate),
					plancheck.ExpectResourceAction(multi, plancheck.ResourceActionCreate),
					plancheck.ExpectResourceAction(legacy, plancheck.ResourceActionNoop),
				}},
				Check: e.checkTokenNamespaces(t, multi, "team-a", "team-b"),
			},
			{
				// Another set replaces the token.
				Config: e.config(tokenSetConfig(`["team-b"]`, `namespaces = ["team-a"]`)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(multi, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkTokenNamespaces(t, multi, "team-b"),
					resource.TestCheckResourceAttr(multi, "namespace", "team-b"),
				),
			},
			{
				// Neither namespaces nor namespace: a global token replaces it.
				Config: e.config(tokenSetConfig("", `namespaces = ["team-a"]`)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(multi, plancheck.ResourceActionDestroyBeforeCreate),
					plancheck.ExpectResourceAction(legacy, plancheck.ResourceActionNoop),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkTokenNamespaces(t, multi),
					resource.TestCheckResourceAttr(multi, "namespaces.#", "0"),
					resource.TestCheckResourceAttr(multi, "namespace", ""),
				),
			},
		},
	})
}
