package provider

import (
	"context"
	"fmt"
	"strconv"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/registry"
)

func resourceRoleMapping() *schema.Resource {
	return &schema.Resource{
		Description: "A role mapping of an identity provider: people whose ID token has `value` in the claim " +
			"`claim` (a string equal to it, or a list holding it, such as a `groups` claim) get `role` in " +
			"`namespace`, or the global admin flag with `namespace = \"*\"` and `role = \"admin\"`. The provider's " +
			"mappings are evaluated at every sign-in through it (the highest role per namespace wins): roles they " +
			"granted before and no longer grant are removed, so someone taken out of a group loses the role at " +
			"their next sign-in. Needs a global `admin` token.\n\n" +
			"Trove cannot change a mapping: changing any argument replaces it. Deleting one removes nothing by " +
			"itself; the roles it granted go at each user's next sign-in.",
		CreateContext: roleMappingCreate,
		ReadContext:   roleMappingRead,
		DeleteContext: roleMappingDelete,
		CustomizeDiff: roleMappingCustomizeDiff,
		Importer:      &schema.ResourceImporter{StateContext: schema.ImportStatePassthroughContext},
		Schema: map[string]*schema.Schema{
			"identity_provider": {
				Type:         schema.TypeString,
				Required:     true,
				ForceNew:     true,
				ValidateFunc: validateIdentityProviderName,
				Description:  "Name of the identity provider (`trove_identity_provider`'s `name`), which must exist.",
			},
			"claim": {
				Type:         schema.TypeString,
				Optional:     true,
				ForceNew:     true,
				Default:      "groups",
				ValidateFunc: mappingFieldValidator(func(m *registry.RoleMapping, v string) { m.Claim = v }),
				Description:  "The ID token claim to look at: letters, digits and `_ . : / -`. Default `groups`.",
			},
			"value": {
				Type:         schema.TypeString,
				Required:     true,
				ForceNew:     true,
				ValidateFunc: mappingFieldValidator(func(m *registry.RoleMapping, v string) { m.Value = v }),
				Description:  "The value the claim must be or hold, e.g. a group name. At most 256 bytes.",
			},
			"namespace": {
				Type:         schema.TypeString,
				Required:     true,
				ForceNew:     true,
				ValidateFunc: validateMappingNamespace,
				StateFunc:    lowercase,
				Description: "The namespace the role is granted in, which must exist; `\"" + registry.GlobalAdminNamespace +
					"\"` for the global admin flag (with `role = \"admin\"`). Stored in lowercase, as Trove names namespaces.",
			},
			"role": {
				Type:         schema.TypeString,
				Required:     true,
				ForceNew:     true,
				ValidateFunc: validateRole,
				Description:  "The role granted: `reader`, `publisher` or `admin`.",
			},
			"created_at": {
				Type:        schema.TypeString,
				Computed:    true,
				Description: "When the mapping was created (RFC 3339).",
			},
		},
	}
}

// mappingFieldValidator returns a schema.SchemaValidateFunc that checks
// one field of a role mapping with the API's rules
// (registry.RoleMapping.Check): set puts the value into a mapping that
// is valid otherwise (with role admin, which every namespace allows).
func mappingFieldValidator(set func(m *registry.RoleMapping, v string)) schema.SchemaValidateFunc {
	return keywordValidator(func(s string) error {
		m := registry.RoleMapping{Provider: "x", Claim: "groups", Value: "v", Namespace: "acme", Role: registry.RoleAdmin}
		set(&m, s)
		return m.Check()
	})
}

// validateMappingNamespace is a schema.SchemaValidateFunc for the
// namespace of a role mapping: a namespace name, or "*".
func validateMappingNamespace(v any, key string) (warnings []string, errs []error) {
	if s, ok := v.(string); ok && s == registry.GlobalAdminNamespace {
		return nil, nil
	}
	return validateNamespaceName(v, key)
}

// roleMappingCustomizeDiff checks the rule that spans arguments at plan
// time: the global admin flag ("*") goes with the role admin.
func roleMappingCustomizeDiff(_ context.Context, d *schema.ResourceDiff, _ any) error {
	ns, role := d.Get("namespace").(string), d.Get("role").(string)
	if !d.NewValueKnown("namespace") || !d.NewValueKnown("role") {
		return nil
	}
	if ns == registry.GlobalAdminNamespace && role != string(registry.RoleAdmin) {
		return fmt.Errorf("a mapping to namespace %q (the global admin flag) must have role = \"admin\", not %q", registry.GlobalAdminNamespace, role)
	}
	return nil
}

func roleMappingCreate(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	req := apispec.CreateRoleMappingRequest{
		Provider:  d.Get("identity_provider").(string),
		Claim:     d.Get("claim").(string),
		Value:     d.Get("value").(string),
		Namespace: d.Get("namespace").(string),
		Role:      d.Get("role").(string),
	}
	m, err := c.CreateRoleMapping(ctx, req)
	if err != nil {
		return apiError("creating a role mapping of identity provider "+req.Provider, err)
	}
	d.SetId(strconv.FormatInt(m.ID, 10))
	return roleMappingRead(ctx, d, meta) // what was stored (its time stamp's precision), see namespaceCreate
}

func roleMappingRead(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	id, err := strconv.ParseInt(d.Id(), 10, 64)
	if err != nil || id <= 0 {
		return diag.Errorf("invalid role mapping ID %q: use the number trove sso mapping list shows, e.g. terraform import trove_role_mapping.NAME 3", d.Id())
	}
	m, err := c.GetRoleMapping(ctx, id)
	if client.IsNotFound(err) && !d.IsNewResource() {
		// Deleted outside Terraform (or with its identity provider): the
		// next plan creates it again.
		d.SetId("")
		return nil
	}
	if err != nil {
		return apiError("reading role mapping "+d.Id(), err)
	}
	return setRoleMapping(d, m)
}

func roleMappingDelete(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	id, err := strconv.ParseInt(d.Id(), 10, 64)
	if err != nil {
		return diag.Errorf("invalid role mapping ID %q", d.Id())
	}
	if err := c.DeleteRoleMapping(ctx, id); err != nil && !client.IsNotFound(err) {
		return apiError("deleting role mapping "+d.Id(), err)
	}
	return nil
}

// setRoleMapping copies an API answer into the state.
func setRoleMapping(d *schema.ResourceData, m apispec.RoleMapping) diag.Diagnostics {
	return setAll(d, map[string]any{
		"identity_provider": m.Provider,
		"claim":             m.Claim,
		"value":             m.Value,
		"namespace":         m.Namespace,
		"role":              m.Role,
		"created_at":        formatTime(&m.CreatedAt),
	})
}
