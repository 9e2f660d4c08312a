package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/registry"
)

func resourceUser() *schema.Resource {
	return &schema.Resource{
		Description: "A user account of Trove. Users log in with their password on the login page of " +
			"`terraform login` and act through personal tokens; their rights come from the global `admin` flag " +
			"and from `trove_namespace_member` roles. Managing users needs a global `admin` token.\n\n" +
			"Trove cannot delete users: destroying this resource **disables** the user (their tokens stop working " +
			"and they cannot log in) and the name stays taken. To manage such a user again, import it.\n\n" +
			"The password is an input only: Trove stores just its argon2id hash, so the provider keeps the " +
			"configured value in the state (protect the state accordingly) and can neither read it back nor " +
			"notice a change made outside Terraform. After an import it is unknown, and the next apply sets it.",
		CreateContext: userCreate,
		ReadContext:   userRead,
		UpdateContext: userUpdate,
		DeleteContext: userDelete,
		Importer:      &schema.ResourceImporter{StateContext: schema.ImportStatePassthroughContext},
		Schema: map[string]*schema.Schema{
			"name": {
				Type:             schema.TypeString,
				Required:         true,
				ForceNew:         true,
				ValidateFunc:     validateUserName,
				DiffSuppressFunc: suppressUserNameCase,
				Description: fmt.Sprintf("Login name: 1 to %d letters, digits, `.`, `_` and `-`, starting and ending with a ", registry.MaxUserNameLength) +
					"letter or digit. Trove stores it in lowercase. Changing it replaces the user: the old one is " +
					"disabled and a new one created.",
			},
			"password": {
				Type:         schema.TypeString,
				Required:     true,
				Sensitive:    true,
				ValidateFunc: validatePassword,
				Description: fmt.Sprintf("Password for the login page: at least %d characters, at most %d bytes, no leading or ",
					registry.MinPasswordLength, registry.MaxPasswordLength) +
					"trailing white space. Never read back from Trove; changing it sets the new password in place.",
			},
			"admin": {
				Type:     schema.TypeBool,
				Optional: true,
				Default:  false,
				Description: "Whether the user is a global administrator: every right on every namespace and the " +
					"management of users. Defaults to `false`. Changes in place; a global admin cannot change it on their " +
					"own user.",
			},
			"disabled": {
				Type:     schema.TypeBool,
				Optional: true,
				Default:  false,
				Description: "Whether the user is disabled: they cannot log in and their personal tokens are refused " +
					"until enabled again. Defaults to `false`. Changes in place; a global admin cannot disable their own " +
					"user.",
			},
			"created_at": {
				Type:        schema.TypeString,
				Computed:    true,
				Description: "When the user was created (RFC 3339).",
			},
		},
	}
}

func userCreate(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	req := apispec.CreateUserRequest{
		Name:     d.Get("name").(string),
		Password: d.Get("password").(string),
		Admin:    d.Get("admin").(bool),
	}
	u, err := c.CreateUser(ctx, req)
	if client.IsConflict(err) {
		return diag.Diagnostics{{
			Severity: diag.Error,
			Summary:  "Trove: user " + req.Name + " already exists",
			Detail: "Trove cannot delete users, so a user destroyed earlier is only disabled and keeps its name. " +
				"To manage the existing user, import it: terraform import <resource address> " + req.Name,
		}}
	}
	if err != nil {
		return apiError("creating user "+req.Name, err)
	}
	d.SetId(u.Name)
	if d.Get("disabled").(bool) {
		// Creation has no disabled flag: disable the new user right away.
		disabled := true
		if _, err := c.UpdateUser(ctx, u.Name, apispec.UpdateUserRequest{Disabled: &disabled}); err != nil {
			return apiError("disabling new user "+u.Name, err)
		}
	}
	return userRead(ctx, d, meta) // what was stored, see namespaceCreate
}

func userRead(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	u, err := c.GetUser(ctx, d.Id())
	if client.IsNotFound(err) && !d.IsNewResource() {
		d.SetId("")
		return nil
	}
	if err != nil {
		return apiError("reading user "+d.Id(), err)
	}
	d.SetId(u.Name) // an import by "Alice" ends up as "alice"
	return setUser(d, u)
}

func userUpdate(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	var req apispec.UpdateUserRequest
	if d.HasChange("password") {
		old, new := d.GetChange("password")
		password := new.(string)
		req.Password = &password
		// A user managing their own account must prove the current
		// password; global admins need not, and the server ignores it
		// then. Unknown after an import.
		if current := old.(string); current != "" {
			req.CurrentPassword = &current
		}
	}
	if d.HasChange("admin") {
		admin := d.Get("admin").(bool)
		req.Admin = &admin
	}
	if d.HasChange("disabled") {
		disabled := d.Get("disabled").(bool)
		req.Disabled = &disabled
	}
	u, err := c.UpdateUser(ctx, d.Id(), req)
	if err != nil {
		return apiError("updating user "+d.Id(), err)
	}
	return setUser(d, u)
}

// userDelete disables the user: the API cannot delete users.
func userDelete(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	disabled := true
	if _, err := c.UpdateUser(ctx, d.Id(), apispec.UpdateUserRequest{Disabled: &disabled}); err != nil && !client.IsNotFound(err) {
		return apiError("disabling user "+d.Id(), err)
	}
	return nil
}

// setUser copies an API answer into the state. The password is not part of
// it: the state keeps the configured value.
func setUser(d *schema.ResourceData, u apispec.User) diag.Diagnostics {
	return setAll(d, map[string]any{
		"name":       u.Name,
		"admin":      u.Admin,
		"disabled":   u.Disabled,
		"created_at": formatTime(&u.CreatedAt),
	})
}
