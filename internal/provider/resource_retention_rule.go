package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/validation"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/registry"
)

func resourceRetentionRule() *schema.Resource {
	return &schema.Resource{
		Description: "The retention rule of a namespace: garbage collections (`trove gc`, or `trove serve --gc-interval`) " +
			"delete every provider and module version of the namespace that the rule does not keep, then reclaim their files. " +
			"A version is kept while it is among the `keep_last` highest versions of its provider or module, or was published " +
			"within `keep_within`, or matches one of the `pin` constraints; the highest and the most recently published version, " +
			"and versions deprecated but not revoked, are always kept. `trove gc --dry-run` lists what the rules would delete. " +
			"Needs admin rights on the namespace; a namespace has at most one rule, and destroying the resource removes it " +
			"(nothing more is deleted by retention then).",
		CreateContext: retentionPut,
		ReadContext:   retentionRead,
		UpdateContext: retentionPut,
		DeleteContext: retentionDelete,
		Importer:      &schema.ResourceImporter{StateContext: schema.ImportStatePassthroughContext},
		Schema: map[string]*schema.Schema{
			"namespace": {
				Type:             schema.TypeString,
				Required:         true,
				ForceNew:         true,
				ValidateFunc:     validateNamespaceName,
				StateFunc:        lowercase,
				DiffSuppressFunc: suppressNamespaceCase,
				Description:      "The namespace the rule applies to (all its providers and modules). Changing it replaces the rule.",
			},
			"keep_last": {
				Type:         schema.TypeInt,
				Optional:     true,
				ValidateFunc: validation.IntBetween(1, registry.MaxRetentionKeepLast),
				AtLeastOneOf: []string{"keep_last", "keep_within"},
				Description: fmt.Sprintf("Keep the N highest versions (by semantic version precedence) of each provider and module, "+
					"from 1 to %d. `keep_last`, `keep_within` or both are required.", registry.MaxRetentionKeepLast),
			},
			"keep_within": {
				Type:             schema.TypeString,
				Optional:         true,
				ValidateFunc:     validateRetentionDuration,
				DiffSuppressFunc: suppressSameRetentionDuration,
				AtLeastOneOf:     []string{"keep_last", "keep_within"},
				Description: "Keep the versions published within this duration: whole days (`90d`) or a Go duration " +
					"(`2160h`), at least a day.",
			},
			"pin": {
				Type:     schema.TypeList,
				Optional: true,
				MaxItems: registry.MaxRetentionPins,
				Elem: &schema.Schema{
					Type:         schema.TypeString,
					ValidateFunc: validatePin,
				},
				Description: fmt.Sprintf("Version constraints whose matching versions are always kept, e.g. `~> 1.0`, "+
					"`>= 2.0, < 3.0` or `2.3.4` (at most %d, each at most %d characters).", registry.MaxRetentionPins, registry.MaxRetentionPinLength),
			},
			"updated_at": {
				Type:        schema.TypeString,
				Computed:    true,
				Description: "When the rule was last set (RFC 3339).",
			},
			"updated_by": {
				Type:        schema.TypeString,
				Computed:    true,
				Description: "Who set it: `user:<name>` or `token:<id>`.",
			},
		},
	}
}

func retentionPut(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	ns := d.Get("namespace").(string)
	req := apispec.RetentionRequest{KeepLast: d.Get("keep_last").(int), KeepWithin: d.Get("keep_within").(string)}
	for _, p := range d.Get("pin").([]any) {
		s, _ := p.(string)
		req.Pin = append(req.Pin, s)
	}
	rule, err := c.PutRetentionRule(ctx, ns, req)
	if err != nil {
		return apiError("setting the retention rule of namespace "+ns, err)
	}
	d.SetId(rule.Namespace)
	return setRetention(d, rule)
}

func retentionRead(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	rule, err := c.GetRetentionRule(ctx, d.Id())
	if client.IsNotFound(err) && !d.IsNewResource() {
		d.SetId("") // removed outside Terraform
		return nil
	}
	if err != nil {
		return apiError("reading the retention rule of namespace "+d.Id(), err)
	}
	d.SetId(rule.Namespace)
	return setRetention(d, rule)
}

func retentionDelete(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	if err := c.DeleteRetentionRule(ctx, d.Id()); err != nil && !client.IsNotFound(err) {
		return apiError("removing the retention rule of namespace "+d.Id(), err)
	}
	return nil
}

// setRetention copies an API answer into the state.
func setRetention(d *schema.ResourceData, r apispec.RetentionRule) diag.Diagnostics {
	pins := make([]any, len(r.Pin))
	for i, p := range r.Pin {
		pins[i] = p
	}
	return setAll(d, map[string]any{
		"namespace":   r.Namespace,
		"keep_last":   r.KeepLast,
		"keep_within": r.KeepWithin,
		"pin":         pins,
		"updated_at":  formatTime(&r.UpdatedAt),
		"updated_by":  r.UpdatedBy,
	})
}

// validateRetentionDuration is a schema.SchemaValidateFunc for keep_within.
func validateRetentionDuration(v any, key string) (warnings []string, errs []error) {
	s, _ := v.(string)
	d, err := apispec.ParseRetentionDuration(s)
	if err == nil && d > 0 && d < registry.MinRetentionKeepWithin {
		err = registry.Errorf(registry.Invalid, "keep_within must be at least %s, got %s", registry.MinRetentionKeepWithin, d)
	}
	if err != nil {
		return nil, []error{fmt.Errorf("%s: %s", key, registry.Message(err))}
	}
	return nil, nil
}

// validatePin is a schema.SchemaValidateFunc for one pin constraint.
func validatePin(v any, key string) (warnings []string, errs []error) {
	s, _ := v.(string)
	if _, err := registry.ParsePin(s); err != nil {
		return nil, []error{fmt.Errorf("%s: %s", key, registry.Message(err))}
	}
	return nil, nil
}

// suppressSameRetentionDuration ignores another spelling of the same
// duration ("30d" and "720h").
func suppressSameRetentionDuration(_, old, new string, _ *schema.ResourceData) bool {
	a, errA := apispec.ParseRetentionDuration(old)
	b, errB := apispec.ParseRetentionDuration(new)
	return errA == nil && errB == nil && a == b
}
