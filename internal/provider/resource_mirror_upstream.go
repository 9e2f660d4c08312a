package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"
	svchost "github.com/hashicorp/terraform-svchost"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/registry"
)

func resourceMirrorUpstream() *schema.Resource {
	return &schema.Resource{
		Description: "An upstream registry of Trove's provider mirror: a registry Trove may fetch providers from when a " +
			"client first asks its mirror for them, and which of its providers it may fetch. Trove starts with two, " +
			"`registry.terraform.io` and `registry.opentofu.org`, each allowing every provider; import them to manage " +
			"them. Managing upstreams needs a global `admin` token. Deleting one stops further fetches from it; what " +
			"was mirrored from it stays.",
		CreateContext: mirrorUpstreamCreate,
		ReadContext:   mirrorUpstreamRead,
		UpdateContext: mirrorUpstreamUpdate,
		DeleteContext: mirrorUpstreamDelete,
		Importer:      &schema.ResourceImporter{StateContext: schema.ImportStatePassthroughContext},
		Schema: map[string]*schema.Schema{
			"host": {
				Type:             schema.TypeString,
				Required:         true,
				ForceNew:         true,
				ValidateFunc:     validateHost,
				DiffSuppressFunc: suppressHostSpelling,
				Description: "Host name of the upstream registry as provider source addresses write it, with a port " +
					"if it has one (`registry.terraform.io`, `registry.example.com:8443`). Trove stores it normalized " +
					"(lowercase, Punycode, without `:443`) and treats spellings with the same normal form as one. " +
					"Changing it replaces the upstream.",
			},
			"service_url": {
				Type:         schema.TypeString,
				Optional:     true,
				ValidateFunc: keywordValidator(registry.CheckMirrorServiceURL),
				Description: "The upstream's `providers.v1` base URL, used instead of service discovery on `host` " +
					"(`https://registry.example.com/v1/providers/`). An absolute `https` URL; `http` only for a " +
					fmt.Sprintf("loopback host. At most %d bytes.", registry.MaxServiceURLLength),
			},
			"ca_certificates": {
				Type:             schema.TypeString,
				Optional:         true,
				ValidateFunc:     keywordValidator(registry.CheckMirrorCACertificates),
				DiffSuppressFunc: suppressSurroundingWhitespace,
				Description: "PEM certificates of the certificate authorities to trust, besides the system's, for " +
					"TLS connections to the upstream (e.g. `file(\"corp-ca.pem\")`). Only `CERTIFICATE` blocks, at " +
					fmt.Sprintf("least one, at most %d bytes. Line endings and surrounding blank lines make no difference.", registry.MaxCACertificatesLength),
			},
			"allow": {
				Type:     schema.TypeList,
				Optional: true,
				MaxItems: registry.MaxMirrorRules,
				Description: "The providers that may be mirrored from the upstream, one block per rule; without " +
					fmt.Sprintf("any, none may. At most %d rules.", registry.MaxMirrorRules),
				Elem: &schema.Resource{Schema: map[string]*schema.Schema{
					"provider": {
						Type:     schema.TypeString,
						Required: true,
						ValidateFunc: keywordValidator(func(v string) error {
							if err := registry.MirrorProviderLimit.CheckText(v); err != nil {
								return err
							}
							return registry.CheckMirrorPattern(v)
						}),
						Description: "The providers the rule allows as `namespace/type`, where `*` as a whole namespace " +
							"or type stands for any: `hashicorp/aws`, `hashicorp/*`, `*/*`.",
					},
					"versions": {
						Type:     schema.TypeString,
						Optional: true,
						ValidateFunc: keywordValidator(func(v string) error {
							if err := registry.VersionConstraintLimit.CheckText(v); err != nil {
								return err
							}
							return registry.CheckVersionConstraint(v)
						}),
						Description: "A version constraint such as `~> 5.0` or `>= 1.2, < 2.0`; empty or absent: every version.",
					},
					"min_age": {
						Type:     schema.TypeString,
						Optional: true,
						ValidateFunc: keywordValidator(func(v string) error {
							if err := registry.MinAgeLimit.CheckText(v); err != nil {
								return err
							}
							_, err := registry.ParseAge(v)
							return err
						}),
						DiffSuppressFunc: suppressEqualAge,
						Description: "Hold new versions back until they are this old: `7d`, `36h`, `1d12h` (at most `365d`); " +
							"empty, absent or `0`: at once. The age counts from the upstream's publish time where it gives one, " +
							"else from when this Trove first saw the version. An admin may approve a version earlier " +
							"(`trove mirror hold approve`).",
					},
				}},
			},
			"description": {
				Type:         schema.TypeString,
				Optional:     true,
				ValidateFunc: validateDescription,
				Description:  fmt.Sprintf("Free text for operators, at most %d bytes.", registry.MaxDescriptionLength),
			},
			"created_at": {
				Type:        schema.TypeString,
				Computed:    true,
				Description: "When the upstream was created (RFC 3339).",
			},
			"updated_at": {
				Type:        schema.TypeString,
				Computed:    true,
				Description: "When the upstream's configuration was last replaced (RFC 3339).",
			},
		},
	}
}

// upstreamRequest builds the whole configuration of the upstream in d.
func upstreamRequest(d *schema.ResourceData) apispec.PutMirrorUpstreamRequest {
	req := apispec.PutMirrorUpstreamRequest{
		ServiceURL:     d.Get("service_url").(string),
		CACertificates: d.Get("ca_certificates").(string),
		Description:    d.Get("description").(string),
	}
	for _, v := range d.Get("allow").([]any) {
		rule, _ := v.(map[string]any) // nil for an empty block
		p, _ := rule["provider"].(string)
		vs, _ := rule["versions"].(string)
		age, _ := rule["min_age"].(string)
		req.Allow = append(req.Allow, apispec.MirrorRule{Provider: p, Versions: vs, MinAge: age})
	}
	return req
}

func mirrorUpstreamCreate(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	host := d.Get("host").(string)
	// PUT would take over an existing upstream (one of the defaults,
	// say) silently; Terraform's way is an import.
	switch existing, err := c.GetMirrorUpstream(ctx, host); {
	case err == nil:
		return diag.Errorf("mirror upstream %s already exists in Trove: import it to manage it, e.g. terraform import trove_mirror_upstream.NAME %s",
			existing.Host, existing.Host)
	case !client.IsNotFound(err):
		return apiError("reading mirror upstream "+host, err)
	}
	u, err := c.PutMirrorUpstream(ctx, host, upstreamRequest(d))
	if err != nil {
		return apiError("creating mirror upstream "+host, err)
	}
	d.SetId(u.Host)
	return setMirrorUpstream(d, u)
}

func mirrorUpstreamRead(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	u, err := c.GetMirrorUpstream(ctx, d.Id())
	if client.IsNotFound(err) && !d.IsNewResource() {
		// Deleted outside Terraform: the next plan creates it again.
		d.SetId("")
		return nil
	}
	if err != nil {
		return apiError("reading mirror upstream "+d.Id(), err)
	}
	d.SetId(u.Host) // an import by "Registry.Example.com" ends up as "registry.example.com"
	return setMirrorUpstream(d, u)
}

// mirrorUpstreamUpdate replaces the whole configuration: the API has no
// partial update, and the state holds all of it.
func mirrorUpstreamUpdate(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	u, err := c.PutMirrorUpstream(ctx, d.Id(), upstreamRequest(d))
	if err != nil {
		return apiError("updating mirror upstream "+d.Id(), err)
	}
	return setMirrorUpstream(d, u)
}

func mirrorUpstreamDelete(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	if err := c.DeleteMirrorUpstream(ctx, d.Id()); err != nil && !client.IsNotFound(err) {
		return apiError("deleting mirror upstream "+d.Id(), err)
	}
	return nil
}

// setMirrorUpstream copies an API answer into the state.
func setMirrorUpstream(d *schema.ResourceData, u apispec.MirrorUpstream) diag.Diagnostics {
	allow := make([]any, 0, len(u.Allow))
	for _, r := range u.Allow {
		allow = append(allow, map[string]any{"provider": r.Provider, "versions": r.Versions, "min_age": r.MinAge})
	}
	return setAll(d, map[string]any{
		"host":            u.Host,
		"service_url":     u.ServiceURL,
		"ca_certificates": u.CACertificates,
		"allow":           allow,
		"description":     u.Description,
		"created_at":      formatTime(&u.CreatedAt),
		"updated_at":      formatTime(&u.UpdatedAt),
	})
}

// validateHost is a schema.SchemaValidateFunc for a registry host name:
// its length limit, then what svchost.ForComparison accepts (the API's
// own normalization).
var validateHost = keywordValidator(func(s string) error {
	if err := registry.HostLimit.Check(s); err != nil {
		return err
	}
	if _, err := normalHost(s); err != nil {
		return registry.Errorf(registry.Invalid, "%q is not a registry host name (such as registry.example.com or registry.example.com:8443): %v", s, err)
	}
	return nil
})

// normalHost returns the normal form of a host name, as the API stores
// it; a name already in Punycode is accepted too.
func normalHost(s string) (string, error) {
	h, err := svchost.ForComparison(s)
	if err != nil {
		if h2, err2 := svchost.ForComparison(svchost.ForDisplay(s)); err2 == nil {
			return h2.String(), nil
		}
		return "", err
	}
	return h.String(), nil
}

// suppressHostSpelling is a schema.SchemaDiffSuppressFunc: two spellings
// of one host (Registry.Example.com and registry.example.com:443) are the
// same upstream.
func suppressHostSpelling(_, old, new string, _ *schema.ResourceData) bool {
	a, errA := normalHost(old)
	b, errB := normalHost(new)
	if errA != nil || errB != nil {
		return old == new
	}
	return a == b
}

// suppressSurroundingWhitespace is a schema.SchemaDiffSuppressFunc for
// PEM text: line endings, trailing spaces and surrounding blank lines
// make no difference.
func suppressSurroundingWhitespace(_, old, new string, _ *schema.ResourceData) bool {
	return normalizeArmor(old) == normalizeArmor(new)
}

// suppressEqualAge treats two minimum ages of the same duration as equal
// ("7d" and "168h", "" and "0"): Trove answers its own spelling.
func suppressEqualAge(_, old, new string, _ *schema.ResourceData) bool {
	a, err1 := registry.ParseAge(old)
	b, err2 := registry.ParseAge(new)
	return err1 == nil && err2 == nil && a == b
}
