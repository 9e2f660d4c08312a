package provider

import (
	"context"
	"strings"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
)

func resourceNamespaceMember() *schema.Resource {
	return &schema.Resource{
		Description: "A user's membership of a namespace, with a role: `reader` reads the namespace (and installs " +
			"from it), `publisher` also publishes provider and module versions, `admin` also manages its signing " +
			"keys, tokens, members and visibility. The user's personal tokens follow the role at once. Needs " +
			"`admin` on the namespace.\n\n" +
			"Creating the resource for a user who already is a member takes the membership over and sets its " +
			"role. A membership removed outside Terraform disappears from the state, so the next apply adds it " +
			"again.",
		CreateContext: memberCreate,
		ReadContext:   memberRead,
		UpdateContext: memberUpdate,
		DeleteContext: memberDelete,
		Importer:      &schema.ResourceImporter{StateContext: schema.ImportStatePassthroughContext},
		Schema: map[string]*schema.Schema{
			"namespace": {
				Type:         schema.TypeString,
				Required:     true,
				ForceNew:     true,
				ValidateFunc: validateNamespaceName,
				StateFunc:    lowercase,
				Description:  "Name of the namespace. Changing it replaces the membership.",
			},
			"user": {
				Type:         schema.TypeString,
				Required:     true,
				ForceNew:     true,
				ValidateFunc: validateUserName,
				StateFunc:    lowercaseUserName,
				Description:  "Name of the user, who must exist. Changing it replaces the membership.",
			},
			"role": {
				Type:         schema.TypeString,
				Required:     true,
				ValidateFunc: validateRole,
				Description:  "The user's role in the namespace: `reader`, `publisher` or `admin`. Changes in place.",
			},
			"created_at": {
				Type:        schema.TypeString,
				Computed:    true,
				Description: "When the user became a member (RFC 3339); a role change keeps it.",
			},
		},
	}
}

// memberID returns the resource ID of a membership: "<namespace>/<user>",
// which is also what `terraform import` takes.
func memberID(namespace, user string) string { return namespace + "/" + user }

// parseMemberID splits a resource ID made by memberID.
func parseMemberID(id string) (namespace, user string, err error) {
	namespace, user, err = splitNamespacedID(id, "membership", "<user>", "acme/alice")
	return strings.ToLower(namespace), strings.ToLower(user), err
}

func memberCreate(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	ns, user := d.Get("namespace").(string), d.Get("user").(string)
	m, err := c.SetMember(ctx, ns, user, d.Get("role").(string))
	if err != nil {
		return apiError("adding user "+user+" to namespace "+ns, err)
	}
	d.SetId(memberID(m.Namespace, m.User))
	return memberRead(ctx, d, meta) // what was stored, see namespaceCreate
}

func memberRead(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	ns, user, err := parseMemberID(d.Id())
	if err != nil {
		return diag.FromErr(err)
	}
	members, err := c.ListMembers(ctx, ns)
	if client.IsNotFound(err) && !d.IsNewResource() {
		// The namespace is gone, and its memberships with it.
		d.SetId("")
		return nil
	}
	if err != nil {
		return apiError("reading the members of namespace "+ns, err)
	}
	for _, m := range members {
		if m.User == user {
			d.SetId(memberID(m.Namespace, m.User))
			return setMember(d, m)
		}
	}
	if d.IsNewResource() {
		return diag.Errorf("user %s is not a member of namespace %s", user, ns)
	}
	// Removed outside Terraform: the next plan adds the membership again.
	d.SetId("")
	return nil
}

func memberUpdate(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	ns, user, err := parseMemberID(d.Id())
	if err != nil {
		return diag.FromErr(err)
	}
	m, err := c.SetMember(ctx, ns, user, d.Get("role").(string))
	if err != nil {
		return apiError("changing the role of user "+user+" in namespace "+ns, err)
	}
	return setMember(d, m)
}

func memberDelete(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	ns, user, err := parseMemberID(d.Id())
	if err != nil {
		return diag.FromErr(err)
	}
	if err := c.RemoveMember(ctx, ns, user); err != nil && !client.IsNotFound(err) {
		return apiError("removing user "+user+" from namespace "+ns, err)
	}
	return nil
}

// setMember copies an API answer into the state.
func setMember(d *schema.ResourceData, m apispec.Membership) diag.Diagnostics {
	return setAll(d, map[string]any{
		"namespace":  m.Namespace,
		"user":       m.User,
		"role":       m.Role,
		"created_at": formatTime(&m.CreatedAt),
	})
}
