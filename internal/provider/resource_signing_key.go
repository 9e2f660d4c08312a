package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"

	"trove.dev/trove/internal/apispec"
	"trove.dev/trove/internal/client"
)

func resourceSigningKey() *schema.Resource {
	return &schema.Resource{
		Description: "A GPG public key registered for a namespace. Trove accepts a provider release only when its " +
			"`SHA256SUMS` is signed by one of the namespace's keys, and hands the keys to Terraform, which checks " +
			"the signature again. A key cannot be changed: any change replaces it. Needs `admin` on the namespace.",
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
				Required:         true,
				ForceNew:         true,
				ValidateFunc:     validateArmoredPublicKey,
				DiffSuppressFunc: suppressArmorFormatting,
				Description: "The public key, ASCII-armored as `gpg --armor --export KEYID` writes it (e.g. read with " +
					"`file()`). Differences in line endings, trailing white space and blank lines around the block " +
					"do not count as changes.",
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
	key, err := c.AddSigningKey(ctx, ns, apispec.AddSigningKeyRequest{ASCIIArmor: d.Get("ascii_armor").(string)})
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
	})
}
