// Package provider is terraform-provider-trove: the Terraform provider that
// manages a Trove's namespaces, signing keys, tokens, users, namespace
// memberships and provider mirror upstreams as code, and reads its
// namespaces and published providers and modules. It is built with
// terraform-plugin-sdk/v2 helper/schema, like HashiCorp's scaffolding: New
// returns the provider factory, and configure turns the provider block
// into the client.Client every resource and data source calls.
//
// The main package is terraform-provider-trove/main.go; the examples and
// the documentation generated from them and from the Description of every
// attribute live next to it.
package provider

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/hashicorp/go-cty/cty"
	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"

	"trove.dev/trove/client"
)

// Environment variables the provider configuration falls back on; the trove
// CLI reads the same ones.
const (
	EnvAddress = "TROVE_ADDR"
	EnvToken   = "TROVE_TOKEN"
)

func init() {
	// Descriptions are Markdown, for tfplugindocs and language servers. The
	// SDK offers only this package-level switch; setting it once here, as
	// the scaffolding does, keeps New free of writes to shared state.
	schema.DescriptionKind = schema.StringMarkdown
}

// New returns the factory of the provider at the given version (set by the
// release build; "dev" or "test" otherwise). The version ends up in the
// User-Agent of every API request.
func New(version string) func() *schema.Provider {
	return func() *schema.Provider {
		p := &schema.Provider{
			Schema: providerSchema(),
			ResourcesMap: map[string]*schema.Resource{
				"trove_namespace":         resourceNamespace(),
				"trove_signing_key":       resourceSigningKey(),
				"trove_token":             resourceToken(),
				"trove_user":              resourceUser(),
				"trove_namespace_member":  resourceNamespaceMember(),
				"trove_mirror_upstream":   resourceMirrorUpstream(),
				"trove_retention_rule":    resourceRetentionRule(),
				"trove_identity_provider": resourceIdentityProvider(),
				"trove_role_mapping":      resourceRoleMapping(),
				"trove_trust_policy":      resourceTrustPolicy(),
				"trove_module_git_source": resourceModuleGitSource(),
				"trove_webhook":           resourceWebhook(),

				"trove_provider_version_deprecation": resourceProviderVersionDeprecation(),
				"trove_provider_version_revocation":  resourceProviderVersionRevocation(),
				"trove_module_version_deprecation":   resourceModuleVersionDeprecation(),
				"trove_module_version_revocation":    resourceModuleVersionRevocation(),
			},
			DataSourcesMap: map[string]*schema.Resource{
				"trove_namespace": dataSourceNamespace(),
				"trove_provider":  dataSourceProvider(),
				"trove_module":    dataSourceModule(),
			},
		}
		p.ConfigureContextFunc = configure(version, p)
		return p
	}
}

func providerSchema() map[string]*schema.Schema {
	return map[string]*schema.Schema{
		"address": {
			Type:        schema.TypeString,
			Optional:    true,
			DefaultFunc: schema.EnvDefaultFunc(EnvAddress, nil),
			Description: "URL of the Trove server, e.g. `https://localhost:8443` (a bare `host:port` means HTTPS). " +
				"Defaults to the `" + EnvAddress + "` environment variable; one of the two is required.",
		},
		"token": {
			Type:        schema.TypeString,
			Optional:    true,
			Sensitive:   true,
			DefaultFunc: schema.EnvDefaultFunc(EnvToken, nil),
			Description: "Trove API token (`trove_...`) the provider acts with. Managing namespaces and users needs " +
				"a global `admin` token; keys, tokens, members and the visibility of one namespace need `admin` on it. " +
				"Defaults to the `" + EnvToken + "` environment variable; one of the two is required. Create one " +
				"with `trove token create`.",
		},
		"ca_cert_file": {
			Type:          schema.TypeString,
			Optional:      true,
			ConflictsWith: []string{"ca_cert_pem"},
			Description: "Path of a PEM file with the CA certificate(s) to trust, in addition to the system's, when " +
				"verifying the server, e.g. the `tls/ca.pem` that `trove serve` writes for its self-signed " +
				"certificate. Conflicts with `ca_cert_pem`.",
		},
		"ca_cert_pem": {
			Type:          schema.TypeString,
			Optional:      true,
			ConflictsWith: []string{"ca_cert_file"},
			Description: "PEM text of the CA certificate(s) to trust, in addition to the system's, when verifying " +
				"the server. Conflicts with `ca_cert_file`.",
		},
	}
}

// configure returns the function that builds the API client from the
// provider block; resources and data sources receive it as meta.
func configure(version string, p *schema.Provider) schema.ConfigureContextFunc {
	return func(_ context.Context, d *schema.ResourceData) (any, diag.Diagnostics) {
		addr := d.Get("address").(string)
		token := d.Get("token").(string)
		var diags diag.Diagnostics
		if addr == "" {
			diags = append(diags, diag.Diagnostic{
				Severity:      diag.Error,
				Summary:       "Missing Trove address",
				Detail:        "Set the provider's address argument or the " + EnvAddress + " environment variable to the URL of your Trove server, e.g. https://localhost:8443.",
				AttributePath: cty.GetAttrPath("address"),
			})
		}
		if token == "" {
			diags = append(diags, diag.Diagnostic{
				Severity: diag.Error,
				Summary:  "Missing Trove token",
				Detail: "Set the provider's token argument or the " + EnvToken + " environment variable to a Trove API token. " +
					"An administrator creates one with: trove token create --scope admin",
				AttributePath: cty.GetAttrPath("token"),
			})
		}
		if diags.HasError() {
			return nil, diags
		}

		opts := []client.Option{client.WithUserAgent(p.UserAgent("terraform-provider-trove", version))}
		// ca_cert_file and ca_cert_pem conflict: at most one is set. Both
		// are checked here, so that an error points at the argument.
		if file := d.Get("ca_cert_file").(string); file != "" {
			pool, err := certPoolFromFile(file)
			if err != nil {
				return nil, diag.Diagnostics{{
					Severity:      diag.Error,
					Summary:       "Invalid ca_cert_file",
					Detail:        err.Error(),
					AttributePath: cty.GetAttrPath("ca_cert_file"),
				}}
			}
			opts = append(opts, client.WithTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}))
		}
		if pem := d.Get("ca_cert_pem").(string); pem != "" {
			pool, err := certPool([]byte(pem))
			if err != nil {
				return nil, diag.Diagnostics{{
					Severity:      diag.Error,
					Summary:       "Invalid ca_cert_pem",
					Detail:        "ca_cert_pem " + err.Error(),
					AttributePath: cty.GetAttrPath("ca_cert_pem"),
				}}
			}
			opts = append(opts, client.WithTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}))
		}
		c, err := client.New(addr, token, opts...)
		if err != nil {
			return nil, diag.Diagnostics{{
				Severity: diag.Error,
				Summary:  "Invalid Trove provider configuration",
				Detail:   err.Error(),
			}}
		}
		return c, nil
	}
}

// certPool returns the system's roots plus the certificates in pem. Its
// error completes a sentence whose subject names the source.
func certPool(pem []byte) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("holds no PEM certificate: want one or more -----BEGIN CERTIFICATE----- blocks")
	}
	return pool, nil
}

// certPoolFromFile is certPool of the file's content.
func certPoolFromFile(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the CA certificate file: %w", err)
	}
	pool, err := certPool(pem)
	if err != nil {
		return nil, fmt.Errorf("%s %w", path, err)
	}
	return pool, nil
}

// apiError reports a failed API call as an error diagnostic naming what was
// being done; the detail is the server's message.
func apiError(action string, err error) diag.Diagnostics {
	detail := err.Error()
	if client.IsUntrustedCertificate(err) {
		detail += "\n\nTrust the server's certificate authority: set ca_cert_file (or ca_cert_pem) in the provider block " +
			"to its CA certificate (`trove serve` prints the path of its self-signed one)."
	}
	return diag.Diagnostics{{
		Severity: diag.Error,
		Summary:  "Trove: " + action + " failed",
		Detail:   detail,
	}}
}
