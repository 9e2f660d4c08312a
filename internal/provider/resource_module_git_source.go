package provider

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/validation"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/registry"
)

func resourceModuleGitSource() *schema.Resource {
	return &schema.Resource{
		Description: "A module whose versions come from the semver tags of a Git repository: every tag such as " +
			"`v1.2.0` (or `1.2.0`) is published as that module version, packed from the tagged commit, so that " +
			"configurations can use version constraints. A tag moved after its version was published is refused " +
			"(versions are immutable). Trove syncs at creation, every poll interval and on a push webhook " +
			"(`webhook_url` with `webhook_secret`). Needs `admin` on the namespace. The source cannot be changed: " +
			"changing any argument replaces it (the published versions stay). Credentials are write-only: Trove " +
			"keeps them encrypted and never returns them, so an imported source has none in its state.",
		CreateContext: gitSourceCreate,
		ReadContext:   gitSourceRead,
		DeleteContext: gitSourceDelete,
		Importer:      &schema.ResourceImporter{StateContext: schema.ImportStatePassthroughContext},
		Schema: map[string]*schema.Schema{
			"namespace": {
				Type: schema.TypeString, Required: true, ForceNew: true,
				ValidateFunc: validateNamespaceName, StateFunc: lowercase,
				Description: "Namespace of the module.",
			},
			"name": {
				Type: schema.TypeString, Required: true, ForceNew: true,
				ValidateFunc: validateModuleName,
				StateFunc:    lowercase,
				Description:  "Name of the module.",
			},
			"system": {
				Type: schema.TypeString, Required: true, ForceNew: true,
				ValidateFunc: validateModuleSystem,
				Description:  "Target system of the module (e.g. `aws`).",
			},
			"url": {
				Type: schema.TypeString, Required: true, ForceNew: true,
				ValidateFunc: keywordValidator(func(s string) error { _, err := registry.ParseGitURL(s); return err }),
				Description: "The repository: `https://`, `http://`, `git://`, `ssh://` or `user@host:path`. " +
					"`file://`, local paths, `ext::` and URLs with user information are refused.",
			},
			"subdir": {
				Type: schema.TypeString, Optional: true, ForceNew: true,
				ValidateFunc: keywordValidator(func(s string) error { _, err := registry.ParseGitSubdir(s); return err }),
				// Trove stores the directory as ParseGitSubdir writes it
				// ("modules/net/" as "modules/net", "." as the root).
				DiffSuppressFunc: func(_, old, new string, _ *schema.ResourceData) bool {
					a, errA := registry.ParseGitSubdir(old)
					b, errB := registry.ParseGitSubdir(new)
					return errA == nil && errB == nil && a == b
				},
				Description: "The module's directory in the repository (default: its root), e.g. `modules/network`.",
			},
			"tag_prefix": {
				Type: schema.TypeString, Optional: true, ForceNew: true,
				ValidateFunc: keywordValidator(registry.CheckGitTagPrefix),
				Description:  "Take only tags starting with this prefix, e.g. `network/` for `network/v1.2.0`.",
			},
			"username": {
				Type: schema.TypeString, Optional: true, ForceNew: true,
				Description: "Basic-auth user name for an https repository (with `password`).",
			},
			"password": {
				Type: schema.TypeString, Optional: true, ForceNew: true, Sensitive: true,
				ConflictsWith: []string{"ssh_private_key"}, RequiredWith: []string{"username"},
				Description: "Password or access token for an https repository. Write-only: Trove never returns it.",
			},
			"ssh_private_key": {
				Type: schema.TypeString, Optional: true, ForceNew: true, Sensitive: true,
				RequiredWith: []string{"known_hosts"},
				Description:  "SSH private key (OpenSSH or PEM) for an ssh repository. Write-only: Trove never returns it.",
			},
			"known_hosts": {
				Type: schema.TypeString, Optional: true, ForceNew: true,
				Description: "known_hosts lines of the SSH server (required with `ssh_private_key`); its host key is checked strictly.",
			},
			"poll_interval_seconds": {
				Type: schema.TypeInt, Optional: true, ForceNew: true, Default: 0,
				ValidateFunc: validation.Any(validation.IntInSlice([]int{-1, 0}), validation.IntAtLeast(int(registry.MinGitPollInterval.Seconds()))),
				Description:  "How often Trove polls the repository: 0 (the default) the server's `--git-poll-interval`, -1 never (webhooks only), else at least 60.",
			},
			"auth": {
				Type: schema.TypeString, Computed: true,
				Description: "How Trove authenticates: `none`, `basic` or `ssh`.",
			},
			"webhook_url": {
				Type: schema.TypeString, Computed: true,
				Description: "URL of the push webhook to add to the repository (GitHub, Gitea, GitLab).",
			},
			"webhook_secret": {
				Type: schema.TypeString, Computed: true, Sensitive: true,
				Description: "Secret of the push webhook (GitHub: the webhook secret; GitLab: the secret token). Known only to the state of the source's creation: empty after an import.",
			},
		},
	}
}

func gitSourceID(ns, name, system string) string { return ns + "/" + name + "/" + system }

func parseGitSourceID(id string) (ns, name, system string, err error) {
	parts := strings.Split(id, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", "", fmt.Errorf("invalid git source ID %q: want <namespace>/<name>/<system>, e.g. acme/network/aws", id)
	}
	return strings.ToLower(parts[0]), strings.ToLower(parts[1]), parts[2], nil
}

func gitSourceCreate(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	ns, name, system := d.Get("namespace").(string), d.Get("name").(string), d.Get("system").(string)
	req := apispec.CreateGitSourceRequest{
		URL: d.Get("url").(string), Subdir: d.Get("subdir").(string), TagPrefix: d.Get("tag_prefix").(string),
		Username: d.Get("username").(string), Password: d.Get("password").(string),
		SSHPrivateKey: d.Get("ssh_private_key").(string), KnownHosts: d.Get("known_hosts").(string),
		PollIntervalSeconds: int64(d.Get("poll_interval_seconds").(int)),
	}
	switch {
	case req.Password != "":
		req.Auth = registry.GitAuthBasic
	case req.SSHPrivateKey != "":
		req.Auth = registry.GitAuthSSH
	}
	created, err := c.CreateGitSource(ctx, ns, name, system, req)
	if err != nil {
		return apiError("creating the git source of module "+gitSourceID(ns, name, system), err)
	}
	d.SetId(gitSourceID(created.Namespace, created.Name, created.System))
	if err := d.Set("webhook_secret", created.WebhookSecret); err != nil {
		return diag.FromErr(err)
	}
	return gitSourceRead(ctx, d, meta)
}

func gitSourceRead(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	ns, name, system, err := parseGitSourceID(d.Id())
	if err != nil {
		return diag.FromErr(err)
	}
	g, err := c.GetGitSource(ctx, ns, name, system)
	if client.IsNotFound(err) && !d.IsNewResource() {
		d.SetId("")
		return nil
	}
	if err != nil {
		return apiError("reading the git source of module "+d.Id(), err)
	}
	return setAll(d, map[string]any{
		"namespace": g.Namespace, "name": g.Name, "system": g.System, "url": g.URL, "subdir": g.Subdir,
		"tag_prefix": g.TagPrefix, "username": g.Username, "known_hosts": g.KnownHosts,
		"poll_interval_seconds": int(g.PollIntervalSeconds), "auth": g.Auth, "webhook_url": g.WebhookURL,
	})
}

func gitSourceDelete(ctx context.Context, d *schema.ResourceData, meta any) diag.Diagnostics {
	c := meta.(*client.Client)
	ns, name, system, err := parseGitSourceID(d.Id())
	if err != nil {
		return diag.FromErr(err)
	}
	if err := c.DeleteGitSource(ctx, ns, name, system); err != nil && !client.IsNotFound(err) {
		return apiError("deleting the git source of module "+d.Id(), err)
	}
	return nil
}
