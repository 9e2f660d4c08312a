package provider

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/registry"
)

func resourceToken() *schema.Resource {
	return &schema.Resource{
		Description: "An API token, e.g. the `publish` token a CI pipeline releases providers with. The API cannot " +
			"change a token: every change replaces it, and destroying it revokes it. A token revoked or deleted " +
			"outside Terraform disappears from the state, so the next apply creates a new one. Service tokens " +
			"bound to namespaces need `admin` on each of them, global ones a global `admin` token; for personal " +
			"tokens see `user`.\n\n" +
			"The secret is known only when the token is created: it is stored in the Terraform state (protect the " +
			"state accordingly) and is empty after an import.",
		CreateContext: tokenCreate,
		ReadContext:   tokenRead,
		DeleteContext: tokenDelete,
		CustomizeDiff: tokenCustomizeDiff,
		Importer:      &schema.ResourceImporter{StateContext: schema.ImportStatePassthroughContext},
		Schema: map[string]*schema.Schema{
			"namespaces": {
				Type:          schema.TypeSet,
				Optional:      true,
				Computed:      true,
				ForceNew:      true,
				ConflictsWith: []string{"namespace"},
				Elem: &schema.Schema{
					Type:         schema.TypeString,
					ValidateFunc: validateNamespaceName,
					StateFunc:    lowercase,
				},
				Set: hashNamespace,
				Description: "Namespaces the token is bound to: it is valid in these and no others. Omit it (and " +
					"`namespace`) for a global token, valid in every namespace. Deleting one of the namespaces " +
					"deletes the token.",
			},
			"namespace": {
				Type:          schema.TypeString,
				Optional:      true,
				Computed:      true,
				ForceNew:      true,
				ConflictsWith: []string{"namespaces"},
				Deprecated:    "use namespaces",
				ValidateFunc:  validateNamespaceName,
				StateFunc:     lowercase,
				Description: "**Deprecated**: use `namespaces`, of which this is the older, one-namespace form. " +
					"The one namespace the token is bound to, as `namespaces` with one element; empty for a token " +
					"bound to several, or to none. Moving a namespace from here to `namespaces` changes nothing.",
			},
			"user": {
				Type:         schema.TypeString,
				Optional:     true,
				ForceNew:     true,
				ValidateFunc: validateUserName,
				StateFunc:    lowercaseUserName,
				Description: "User the token is a personal token of: it carries that user's rights (global `admin` " +
					"flag, namespace roles), narrowed by its namespaces, scopes and expiry, and stops working while " +
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
				Description:  fmt.Sprintf("What the token is for, at most %d bytes.", registry.MaxDescriptionLength),
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
		User:        d.Get("user").(string),
		Description: d.Get("description").(string),
	}
	// The deprecated form goes as such: should both be set (a conflict
	// Terraform cannot see while one of them is unknown), the API refuses.
	req.Namespace = d.Get("namespace").(string)
	for _, ns := range d.Get("namespaces").(*schema.Set).List() {
		req.Namespaces = append(req.Namespaces, ns.(string))
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
		switch len(req.Namespaces) {
		case 0:
		case 1:
			what = "creating a token in namespace " + req.Namespaces[0]
		default:
			what = "creating a token in namespaces " + strings.Join(req.Namespaces, ", ")
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
	if tok.RevokedAt != nil || (tok.ExpiresAt != nil && !tok.ExpiresAt.After(time.Now())) {
		// Revoked or expired (outside Terraform, or at its time): as
		// good as gone, the next plan creates a new one.
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

// tokenCustomizeDiff replaces a bound token with a global one when the
// configuration names neither namespaces nor namespace: both are computed
// too (each follows the other), so that their absence alone would
// otherwise be no change.
func tokenCustomizeDiff(_ context.Context, d *schema.ResourceDiff, _ any) error {
	cfg := d.GetRawConfig()
	if d.Id() == "" || !cfg.IsKnown() || cfg.IsNull() ||
		!cfg.GetAttr("namespaces").IsNull() || !cfg.GetAttr("namespace").IsNull() {
		return nil
	}
	if old, _ := d.GetChange("namespaces"); old.(*schema.Set).Len() == 0 {
		return nil
	}
	if err := d.SetNew("namespaces", []any{}); err != nil {
		return err
	}
	if err := d.SetNew("namespace", ""); err != nil {
		return err
	}
	return d.ForceNew("namespaces")
}

// hashNamespace is the schema.SchemaSetFunc of namespace names: two
// spellings of one namespace are one element.
func hashNamespace(v any) int { return schema.HashString(lowercase(v)) }

// setToken copies an API answer into the state; the secret is not part of
// it and stays as it is.
func setToken(d *schema.ResourceData, tok apispec.Token) diag.Diagnostics {
	if tok.HiddenNamespaces > 0 {
		// Storing only the visible ones would plan a replacement.
		return diag.Errorf("token %s is bound to %d namespaces that the provider's token may not read: "+
			"manage it with a token that may read all of its namespaces", tok.ID, tok.HiddenNamespaces)
	}
	set := tok.NamespaceSet()
	one := ""
	if len(set) == 1 {
		one = set[0]
	}
	return setAll(d, map[string]any{
		"namespaces":  set,
		"namespace":   one,
		"user":        tok.User,
		"scopes":      tok.Scopes,
		"description": tok.Description,
		"expires_at":  formatTime(tok.ExpiresAt),
		"created_at":  formatTime(&tok.CreatedAt),
	})
}
