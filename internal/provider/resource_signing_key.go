package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
)

func resourceSigningKey() *schema.Resource {
	return &schema.Resource{
		Description: "A GPG public key registered for a namespace. Trove accepts a provider release only when its " +
			"`SHA256SUMS` is signed by one of the namespace's keys, and hands the keys to Terraform, which checks " +
			"the signature again. Either upload a public key (`ascii_armor`) or let Trove generate and keep the " +
			"namespace's key (`managed = true`): Trove then signs the releases published without a `.sig`. " +
			"A key cannot be changed: any change replaces it. Needs `admin` on the namespace.",
		CustomizeDiff: signingKeyCustomizeDiff,
		CreateContext: signingKeyCreate,
		ReadContext:   signingKeyRead,
		DeleteContext: signingKeyDelete,
		Importer:      &schema.ResourceImporter{StateContext: schema.ImportStatePassthroughContext},
		Schema: map[string]*schema.Schema{
			"namespace": {
				Type:         schema.TypeString,
				Required:     true,
				ForceNew:     true,
				ValidateFunc: validateNamespaceName,
				StateFunc:    lowercase,
				Description:  "Name of the namespace the key signs releases for.",
			},
			"ascii_armor": {
				Type:             schema.TypeString,
				Optional:         true,
				Computed:         true,
				ForceNew:         true,
				ValidateFunc:     validateArmoredPublicKey,
				DiffSuppressFunc: suppressArmorFormatting,
				Description: "The public key, ASCII-armored as `gpg --armor --export KEYID` writes it (e.g. read with " +
					"`file()`). Differences in line endings, trailing white space and blank lines around the block " +
					"do not count as changes. Required unless `managed` is true; with `managed`, leave it unset: " +
					"it then holds the public half of the key Trove generated.",
			},
			"managed": {
				Type:     schema.TypeBool,
				Optional: true,
				Default:  false,
				ForceNew: true,
				Description: "Make Trove generate the namespace's key (RSA 4096) and keep its private half, encrypted at " +
					"rest; it never leaves Trove, and Terraform state holds only the public half. Trove signs with it " +
					"the releases published without a `.sig`. A namespace has at most one managed key; destroying " +
					"this resource destroys the private key, so releases can no longer be signed with it (those " +
					"already published stay installable).",
			},
			"key_id": {
				Type:        schema.TypeString,
				Computed:    true,
				Description: "Key ID of the primary key: 16 upper-case hex digits.",
			},
			"fingerprint": {
				Type:        schema.TypeString,
				Computed:    true,
				Description: "Fingerprint of the primary key: 40 upper-case hex digits.",
			},
			"expires_at": {
				Type:        schema.TypeString,
				Computed:    true,
				Description: "When the key expires (RFC 3339), or empty if it never does.",
			},
			"created_at": {
				Type:        schema.TypeString,
				Computed:    true,
				Description: "When the key was added to the namespace (RFC 3339).",
			},
		},
	}
}

// signingKeyID returns the resource ID of a key: "<namespace>/<KEYID>",
// which is also what `terraform import` takes.
func signingKeyID(namespace, keyID string) string { return namespace + "/" + keyID }

// parseSigningKeyID splits a resource ID made by signingKeyID.
func parseSigningKeyID(id string) (namespace, keyID string, err error) {
	namespace, keyID, err = splitNamespacedID(id, "signing key", "<KEYID>", "acme/51852D87348FFC4C")
	return namespace, strings.ToUpper(keyID), err
}

// splitNamespacedID splits the ID "<namespace>/<name>" of a resource that
// lives in a namespace; what, name and example make the error actionable.
func splitNamespacedID(id, what, name, example string) (namespace, rest string, err error) {
	namespace, rest, ok := strings.Cut(id, "/")
	if !ok || namespace == "" || rest == "" || strings.Contains(rest, "/") {
		return "", "", fmt.Errorf("invalid %s ID %q: want <namespace>/%s, e.g. %s", what, id, name, example)
	}
	return namespace, rest, nil
}

func signingKeyCreate(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	ns := d.Get("namespace").(string)
	var key apispec.SigningKey
	var err error
	if d.Get("managed").(bool) {
		key, err = c.GenerateSigningKey(ctx, ns)
	} else {
		key, err = c.AddSigningKey(ctx, ns, apispec.AddSigningKeyRequest{ASCIIArmor: d.Get("ascii_armor").(string)})
	}
	if err != nil {
		return apiError("adding a signing key to namespace "+ns, err)
	}
	d.SetId(signingKeyID(key.Namespace, key.KeyID))
	return signingKeyRead(ctx, d, meta) // what was stored, see namespaceCreate
}

func signingKeyRead(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	ns, keyID, err := parseSigningKeyID(d.Id())
	if err != nil {
		return diag.FromErr(err)
	}
	key, err := c.GetSigningKey(ctx, ns, keyID)
	if client.IsNotFound(err) && !d.IsNewResource() {
		// Removed outside Terraform (or its namespace deleted): gone.
		d.SetId("")
		return nil
	}
	if err != nil {
		return apiError("reading signing key "+d.Id(), err)
	}
	d.SetId(signingKeyID(key.Namespace, key.KeyID))
	return setSigningKey(d, key)
}

func signingKeyDelete(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	ns, keyID, err := parseSigningKeyID(d.Id())
	if err != nil {
		return diag.FromErr(err)
	}
	if err := c.DeleteSigningKey(ctx, ns, keyID); err != nil && !client.IsNotFound(err) {
		return apiError("removing signing key "+d.Id(), err)
	}
	return nil
}

// setSigningKey copies an API answer into the state. The armor is the
// server's copy; suppressArmorFormatting hides its formatting differences
// from the configured text.
func setSigningKey(d *schema.ResourceData, key apispec.SigningKey) diag.Diagnostics {
	return setAll(d, map[string]any{
		"namespace":   key.Namespace,
		"ascii_armor": key.ASCIIArmor,
		"key_id":      key.KeyID,
		"fingerprint": key.Fingerprint,
		"expires_at":  formatTime(key.ExpiresAt),
		"created_at":  formatTime(&key.CreatedAt),
		"managed":     key.Managed,
	})
}

// signingKeyCustomizeDiff checks at plan time that a new key is either
// uploaded (ascii_armor) or managed, not both and not neither.
func signingKeyCustomizeDiff(_ context.Context, d *schema.ResourceDiff, _ any) error {
	if d.Id() != "" && !d.HasChange("managed") && !d.HasChange("ascii_armor") {
		return nil
	}
	config := d.GetRawConfig()
	if config.IsNull() || !config.IsKnown() {
		return nil
	}
	armorSet := !config.GetAttr("ascii_armor").IsNull()
	managed := d.Get("managed").(bool)
	switch {
	case managed && armorSet:
		return fmt.Errorf("set either ascii_armor (a public key to upload) or managed = true (Trove generates the key), not both")
	case !managed && !armorSet:
		return fmt.Errorf("set ascii_armor to the public key that signs the namespace's releases, or managed = true to let Trove generate and keep the key")
	}
	return nil
}
