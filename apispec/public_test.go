package apispec_test

import (
	"go/types"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// TestPublicPackagesExposeNoInternalTypes: every exported name of the
// public packages (client, apispec) can be used from outside the module:
// no exported function, method, field, variable, constant or type
// mentions a type of an internal package (Go forbids importing it, so
// such a name could not be used).
func TestPublicPackagesExposeNoInternalTypes(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the packages' types")
	}
	pkgs, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedTypes | packages.NeedImports | packages.NeedDeps},
		"trove.dev/trove/apispec", "trove.dev/trove/client")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 2 {
		t.Fatalf("loaded %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Fatalf("%s: %v", p.PkgPath, e)
		}
		for _, bad := range internalMentions(p.Types) {
			t.Errorf("%s", bad)
		}
	}
}

// internalMentions lists the exported names of pkg that mention a type
// of an internal package, with the type.
func internalMentions(pkg *types.Package) []string {
	var out []string
	check := func(name string, typ types.Type) {
		seen := map[types.Type]bool{}
		if n := internalIn(typ, seen); n != "" {
			out = append(out, pkg.Path()+"."+name+" mentions "+n)
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.TypeName:
			named, _ := o.Type().(*types.Named)
			if o.IsAlias() || named == nil {
				check(name, o.Type())
				continue
			}
			check(name, exportedPart(named.Underlying()))
			for m := range named.Methods() {
				if m.Exported() {
					check(name+"."+m.Name(), m.Type())
				}
			}
			// Methods promoted from embedded fields count too.
			ms := types.NewMethodSet(types.NewPointer(named))
			for sel := range ms.Methods() {
				if m := sel.Obj(); m.Exported() && m.Pkg() != pkg {
					check(name+"."+m.Name(), m.Type())
				}
			}
		default:
			check(name, obj.Type())
		}
	}
	return out
}

// exportedPart is t with the unexported fields of a struct left out:
// they are no part of the API.
func exportedPart(t types.Type) types.Type {
	s, ok := t.(*types.Struct)
	if !ok {
		return t
	}
	var fields []*types.Var
	for f := range s.Fields() {
		if f.Exported() || f.Embedded() {
			fields = append(fields, f)
		}
	}
	return types.NewStruct(fields, nil)
}

// internalIn returns the first named type of an internal package that t
// mentions (in its structure, exported fields and signatures), or "".
func internalIn(t types.Type, seen map[types.Type]bool) string {
	if seen[t] {
		return ""
	}
	seen[t] = true
	switch t := t.(type) {
	case *types.Named:
		if obj := t.Obj(); obj.Pkg() != nil && isInternal(obj.Pkg().Path()) {
			return obj.Pkg().Path() + "." + obj.Name()
		}
		for a := range t.TypeArgs().Types() {
			if n := internalIn(a, seen); n != "" {
				return n
			}
		}
		// A public named type's own structure is checked where it is
		// declared.
		return ""
	case *types.Alias:
		return internalIn(types.Unalias(t), seen)
	case *types.Pointer:
		return internalIn(t.Elem(), seen)
	case *types.Slice:
		return internalIn(t.Elem(), seen)
	case *types.Array:
		return internalIn(t.Elem(), seen)
	case *types.Map:
		if n := internalIn(t.Key(), seen); n != "" {
			return n
		}
		return internalIn(t.Elem(), seen)
	case *types.Chan:
		return internalIn(t.Elem(), seen)
	case *types.Signature:
		for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
			for v := range tup.Variables() {
				if n := internalIn(v.Type(), seen); n != "" {
					return n
				}
			}
		}
	case *types.Struct:
		for f := range t.Fields() {
			if !f.Exported() && !f.Embedded() {
				continue
			}
			if n := internalIn(f.Type(), seen); n != "" {
				return n
			}
		}
	case *types.Interface:
		for m := range t.Methods() {
			if n := internalIn(m.Type(), seen); n != "" {
				return n
			}
		}
		for e := range t.EmbeddedTypes() {
			if n := internalIn(e, seen); n != "" {
				return n
			}
		}
	}
	return ""
}

// isInternal reports whether path is an internal package (a path
// element "internal").
func isInternal(path string) bool {
	return path == "internal" || strings.HasPrefix(path, "internal/") || strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal")
}

// TestInternalMentionsFound: the check finds what it looks for.
func TestInternalMentionsFound(t *testing.T) {
	internal := types.NewPackage("trove.dev/trove/internal/registry", "registry")
	rule := types.NewNamed(types.NewTypeName(0, internal, "RetentionRule", nil), types.NewStruct(nil, nil), nil)
	pub := types.NewPackage("trove.dev/trove/apispec", "apispec")
	req := types.NewNamed(types.NewTypeName(0, pub, "Request", nil), types.NewStruct(nil, nil), nil)
	sig := types.NewSignatureType(types.NewVar(0, pub, "r", req), nil, nil, nil,
		types.NewTuple(types.NewVar(0, pub, "", types.NewSlice(rule))), false)
	req.AddMethod(types.NewFunc(0, pub, "Rule", sig))
	pub.Scope().Insert(req.Obj())
	field := types.NewField(0, pub, "Rules", types.NewMap(types.Typ[types.String], types.NewPointer(rule)), false)
	hidden := types.NewField(0, pub, "rules", rule, false)
	pub.Scope().Insert(types.NewTypeName(0, pub, "Holder", types.NewStruct([]*types.Var{field, hidden}, nil)))
	got := internalMentions(pub)
	want := []string{
		"trove.dev/trove/apispec.Holder mentions trove.dev/trove/internal/registry.RetentionRule",
		"trove.dev/trove/apispec.Request.Rule mentions trove.dev/trove/internal/registry.RetentionRule",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
