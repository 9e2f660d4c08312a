package lockfile

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclparse"
	tfaddr "github.com/hashicorp/terraform-registry-address"

	"trove.dev/trove/internal/registry"
)

// Parse reads a dependency lock file (filename names it in errors): one
// Entry per provider "host/namespace/type" { version = "..." } block,
// in the file's order, with its constraints and hashes when it has them.
// Other blocks (Terraform's lock files have none yet) are ignored. An
// entry whose address or version does not parse, or a provider named
// twice, is Invalid, as terraform init refuses it.
func Parse(src []byte, filename string) ([]Entry, error) {
	f, diags := hclparse.NewParser().ParseHCL(src, filename)
	if diags.HasErrors() {
		return nil, registry.Errorf(registry.Invalid, "%s", diags.Error())
	}
	content, _, diags := f.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "provider", LabelNames: []string{"source"}}}})
	if diags.HasErrors() {
		return nil, registry.Errorf(registry.Invalid, "%s", diags.Error())
	}
	var entries []Entry
	seen := map[string]bool{}
	for _, b := range content.Blocks {
		where := b.DefRange.String()
		p, err := tfaddr.ParseProviderSource(b.Labels[0])
		if err != nil {
			return nil, registry.Errorf(registry.Invalid, "%s: provider address %q: %v", where, registry.Elide(b.Labels[0]), err)
		}
		if seen[p.String()] {
			return nil, registry.Errorf(registry.Invalid, "%s: provider %s is locked twice", where, p)
		}
		seen[p.String()] = true
		var body struct {
			Version     string   `hcl:"version"`
			Constraints string   `hcl:"constraints,optional"`
			Hashes      []string `hcl:"hashes,optional"`
			Remain      hcl.Body `hcl:",remain"`
		}
		if diags := gohcl.DecodeBody(b.Body, nil, &body); diags.HasErrors() {
			return nil, registry.Errorf(registry.Invalid, "%s", diags.Error())
		}
		if _, err := registry.ParseVersion(body.Version); err != nil {
			return nil, registry.Errorf(registry.Invalid, "%s: provider %s: version %q: %s", where, p, registry.Elide(body.Version), registry.Message(err))
		}
		entries = append(entries, Entry{Source: p, Version: body.Version, Constraints: body.Constraints, Hashes: body.Hashes})
	}
	return entries, nil
}
