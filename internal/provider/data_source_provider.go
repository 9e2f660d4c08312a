package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
)

func dataSourceProvider() *schema.Resource {
	return &schema.Resource{
		Description: "Reads a provider published in Trove with all of its versions and their platforms, newest " +
			"version first.",
		ReadContext: dataSourceProviderRead,
		Schema: map[string]*schema.Schema{
			"namespace": {
				Type:         schema.TypeString,
				Required:     true,
				ValidateFunc: validateNamespaceName,
				Description:  "Namespace of the provider.",
			},
			"type": {
				Type:         schema.TypeString,
				Required:     true,
				ValidateFunc: validateProviderType,
				Description:  "Type of the provider: the last part of its address, e.g. `trove` in `<host>/trove/trove`.",
			},
			"latest_version": {
				Type:        schema.TypeString,
				Computed:    true,
				Description: "The highest version by semantic versioning precedence (pre-releases included).",
			},
			"versions": {
				Type:        schema.TypeList,
				Computed:    true,
				Description: "Every published version, newest first.",
				Elem: &schema.Resource{Schema: map[string]*schema.Schema{
					"version":        {Type: schema.TypeString, Computed: true, Description: "The version, e.g. `1.2.3`."},
					"protocols":      {Type: schema.TypeList, Computed: true, Elem: &schema.Schema{Type: schema.TypeString}, Description: "Plugin protocol versions the release speaks, e.g. `5.0`."},
					"key_id":         {Type: schema.TypeString, Computed: true, Description: "ID of the namespace key that signed the release."},
					"shasums_digest": {Type: schema.TypeString, Computed: true, Description: "SHA-256 of the release's `SHA256SUMS` file."},
					"published_at":   {Type: schema.TypeString, Computed: true, Description: "When the version was published (RFC 3339)."},
					"platforms": {
						Type:        schema.TypeList,
						Computed:    true,
						Description: "The packages of the version, one per platform.",
						Elem: &schema.Resource{Schema: map[string]*schema.Schema{
							"os":       {Type: schema.TypeString, Computed: true, Description: "Operating system, e.g. `linux`."},
							"arch":     {Type: schema.TypeString, Computed: true, Description: "Architecture, e.g. `amd64`."},
							"filename": {Type: schema.TypeString, Computed: true, Description: "Name of the zip package."},
							"shasum":   {Type: schema.TypeString, Computed: true, Description: "SHA-256 of the zip package (hex)."},
							"size":     {Type: schema.TypeInt, Computed: true, Description: "Size of the zip package in bytes."},
						}},
					},
				}},
			},
		},
	}
}

func dataSourceProviderRead(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	ns, typ := d.Get("namespace").(string), d.Get("type").(string)
	p, err := c.GetProvider(ctx, ns, typ)
	if err != nil {
		return apiError("reading provider "+ns+"/"+typ, err)
	}
	d.SetId(p.Namespace + "/" + p.Type)
	latest := ""
	if len(p.Versions) > 0 {
		latest = p.Versions[0].Version
	}
	return setAll(d, map[string]any{
		"latest_version": latest,
		"versions":       flattenVersions(p.Versions),
	})
}

// flattenVersions turns API versions into the values of the versions list.
func flattenVersions(vs []apispec.ProviderVersion) []any {
	out := make([]any, 0, len(vs))
	for _, v := range vs {
		platforms := make([]any, 0, len(v.Platforms))
		for _, p := range v.Platforms {
			platforms = append(platforms, map[string]any{
				"os": p.OS, "arch": p.Arch, "filename": p.Filename, "shasum": p.SHASum, "size": int(p.Size),
			})
		}
		out = append(out, map[string]any{
			"version":        v.Version,
			"protocols":      v.Protocols,
			"key_id":         v.KeyID,
			"shasums_digest": v.SHASumsDigest,
			"published_at":   formatTime(&v.PublishedAt),
			"platforms":      platforms,
		})
	}
	return out
}
