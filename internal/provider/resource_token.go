package provider

import (
	"context"
	"time"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"

	"trove.dev/trove/internal/apispec"
	"trove.dev/trove/internal/client"
)

func resourceToken() *schema.Resource {
	return &schema.Resource{
		Description: "An API token, e.g. the `publish` token a CI pipeline releases providers with. The API cannot " +
			"change a token: every change replaces it, and destroying it revokes it. A token revoked or deleted " +
			"outside Terraform disappears from the state, so the next apply creates a new one. Service tokens of " +
			"a namespace need `admin` on it, global ones a global `admin` token; for personal tokens see `user`.\n\n" +
			"The secret is known only when the token is created: it is stored in the Terraform state (protect the " +
			"state accordingly) and is empty after an import.",
		CreateContext: tokenCreate,
		ReadContext:   tokenRead,
		DeleteContext: tokenDelete,
		Importer:      &schema.ResourceImporter{StateContext: schema.ImportStatePassthroughContext},
		Schema: map[string]*schema.Schema{
			"namespace": {
				Type:         schema.TypeString,
				Optional:     true,
				ForceNew:     true,
				ValidateFunc: validateNamespaceName,
				StateFunc:    lowercase,
				Description:  "Namespace the token is bound to. Omit it for a global token, valid in every namespace.",
			},
			"user": {
				Type:         schema.TypeString,
				Optional:     true,
				ForceNew:     true,
				ValidateFunc: validateUserName,
				StateFunc:    lowercaseUserName,
				Description: "User the token is a personal token of: it carries that user's rights (global `admin` " +
					"flag, namespace roles), narrowed by its namespace, scopes and expiry, and stops working while " +
					"the user is disabled. Omit it for a service token, which has exactly its scopes. A global " +
					"`admin` token creates personal tokens for anyone; a user's own personal token creates them " +
					"for that user, no wider and no longer-lived than itself.",
			},
			"scopes": {
				Type:     schema.TypeSet,
				Required: true,
				ForceNew: true,
				MinItems: 1,
				Elem: &schema.Schema{
					Type:         schema.TypeString,
					ValidateFunc: validateScope,
				},
				Description: "What the token may do: `read` (read through the API), `publish` (also publish provider " +
					"versions) and/or `admin` (also manage keys and tokens). Each scope includes the weaker ones.",
			},
			"description": {
				Type:         schema.TypeString,
				Optional:     true,
				ForceNew:     true,
				ValidateFunc: validateDescription,
				Description:  "What the token is for, at most 1024 bytes.",
			},
			"expires_at": {
				Type:             schema.TypeString,
				Optional:         true,
				Computed:         true,
				ForceNew:         true,
				ValidateDiagFunc: validateRFC3339,
				DiffSuppressFunc: suppressSameInstant,
				Description: "When the token stops working (RFC 3339, e.g. `2030-01-02T15:04:05Z`); it must lie in " +
					"the future when the token is created. Omit it for the server's default (currently: never). " +
					"Changing it replaces the token. Removing it later changes nothing: the attribute is computed " +
					"too, so the token keeps its current expiry; only a replacement, e.g. " +
					"`terraform apply -replace=trove_token.NAME`, then creates a token with the server's default.",
			},
			"token": {
				Type:        schema.TypeString,
				Computed:    true,
				Sensitive:   true,
				Description: "The secret (`trove_...`) to authenticate with. Known only when the token is created.",
			},
			"created_at": {
				Type:        schema.TypeString,
				Computed:    true,
				Description: "When the token was created (RFC 3339).",
			},
		},
	}
}

func tokenCreate(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	req := apispec.CreateTokenRequest{
		Namespace:   d.Get("namespace").(string),
		User:        d.Get("user").(string),
		Description: d.Get("description").(string),
	}
	for _, s := range d.Get("scopes").(*schema.Set).List() {
		req.Scopes = append(req.Scopes, s.(string))
	}
	if s := d.Get("expires_at").(string); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return diag.Errorf("expires_at: %s", err)
		}
		req.ExpiresAt = &t
	}
	created, err := c.CreateToken(ctx, req)
	if err != nil {
		what := "creating a global token"
		if req.Namespace != "" {
			what = "creating a token in namespace " + req.Namespace
		}
		if req.User != "" {
			what += " for user " + req.User
		}
		return apiError(what, err)
	}
	d.SetId(created.Token.ID)
	if err := d.Set("token", created.Secret); err != nil {
		return diag.FromErr(err)
	}
	return tokenRead(ctx, d, meta) // what was stored, see namespaceCreate
}

func tokenRead(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	tok, err := c.GetToken(ctx, d.Id())
	if client.IsNotFound(err) && !d.IsNewResource() {
		// Deleted, e.g. with its namespace: the next plan creates a new one.
		d.SetId("")
		return nil
	}
	if err != nil {
		return apiError("reading token "+d.Id(), err)
	}
	if tok.RevokedAt != nil {
		// Revoked outside Terraform: as good as gone.
		d.SetId("")
		return nil
	}
	return setToken(d, tok)
}

func tokenDelete(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	if err := c.RevokeToken(ctx, d.Id()); err != nil && !client.IsNotFound(err) {
		return apiError("revoking token "+d.Id(), err)
	}
	return nil
}

// setToken copies an API answer into the state; the secret is not part of
// it and stays as it is.
func setToken(d *schema.ResourceData, tok apispec.Token) diag.Diagnostics {
	return setAll(d, map[string]any{
		"namespace":   tok.Namespace,
		"user":        tok.User,
		"scopes":      tok.Scopes,
		"description": tok.Description,
		"expires_at":  formatTime(tok.ExpiresAt),
		"created_at":  formatTime(&tok.CreatedAt),
	})
}
