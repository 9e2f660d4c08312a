package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
)

func dataSourceModule() *schema.Resource {
	return &schema.Resource{
		Description: "Reads a module published in Trove with all of its versions, newest version first.",
		ReadContext: dataSourceModuleRead,
		Schema: map[string]*schema.Schema{
			"namespace": {
				Type:         schema.TypeString,
				Required:     true,
				ValidateFunc: validateNamespaceName,
				Description:  "Namespace of the module.",
			},
			"name": {
				Type:         schema.TypeString,
				Required:     true,
				ValidateFunc: validateModuleName,
				Description:  "Name of the module, e.g. `network` in `<host>/acme/network/aws`.",
			},
			"system": {
				Type:         schema.TypeString,
				Required:     true,
				ValidateFunc: validateModuleSystem,
				Description:  "Target system of the module, e.g. `aws` in `<host>/acme/network/aws`.",
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
					"description":    {Type: schema.TypeString, Computed: true, Description: "One-line summary from the version's README."},
					"origin":         {Type: schema.TypeString, Computed: true, Description: "Where the version came from, as recorded by its publisher (e.g. a git tag and commit)."},
					"archive_format": {Type: schema.TypeString, Computed: true, Description: "Format of the archive: `tar.gz` or `zip`."},
					"archive_size":   {Type: schema.TypeInt, Computed: true, Description: "Size of the archive in bytes."},
					"archive_sha256": {Type: schema.TypeString, Computed: true, Description: "SHA-256 of the archive (hex)."},
					"published_at":   {Type: schema.TypeString, Computed: true, Description: "When the version was published (RFC 3339)."},
				}},
			},
		},
	}
}

func dataSourceModuleRead(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	ns, name, system := d.Get("namespace").(string), d.Get("name").(string), d.Get("system").(string)
	m, err := c.GetModule(ctx, ns, name, system)
	if err != nil {
		return apiError("reading module "+ns+"/"+name+"/"+system, err)
	}
	d.SetId(m.Namespace + "/" + m.Name + "/" + m.System)
	latest := ""
	if len(m.Versions) > 0 {
		latest = m.Versions[0].Version
	}
	return setAll(d, map[string]any{
		"latest_version": latest,
		"versions":       flattenModuleVersions(m.Versions),
	})
}

// flattenModuleVersions turns API versions into the values of the versions
// list.
func flattenModuleVersions(vs []apispec.ModuleVersion) []any {
	out := make([]any, 0, len(vs))
	for _, v := range vs {
		out = append(out, map[string]any{
			"version":        v.Version,
			"description":    v.Description,
			"origin":         v.Origin,
			"archive_format": v.ArchiveFormat,
			"archive_size":   int(v.ArchiveSize),
			"archive_sha256": v.ArchiveDigest,
			"published_at":   formatTime(&v.PublishedAt),
		})
	}
	return out
}
