package provider_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-go/tfprotov5"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"trove.dev/trove/client"
	"trove.dev/trove/internal/provider"
	"trove.dev/trove/internal/trovetest"
)

// The acceptance tests (TestAcc...) run the real terraform CLI through
// terraform-plugin-testing against a Trove started in-process. Like every
// terraform-plugin-testing test they run only with TF_ACC=1; scripts/test.sh
// sets it together with TF_ACC_TERRAFORM_PATH. Without
// TF_ACC_TERRAFORM_PATH, TestMain points it at the terraform on the PATH, so
// that the framework never downloads a terraform of its own.
func TestMain(m *testing.M) {
	if os.Getenv(resource.EnvTfAcc) != "" && os.Getenv("TF_ACC_TERRAFORM_PATH") == "" {
		path, err := exec.LookPath("terraform")
		if err != nil {
			fmt.Fprintln(os.Stderr, "provider: TF_ACC is set, but TF_ACC_TERRAFORM_PATH is not and there is no terraform on the PATH: "+
				"the acceptance tests need the terraform CLI (1.x) and never download one; install it or set TF_ACC_TERRAFORM_PATH")
			os.Exit(1)
		}
		os.Setenv("TF_ACC_TERRAFORM_PATH", path)
	}
	// Settings of the developer's shell must not reach the provider under test.
	for _, k := range []string{provider.EnvAddress, provider.EnvToken, "TF_PLUGIN_CACHE_DIR"} {
		os.Unsetenv(k)
	}
	os.Exit(m.Run())
}

func TestProviderInternalValidate(t *testing.T) {
	if err := provider.New("test")().InternalValidate(); err != nil {
		t.Fatal(err)
	}
}

// TestProviderDescriptions checks that every attribute of the provider, its
// resources and data sources carries the Markdown description the generated
// documentation is made of.
func TestProviderDescriptions(t *testing.T) {
	p := provider.New("test")()
	var walk func(path string, s map[string]*schema.Schema)
	walk = func(path string, s map[string]*schema.Schema) {
		for name, attr := range s {
			if strings.TrimSpace(attr.Description) == "" {
				t.Errorf("%s.%s has no description", path, name)
			}
			if r, ok := attr.Elem.(*schema.Resource); ok {
				walk(path+"."+name, r.Schema)
			}
		}
	}
	walk("provider", p.Schema)
	for name, r := range p.ResourcesMap {
		if r.Description == "" {
			t.Errorf("resource %s has no description", name)
		}
		walk("resource "+name, r.Schema)
	}
	for name, r := range p.DataSourcesMap {
		if r.Description == "" {
			t.Errorf("data source %s has no description", name)
		}
		walk("data source "+name, r.Schema)
	}
}

// accEnv is one acceptance test's Trove and an admin client of it that
// checks what the provider did.
type accEnv struct {
	srv   *trovetest.Server
	api   *client.Client
	caPEM string
}

// newAccEnv starts a Trove for an acceptance test. It skips the test
// before starting anything unless TF_ACC is set.
func newAccEnv(t *testing.T, opts ...trovetest.Options) *accEnv {
	t.Helper()
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skip("acceptance test: set TF_ACC=1 to run it with the real terraform CLI (scripts/test.sh does)")
	}
	srv := trovetest.Start(t, opts...)
	api, err := client.New(srv.URL, srv.AdminToken, client.WithCAFile(srv.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(srv.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	return &accEnv{srv: srv, api: api, caPEM: string(pem)}
}

// factories runs the provider in the test process, over plugin protocol 5.
func factories() map[string]func() (tfprotov5.ProviderServer, error) {
	return map[string]func() (tfprotov5.ProviderServer, error){
		"trove": func() (tfprotov5.ProviderServer, error) {
			return schema.NewGRPCProviderServer(provider.New("test")()), nil
		},
	}
}

// config returns a provider block for the admin token that trusts the
// server through ca_cert_file, followed by body.
func (e *accEnv) config(body string) string {
	return fmt.Sprintf(`provider "trove" {
  address      = %q
  token        = %q
  ca_cert_file = %q
}

%s`, e.srv.URL, e.srv.AdminToken, e.srv.CAFile, body)
}

// configPEM is config with the CA given as ca_cert_pem.
func (e *accEnv) configPEM(body string) string {
	return fmt.Sprintf(`provider "trove" {
  address     = %q
  token       = %q
  ca_cert_pem = %q
}

%s`, e.srv.URL, e.srv.AdminToken, e.caPEM, body)
}

// checkDestroyed is the CheckDestroy of every test: no resource of the
// final state may still exist in Trove (a token may remain as revoked, a
// user as disabled).
func (e *accEnv) checkDestroyed(t *testing.T) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		ctx := t.Context()
		for addr, rs := range s.RootModule().Resources {
			var err error
			switch rs.Type {
			case "trove_namespace":
				_, err = e.api.GetNamespace(ctx, rs.Primary.ID)
			case "trove_signing_key":
				ns, keyID, _ := strings.Cut(rs.Primary.ID, "/")
				_, err = e.api.GetSigningKey(ctx, ns, keyID)
			case "trove_token":
				tok, terr := e.api.GetToken(ctx, rs.Primary.ID)
				if terr == nil && tok.RevokedAt != nil {
					continue
				}
				err = terr
			case "trove_user":
				// Trove cannot delete users: destroying one disables it.
				u, uerr := e.api.GetUser(ctx, rs.Primary.ID)
				if uerr == nil && u.Disabled {
					continue
				}
				err = uerr
			case "trove_mirror_upstream":
				_, err = e.api.GetMirrorUpstream(ctx, rs.Primary.ID)
			case "trove_retention_rule":
				_, err = e.api.GetRetentionRule(ctx, rs.Primary.ID)
			case "trove_trust_policy":
				ns, id, _ := strings.Cut(rs.Primary.ID, "/")
				_, err = e.api.GetTrustPolicy(ctx, ns, id)
			case "trove_webhook":
				_, err = e.api.GetWebhook(ctx, rs.Primary.ID)
			case "trove_module_git_source":
				parts := strings.Split(rs.Primary.ID, "/")
				if len(parts) != 3 {
					return fmt.Errorf("%s has ID %q", addr, rs.Primary.ID)
				}
				_, err = e.api.GetGitSource(ctx, parts[0], parts[1], parts[2])
			case "trove_identity_provider":
				_, err = e.api.GetIdentityProvider(ctx, rs.Primary.ID)
			case "trove_role_mapping":
				id, _ := strconv.ParseInt(rs.Primary.ID, 10, 64)
				_, err = e.api.GetRoleMapping(ctx, id)
			case "trove_provider_version_deprecation", "trove_provider_version_revocation",
				"trove_module_version_deprecation", "trove_module_version_revocation":
				set, lerr := e.lifecycleSet(ctx, rs.Type, rs.Primary.ID)
				if lerr == nil && !set {
					continue
				}
				if lerr == nil {
					lerr = fmt.Errorf("%s (%s) is still set in Trove after destroy", addr, rs.Primary.ID)
				}
				return lerr
			case "trove_namespace_member":
				ns, user, _ := strings.Cut(rs.Primary.ID, "/")
				_, found, merr := e.member(ctx, ns, user)
				if merr == nil && !found {
					continue
				}
				err = merr
			default:
				continue
			}
			if err == nil {
				return fmt.Errorf("%s (%s) still exists in Trove after destroy", addr, rs.Primary.ID)
			}
			if !client.IsNotFound(err) {
				return fmt.Errorf("checking that %s is gone: %w", addr, err)
			}
		}
		return nil
	}
}

// wrapped matches text in terraform's output, where a diagnostic's line
// may break at any space and continue after a "│" border.
func wrapped(text string) *regexp.Regexp {
	words := strings.Fields(text)
	for i, w := range words {
		words[i] = regexp.QuoteMeta(w)
	}
	return regexp.MustCompile(strings.Join(words, `[\s│]+`))
}

// atAttribute matches a diagnostic with the summary that terraform shows
// at the provider block's line of the argument name, which it does only
// for a diagnostic with that AttributePath.
func atAttribute(summary, name string) *regexp.Regexp {
	return regexp.MustCompile(wrapped(summary).String() + `[\s\S]*in provider "trove":[\s│]+\d+:\s+` + regexp.QuoteMeta(name) + `\s+=`)
}

func TestAccProviderConfigErrors(t *testing.T) {
	e := newAccEnv(t)
	t.Setenv(provider.EnvToken, "")
	body := `data "trove_namespace" "any" {
  name = "anything"
}`
	notPEM := filepath.Join(t.TempDir(), "not-a-ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing.pem")
	caFileConfig := func(file string) string {
		return fmt.Sprintf(`provider "trove" {
  address      = %q
  token        = %q
  ca_cert_file = %q
}

%s`, e.srv.URL, e.srv.AdminToken, file, body)
	}
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		Steps: []resource.TestStep{
			{
				Config: fmt.Sprintf(`provider "trove" {
  address      = %q
  token        = %q
  ca_cert_file = %q
  ca_cert_pem  = %q
}

%s`, e.srv.URL, e.srv.AdminToken, e.srv.CAFile, e.caPEM, body),
				ExpectError: wrapped(`"ca_cert_file": conflicts with ca_cert_pem`),
			},
			{
				Config: fmt.Sprintf(`provider "trove" {
  address      = %q
  ca_cert_file = %q
}

%s`, e.srv.URL, e.srv.CAFile, body),
				ExpectError: wrapped("Missing Trove token"),
			},
			{
				// No address, and no TROVE_ADDR (TestMain unsets it).
				Config: fmt.Sprintf(`provider "trove" {
  token        = %q
  ca_cert_file = %q
}

%s`, e.srv.AdminToken, e.srv.CAFile, body),
				ExpectError: wrapped("Missing Trove address"),
			},
			{
				Config:      caFileConfig(missing),
				ExpectError: atAttribute("Invalid ca_cert_file", "ca_cert_file"),
			},
			{
				Config:      caFileConfig(missing),
				ExpectError: wrapped("reading the CA certificate file: open " + missing + ": no such file or directory"),
			},
			{
				Config:      caFileConfig(notPEM),
				ExpectError: atAttribute("Invalid ca_cert_file", "ca_cert_file"),
			},
			{
				Config:      caFileConfig(notPEM),
				ExpectError: wrapped(notPEM + " holds no PEM certificate"),
			},
			{
				Config: fmt.Sprintf(`provider "trove" {
  address     = %q
  token       = %q
  ca_cert_pem = "not a certificate"
}

%s`, e.srv.URL, e.srv.AdminToken, body),
				ExpectError: atAttribute("Invalid ca_cert_pem", "ca_cert_pem"),
			},
			{
				Config: fmt.Sprintf(`provider "trove" {
  address     = %q
  token       = %q
  ca_cert_pem = "not a certificate"
}

%s`, e.srv.URL, e.srv.AdminToken, body),
				ExpectError: wrapped("ca_cert_pem holds no PEM certificate"),
			},
			{
				// A well-formed token the server does not know.
				Config: fmt.Sprintf(`provider "trove" {
  address      = %q
  token        = "trove_0000000000000000000000000000000000000000"
  ca_cert_file = %q
}

%s`, e.srv.URL, e.srv.CAFile, body),
				ExpectError: wrapped("the token is not valid"),
			},
		},
	})
}

func TestAccProviderConfigFromEnvironment(t *testing.T) {
	e := newAccEnv(t)
	t.Setenv(provider.EnvAddress, e.srv.URL)
	t.Setenv(provider.EnvToken, e.srv.AdminToken)
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{{
			Config: fmt.Sprintf(`provider "trove" {
  ca_cert_file = %q
}

# Created under another spelling: Trove stores the name in lowercase.
resource "trove_namespace" "env" {
  name = "From-Env"
}`, e.srv.CAFile),
			Check: resource.ComposeAggregateTestCheckFunc(
				e.checkNamespace(t, "from-env", ""),
				resource.TestCheckResourceAttr("trove_namespace.env", "id", "from-env"),
				resource.TestCheckResourceAttr("trove_namespace.env", "name", "from-env"),
			),
		}},
	})
}
