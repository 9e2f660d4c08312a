package lockfile

import (
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclwrite"
	tfaddr "github.com/hashicorp/terraform-registry-address"
	"github.com/zclconf/go-cty/cty"

	"trove.dev/trove/internal/registry"
)

// Update returns the lock file src (filename names it in errors) with
// entries written into it: the block of each entry's provider gets the
// entry's version and constraints, and its hashes, joined with those the
// block has when the version is the same (a lock file only ever gains
// platforms of a version it pins); a provider without a block gets one at
// the end. Every other block, attribute and comment is kept as it is.
// Invalid when src is not a lock file Parse reads.
func Update(src []byte, filename string, entries []Entry) ([]byte, error) {
	if _, err := Parse(src, filename); err != nil {
		return nil, err
	}
	f, diags := hclwrite.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, registry.Errorf(registry.Invalid, "%s", diags.Error())
	}
	old, _ := Parse(src, filename)
	pinned := map[string]Entry{}
	for _, e := range old {
		pinned[e.Source.String()] = e
	}
	body := f.Body()
	blocks := map[string]*hclwrite.Block{}
	for _, b := range body.Blocks() {
		if b.Type() != "provider" || len(b.Labels()) != 1 {
			continue
		}
		if p, err := tfaddr.ParseProviderSource(b.Labels()[0]); err == nil {
			blocks[p.String()] = b
		}
	}
	for _, e := range entries {
		key := e.Source.String()
		hashes := slices.Clone(e.Hashes)
		if prev, ok := pinned[key]; ok && prev.Version == e.Version {
			hashes = append(hashes, prev.Hashes...)
		}
		slices.Sort(hashes)
		hashes = slices.Compact(hashes)
		b := blocks[key]
		if b == nil {
			if len(body.Blocks()) > 0 || len(strings.TrimSpace(string(src))) > 0 {
				body.AppendNewline()
			}
			b = body.AppendNewBlock("provider", []string{key})
		}
		bb := b.Body()
		bb.SetAttributeValue("version", cty.StringVal(e.Version))
		if e.Constraints != "" {
			bb.SetAttributeValue("constraints", cty.StringVal(e.Constraints))
		} else {
			bb.RemoveAttribute("constraints")
		}
		bb.SetAttributeRaw("hashes", hashesTokens(hashes))
	}
	return hclwrite.Format(f.Bytes()), nil
}
