package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/lockfile"
)

func lockCommand() *command {
	return &command{
		name: "lock", args: "[DIR] [--platform OS_ARCH ...] [--provider SOURCE[=CONSTRAINT] ...] [--output FILE]", maxArgs: 1, client: true,
		summary: "Write the .terraform.lock.hcl of a configuration with the hashes of every platform, from this registry and its mirror.",
		examples: []string{
			"trove lock",
			"trove lock infra/prod --platform linux_amd64 --platform darwin_arm64",
			"trove lock --provider 'hashicorp/aws=~> 5.0' --provider trove.example.com/acme/widget --output -",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			var platforms []string
			fs.Func("platform", "`os_arch` whose package hashes the lock file holds (repeat it; default: every platform of each version)", func(v string) error {
				platforms = append(platforms, v)
				return nil
			})
			var providers []apispec.LockProvider
			fs.Func("provider", "`source[=constraint]` to lock instead of reading the configuration (repeat it)", func(v string) error {
				source, constraint, _ := strings.Cut(v, "=")
				if _, err := lockfile.ParseRequirement(source, constraint); err != nil {
					return err
				}
				providers = append(providers, apispec.LockProvider{Source: source, Versions: constraint})
				return nil
			})
			output := fs.String("output", "", "`file` to write (- for standard output; default DIR/.terraform.lock.hcl)")
			return func(ctx context.Context, args []string) error {
				dir := "."
				if len(args) == 1 {
					dir = args[0]
				}
				if len(providers) == 0 {
					reqs, err := lockfile.Requirements(dir)
					if err != nil {
						return err
					}
					for _, r := range reqs {
						providers = append(providers, apispec.LockProvider{Source: r.Source.String(), Versions: r.Constraints})
					}
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				fmt.Fprintf(cl.stderr, "Locking %d provider(s) through %s (the mirror fetches and hashes every package it does not hold yet: the first lock of a public provider can take a while)...\n", len(providers), c.Addr())
				resp, err := c.Lock(ctx, apispec.LockRequest{Providers: providers, Platforms: platforms})
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(resp)
				}
				target := *output
				if target == "" {
					target = filepath.Join(dir, ".terraform.lock.hcl")
				}
				if target == "-" {
					_, err := fmt.Fprint(cl.stdout, resp.LockFile)
					return err
				}
				if err := os.WriteFile(target, []byte(resp.LockFile), 0o644); err != nil {
					return err
				}
				for _, p := range resp.Providers {
					fmt.Fprintf(cl.stdout, "Locked %s %s (%d hashes)\n", p.Source, p.Version, len(p.Hashes))
				}
				fmt.Fprintf(cl.stdout, "Wrote %s: terraform init and tofu init accept it on every platform it holds hashes of.\n", target)
				return nil
			}
		},
	}
}
