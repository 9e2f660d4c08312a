package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"trove.dev/trove/client"
)

func bundleExport() *command {
	return &command{
		name: "bundle export", args: "--output FILE [--provider SOURCE@VERSION ...] [--module NS/NAME/SYSTEM@VERSION ...] [--platform OS_ARCH ...]", client: true,
		summary: "Write an air-gap bundle of provider and module versions, with their original sums, signatures and keys (needs a global admin token).",
		examples: []string{
			"trove bundle export --output tools.tar --provider registry.terraform.io/hashicorp/aws@5.80.0 --platform linux_amd64",
			"trove bundle export --output acme.tar --provider trove.example.com/acme/widget@1.2.0 --module acme/network/aws@1.0.0",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			var req client.BundleRequest
			fs.Func("provider", "`source@version` to include: this registry's host for its own providers, another for mirrored ones (repeat it)", func(v string) error {
				if !strings.Contains(v, "@") {
					return fmt.Errorf("want source@version, e.g. registry.terraform.io/hashicorp/aws@5.80.0")
				}
				req.Providers = append(req.Providers, v)
				return nil
			})
			fs.Func("module", "`namespace/name/system@version` to include (repeat it)", func(v string) error {
				if !strings.Contains(v, "@") || strings.Count(v, "/") != 2 {
					return fmt.Errorf("want namespace/name/system@version, e.g. acme/network/aws@1.0.0")
				}
				req.Modules = append(req.Modules, v)
				return nil
			})
			fs.Func("platform", "`os_arch` whose provider packages to include (repeat it; default: every platform)", func(v string) error {
				req.Platforms = append(req.Platforms, v)
				return nil
			})
			output := fs.String("output", "", "`file` to write the bundle to (required)")
			return func(ctx context.Context, args []string) error {
				if *output == "" {
					return usagef("bundle export needs --output FILE")
				}
				if len(req.Providers)+len(req.Modules) == 0 {
					return usagef("name at least one --provider or --module to export")
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				// Written to a temporary file renamed at the end: an
				// interrupted export leaves no file that looks whole.
				f, err := os.CreateTemp(filepath.Dir(*output), ".trove-bundle-*")
				if err != nil {
					return err
				}
				defer os.Remove(f.Name())
				defer f.Close()
				fmt.Fprintf(cl.stderr, "Exporting %d provider and %d module version(s) from %s (the mirror first fetches the packages it does not hold)...\n",
					len(req.Providers), len(req.Modules), c.Addr())
				p := newProgress(cl, "Downloaded", 0)
				_, err = c.ExportBundle(ctx, req, p.writer(f))
				p.finish()
				if err != nil {
					return err
				}
				if err := f.Sync(); err != nil {
					return err
				}
				if err := f.Close(); err != nil {
					return err
				}
				if err := os.Rename(f.Name(), *output); err != nil {
					return err
				}
				info, err := os.Stat(*output)
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(map[string]any{"output": *output, "bytes": info.Size()})
				}
				fmt.Fprintf(cl.stdout, "Wrote %s (%s): import it with trove bundle import %s\n", *output, size(info.Size()), filepath.Base(*output))
				return nil
			}
		},
	}
}

func bundleImport() *command {
	return &command{
		name: "bundle import", args: "FILE", minArgs: 1, maxArgs: 1, client: true,
		summary:  "Import an air-gap bundle: every signature and digest verified, all of it or nothing (needs a global admin token).",
		examples: []string{"trove bundle import tools.tar"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				info, err := f.Stat()
				if err != nil {
					return err
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				p := newProgress(cl, "Uploaded", info.Size())
				res, err := c.ImportBundle(ctx, p.reader(f), info.Size())
				p.finish()
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(res)
				}
				for _, pr := range res.Providers {
					state := fmt.Sprintf("%d package(s) added", pr.Packages)
					if pr.Packages == 0 {
						state = "held already"
					}
					fmt.Fprintf(cl.stdout, "Provider %s %s: %s\n", pr.Source, pr.Version, state)
				}
				for _, m := range res.Modules {
					state := "imported"
					if !m.Created {
						state = "present already"
					}
					fmt.Fprintf(cl.stdout, "Module %s %s: %s\n", m.Address, m.Version, state)
				}
				fmt.Fprintf(cl.stdout, "Imported %d provider and %d module version(s) from %s\n", len(res.Providers), len(res.Modules), args[0])
				return nil
			}
		},
	}
}

// writer counts what is written through w.
func (p *progress) writer(w io.Writer) io.Writer {
	if p == nil {
		return w
	}
	return &countingWriter{w: w, p: p}
}

type countingWriter struct {
	w io.Writer
	p *progress
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.p.n.Add(int64(n))
	return n, err
}
