package provider_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

// lifecycleSet reports whether the state a lifecycle resource of typ with
// id manages is set on its version in Trove.
func (e *accEnv) lifecycleSet(ctx context.Context, typ, id string) (bool, error) {
	parts := strings.Split(id, "/")
	var dep *apispec.Deprecation
	var rev *apispec.Revocation
	if strings.HasPrefix(typ, "trove_module_") {
		if len(parts) != 4 {
			return false, fmt.Errorf("module version ID %q", id)
		}
		v, err := e.api.GetModuleVersion(ctx, parts[0], parts[1], parts[2], parts[3])
		if err != nil {
			return false, err
		}
		dep, rev = v.Deprecation, v.Revocation
	} else {
		if len(parts) != 3 {
			return false, fmt.Errorf("provider version ID %q", id)
		}
		v, err := e.api.GetProviderVersion(ctx, parts[0], parts[1], parts[2])
		if err != nil {
			return false, err
		}
		dep, rev = v.Deprecation, v.Revocation
	}
	if strings.HasSuffix(typ, "_revocation") {
		return rev != nil, nil
	}
	return dep != nil, nil
}

// publishVersions stores provider acme/cloud and module acme/network/aws
// version 1.0.0 straight in the index (their packages are never fetched).
func (e *accEnv) publishVersions(t *testing.T) {
	t.Helper()
	ctx, now := t.Context(), time.Now()
	if err := e.srv.Index.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Index.CreateProviderVersion(ctx, registry.ProviderVersion{Namespace: "acme", Type: "cloud", Version: "1.0.0",
		Protocols: []string{"5.0"}, SigningKey: registry.SigningKey{Namespace: "acme", KeyID: "0123456789ABCDEF", CreatedAt: now}, PublishedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := e.srv.Index.CreateModuleVersion(ctx, registry.ModuleVersion{Namespace: "acme", Name: "network", System: "aws", Version: "1.0.0",
		ArchiveDigest: e.srv.Blob(t, "a"), ArchiveFormat: "tar.gz", ArchiveSize: 1, PublishedAt: now}); err != nil {
		t.Fatal(err)
	}
}

// checkLifecycle checks through the API the deprecation reason and
// revocation reason of provider acme/cloud 1.0.0 ("" for none).
func (e *accEnv) checkLifecycle(t *testing.T, module bool, deprecation, revocation string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		var dep *apispec.Deprecation
		var rev *apispec.Revocation
		if module {
			v, err := e.api.GetModuleVersion(t.Context(), "acme", "network", "aws", "1.0.0")
			if err != nil {
				return err
			}
			dep, rev = v.Deprecation, v.Revocation
		} else {
			v, err := e.api.GetProviderVersion(t.Context(), "acme", "cloud", "1.0.0")
			if err != nil {
				return err
			}
			dep, rev = v.Deprecation, v.Revocation
		}
		got := [2]string{}
		if dep != nil {
			got[0] = dep.Reason
		}
		if rev != nil {
			got[1] = rev.Reason
		}
		if got != [2]string{deprecation, revocation} {
			return fmt.Errorf("%s version in Trove: deprecation %q, revocation %q; want %q, %q", map[bool]string{false: "provider", true: "module"}[module],
				got[0], got[1], deprecation, revocation)
		}
		return nil
	}
}

func lifecycleConfig(reason, link string) string {
	linkLine := ""
	if link != "" {
		linkLine = fmt.Sprintf("  link      = %q\n", link)
	}
	return fmt.Sprintf(`resource "trove_provider_version_deprecation" "old" {
  namespace = "Acme"
  type      = "cloud"
  version   = "1.0.0"
  reason    = %[1]q
%[2]s}

resource "trove_provider_version_revocation" "old" {
  namespace = "acme"
  type      = "cloud"
  version   = "1.0.0"
  reason    = "broken packages"
}

resource "trove_module_version_deprecation" "old" {
  namespace = "acme"
  name      = "network"
  system    = "aws"
  version   = "1.0.0"
  reason    = %[1]q
%[2]s}

resource "trove_module_version_revocation" "old" {
  namespace = "acme"
  name      = "network"
  system    = "aws"
  version   = "1.0.0"
  reason    = "broken archive"
}
`, reason, linkLine)
}

// TestAccVersionLifecycle deprecates and revokes a provider version and
// a module version as code: created, changed in place, imported, and
// cleared on destroy.
func TestAccVersionLifecycle(t *testing.T) {
	e := newAccEnv(t)
	e.publishVersions(t)
	const dep = "trove_provider_version_deprecation.old"
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config:      e.config(lifecycleConfig("use 2.x", "http://example.com")),
				ExpectError: wrapped("is not an absolute https URL"),
			},
			{
				Config: e.config(lifecycleConfig("use 2.x", "https://example.com/up")),
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkLifecycle(t, false, "use 2.x", "broken packages"),
					e.checkLifecycle(t, true, "use 2.x", "broken archive"),
					resource.TestCheckResourceAttr(dep, "id", "acme/cloud/1.0.0"),
					resource.TestCheckResourceAttr(dep, "namespace", "acme"),
					resource.TestCheckResourceAttr(dep, "link", "https://example.com/up"),
					resource.TestCheckResourceAttrSet(dep, "deprecated_at"),
					resource.TestCheckResourceAttrSet(dep, "deprecated_by"),
					resource.TestCheckResourceAttr("trove_module_version_revocation.old", "id", "acme/network/aws/1.0.0"),
					resource.TestCheckResourceAttrSet("trove_module_version_revocation.old", "revoked_at"),
				),
			},
			{
				// Reason and link change in place.
				Config: e.config(lifecycleConfig("use 3.x", "")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(dep, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkLifecycle(t, false, "use 3.x", "broken packages"),
					e.checkLifecycle(t, true, "use 3.x", "broken archive"),
					resource.TestCheckResourceAttr(dep, "link", ""),
				),
			},
			{ResourceName: dep, ImportState: true, ImportStateVerify: true},
			{ResourceName: "trove_module_version_deprecation.old", ImportState: true, ImportStateVerify: true},
			{
				ResourceName: dep, ImportState: true, ImportStateId: "acme/cloud",
				ExpectError: wrapped(`invalid provider version ID "acme/cloud"`),
			},
		},
	})
}

// TestAccVersionLifecycleDrift clears the deprecation through the API
// between steps: the next apply sets it again.
func TestAccVersionLifecycleDrift(t *testing.T) {
	e := newAccEnv(t)
	e.publishVersions(t)
	cfg := e.config(lifecycleConfig("use 2.x", ""))
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{Config: cfg, Check: e.checkLifecycle(t, false, "use 2.x", "broken packages")},
			{
				PreConfig: func() {
					if _, err := e.api.UndeprecateProviderVersion(t.Context(), "acme", "cloud", "1.0.0"); err != nil {
						t.Fatal(err)
					}
					if _, err := e.api.RestoreModuleVersion(t.Context(), "acme", "network", "aws", "1.0.0"); err != nil {
						t.Fatal(err)
					}
				},
				Config: cfg,
				Check: resource.ComposeAggregateTestCheckFunc(
					e.checkLifecycle(t, false, "use 2.x", "broken packages"),
					e.checkLifecycle(t, true, "use 2.x", "broken archive"),
				),
			},
		},
	})
}
