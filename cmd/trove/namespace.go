package main

import (
	"context"
	"flag"
	"fmt"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

func namespaceCreate() *command {
	return &command{
		name: "namespace create", args: "NAME [--description TEXT] [--visibility private|public]", minArgs: 1, maxArgs: 1, client: true,
		summary: "Create a namespace, private unless --visibility public (needs a global admin token).",
		examples: []string{
			`trove namespace create acme --description "ACME platform team"`,
			`trove namespace create community --visibility public`,
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			description, _ := textFlag(fs, "description", "`text` saying what the namespace is for", registry.DescriptionLimit)
			var visibility string
			fs.Func("visibility", "who may read the namespace: private (tokens allowed to read it; the default) or public (anyone, without credentials)", func(v string) error {
				visibility = v
				return checkKeyword(registry.ParseVisibility, v)
			})
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				ns, err := c.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: args[0], Description: *description, Visibility: visibility})
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(ns)
				}
				fmt.Fprintf(cl.stdout, "Created namespace %s\n", ns.Name)
				switch ns.Visibility {
				case "public":
					fmt.Fprintln(cl.stdout, "It is public: anyone who can reach this registry can read and install from it.")
				case "private":
					fmt.Fprintln(cl.stdout, "It is private: only tokens allowed to read it can install from it (trove member add, trove token create).")
				}
				return nil
			}
		},
	}
}

func namespaceList() *command {
	return &command{
		name: "namespace list", args: "", client: true,
		summary:  "List the namespaces the token can read.",
		examples: []string{"trove namespace list", "trove namespace list --json"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				list, err := c.ListNamespaces(ctx)
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(apispec.NamespaceList{Namespaces: nonNil(list)})
				}
				if len(list) == 0 {
					fmt.Fprintln(cl.stdout, "No namespaces.")
					return nil
				}
				rows := make([]string, 0, len(list))
				for _, ns := range list {
					rows = append(rows, row(ns.Name, ns.Visibility, ns.Description, when(ns.CreatedAt)))
				}
				return table(cl.stdout, "NAME\tVISIBILITY\tDESCRIPTION\tCREATED", rows)
			}
		},
	}
}

func namespaceShow() *command {
	return &command{
		name: "namespace show", args: "NAME", minArgs: 1, maxArgs: 1, client: true,
		summary:  "Show a namespace.",
		examples: []string{"trove namespace show acme"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				ns, err := c.GetNamespace(ctx, args[0])
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(ns)
				}
				return table(cl.stdout, "Name:\t"+cell(ns.Name), []string{
					"Visibility:\t" + cell(ns.Visibility),
					"Description:\t" + cell(ns.Description),
					"Created:\t" + cell(when(ns.CreatedAt)),
				})
			}
		},
	}
}

func namespaceDelete() *command {
	return &command{
		name: "namespace delete", args: "NAME", minArgs: 1, maxArgs: 1, client: true,
		summary:  "Delete an empty namespace with its signing keys and tokens (needs a global admin token).",
		examples: []string{"trove namespace delete acme"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				if err := c.DeleteNamespace(ctx, args[0]); err != nil {
					return err
				}
				if !cl.jsonOut {
					fmt.Fprintf(cl.stdout, "Deleted namespace %s\n", args[0])
				}
				return nil
			}
		},
	}
}

// nonNil returns s, or an empty slice for nil, so that JSON shows [].
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func namespaceUpdate() *command {
	return &command{
		name: "namespace update", args: "NAME [--visibility private|public] [--description TEXT]", minArgs: 1, maxArgs: 1, client: true,
		summary: "Change a namespace's visibility or description (needs admin on the namespace).",
		examples: []string{
			"trove namespace update acme --visibility public",
			`trove namespace update acme --description "ACME platform team"`,
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			var req apispec.UpdateNamespaceRequest
			fs.Func("visibility", "new `visibility`: private or public", func(v string) error {
				req.Visibility = &v
				return checkKeyword(registry.ParseVisibility, v)
			})
			description, descriptionSet := textFlag(fs, "description", "new description `text`", registry.DescriptionLimit)
			return func(ctx context.Context, args []string) error {
				if *descriptionSet {
					req.Description = description
				}
				if req.Visibility == nil && req.Description == nil {
					return usagef("nothing to change: pass --visibility or --description")
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				ns, err := c.UpdateNamespace(ctx, args[0], req)
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(ns)
				}
				fmt.Fprintf(cl.stdout, "Updated namespace %s (%s)\n", ns.Name, ns.Visibility)
				return nil
			}
		},
	}
}
