package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"trove.dev/trove/apispec"
)

func providerList() *command {
	return &command{
		name: "provider list", args: "NAMESPACE", minArgs: 1, maxArgs: 1, client: true,
		summary:  "List the providers of a namespace.",
		examples: []string{"trove provider list acme"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				providers, err := c.ListProviders(ctx, args[0])
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(apispec.ProviderList{Providers: nonNil(providers)})
				}
				if len(providers) == 0 {
					fmt.Fprintf(cl.stdout, "Namespace %s has no providers yet; publish one with: trove publish --namespace %s DIR\n", args[0], args[0])
					return nil
				}
				rows := make([]string, 0, len(providers))
				for _, p := range providers {
					rows = append(rows, row(p.Namespace+"/"+p.Type, p.LatestVersion, fmt.Sprint(p.VersionCount), when(p.UpdatedAt)))
				}
				return table(cl.stdout, "PROVIDER\tLATEST\tVERSIONS\tUPDATED", rows)
			}
		},
	}
}

func providerShow() *command {
	return &command{
		name: "provider show", args: "NAMESPACE/TYPE [VERSION]", minArgs: 1, maxArgs: 2, client: true,
		summary: "Show a provider's versions, or one version with its packages.",
		examples: []string{
			"trove provider show acme/foo",
			"trove provider show acme/foo 1.2.0",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				ns, typ, ok := strings.Cut(args[0], "/")
				if !ok || ns == "" || typ == "" || strings.Contains(typ, "/") {
					return usagef("want NAMESPACE/TYPE, e.g. acme/foo, got %q", args[0])
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				if len(args) == 2 {
					v, err := c.GetProviderVersion(ctx, ns, typ, args[1])
					if err != nil {
						return err
					}
					if cl.jsonOut {
						return cl.printJSON(v)
					}
					return printVersion(cl, v)
				}
				p, err := c.GetProvider(ctx, ns, typ)
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(p)
				}
				rows := make([]string, 0, len(p.Versions))
				for _, v := range p.Versions {
					rows = append(rows, row(versionLabel(v.Version, v.Deprecation, v.Revocation), strings.Join(v.Protocols, ","), strings.Join(platformNames(v.Platforms), ", "), when(v.PublishedAt)))
				}
				fmt.Fprintf(cl.stdout, "%s/%s\n\n", p.Namespace, p.Type)
				return table(cl.stdout, "VERSION\tPROTOCOLS\tPLATFORMS\tPUBLISHED", rows)
			}
		},
	}
}

func printVersion(cl *cli, v apispec.ProviderVersion) error {
	docs := "none (trove provider docs upload)"
	if v.DocsDigest != "" {
		docs = size(v.DocsSize) + ", sha256 " + v.DocsDigest
	}
	err := table(cl.stdout, "Provider:\t"+cell(v.Namespace+"/"+v.Type), append([]string{
		"Version:\t" + cell(v.Version),
		"Protocols:\t" + cell(strings.Join(v.Protocols, ", ")),
		"Signed by key:\t" + cell(v.KeyID),
		"SHA256SUMS digest:\t" + cell(v.SHASumsDigest),
		"Documentation:\t" + cell(docs),
		"Published:\t" + cell(when(v.PublishedAt)),
	}, lifecycleRows(v.Deprecation, v.Revocation)...))
	if err != nil {
		return err
	}
	fmt.Fprintln(cl.stdout)
	rows := make([]string, 0, len(v.Platforms))
	for _, p := range v.Platforms {
		rows = append(rows, row(p.OS+"_"+p.Arch, size(p.Size), p.SHASum, p.Filename))
	}
	return table(cl.stdout, "PLATFORM\tSIZE\tSHA256\tFILE", rows)
}

// platformNames returns "os_arch" for each platform.
func platformNames(ps []apispec.Platform) []string {
	names := make([]string, 0, len(ps))
	for _, p := range ps {
		names = append(names, p.OS+"_"+p.Arch)
	}
	return names
}
