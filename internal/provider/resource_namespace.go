package provider

import (
	"context"
	"fmt"
	"maps"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/registry"
)

// namespaceSetting is one mutable setting of a namespace: its attribute's
// schema and how its value travels between Terraform and the API. The
// resource creates, reads and updates every setting through this table, and
// the data source exports each one as a computed attribute, so adding a
// setting is adding one entry.
type namespaceSetting struct {
	schema *schema.Schema
	// read returns the setting's value in an API answer.
	read func(apispec.Namespace) any
	// create puts a configured value into a creation request.
	create func(req *apispec.CreateNamespaceRequest, v any)
	// update puts a changed value into an update request.
	update func(req *apispec.UpdateNamespaceRequest, v any)
}

// namespaceSettings returns the mutable settings of a namespace by
// attribute name.
func namespaceSettings() map[string]namespaceSetting {
	return map[string]namespaceSetting{
		"description": {
			schema: &schema.Schema{
				Type:         schema.TypeString,
				Optional:     true,
				ValidateFunc: validateDescription,
				Description: fmt.Sprintf("Free text shown in listings, at most %d bytes. Changing it updates the namespace in place.",
					registry.MaxDescriptionLength),
			},
			read:   func(ns apispec.Namespace) any { return ns.Description },
			create: func(req *apispec.CreateNamespaceRequest, v any) { req.Description = v.(string) },
			update: func(req *apispec.UpdateNamespaceRequest, v any) {
				s := v.(string)
				req.Description = &s
			},
		},
		"visibility": {
			schema: &schema.Schema{
				Type:         schema.TypeString,
				Optional:     true,
				Default:      string(registry.VisibilityPrivate),
				ValidateFunc: validateVisibility,
				Description: "Who may read the namespace and install its providers and modules: `private` (the " +
					"default) only principals with `read` on it, `public` everyone who can reach the server, without " +
					"credentials. Changing it updates the namespace in place; other replicas of Trove follow within 5 seconds.",
			},
			read:   func(ns apispec.Namespace) any { return ns.Visibility },
			create: func(req *apispec.CreateNamespaceRequest, v any) { req.Visibility = v.(string) },
			update: func(req *apispec.UpdateNamespaceRequest, v any) {
				s := v.(string)
				req.Visibility = &s
			},
		},
	}
}

func resourceNamespace() *schema.Resource {
	s := map[string]*schema.Schema{
		"name": {
			Type:             schema.TypeString,
			Required:         true,
			ForceNew:         true,
			ValidateFunc:     validateNamespaceName,
			StateFunc:        lowercase,
			DiffSuppressFunc: suppressNamespaceCase,
			Description: "Name of the namespace: the middle part of provider addresses (`<host>/<namespace>/<type>`). " +
				fmt.Sprintf("Letters, digits and dashes, at most %d characters; ", registry.MaxNamespaceLength) +
				"Trove stores it in lowercase and treats names differing only in case as one. " +
				"Changing it replaces the namespace, which is only possible while it holds no provider version.",
		},
		"created_at": {
			Type:        schema.TypeString,
			Computed:    true,
			Description: "When the namespace was created (RFC 3339).",
		},
	}
	for name, setting := range namespaceSettings() {
		s[name] = setting.schema
	}
	return &schema.Resource{
		Description: "A namespace of the Trove registry: it holds providers, the signing keys their releases are " +
			"verified with and the tokens that publish them. Creating and deleting namespaces needs a global `admin` " +
			"token. Only an empty namespace can be deleted; its keys, tokens and memberships go with it.",
		CreateContext: namespaceCreate,
		ReadContext:   namespaceRead,
		UpdateContext: namespaceUpdate,
		DeleteContext: namespaceDelete,
		Importer:      &schema.ResourceImporter{StateContext: schema.ImportStatePassthroughContext},
		Schema:        s,
	}
}

func namespaceCreate(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	req := apispec.CreateNamespaceRequest{Name: d.Get("name").(string)}
	for name, setting := range namespaceSettings() {
		setting.create(&req, d.Get(name))
	}
	ns, err := c.CreateNamespace(ctx, req)
	if err != nil {
		return apiError("creating namespace "+req.Name, err)
	}
	d.SetId(ns.Name)
	// Read back what was stored: the answer to a creation can be more
	// precise than the stored time stamps.
	return namespaceRead(ctx, d, meta)
}

func namespaceRead(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	ns, err := c.GetNamespace(ctx, d.Id())
	if client.IsNotFound(err) && !d.IsNewResource() {
		// Deleted outside Terraform: the next plan creates it again.
		d.SetId("")
		return nil
	}
	if err != nil {
		return apiError("reading namespace "+d.Id(), err)
	}
	d.SetId(ns.Name) // an import by "Acme" ends up as "acme"
	return setNamespace(d, ns)
}

func namespaceUpdate(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	var req apispec.UpdateNamespaceRequest
	for name, setting := range namespaceSettings() {
		if d.HasChange(name) {
			setting.update(&req, d.Get(name))
		}
	}
	ns, err := c.UpdateNamespace(ctx, d.Id(), req)
	if err != nil {
		return apiError("updating namespace "+d.Id(), err)
	}
	return setNamespace(d, ns)
}

func namespaceDelete(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	if err := c.DeleteNamespace(ctx, d.Id()); err != nil && !client.IsNotFound(err) {
		return apiError("deleting namespace "+d.Id(), err)
	}
	return nil
}

// setNamespace copies an API answer into the state.
func setNamespace(d *schema.ResourceData, ns apispec.Namespace) diag.Diagnostics {
	values := map[string]any{
		"name":       ns.Name,
		"created_at": formatTime(&ns.CreatedAt),
	}
	maps.Copy(values, namespaceSettingValues(ns))
	return setAll(d, values)
}

// namespaceSettingValues returns the settings of ns by attribute name.
func namespaceSettingValues(ns apispec.Namespace) map[string]any {
	values := map[string]any{}
	for name, setting := range namespaceSettings() {
		values[name] = setting.read(ns)
	}
	return values
}

// setAll sets every attribute in values.
func setAll(d *schema.ResourceData, values map[string]any) diag.Diagnostics {
	for name, v := range values {
		if err := d.Set(name, v); err != nil {
			return diag.Errorf("setting %s: %s", name, err)
		}
	}
	return nil
}
