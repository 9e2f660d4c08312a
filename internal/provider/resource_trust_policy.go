package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/go-cty/cty"
	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/validation"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/registry"
)

func resourceTrustPolicy() *schema.Resource {
	return &schema.Resource{
		Description: "A trust policy of a namespace, for keyless publishing: the OpenID Connect ID tokens of a CI " +
			"system's issuer (GitHub Actions, GitLab CI or any other), minted for `audience` and whose claims match " +
			"every one of `conditions`, are exchanged for a short-lived token of the namespace, so that the pipeline " +
			"publishes without a stored secret (`trove publish` and `trove module publish` exchange automatically). " +
			"Needs `admin` on the namespace. A policy cannot be changed: changing any argument replaces it. A policy " +
			"deleted outside Terraform disappears from the state, so the next apply creates it again.",
		CreateContext: trustPolicyCreate,
		ReadContext:   trustPolicyRead,
		DeleteContext: trustPolicyDelete,
		Importer:      &schema.ResourceImporter{StateContext: schema.ImportStatePassthroughContext},
		Schema: map[string]*schema.Schema{
			"namespace": {
				Type:         schema.TypeString,
				Required:     true,
				ForceNew:     true,
				ValidateFunc: validateNamespaceName,
				StateFunc:    lowercase,
				Description:  "Name of the namespace the issued tokens are bound to. Changing it replaces the policy.",
			},
			"issuer": {
				Type:         schema.TypeString,
				Required:     true,
				ForceNew:     true,
				ValidateFunc: keywordValidator(registry.CheckIssuer),
				Description: "The OpenID Connect issuer URL exactly as the tokens' `iss` claim writes it (compared byte " +
					"for byte, a trailing slash included): `https://token.actions.githubusercontent.com` for GitHub " +
					"Actions, `https://gitlab.com` for GitLab.com. `https`; `http` only for a loopback host.",
			},
			"audience": {
				Type:         schema.TypeString,
				Optional:     true,
				Computed:     true,
				ForceNew:     true,
				ValidateFunc: keywordValidator(registry.AudienceLimit.CheckText),
				Description: "A value the tokens' `aud` claim must contain. Defaults to the registry's public URL, " +
					"which is what `trove publish` requests from GitHub Actions.",
			},
			"conditions": {
				Type:     schema.TypeMap,
				Required: true,
				ForceNew: true,
				Elem: &schema.Schema{
					Type:         schema.TypeString,
					ValidateFunc: keywordValidator(registry.ClaimPatternLimit.CheckText),
				},
				ValidateDiagFunc: validateConditions,
				Description: "Claim names mapped to the pattern their values must match: `*` stands for any run of " +
					"characters, `?` for one, everything else for itself. At least one, at most " +
					fmt.Sprintf("%d; a pattern of wildcards only (`*`, `?*`) is refused. GitHub: `repository`, `ref`, `environment`, ", registry.MaxTrustConditions) +
					"`job_workflow_ref`; GitLab: `project_path`, `ref`, `ref_type`, `environment`; any string claim.",
			},
			"scope": {
				Type:         schema.TypeString,
				Optional:     true,
				Default:      string(registry.ScopePublish),
				ForceNew:     true,
				ValidateFunc: validation.StringInSlice([]string{string(registry.ScopePublish), string(registry.ScopeRead)}, false),
				Description:  "What the issued tokens may do in the namespace: `publish` (the default) or `read`.",
			},
			"token_ttl_seconds": {
				Type:     schema.TypeInt,
				Optional: true,
				Default:  int(registry.DefaultTrustTokenTTL.Seconds()),
				ForceNew: true,
				ValidateFunc: validation.IntBetween(int(registry.MinTrustTokenTTL.Seconds()),
					int(registry.MaxTrustTokenTTL.Seconds())),
				Description: "Lifetime of the issued tokens in seconds: 60 to 3600, 900 by default.",
			},
			"description": {
				Type:         schema.TypeString,
				Optional:     true,
				ForceNew:     true,
				ValidateFunc: keywordValidator(registry.DescriptionLimit.CheckText),
				Description:  "Free text describing the policy.",
			},
			"policy_id": {
				Type:        schema.TypeString,
				Computed:    true,
				Description: "The policy's ID in Trove (`tp_` and 16 hex digits).",
			},
			"created_at": {
				Type:        schema.TypeString,
				Computed:    true,
				Description: "When the policy was created (RFC 3339).",
			},
		},
	}
}

// validateConditions checks the claim names of conditions and that there
// is at least one, with the API's rules.
func validateConditions(v any, _ cty.Path) diag.Diagnostics {
	m, _ := v.(map[string]any)
	p := registry.TrustPolicy{Namespace: "acme", Issuer: "https://issuer.example", Audience: "x", Scope: registry.ScopePublish,
		TokenTTL: registry.DefaultTrustTokenTTL, Conditions: map[string]string{}}
	for k, val := range m {
		s, _ := val.(string)
		p.Conditions[k] = s
	}
	if err := registry.CheckTrustPolicy(p); err != nil {
		return diag.Errorf("conditions: %s", registry.Message(err))
	}
	return nil
}

// trustPolicyID returns the resource ID of a policy: "<namespace>/<id>",
// which is also what `terraform import` takes.
func trustPolicyID(namespace, id string) string { return namespace + "/" + id }

func parseTrustPolicyID(id string) (namespace, policyID string, err error) {
	namespace, policyID, err = splitNamespacedID(id, "trust policy", "<policy_id>", "acme/tp_0123456789abcdef")
	return strings.ToLower(namespace), policyID, err
}

func trustPolicyCreate(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	ns := d.Get("namespace").(string)
	conditions := map[string]string{}
	for k, v := range d.Get("conditions").(map[string]any) {
		conditions[k], _ = v.(string)
	}
	p, err := c.CreateTrustPolicy(ctx, ns, apispec.CreateTrustPolicyRequest{
		Issuer: d.Get("issuer").(string), Audience: d.Get("audience").(string), Conditions: conditions,
		Scope: d.Get("scope").(string), TokenTTLSeconds: int64(d.Get("token_ttl_seconds").(int)),
		Description: d.Get("description").(string),
	})
	if err != nil {
		return apiError("creating a trust policy of namespace "+ns, err)
	}
	d.SetId(trustPolicyID(p.Namespace, p.ID))
	return trustPolicyRead(ctx, d, meta)
}

func trustPolicyRead(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	ns, id, err := parseTrustPolicyID(d.Id())
	if err != nil {
		return diag.FromErr(err)
	}
	p, err := c.GetTrustPolicy(ctx, ns, id)
	if client.IsNotFound(err) && !d.IsNewResource() {
		d.SetId("") // deleted outside Terraform, or its namespace is gone
		return nil
	}
	if err != nil {
		return apiError("reading trust policy "+id+" of namespace "+ns, err)
	}
	d.SetId(trustPolicyID(p.Namespace, p.ID))
	return setAll(d, map[string]any{
		"namespace":         p.Namespace,
		"issuer":            p.Issuer,
		"audience":          p.Audience,
		"conditions":        p.Conditions,
		"scope":             p.Scope,
		"token_ttl_seconds": int(p.TokenTTLSeconds),
		"description":       p.Description,
		"policy_id":         p.ID,
		"created_at":        formatTime(&p.CreatedAt),
	})
}

func trustPolicyDelete(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	ns, id, err := parseTrustPolicyID(d.Id())
	if err != nil {
		return diag.FromErr(err)
	}
	if err := c.DeleteTrustPolicy(ctx, ns, id); err != nil && !client.IsNotFound(err) {
		return apiError("deleting trust policy "+id+" of namespace "+ns, err)
	}
	return nil
}
