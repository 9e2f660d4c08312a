package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"

	"trove.dev/trove/client"
)

func dataSourceNamespace() *schema.Resource {
	s := map[string]*schema.Schema{
		"name": {
			Type:         schema.TypeString,
			Required:     true,
			ValidateFunc: validateNamespaceName,
			Description:  "Name of the namespace (any case).",
		},
		"created_at": {
			Type:        schema.TypeString,
			Computed:    true,
			Description: "When the namespace was created (RFC 3339).",
		},
	}
	for name, setting := range namespaceSettings() {
		s[name] = &schema.Schema{
			Type:        setting.schema.Type,
			Computed:    true,
			Description: "The namespace's `" + name + "` (see the `trove_namespace` resource).",
		}
	}
	return &schema.Resource{
		Description: "Reads a namespace the token may read.",
		ReadContext: dataSourceNamespaceRead,
		Schema:      s,
	}
}

func dataSourceNamespaceRead(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	name := d.Get("name").(string)
	ns, err := c.GetNamespace(ctx, name)
	if err != nil {
		return apiError("reading namespace "+name, err)
	}
	d.SetId(ns.Name)
	values := namespaceSettingValues(ns)
	values["created_at"] = formatTime(&ns.CreatedAt)
	return setAll(d, values)
}
