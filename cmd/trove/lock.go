package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/lockfile"
	"trove.dev/trove/internal/registry"
)

func lockCommand() *command {
	return &command{
		name: "lock", args: "[DIR] [--platform OS_ARCH ...] [--provider SOURCE[=CONSTRAINT] ...] [--upgrade] [--output FILE]", maxArgs: 1, client: true,
		summary: "Write or update the .terraform.lock.hcl of a configuration with the hashes of every platform, from this registry and its mirror; versions a lock file pins are kept unless --upgrade.",
		examples: []string{
			"trove lock",
			"trove lock --upgrade",
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
			upgrade := fs.Bool("upgrade", false, "lock the newest allowed version of every provider, also of those an existing lock file pins")
			return func(ctx context.Context, args []string) error {
				dir := "."
				if len(args) == 1 {
					dir = args[0]
				}
				target := *output
				if target == "" {
					target = filepath.Join(dir, ".terraform.lock.hcl")
				}
				// The lock file to update: the one written, or DIR's when
				// it goes to standard output.
				existingPath := target
				if target == "-" {
					existingPath = filepath.Join(dir, ".terraform.lock.hcl")
				}
				existing, pins, err := readLockFile(existingPath)
				if err != nil {
					return err
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
				if !*upgrade {
					for i, p := range providers {
						if req, err := lockfile.ParseRequirement(p.Source, ""); err == nil {
							if pin, ok := pins[req.Source.String()]; ok {
								providers[i].Pinned = pin.Version
							}
						}
					}
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				fmt.Fprintf(cl.stderr, "Locking %d provider(s) through %s (the mirror fetches and hashes every package it does not hold yet: the first lock of a public provider can take a while)...\n", len(providers), c.Addr())
				resp, err := c.Lock(ctx, apispec.LockRequest{Providers: providers, Platforms: platforms})
				if err != nil {
					if existing != nil && !*upgrade {
						return fmt.Errorf("%w\n%s was left as it is", err, existingPath)
					}
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(resp)
				}
				text := []byte(resp.LockFile)
				if existing != nil {
					entries := make([]lockfile.Entry, 0, len(resp.Providers))
					for _, p := range resp.Providers {
						req, err := lockfile.ParseRequirement(p.Source, "")
						if err != nil {
							return err
						}
						entries = append(entries, lockfile.Entry{Source: req.Source, Version: p.Version, Constraints: p.Constraints, Hashes: p.Hashes})
					}
					if text, err = lockfile.Update(existing, existingPath, entries); err != nil {
						return err
					}
				}
				if target == "-" {
					_, err := cl.stdout.Write(text)
					return err
				}
				if err := os.WriteFile(target, text, 0o644); err != nil {
					return err
				}
				for _, p := range resp.Providers {
					switch pin, ok := pins[p.Source]; {
					case ok && pin.Version == p.Version:
						fmt.Fprintf(cl.stdout, "Kept %s %s, as the lock file pins it (%d hashes)\n", p.Source, p.Version, len(p.Hashes))
					case ok:
						fmt.Fprintf(cl.stdout, "Upgraded %s %s -> %s (%d hashes)\n", p.Source, pin.Version, p.Version, len(p.Hashes))
					default:
						fmt.Fprintf(cl.stdout, "Locked %s %s (%d hashes)\n", p.Source, p.Version, len(p.Hashes))
					}
				}
				fmt.Fprintf(cl.stdout, "Wrote %s: terraform init and tofu init accept it on every platform it holds hashes of.\n", target)
				return nil
			}
		},
	}
}

// maxLockFileBytes bounds a lock file read for an update.
const maxLockFileBytes = 4 << 20

// readLockFile reads the lock file at path to update it, with its
// entries by source address; nil and no error when there is none.
func readLockFile(path string) ([]byte, map[string]lockfile.Entry, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, maxLockFileBytes+1))
	if err != nil {
		return nil, nil, err
	}
	if len(src) > maxLockFileBytes {
		return nil, nil, fmt.Errorf("%s is larger than %d bytes: it is not a lock file trove lock can update", path, maxLockFileBytes)
	}
	entries, err := lockfile.Parse(src, path)
	if err != nil {
		return nil, nil, fmt.Errorf("%s is not a lock file trove lock can update (%s): fix it, or move it away to write a new one", path, registry.Message(err))
	}
	pins := make(map[string]lockfile.Entry, len(entries))
	for _, e := range entries {
		pins[e.Source.String()] = e
	}
	return src, pins, nil
}
