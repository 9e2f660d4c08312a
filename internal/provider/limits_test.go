package provider_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"trove.dev/trove/internal/provider"
	"trove.dev/trove/internal/registry"
)

// attributeLimits are the limits of every string argument that reaches
// the API, by "<resource or data source>.<attribute>".
var attributeLimits = map[string]registry.Limit{
	"trove_namespace.name":                  registry.NamespaceLimit,
	"trove_namespace.description":           registry.DescriptionLimit,
	"trove_namespace_member.namespace":      registry.NamespaceLimit,
	"trove_role_mapping.namespace":          registry.NamespaceLimit,
	"trove_namespace_member.user":           registry.UserNameLimit,
	"trove_signing_key.namespace":           registry.NamespaceLimit,
	"trove_token.namespaces":                registry.NamespaceLimit,
	"trove_token.namespace":                 registry.NamespaceLimit,
	"trove_token.user":                      registry.UserNameLimit,
	"trove_token.description":               registry.DescriptionLimit,
	"trove_user.name":                       registry.UserNameLimit,
	"trove_user.password":                   registry.PasswordLimit,
	"data.trove_namespace.name":             registry.NamespaceLimit,
	"data.trove_provider.namespace":         registry.NamespaceLimit,
	"data.trove_provider.type":              registry.ProviderTypeLimit,
	"data.trove_module.namespace":           registry.NamespaceLimit,
	"data.trove_module.name":                registry.ModuleNameLimit,
	"data.trove_module.system":              registry.ModuleSystemLimit,
	"trove_mirror_upstream.host":            registry.HostLimit,
	"trove_mirror_upstream.service_url":     registry.ServiceURLLimit,
	"trove_mirror_upstream.ca_certificates": registry.CACertificatesLimit,
	"trove_mirror_upstream.description":     registry.DescriptionLimit,
	"trove_trust_policy.namespace":          registry.NamespaceLimit,
	"trove_retention_rule.namespace":        registry.NamespaceLimit,
	"trove_trust_policy.audience":           registry.AudienceLimit,
	"trove_trust_policy.conditions":         registry.ClaimPatternLimit,
	"trove_trust_policy.description":        registry.DescriptionLimit,
	"trove_webhook.namespace":               registry.NamespaceLimit,
	"trove_webhook.url":                     registry.WebhookURLLimit,
	"trove_webhook.description":             registry.DescriptionLimit,
	"trove_module_git_source.namespace":     registry.NamespaceLimit,
	"trove_module_git_source.name":          registry.ModuleNameLimit,
	"trove_module_git_source.system":        registry.ModuleSystemLimit,
}

func init() {
	for _, r := range []string{"trove_provider_version_deprecation", "trove_provider_version_revocation"} {
		attributeLimits[r+".namespace"] = registry.NamespaceLimit
		attributeLimits[r+".type"] = registry.ProviderTypeLimit
		attributeLimits[r+".version"] = registry.VersionLimit
	}
	for _, r := range []string{"trove_module_version_deprecation", "trove_module_version_revocation"} {
		attributeLimits[r+".namespace"] = registry.NamespaceLimit
		attributeLimits[r+".name"] = registry.ModuleNameLimit
		attributeLimits[r+".system"] = registry.ModuleSystemLimit
		attributeLimits[r+".version"] = registry.VersionLimit
	}
	for _, r := range []string{"trove_provider_version_deprecation", "trove_module_version_deprecation"} {
		attributeLimits[r+".link"] = registry.LifecycleLinkLimit
		boundedOtherwise[r+".reason"] = "at most 500 characters, one line: registry.CheckLifecycleReason"
	}
	for _, r := range []string{"trove_provider_version_revocation", "trove_module_version_revocation"} {
		boundedOtherwise[r+".reason"] = "at most 500 characters, one line: registry.CheckLifecycleReason"
	}
}

// textAttributes are the free-text arguments, which registry.CheckText
// also checks: UTF-8, one line, no control characters.
var textAttributes = []string{"trove_namespace.description", "trove_token.description", "trove_mirror_upstream.description",
	"trove_mirror_upstream.service_url", "trove_trust_policy.audience", "trove_trust_policy.conditions", "trove_trust_policy.description",
	"trove_webhook.url", "trove_webhook.description"}

// boundedOtherwise are the string arguments without a length limit of
// their own, and why that is enough.
var boundedOtherwise = map[string]string{
	"trove_namespace.visibility":    "a keyword: public or private",
	"trove_namespace_member.role":   "a keyword: reader, publisher or admin",
	"trove_token.scopes":            "keywords: read, publish or admin",
	"trove_token.expires_at":        "an RFC 3339 time stamp",
	"trove_signing_key.ascii_armor": "a key, bounded by the API's request body limit",
	"trove_trust_policy.scope":      "a keyword: publish or read",
	"trove_trust_policy.issuer":     "a URL: registry.CheckIssuer checks its length (registry.IssuerLimit) with its grammar",
	"trove_webhook.secret":          "registry.CheckWebhookSecret: 16 to 128 printable ASCII characters",
	"trove_webhook.events":          "keywords: registry.CheckEventFilter's event types and patterns",
	// Git sources: the validators run the API's own checks.
	"trove_module_git_source.url":             "registry.ParseGitURL: at most 2048 bytes",
	"trove_module_git_source.subdir":          "registry.ParseGitSubdir: at most 512 bytes",
	"trove_module_git_source.tag_prefix":      "registry.CheckGitTagPrefix: at most 128 bytes",
	"trove_module_git_source.username":        "the API refuses more than 256 bytes",
	"trove_module_git_source.password":        "the API refuses more than registry.MaxGitCredentialBytes",
	"trove_module_git_source.ssh_private_key": "the API refuses more than registry.MaxGitCredentialBytes",
	"trove_module_git_source.known_hosts":     "the API refuses more than registry.MaxKnownHostsLength",
	// Single sign-on: the validators run the API's own checks
	// (registry.IdentityProvider.Check, registry.RoleMapping.Check),
	// length limits included.
	"trove_identity_provider.name":              "registry.ParseIdentityProviderName: at most 32 bytes",
	"trove_identity_provider.display_name":      "registry.IdentityProvider.Check: at most 64 bytes of text",
	"trove_identity_provider.issuer":            "registry.IdentityProvider.Check: at most 512 bytes",
	"trove_identity_provider.client_id":         "registry.IdentityProvider.Check: at most 256 bytes of text",
	"trove_identity_provider.client_secret_env": "registry.IdentityProvider.Check: at most 128 bytes",
	"trove_identity_provider.scopes":            "registry.IdentityProvider.Check: at most 128 bytes each",
	"trove_identity_provider.username_claim":    "registry.IdentityProvider.Check: a claim name of at most 128 bytes",
	"trove_role_mapping.identity_provider":      "registry.ParseIdentityProviderName: at most 32 bytes",
	"trove_role_mapping.claim":                  "registry.RoleMapping.Check: a claim name of at most 128 bytes",
	"trove_role_mapping.value":                  "registry.RoleMapping.Check: at most 256 bytes of text",
	"trove_role_mapping.role":                   "a keyword: reader, publisher or admin",
	"trove_retention_rule.keep_within":          "apispec.ParseRetentionDuration: at most 32 bytes",
	"trove_retention_rule.pin":                  "registry.ParsePin: at most 128 bytes each",
}

// stringArguments returns the string arguments (not computed-only) of the
// provider's resources and data sources, with their schemas.
func stringArguments() map[string]*schema.Schema {
	p := provider.New("test")()
	out := map[string]*schema.Schema{}
	add := func(prefix string, resources map[string]*schema.Resource) {
		for name, r := range resources {
			for attr, s := range r.Schema {
				if s.Computed && !s.Optional && !s.Required {
					continue
				}
				if s.Type == schema.TypeString {
					out[prefix+name+"."+attr] = s
				} else if elem, ok := s.Elem.(*schema.Schema); ok && elem.Type == schema.TypeString {
					out[prefix+name+"."+attr] = elem
				}
			}
		}
	}
	add("", p.ResourcesMap)
	add("data.", p.DataSourcesMap)
	return out
}

// validValue returns a value of n bytes that is valid for limit but for
// its length.
func validValue(limit registry.Limit, n int) string {
	switch limit {
	case registry.PasswordLimit:
		return strings.Repeat("p", n)
	case registry.VersionLimit:
		return "1.0.0-" + strings.Repeat("a", n-len("1.0.0-"))
	case registry.LifecycleLinkLimit, registry.WebhookURLLimit, registry.ServiceURLLimit:
		return "https://example.com/" + strings.Repeat("a", n-len("https://example.com/"))
	case registry.CACertificatesLimit:
		// A certificate, then lines of padding that hold no PEM block.
		cert := testCertificatePEM()
		pad := strings.Repeat(strings.Repeat("a", 63)+"\n", (n-len(cert))/64)
		return cert + pad + strings.Repeat("a", n-len(cert)-len(pad))
	case registry.HostLimit:
		// Labels of at most 63 letters: a host name but for its length.
		var b strings.Builder
		for b.Len() < n {
			if b.Len()%64 == 63 {
				b.WriteByte('.')
			} else {
				b.WriteByte('h')
			}
		}
		return b.String()
	}
	return strings.Repeat("a", n)
}

// TestSchemaLimits checks every string argument of the schema: it has the
// API's limit, accepted at the limit and refused one byte over it with the
// API's message, or is listed as bounded otherwise.
func TestSchemaLimits(t *testing.T) {
	args := stringArguments()
	names := make([]string, 0, len(args))
	for name := range args {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		s := args[name]
		limit, ok := attributeLimits[name]
		if !ok {
			if _, ok := boundedOtherwise[name]; !ok {
				t.Errorf("%s: a string argument with no limit: add it to attributeLimits (and its check to the schema)", name)
			}
			continue
		}
		if s.ValidateFunc == nil {
			t.Errorf("%s: no ValidateFunc", name)
			continue
		}
		if _, errs := s.ValidateFunc(validValue(limit, limit.Max), "attr"); len(errs) > 0 {
			t.Errorf("%s at its limit of %d bytes: %v", name, limit.Max, errs)
		}
		over := validValue(limit, limit.Max+1)
		_, errs := s.ValidateFunc(over, "attr")
		if want := "attr: " + limit.Check(over).Error(); len(errs) != 1 || errs[0].Error() != want {
			t.Errorf("%s one byte over its limit: %v, want %q", name, errs, want)
		}
	}
	for _, name := range textAttributes {
		limit := attributeLimits[name]
		for _, v := range []string{"two\nlines", "red \x1b[31mtext", "c1 \u009b", "bad \xff utf-8"} {
			_, errs := args[name].ValidateFunc(v, "attr")
			wantErr := limit.CheckText(v)
			if wantErr == nil {
				t.Fatalf("registry.CheckText accepts %q", v)
			}
			if want := "attr: " + wantErr.Error(); len(errs) != 1 || errs[0].Error() != want {
				t.Errorf("%s = %q: %v, want %q", name, v, errs, want)
			}
		}
	}
	for name := range attributeLimits {
		if _, ok := args[name]; !ok {
			t.Errorf("attributeLimits names %s, which is no string argument", name)
		}
	}
}

// TestAccLimits runs terraform over configurations with every resource
// argument one byte over its limit, each refused at plan with the API's
// message, then applies one with every argument at its limit.
func TestAccLimits(t *testing.T) {
	e := newAccEnv(t)
	ns := func(n int) string { return strings.Repeat("n", n) }
	user := func(n int) string { return strings.Repeat("u", n) }
	text := func(n int) string { return strings.Repeat("d", n) }
	config := func(nsName, nsDesc, userName, password, tokenDesc, memberUser, tokenUser string) string {
		return fmt.Sprintf(`resource "trove_namespace" "test" {
  name        = %q
  description = %q
}

resource "trove_user" "test" {
  name     = %q
  password = %q
}

resource "trove_namespace_member" "test" {
  namespace = trove_namespace.test.name
  user      = %q
  role      = "reader"
  depends_on = [trove_user.test]
}

resource "trove_token" "test" {
  namespaces  = [trove_namespace.test.name]
  user        = %q
  scopes      = ["read"]
  description = %q
  depends_on  = [trove_user.test]
}

data "trove_namespace" "test" {
  name = trove_namespace.test.name
}
`, nsName, nsDesc, userName, password, memberUser, tokenUser, tokenDesc)
	}
	atLimit := func() []string {
		return []string{ns(registry.MaxNamespaceLength), text(registry.MaxDescriptionLength), user(registry.MaxUserNameLength),
			strings.Repeat("p", registry.MaxPasswordLength), text(registry.MaxDescriptionLength),
			user(registry.MaxUserNameLength), user(registry.MaxUserNameLength)}
	}
	// One step per argument, each with that argument one byte over.
	var steps []resource.TestStep
	for i, limit := range []registry.Limit{registry.NamespaceLimit, registry.DescriptionLimit, registry.UserNameLimit,
		registry.PasswordLimit, registry.DescriptionLimit, registry.UserNameLimit, registry.UserNameLimit} {
		args := atLimit()
		args[i] = validValue(limit, limit.Max+1)
		if limit == registry.UserNameLimit {
			args[i] = user(limit.Max + 1)
		}
		if i == 0 {
			args[i] = ns(limit.Max + 1)
		}
		msg := limit.Check(args[i]).Error()
		steps = append(steps, resource.TestStep{
			Config:      e.config(config(args[0], args[1], args[2], args[3], args[4], args[5], args[6])),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(wrapped(msg).String()),
		})
	}
	// Free text with a newline or a tab, refused at plan like the API
	// refuses it.
	for _, i := range []int{1, 4} { // the namespace's and the token's description
		args := atLimit()
		args[i] = "two\nlines\tand a tab"
		steps = append(steps, resource.TestStep{
			Config:      e.config(config(args[0], args[1], args[2], args[3], args[4], args[5], args[6])),
			PlanOnly:    true,
			ExpectError: regexp.MustCompile(wrapped(registry.DescriptionLimit.CheckText("two\nlines").Error()).String()),
		})
	}
	args := atLimit()
	steps = append(steps, resource.TestStep{
		Config: e.config(config(args[0], args[1], args[2], args[3], args[4], args[5], args[6])),
		Check: resource.ComposeAggregateTestCheckFunc(
			e.checkNamespace(t, args[0], args[1]),
			resource.TestCheckResourceAttr("trove_token.test", "description", args[4]),
			resource.TestCheckResourceAttr("trove_namespace_member.test", "user", args[5]),
			resource.TestCheckResourceAttr("data.trove_namespace.test", "name", args[0]),
		),
	})
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps:                    steps,
	})
}

// testCertificatePEM returns a self-signed CA certificate, PEM-encoded.
func testCertificatePEM() string {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}
