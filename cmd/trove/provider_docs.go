package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/providerdocs"
	"trove.dev/trove/internal/registry"
)

func providerDocsUpload() *command {
	return &command{
		name: "provider docs upload", args: "NAMESPACE/TYPE VERSION PATH", minArgs: 3, maxArgs: 3, client: true,
		summary: "Upload the documentation of a published provider version: a directory (docs/ of tfplugindocs, or website/docs/) or a .tar.gz/.zip (needs publish on the namespace).",
		examples: []string{
			"trove provider docs upload acme/foo 1.2.0 .              # the provider's repository: its docs/ directory",
			"trove provider docs upload acme/foo 1.2.0 ./docs",
			"trove provider docs upload acme/foo 1.2.0 terraform-provider-foo_1.2.0_docs.tar.gz",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				ns, typ, ok := strings.Cut(args[0], "/")
				if !ok || ns == "" || typ == "" || strings.Contains(typ, "/") {
					return usagef("want NAMESPACE/TYPE, e.g. acme/foo, got %q", args[0])
				}
				version := args[1]
				if _, err := registry.ParseVersion(version); err != nil {
					return usagef("%s", registry.Message(err))
				}
				archive, what, err := docsArchive(args[2])
				if err != nil {
					return err
				}
				// Checked here as the server checks it, so that a mistake is
				// reported before any byte is sent.
				docs, err := providerdocs.Parse(bytes.NewReader(archive), int64(len(archive)))
				if err != nil {
					return fmt.Errorf("%s: %s", what, registry.Message(err))
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				res, err := c.UploadProviderDocs(ctx, ns, typ, version, bytes.NewReader(archive))
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(res)
				}
				if !res.Created {
					fmt.Fprintf(cl.stdout, "%s/%s %s already has this documentation (%d pages, sha256 %s); nothing changed\n",
						res.Namespace, res.Type, res.Version, res.PageCount, res.Digest)
					return nil
				}
				fmt.Fprintf(cl.stdout, "Uploaded the documentation of %s/%s %s from %s: %d pages (%s), %s, sha256 %s\n",
					res.Namespace, res.Type, res.Version, what, res.PageCount, pageSummary(docs), size(res.Size), res.Digest)
				return nil
			}
		},
	}
}

// docsArchive returns the documentation archive of path: the file itself,
// or a directory packed with providerdocs.Pack. what names it for messages.
func docsArchive(path string) (archive []byte, what string, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, "", err
	}
	if fi.IsDir() {
		var buf bytes.Buffer
		if err := providerdocs.Pack(path, &buf); err != nil {
			return nil, "", err
		}
		return buf.Bytes(), path, nil
	}
	if fi.Size() > apispec.MaxProviderDocsBytes {
		return nil, "", fmt.Errorf("%s has %d bytes, more than the limit of %d MiB for a documentation archive", path, fi.Size(), apispec.MaxProviderDocsBytes>>20)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	archive, err = io.ReadAll(io.LimitReader(f, apispec.MaxProviderDocsBytes+1))
	return archive, path, err
}

// pageSummary counts the pages of each category: "1 overview, 12 resources".
func pageSummary(d *providerdocs.Docs) string {
	var parts []string
	for _, c := range providerdocs.Categories {
		n := 0
		for _, p := range d.Pages {
			if p.Category == c {
				n++
			}
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, c))
		}
	}
	return strings.Join(parts, ", ")
}
