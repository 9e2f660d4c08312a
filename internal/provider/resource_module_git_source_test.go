package provider_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"trove.dev/trove/apispec"
	gst "trove.dev/trove/internal/gitsource/gitsourcetest"
	"trove.dev/trove/internal/trovetest"
)

const gitSourceAddr = "trove_module_git_source.test"

func gitSourceConfig(url, extra string) string {
	return fmt.Sprintf(`resource "trove_module_git_source" "test" {
  namespace = "acme"
  name      = "net"
  system    = "aws"
  url       = %q
%s
}`, url, extra)
}

func TestAccModuleGitSource(t *testing.T) {
	e := newAccEnv(t, trovetest.Options{GitServers: true})
	// The namespace is made outside Terraform: it keeps the published
	// versions after the destroy.
	if _, err := e.api.CreateNamespace(t.Context(), apispec.CreateNamespaceRequest{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	repo := gst.NewRepo(t, root, "net", map[string]string{"main.tf": "variable \"x\" {}\n"})
	gst.Git(t, repo, "tag", "v1.0.0")
	base := gst.HTTP(t, root, "ci", "tok3n")
	synced := func(s *terraform.State) error {
		rs, ok := s.RootModule().Resources[gitSourceAddr]
		if !ok {
			return fmt.Errorf("%s is not in the state", gitSourceAddr)
		}
		if !strings.HasPrefix(rs.Primary.Attributes["webhook_secret"], "gitsec_") || !strings.HasSuffix(rs.Primary.Attributes["webhook_url"], "/api/v1/git-hooks/acme/net/aws") {
			return fmt.Errorf("webhook attributes %v", rs.Primary.Attributes)
		}
		res, err := e.api.SyncGitSource(t.Context(), "acme", "net", "aws")
		if err != nil {
			return err
		}
		if !slices.Contains(res.Published, "1.0.0") && res.Current != 1 {
			return fmt.Errorf("sync %+v: version 1.0.0 not published", res)
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{Config: e.config(gitSourceConfig("file:///etc", "")), ExpectError: wrapped(`scheme file is not allowed`)},
			{Config: e.config(gitSourceConfig("ext::sh", "")), ExpectError: wrapped(`transport::address`)},
			{Config: e.config(gitSourceConfig(base+"net", `  subdir = "../x"`)), ExpectError: wrapped(`may not contain`)},
			{
				Config: e.config(gitSourceConfig(base+"net", "  username = \"ci\"\n  password = \"tok3n\"\n  poll_interval_seconds = -1")),
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr(gitSourceAddr, "auth", "basic"),
					resource.TestCheckResourceAttr(gitSourceAddr, "id", "acme/net/aws"),
					synced,
				),
			},
			{
				ResourceName: gitSourceAddr, ImportState: true, ImportStateVerify: true,
				ImportStateVerifyIgnore: []string{"password", "webhook_secret"},
			},
			{
				// "." and "./" are the root as Trove stores it (""): no
				// change, where a replacement would come back on every plan.
				Config:   e.config(gitSourceConfig(base+"net", "  username = \"ci\"\n  password = \"tok3n\"\n  poll_interval_seconds = -1\n  subdir = \"./\"")),
				PlanOnly: true,
			},
		},
	})
}
