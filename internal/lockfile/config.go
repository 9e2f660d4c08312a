package lockfile

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	tfaddr "github.com/hashicorp/terraform-registry-address"
	"github.com/zclconf/go-cty/cty"

	"trove.dev/trove/internal/registry"
)

// Requirements reads the providers the Terraform configuration in dir
// (its *.tf files) requires: each terraform { required_providers { ... } }
// entry, in either form (name = { source = "...", version = "..." } or
// the legacy name = "constraint"), with registry.terraform.io/hashicorp/
// <name> for one without a source, as Terraform reads it. Constraints of
// a provider required in several files are joined.
func Requirements(dir string) ([]Requirement, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, registry.Errorf(registry.Invalid, "%s holds no .tf file: run trove lock in the directory of a Terraform configuration, or name providers with --provider", dir)
	}
	slices.Sort(files)
	parser := hclparse.NewParser()
	var (
		order       []string
		constraints = map[string][]string{}
		sources     = map[string]tfaddr.Provider{}
	)
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		f, diags := parser.ParseHCL(src, name)
		if diags.HasErrors() {
			return nil, registry.Errorf(registry.Invalid, "%s", diags.Error())
		}
		content, _, diags := f.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "terraform"}}})
		if diags.HasErrors() {
			return nil, registry.Errorf(registry.Invalid, "%s", diags.Error())
		}
		for _, tb := range content.Blocks {
			inner, _, diags := tb.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "required_providers"}}})
			if diags.HasErrors() {
				return nil, registry.Errorf(registry.Invalid, "%s", diags.Error())
			}
			for _, rp := range inner.Blocks {
				attrs, diags := rp.Body.JustAttributes()
				if diags.HasErrors() {
					return nil, registry.Errorf(registry.Invalid, "%s", diags.Error())
				}
				names := make([]string, 0, len(attrs))
				for n := range attrs {
					names = append(names, n)
				}
				slices.Sort(names)
				for _, local := range names {
					source, constraint, err := requirement(local, attrs[local])
					if err != nil {
						return nil, err
					}
					key := source.String()
					if _, ok := sources[key]; !ok {
						order = append(order, key)
						sources[key] = source
					}
					if constraint != "" && !slices.Contains(constraints[key], constraint) {
						constraints[key] = append(constraints[key], constraint)
					}
				}
			}
		}
	}
	if len(order) == 0 {
		return nil, registry.Errorf(registry.Invalid, "the configuration in %s requires no provider (no terraform { required_providers { ... } } block)", dir)
	}
	reqs := make([]Requirement, 0, len(order))
	for _, key := range order {
		reqs = append(reqs, Requirement{Source: sources[key], Constraints: strings.Join(constraints[key], ", ")})
	}
	return reqs, nil
}

// requirement reads one required_providers entry.
func requirement(local string, attr *hcl.Attribute) (tfaddr.Provider, string, error) {
	v, diags := attr.Expr.Value(nil)
	if diags.HasErrors() {
		return tfaddr.Provider{}, "", registry.Errorf(registry.Invalid, "%s", diags.Error())
	}
	where := attr.Range.String()
	source, constraint := "hashicorp/"+local, ""
	switch {
	case v.Type() == cty.String && v.IsKnown() && !v.IsNull():
		constraint = v.AsString()
	case v.Type().IsObjectType() && v.IsKnown() && !v.IsNull():
		if v.Type().HasAttribute("source") {
			s := v.GetAttr("source")
			if s.Type() != cty.String || s.IsNull() {
				return tfaddr.Provider{}, "", registry.Errorf(registry.Invalid, "%s: source of %s must be a string", where, local)
			}
			source = s.AsString()
		}
		if v.Type().HasAttribute("version") {
			c := v.GetAttr("version")
			if c.Type() != cty.String || c.IsNull() {
				return tfaddr.Provider{}, "", registry.Errorf(registry.Invalid, "%s: version of %s must be a string", where, local)
			}
			constraint = c.AsString()
		}
	default:
		return tfaddr.Provider{}, "", registry.Errorf(registry.Invalid, "%s: %s must be an object with source and version", where, local)
	}
	req, err := ParseRequirement(source, constraint)
	if err != nil {
		return tfaddr.Provider{}, "", registry.Errorf(registry.Invalid, "%s: %s", where, registry.Message(err))
	}
	return req.Source, req.Constraints, nil
}
