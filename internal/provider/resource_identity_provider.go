package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/registry"
)

func resourceIdentityProvider() *schema.Resource {
	return &schema.Resource{
		Description: "An OpenID Connect identity provider people sign in with (single sign-on): the login page of " +
			"`terraform login` and the web UI's sign-in page show a button for it. Register Trove at the provider " +
			"as a client first, with `redirect_uri` as its redirect URI (authorization code flow, PKCE S256). " +
			"Managing identity providers needs a global `admin` token.\n\n" +
			"The client secret never passes through Trove's API or the Terraform state: `client_secret_env` names " +
			"the environment variable of every Trove replica that holds it. Deleting the provider deletes its role " +
			"mappings; the users it created stay.",
		CreateContext: identityProviderCreate,
		ReadContext:   identityProviderRead,
		UpdateContext: identityProviderUpdate,
		DeleteContext: identityProviderDelete,
		Importer:      &schema.ResourceImporter{StateContext: schema.ImportStatePassthroughContext},
		Schema: map[string]*schema.Schema{
			"name": {
				Type:         schema.TypeString,
				Required:     true,
				ForceNew:     true,
				ValidateFunc: validateIdentityProviderName,
				Description: fmt.Sprintf("Name of the provider in Trove and in its redirect URI: 1 to %d lowercase ", registry.MaxIdentityProviderName) +
					"letters, digits and `-`, starting and ending with a letter or digit. Changing it replaces the " +
					"provider (and its redirect URI changes).",
			},
			"display_name": {
				Type:         schema.TypeString,
				Optional:     true,
				ValidateFunc: idpFieldValidator(func(p *registry.IdentityProvider, v string) { p.DisplayName = v }),
				Description:  "What the sign-in buttons say after \"Sign in with\"; `name` when empty. At most 64 bytes.",
			},
			"issuer": {
				Type:         schema.TypeString,
				Required:     true,
				ValidateFunc: idpFieldValidator(func(p *registry.IdentityProvider, v string) { p.Issuer = v }),
				Description: "Issuer URL of the provider, exactly as its discovery document " +
					"(`<issuer>/.well-known/openid-configuration`) states it, e.g. " +
					"`https://login.example.com/realms/corp`. `https`, without query or fragment; `http` only for " +
					"`localhost`.",
			},
			"client_id": {
				Type:         schema.TypeString,
				Required:     true,
				ValidateFunc: idpFieldValidator(func(p *registry.IdentityProvider, v string) { p.ClientID = v }),
				Description:  "Trove's client ID at the provider; ID tokens must name it as their audience.",
			},
			"client_secret_env": {
				Type:         schema.TypeString,
				Optional:     true,
				ValidateFunc: idpFieldValidator(func(p *registry.IdentityProvider, v string) { p.ClientSecretEnv = v }),
				Description: "Name of the environment variable, on every Trove replica, that holds the client secret: " +
					"A-Z, 0-9 and `_`, starting with `" + registry.ClientSecretEnvPrefix + "` (e.g. `" +
					registry.ClientSecretEnvPrefix + "CORP`). Empty or absent: Trove is a public client and relies on " +
					"PKCE alone. The secret itself is never sent to Trove's API nor kept in the state.",
			},
			"scopes": {
				Type:     schema.TypeList,
				Optional: true,
				MaxItems: registry.MaxIdentityProviderScopes,
				Elem: &schema.Schema{
					Type:         schema.TypeString,
					ValidateFunc: idpFieldValidator(func(p *registry.IdentityProvider, v string) { p.Scopes = []string{v} }),
				},
				Description: "Scopes requested besides `openid`, e.g. `[\"profile\", \"email\", \"groups\"]`: what the " +
					"claims of the username and of the role mappings need. " +
					fmt.Sprintf("At most %d.", registry.MaxIdentityProviderScopes),
			},
			"username_claim": {
				Type:         schema.TypeString,
				Optional:     true,
				ValidateFunc: idpFieldValidator(func(p *registry.IdentityProvider, v string) { p.UsernameClaim = v }),
				Description: "The ID token claim the names of users created at their first sign-in are derived from; " +
					"empty or absent: `" + registry.DefaultUsernameClaim + "`, then `email`.",
			},
			"redirect_uri": {
				Type:        schema.TypeString,
				Computed:    true,
				Description: "The redirect URI to register at the provider: `<public URL>/oauth/sso/<name>/callback`.",
			},
			"created_at": {
				Type:        schema.TypeString,
				Computed:    true,
				Description: "When the provider was added (RFC 3339).",
			},
			"updated_at": {
				Type:        schema.TypeString,
				Computed:    true,
				Description: "When the provider's configuration was last replaced (RFC 3339).",
			},
		},
	}
}

// validateIdentityProviderName is a schema.SchemaValidateFunc for the
// name of an identity provider.
var validateIdentityProviderName = keywordValidator(func(s string) error {
	_, err := registry.ParseIdentityProviderName(s)
	return err
})

// idpFieldValidator returns a schema.SchemaValidateFunc that checks one
// field of an identity provider with the API's own rules
// (registry.IdentityProvider.Check): set puts the value into a provider
// that is valid otherwise.
func idpFieldValidator(set func(p *registry.IdentityProvider, v string)) schema.SchemaValidateFunc {
	return keywordValidator(func(s string) error {
		p := registry.IdentityProvider{Name: "x", Issuer: "https://login.example.com", ClientID: "trove"}
		set(&p, s)
		return p.Check()
	})
}

// identityProviderRequest builds the whole configuration in d.
func identityProviderRequest(d *schema.ResourceData) apispec.PutIdentityProviderRequest {
	req := apispec.PutIdentityProviderRequest{
		DisplayName:     d.Get("display_name").(string),
		Issuer:          d.Get("issuer").(string),
		ClientID:        d.Get("client_id").(string),
		ClientSecretEnv: d.Get("client_secret_env").(string),
		UsernameClaim:   d.Get("username_claim").(string),
	}
	for _, v := range d.Get("scopes").([]any) {
		s, _ := v.(string)
		req.Scopes = append(req.Scopes, s)
	}
	return req
}

func identityProviderCreate(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	name := d.Get("name").(string)
	// PUT would take over a provider made with the CLI silently;
	// Terraform's way is an import.
	switch _, err := c.GetIdentityProvider(ctx, name); {
	case err == nil:
		return diag.Errorf("identity provider %s already exists in Trove: import it to manage it, e.g. terraform import trove_identity_provider.NAME %s", name, name)
	case !client.IsNotFound(err):
		return apiError("reading identity provider "+name, err)
	}
	p, err := c.PutIdentityProvider(ctx, name, identityProviderRequest(d))
	if err != nil {
		return apiError("creating identity provider "+name, err)
	}
	d.SetId(p.Name)
	return setIdentityProvider(d, p)
}

func identityProviderRead(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	p, err := c.GetIdentityProvider(ctx, d.Id())
	if client.IsNotFound(err) && !d.IsNewResource() {
		// Deleted outside Terraform: the next plan creates it again.
		d.SetId("")
		return nil
	}
	if err != nil {
		return apiError("reading identity provider "+d.Id(), err)
	}
	return setIdentityProvider(d, p)
}

// identityProviderUpdate replaces the whole configuration: the API has
// no partial update, and the state holds all of it.
func identityProviderUpdate(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	p, err := c.PutIdentityProvider(ctx, d.Id(), identityProviderRequest(d))
	if err != nil {
		return apiError("updating identity provider "+d.Id(), err)
	}
	return setIdentityProvider(d, p)
}

func identityProviderDelete(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	if err := c.DeleteIdentityProvider(ctx, d.Id()); err != nil && !client.IsNotFound(err) {
		return apiError("deleting identity provider "+d.Id(), err)
	}
	return nil
}

// setIdentityProvider copies an API answer into the state.
func setIdentityProvider(d *schema.ResourceData, p apispec.IdentityProvider) diag.Diagnostics {
	scopes := make([]any, 0, len(p.Scopes))
	for _, s := range p.Scopes {
		scopes = append(scopes, s)
	}
	return setAll(d, map[string]any{
		"name":              p.Name,
		"display_name":      p.DisplayName,
		"issuer":            p.Issuer,
		"client_id":         p.ClientID,
		"client_secret_env": p.ClientSecretEnv,
		"scopes":            scopes,
		"username_claim":    p.UsernameClaim,
		"redirect_uri":      p.RedirectURI,
		"created_at":        formatTime(&p.CreatedAt),
		"updated_at":        formatTime(&p.UpdatedAt),
	})
}
