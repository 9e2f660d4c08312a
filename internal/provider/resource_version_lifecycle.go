package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/registry"
)

// versionKind is what a lifecycle resource applies to: provider or
// module versions.
type versionKind struct {
	module bool
}

// what names the kind in messages.
func (k versionKind) what() string {
	if k.module {
		return "module"
	}
	return "provider"
}

// keys are the attributes that address a version, in ID order.
func (k versionKind) keys() []string {
	if k.module {
		return []string{"namespace", "name", "system", "version"}
	}
	return []string{"namespace", "type", "version"}
}

// example is an example ID.
func (k versionKind) example() string {
	if k.module {
		return "acme/network/aws/1.2.0"
	}
	return "acme/cloud/1.2.0"
}

// addressSchema returns the attributes that address a version; changing
// any replaces the resource.
func (k versionKind) addressSchema() map[string]*schema.Schema {
	s := map[string]*schema.Schema{
		"namespace": {Type: schema.TypeString, Required: true, ForceNew: true, ValidateFunc: validateNamespaceName, StateFunc: lowercase,
			Description: "Namespace of the " + k.what() + "."},
		"version": {Type: schema.TypeString, Required: true, ForceNew: true,
			ValidateFunc: keywordValidator(func(s string) error { _, err := registry.ParseVersion(s); return err }),
			Description:  "The published version, e.g. `1.2.0`."},
	}
	if k.module {
		s["name"] = &schema.Schema{Type: schema.TypeString, Required: true, ForceNew: true, ValidateFunc: validateModuleName, StateFunc: lowercase,
			Description: "Name of the module."}
		s["system"] = &schema.Schema{Type: schema.TypeString, Required: true, ForceNew: true, ValidateFunc: validateModuleSystem,
			Description: "Target system of the module, e.g. `aws`."}
	} else {
		s["type"] = &schema.Schema{Type: schema.TypeString, Required: true, ForceNew: true, ValidateFunc: validateProviderType, StateFunc: lowercase,
			Description: "Type of the provider, e.g. `cloud` for `acme/cloud`."}
	}
	return s
}

// address returns the values of keys() from d.
func (k versionKind) address(d *schema.ResourceData) []string {
	var out []string
	for _, key := range k.keys() {
		out = append(out, d.Get(key).(string))
	}
	return out
}

// parseID splits an ID made by joining keys() with "/".
func (k versionKind) parseID(id string) ([]string, error) {
	parts := strings.Split(id, "/")
	if len(parts) != len(k.keys()) || strings.Contains(id, "//") || strings.HasPrefix(id, "/") || strings.HasSuffix(id, "/") {
		return nil, fmt.Errorf("invalid %s version ID %q: want %s, e.g. %s", k.what(), id, "<"+strings.Join(k.keys(), ">/<")+">", k.example())
	}
	for i := range len(parts) - 1 { // names are stored lowercase; the version as published
		if k.keys()[i] != "system" {
			parts[i] = strings.ToLower(parts[i])
		}
	}
	return parts, nil
}

// versionState is what a lifecycle resource reads back: the version's
// deprecation and revocation, nil when not set.
type versionState struct {
	deprecation *apispec.Deprecation
	revocation  *apispec.Revocation
}

// get reads the version at addr.
func (k versionKind) get(ctx context.Context, c *client.Client, addr []string) (versionState, error) {
	if k.module {
		v, err := c.GetModuleVersion(ctx, addr[0], addr[1], addr[2], addr[3])
		return versionState{v.Deprecation, v.Revocation}, err
	}
	v, err := c.GetProviderVersion(ctx, addr[0], addr[1], addr[2])
	return versionState{v.Deprecation, v.Revocation}, err
}

// lifecycleResource is the shared shape of the four lifecycle resources:
// one state (deprecation or revocation) of one kind of version.
type lifecycleResource struct {
	kind       versionKind
	revocation bool
}

func (r lifecycleResource) state() string {
	if r.revocation {
		return "revocation"
	}
	return "deprecation"
}

func resourceProviderVersionDeprecation() *schema.Resource {
	return lifecycleResource{}.resource()
}

func resourceProviderVersionRevocation() *schema.Resource {
	return lifecycleResource{revocation: true}.resource()
}

func resourceModuleVersionDeprecation() *schema.Resource {
	return lifecycleResource{kind: versionKind{module: true}}.resource()
}

func resourceModuleVersionRevocation() *schema.Resource {
	return lifecycleResource{kind: versionKind{module: true}, revocation: true}.resource()
}

func (r lifecycleResource) resource() *schema.Resource {
	what := r.kind.what()
	s := r.kind.addressSchema()
	s["reason"] = &schema.Schema{Type: schema.TypeString, Required: true,
		ValidateFunc: keywordValidator(registry.CheckLifecycleReason),
		Description:  fmt.Sprintf("Why, in one line of at most %d characters. Changes in place.", registry.MaxLifecycleReason)}
	var desc string
	if r.revocation {
		desc = fmt.Sprintf("The revocation of a published %s version: it is left out of the version lists of the protocols, "+
			"so new resolutions (`~> 1.0`) skip it, while its downloads keep working. Needs `admin` on the namespace. "+
			"Destroying the resource restores the version.\n\n"+
			"Terraform and OpenTofu require a lock file's version to be listed: a lock file that pins a revoked provider "+
			"version fails with \"the previously-selected version ... is no longer available\" until the version is "+
			"restored or `init -upgrade` moves the lock. See Trove's docs/lifecycle.md.", what)
		s["revoked_at"] = &schema.Schema{Type: schema.TypeString, Computed: true, Description: "When the version was revoked (RFC 3339)."}
		s["revoked_by"] = &schema.Schema{Type: schema.TypeString, Computed: true, Description: "Who revoked it: `user:<name>` or `token:<id>`."}
	} else {
		desc = fmt.Sprintf("The deprecation of a published %s version, with a reason and an optional link: the version stays "+
			"listed and installable. Needs `publish` on the namespace. Destroying the resource undeprecates the version.", what)
		if r.kind.module {
			desc += "\n\nThe deprecation is served in the modules.v1 versions answer, the API and the web UI; no released " +
				"Terraform (up to 1.13) or OpenTofu (up to 1.12) prints module deprecations on `init`."
		} else {
			desc += "\n\nTerraform and OpenTofu print it on every `init` that queries the provider, under \"Additional provider " +
				"information from registry\"."
		}
		s["link"] = &schema.Schema{Type: schema.TypeString, Optional: true,
			ValidateFunc: keywordValidator(registry.CheckLifecycleLink),
			Description:  "An `https` URL with more information (an upgrade guide, an advisory). Changes in place."}
		s["deprecated_at"] = &schema.Schema{Type: schema.TypeString, Computed: true, Description: "When the version was deprecated (RFC 3339)."}
		s["deprecated_by"] = &schema.Schema{Type: schema.TypeString, Computed: true, Description: "Who deprecated it: `user:<name>` or `token:<id>`."}
	}
	return &schema.Resource{
		Description:   desc,
		CreateContext: r.put,
		ReadContext:   r.read,
		UpdateContext: r.put,
		DeleteContext: r.delete,
		Importer:      &schema.ResourceImporter{StateContext: schema.ImportStatePassthroughContext},
		Schema:        s,
	}
}

// put sets the state (create and update).
func (r lifecycleResource) put(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	addr := r.kind.address(d)
	reason := d.Get("reason").(string)
	var err error
	switch {
	case r.kind.module && r.revocation:
		_, err = c.RevokeModuleVersion(ctx, addr[0], addr[1], addr[2], addr[3], apispec.RevokeRequest{Reason: reason})
	case r.kind.module:
		_, err = c.DeprecateModuleVersion(ctx, addr[0], addr[1], addr[2], addr[3], apispec.DeprecateRequest{Reason: reason, Link: d.Get("link").(string)})
	case r.revocation:
		_, err = c.RevokeProviderVersion(ctx, addr[0], addr[1], addr[2], apispec.RevokeRequest{Reason: reason})
	default:
		_, err = c.DeprecateProviderVersion(ctx, addr[0], addr[1], addr[2], apispec.DeprecateRequest{Reason: reason, Link: d.Get("link").(string)})
	}
	if err != nil {
		return apiError(fmt.Sprintf("setting the %s of %s version %s", r.state(), r.kind.what(), strings.Join(addr, "/")), err)
	}
	if d.Id() == "" {
		parts, _ := r.kind.parseID(strings.Join(addr, "/"))
		d.SetId(strings.Join(parts, "/"))
	}
	return r.read(ctx, d, meta)
}

// read copies the state from the version; a version without it (cleared
// outside Terraform) or gone leaves the state.
func (r lifecycleResource) read(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	addr, err := r.kind.parseID(d.Id())
	if err != nil {
		return diag.FromErr(err)
	}
	st, err := r.kind.get(ctx, c, addr)
	if client.IsNotFound(err) && !d.IsNewResource() {
		d.SetId("")
		return nil
	}
	if err != nil {
		return apiError("reading "+r.kind.what()+" version "+d.Id(), err)
	}
	values := map[string]any{}
	for i, key := range r.kind.keys() {
		values[key] = addr[i]
	}
	if r.revocation {
		if st.revocation == nil {
			d.SetId("")
			return nil
		}
		values["reason"], values["revoked_at"], values["revoked_by"] = st.revocation.Reason, formatTime(&st.revocation.RevokedAt), st.revocation.RevokedBy
	} else {
		if st.deprecation == nil {
			d.SetId("")
			return nil
		}
		values["reason"], values["link"] = st.deprecation.Reason, st.deprecation.Link
		values["deprecated_at"], values["deprecated_by"] = formatTime(&st.deprecation.DeprecatedAt), st.deprecation.DeprecatedBy
	}
	return setAll(d, values)
}

// delete clears the state; a version that is gone is not an error.
func (r lifecycleResource) delete(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	addr, err := r.kind.parseID(d.Id())
	if err != nil {
		return diag.FromErr(err)
	}
	switch {
	case r.kind.module && r.revocation:
		_, err = c.RestoreModuleVersion(ctx, addr[0], addr[1], addr[2], addr[3])
	case r.kind.module:
		_, err = c.UndeprecateModuleVersion(ctx, addr[0], addr[1], addr[2], addr[3])
	case r.revocation:
		_, err = c.RestoreProviderVersion(ctx, addr[0], addr[1], addr[2])
	default:
		_, err = c.UndeprecateProviderVersion(ctx, addr[0], addr[1], addr[2])
	}
	if err != nil && !client.IsNotFound(err) {
		return apiError(fmt.Sprintf("clearing the %s of %s version %s", r.state(), r.kind.what(), d.Id()), err)
	}
	return nil
}
