package provider_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest/testarchive"
)

func TestAccDataSourceNamespace(t *testing.T) {
	e := newAccEnv(t)
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		CheckDestroy:             e.checkDestroyed(t),
		Steps: []resource.TestStep{
			{
				Config: e.configPEM(`data "trove_namespace" "test" {
  name = "missing"
}`),
				ExpectError: wrapped(`namespace "missing" not found`),
			},
			{
				Config: e.configPEM(`resource "trove_namespace" "src" {
  name        = "readme"
  description = "read by a data source"
}

data "trove_namespace" "test" {
  name = upper(trove_namespace.src.name)
}`),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr("data.trove_namespace.test", "id", "readme"),
					resource.TestCheckResourceAttr("data.trove_namespace.test", "description", "read by a data source"),
					resource.TestCheckResourceAttrPair("data.trove_namespace.test", "created_at", "trove_namespace.src", "created_at"),
				),
			},
		},
	})
}

func TestAccDataSourceProvider(t *testing.T) {
	e := newAccEnv(t)
	key := signingtest.NewKey(t, "data")
	ctx := t.Context()
	if _, err := e.api.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: "data"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.api.AddSigningKey(ctx, "data", apispec.AddSigningKeyRequest{ASCIIArmor: key.ArmoredPublic}); err != nil {
		t.Fatal(err)
	}
	// 1.10.0 is newer than 1.2.0 though it sorts before it as text.
	releases := map[string]releasetest.Release{}
	for _, v := range []string{"1.2.0", "1.10.0"} {
		rel := releasetest.Build(t, key, releasetest.Spec{Type: "widget", Version: v, Platforms: []string{"linux_amd64", "darwin_arm64"}})
		var files []client.PublishFile
		for _, f := range rel.Files {
			files = append(files, client.PublishFile{Name: f.Name, Open: f.Open})
		}
		if _, err := e.api.PublishProvider(ctx, "data", "widget", v, files); err != nil {
			t.Fatalf("publishing %s: %v", v, err)
		}
		releases[v] = rel
	}

	const addr = "data.trove_provider.test"
	// The failing steps come first: the test ends with a destroy of the
	// last step's configuration, which must be valid.
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		Steps: []resource.TestStep{
			{
				Config: e.config(`data "trove_provider" "test" {
  namespace = "data"
  type      = "nothing"
}`),
				ExpectError: wrapped("provider data/nothing has no versions"),
			},
			{
				Config: e.config(`data "trove_provider" "test" {
  namespace = "data"
  type      = "terraform-provider-widget"
}`),
				ExpectError: wrapped("invalid provider type"),
			},
			{
				Config: e.config(`data "trove_provider" "test" {
  namespace = "data"
  type      = "widget"
}`),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "data/widget"),
					resource.TestCheckResourceAttr(addr, "latest_version", "1.10.0"),
					resource.TestCheckResourceAttr(addr, "versions.#", "2"),
					resource.TestCheckResourceAttr(addr, "versions.0.version", "1.10.0"),
					resource.TestCheckResourceAttr(addr, "versions.1.version", "1.2.0"),
					resource.TestCheckResourceAttr(addr, "versions.0.key_id", key.KeyID),
					resource.TestCheckResourceAttr(addr, "versions.0.protocols.#", "1"),
					resource.TestCheckResourceAttr(addr, "versions.0.protocols.0", "5.0"),
					resource.TestCheckResourceAttrSet(addr, "versions.0.published_at"),
					resource.TestCheckResourceAttr(addr, "versions.0.platforms.#", "2"),
					resource.TestCheckTypeSetElemNestedAttrs(addr, "versions.0.platforms.*", map[string]string{
						"os":       "linux",
						"arch":     "amd64",
						"filename": "terraform-provider-widget_1.10.0_linux_amd64.zip",
						"shasum":   releases["1.10.0"].SHA256("terraform-provider-widget_1.10.0_linux_amd64.zip"),
					}),
					resource.TestCheckTypeSetElemNestedAttrs(addr, "versions.1.platforms.*", map[string]string{
						"os":     "darwin",
						"arch":   "arm64",
						"shasum": releases["1.2.0"].SHA256("terraform-provider-widget_1.2.0_darwin_arm64.zip"),
					}),
				),
			},
		},
	})
}

func TestAccDataSourceModule(t *testing.T) {
	e := newAccEnv(t)
	ctx := t.Context()
	if _, err := e.api.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: "mods"}); err != nil {
		t.Fatal(err)
	}
	digests := map[string]string{}
	for _, v := range []string{"0.9.0", "1.0.0-rc.1", "1.0.0"} {
		archive := testarchive.Zip(t, map[string]string{
			"main.tf":   `variable "cidr" {}` + "\n",
			"README.md": "# Network\n\nA network of version " + v + ".\n",
		})
		res, err := e.api.PublishModule(ctx, client.ModuleUpload{
			Namespace: "mods", Name: "network", System: "aws", Version: v,
			Archive: bytes.NewReader(archive), ContentType: apispec.ModuleArchiveZip, Origin: "tag v" + v,
		})
		if err != nil {
			t.Fatalf("publishing module version %s: %v", v, err)
		}
		sum := sha256.Sum256(archive)
		digests[v] = hex.EncodeToString(sum[:])
		if res.Version.ArchiveDigest != digests[v] {
			t.Fatalf("published %s has digest %s, want %s", v, res.Version.ArchiveDigest, digests[v])
		}
	}

	const addr = "data.trove_module.test"
	resource.Test(t, resource.TestCase{
		ProtoV5ProviderFactories: factories(),
		Steps: []resource.TestStep{
			{
				Config: e.config(`data "trove_module" "test" {
  namespace = "mods"
  name      = "compute"
  system    = "aws"
}`),
				ExpectError: wrapped("module mods/compute/aws has no versions"),
			},
			{
				Config: e.config(`data "trove_module" "test" {
  namespace = "mods"
  name      = "network"
  system    = "AWS"
}`),
				ExpectError: wrapped("invalid module system"),
			},
			{
				Config: e.config(`data "trove_module" "test" {
  namespace = "mods"
  name      = "Network"
  system    = "aws"
}`),
				Check: resource.ComposeAggregateTestCheckFunc(
					resource.TestCheckResourceAttr(addr, "id", "mods/network/aws"),
					resource.TestCheckResourceAttr(addr, "latest_version", "1.0.0"),
					resource.TestCheckResourceAttr(addr, "versions.#", "3"),
					resource.TestCheckResourceAttr(addr, "versions.0.version", "1.0.0"),
					resource.TestCheckResourceAttr(addr, "versions.1.version", "1.0.0-rc.1"),
					resource.TestCheckResourceAttr(addr, "versions.2.version", "0.9.0"),
					resource.TestCheckResourceAttr(addr, "versions.0.archive_format", "zip"),
					resource.TestCheckResourceAttr(addr, "versions.0.archive_sha256", digests["1.0.0"]),
					resource.TestCheckResourceAttr(addr, "versions.0.origin", "tag v1.0.0"),
					resource.TestCheckResourceAttrSet(addr, "versions.0.archive_size"),
					resource.TestCheckResourceAttrSet(addr, "versions.0.published_at"),
				),
			},
		},
	})
}
