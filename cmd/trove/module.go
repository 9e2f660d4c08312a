package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/registry"
)

// moduleAddress splits NAMESPACE/NAME/SYSTEM.
func moduleAddress(s string) (ns, name, system string, err error) {
	parts := strings.Split(s, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", "", usagef("want NAMESPACE/NAME/SYSTEM, e.g. acme/network/aws, got %q", s)
	}
	return parts[0], parts[1], parts[2], nil
}

// checkModuleUpload checks the address and version of a module upload
// with the server's rules (modules.ParseAddress), before anything is
// packed or sent.
func checkModuleUpload(up client.ModuleUpload) error {
	if _, err := modules.ParseAddress(up.Namespace, up.Name, up.System, up.Version); err != nil {
		return usagef("%s", registry.Message(err))
	}
	return nil
}

func modulePublish() *command {
	return &command{
		name: "module publish", args: "NAMESPACE/NAME/SYSTEM (VERSION [DIR|ARCHIVE] | --git-tag [--repo DIR]) [--origin TEXT] [--oidc-audience AUD]",
		minArgs: 1, maxArgs: 3, client: true,
		summary: "Publish a module version from a directory, a .tar.gz/.zip, or the Git tag at HEAD (needs publish on the namespace).",
		examples: []string{
			"trove module publish acme/network/aws 1.2.0 ./modules/network",
			"trove module publish acme/network/aws 1.2.0 network-1.2.0.tar.gz",
			"trove module publish acme/network/aws --git-tag          # in CI, on a checkout of the tag v1.2.0",
			"trove module publish acme/network/aws --git-tag --repo modules/network",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			gitTag := fs.Bool("git-tag", false, "take the version from the Git tag at HEAD (v1.2.0 publishes 1.2.0) and pack the tracked files of --repo")
			repo := fs.String("repo", ".", "with --git-tag: the module `directory` inside a Git working tree")
			origin := fs.String("origin", "", "record this `text` as the version's origin instead of the default (e.g. a CI job URL)")
			cl.defineOIDCFlags(fs)
			return func(ctx context.Context, args []string) error {
				ns, name, system, err := moduleAddress(args[0])
				if err != nil {
					return err
				}
				up := client.ModuleUpload{Namespace: ns, Name: name, System: system, Version: "0.0.0"}
				if err := checkModuleUpload(up); err != nil {
					return err
				}
				var source func(w io.Writer) (modules.PackStats, error)
				var what string
				switch {
				case *gitTag:
					if len(args) > 1 {
						return usagef("--git-tag takes the version from the tag: give no VERSION or DIR (use --repo DIR)")
					}
					g, err := modules.FromGit(ctx, *repo)
					if err != nil {
						return err
					}
					up.Version, up.Origin = g.Version, g.Origin()
					source = func(w io.Writer) (modules.PackStats, error) { return modules.PackArchiveFiles(w, *repo, g.Files) }
					what = fmt.Sprintf("tag %s of %s", g.Tag, *repo)
				case len(args) < 2:
					return usagef("missing VERSION (or use --git-tag to take it from the Git tag at HEAD)")
				default:
					up.Version = args[1]
					if err := checkModuleUpload(up); err != nil {
						return err
					}
					path := "."
					if len(args) == 3 {
						path = args[2]
					}
					fi, err := os.Stat(path)
					if err != nil {
						return err
					}
					if !fi.IsDir() {
						return publishArchiveFile(ctx, cl, up, path, *origin)
					}
					source = func(w io.Writer) (modules.PackStats, error) { return modules.PackArchive(w, path) }
					what = path
				}
				if *origin != "" {
					up.Origin = *origin
				}
				up.ContentType = apispec.ModuleArchiveTarGz
				return publishPacked(ctx, cl, up, what, source)
			}
		},
	}
}

// publishPacked packs with source while streaming the archive to the server.
func publishPacked(ctx context.Context, cl *cli, up client.ModuleUpload, what string, source func(io.Writer) (modules.PackStats, error)) error {
	c, err := cl.publishClient(ctx, up.Namespace)
	if err != nil {
		return err
	}
	// Pack once before uploading so that a local problem (a link leaving
	// the tree, no .tf file) is reported before any byte is sent, and the
	// size is known.
	var stats modules.PackStats
	if stats, err = source(io.Discard); err != nil {
		return err
	}
	fmt.Fprintf(cl.stderr, "Packing %s (%d files, %s) and uploading %s/%s/%s %s to %s\n",
		what, stats.Files, size(stats.Bytes), up.Namespace, up.Name, up.System, up.Version, c.Addr())
	pr, pw := io.Pipe()
	packed := make(chan error, 1)
	go func() {
		_, err := source(pw)
		pw.CloseWithError(err)
		packed <- err
	}()
	bar := newProgress(cl, "Uploaded", 0) // the archive's size is known only once packed
	up.Archive = bar.reader(pr)
	res, err := c.PublishModule(ctx, up)
	bar.finish()
	pr.CloseWithError(errUploadFinished) // unblocks the packer if the server stopped reading
	if perr := <-packed; err != nil && perr != nil && !errors.Is(perr, errUploadFinished) {
		return perr // a local failure, not the aborted request, is the cause
	}
	if err != nil {
		return err
	}
	return printPublished(cl, res)
}

// errUploadFinished tells the packer that the request is over.
var errUploadFinished = errors.New("the upload has finished")

// publishArchiveFile uploads a .tar.gz or .zip as it is.
func publishArchiveFile(ctx context.Context, cl *cli, up client.ModuleUpload, path, origin string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, 4)
	n, _ := io.ReadFull(f, head)
	switch {
	case bytes.HasPrefix(head[:n], []byte{0x1f, 0x8b}):
		up.ContentType = apispec.ModuleArchiveTarGz
	case bytes.HasPrefix(head[:n], []byte("PK")):
		up.ContentType = apispec.ModuleArchiveZip
	default:
		return fmt.Errorf("%s is neither a directory, a .tar.gz nor a .zip file", path)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	c, err := cl.publishClient(ctx, up.Namespace)
	if err != nil {
		return err
	}
	up.Archive, up.Origin = f, origin
	if up.Origin == "" {
		up.Origin = "archive " + filepath.Base(path)
	}
	var total int64
	if fi, err := f.Stat(); err == nil {
		total = fi.Size()
		fmt.Fprintf(cl.stderr, "Uploading %s (%s) as %s/%s/%s %s to %s\n", path, size(fi.Size()), up.Namespace, up.Name, up.System, up.Version, c.Addr())
	}
	bar := newProgress(cl, "Uploaded", total)
	up.Archive = bar.fileReader(filepath.Base(path), f)
	res, err := c.PublishModule(ctx, up)
	bar.finish()
	if err != nil {
		return err
	}
	return printPublished(cl, res)
}

func printPublished(cl *cli, res apispec.ModulePublishResult) error {
	for _, w := range res.Warnings {
		fmt.Fprintf(cl.stderr, "warning: %s\n", printable(w))
	}
	if cl.jsonOut {
		res.Version.Metadata = nil
		return cl.printJSON(res)
	}
	v := res.Version
	addr := v.Namespace + "/" + v.Name + "/" + v.System
	if !res.Created {
		fmt.Fprintf(cl.stdout, "%s %s was already published with identical content; nothing changed\n", addr, v.Version)
		return nil
	}
	fmt.Fprintf(cl.stdout, "Published %s %s (%s, %s, sha256 %s)\n", addr, v.Version, v.ArchiveFormat, size(v.ArchiveSize), v.ArchiveDigest)
	return nil
}

func moduleList() *command {
	return &command{
		name: "module list", args: "NAMESPACE [--query TEXT] [--system SYSTEM] [--limit N] [--offset N]", minArgs: 1, maxArgs: 1, client: true,
		summary:  "List the modules of a namespace.",
		examples: []string{"trove module list acme", "trove module list acme --system aws --query network"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			query := fs.String("query", "", "only modules whose name or description contains `text`")
			system := fs.String("system", "", "only modules for this target `system` (aws, azurerm, ...)")
			limit := fs.Int("limit", apispec.DefaultModuleLimit, "show at most `n` modules")
			offset := fs.Int("offset", 0, "skip the first `n` modules")
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				list, err := c.ListModules(ctx, args[0], client.ModuleListOptions{Query: *query, System: *system, Limit: *limit, Offset: *offset})
				if err != nil {
					return err
				}
				if cl.jsonOut {
					list.Modules = nonNil(list.Modules)
					return cl.printJSON(list)
				}
				if list.Total == 0 {
					fmt.Fprintf(cl.stdout, "No modules match in namespace %s; publish one with: trove module publish %s/NAME/SYSTEM VERSION DIR\n", args[0], args[0])
					return nil
				}
				rows := make([]string, 0, len(list.Modules))
				for _, m := range list.Modules {
					rows = append(rows, row(m.Namespace+"/"+m.Name+"/"+m.System, m.LatestVersion, fmt.Sprint(m.VersionCount), when(m.UpdatedAt), m.Description))
				}
				if err := table(cl.stdout, "MODULE\tLATEST\tVERSIONS\tUPDATED\tDESCRIPTION", rows); err != nil {
					return err
				}
				if shown := list.Offset + len(list.Modules); shown < list.Total {
					fmt.Fprintf(cl.stdout, "(%d of %d; see more with --offset %d)\n", len(list.Modules), list.Total, shown)
				}
				return nil
			}
		},
	}
}

func moduleShow() *command {
	return &command{
		name: "module show", args: "NAMESPACE/NAME/SYSTEM [VERSION]", minArgs: 1, maxArgs: 2, client: true,
		summary: "Show a module's versions, or one version with its inputs, outputs and requirements.",
		examples: []string{
			"trove module show acme/network/aws",
			"trove module show acme/network/aws 1.2.0",
			"trove module show acme/network/aws 1.2.0 --json   # the full metadata, README included",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				ns, name, system, err := moduleAddress(args[0])
				if err != nil {
					return err
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				if len(args) == 2 {
					v, err := c.GetModuleVersion(ctx, ns, name, system, args[1])
					if err != nil {
						return err
					}
					if cl.jsonOut {
						return cl.printJSON(v)
					}
					return printModuleVersion(cl, v)
				}
				m, err := c.GetModule(ctx, ns, name, system)
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(m)
				}
				rows := make([]string, 0, len(m.Versions))
				for _, v := range m.Versions {
					rows = append(rows, row(versionLabel(v.Version, v.Deprecation, v.Revocation), v.ArchiveFormat, size(v.ArchiveSize), when(v.PublishedAt), v.Origin))
				}
				fmt.Fprintf(cl.stdout, "%s/%s/%s\n\n", m.Namespace, m.Name, m.System)
				return table(cl.stdout, "VERSION\tFORMAT\tSIZE\tPUBLISHED\tORIGIN", rows)
			}
		},
	}
}

func printModuleVersion(cl *cli, v apispec.ModuleVersion) error {
	err := table(cl.stdout, "Module:\t"+cell(v.Namespace+"/"+v.Name+"/"+v.System), append([]string{
		"Version:\t" + cell(v.Version),
		"Description:\t" + cell(v.Description),
		"Archive:\t" + cell(v.ArchiveFormat+", "+size(v.ArchiveSize)+", sha256 "+v.ArchiveDigest),
		"Origin:\t" + cell(v.Origin),
		"Published:\t" + cell(when(v.PublishedAt)),
	}, lifecycleRows(v.Deprecation, v.Revocation)...))
	if err != nil || len(v.Metadata) == 0 {
		return err
	}
	var md modules.Metadata
	if err := json.Unmarshal(v.Metadata, &md); err != nil {
		return fmt.Errorf("the server sent metadata that does not decode: %w", err)
	}
	section := func(title, header string, rows []string) error {
		if len(rows) == 0 {
			return nil
		}
		fmt.Fprintf(cl.stdout, "\n%s\n", title)
		return table(cl.stdout, header, rows)
	}
	var rows []string
	for _, in := range md.Root.Inputs {
		def := "(required)"
		if !in.Required {
			def = string(in.Default)
		}
		rows = append(rows, row(in.Name, in.Type, def, in.Description))
	}
	if err := section("Inputs:", "NAME\tTYPE\tDEFAULT\tDESCRIPTION", rows); err != nil {
		return err
	}
	rows = rows[:0]
	for _, o := range md.Root.Outputs {
		rows = append(rows, row(o.Name, o.Description))
	}
	if err := section("Outputs:", "NAME\tDESCRIPTION", rows); err != nil {
		return err
	}
	rows = rows[:0]
	for _, p := range md.Root.ProviderDependencies {
		rows = append(rows, row(p.Name, p.Source, p.Version))
	}
	if err := section("Required providers:", "NAME\tSOURCE\tVERSION", rows); err != nil {
		return err
	}
	rows = rows[:0]
	for _, group := range []struct {
		kind string
		list []modules.ModuleInfo
	}{{"submodule", md.Submodules}, {"example", md.Examples}} {
		for _, m := range group.list {
			rows = append(rows, row(m.Path, group.kind, fmt.Sprint(len(m.Inputs)), fmt.Sprint(len(m.Outputs))))
		}
	}
	return section("Submodules and examples:", "PATH\tKIND\tINPUTS\tOUTPUTS", rows)
}

func moduleDelete() *command {
	return &command{
		name: "module delete", args: "NAMESPACE/NAME/SYSTEM [VERSION] --confirm [--in-use]", minArgs: 1, maxArgs: 2, client: true,
		summary:  "Delete a module version, or without VERSION every version (needs admin on the namespace and --confirm: configurations using it break). `trove gc` reclaims the archives.",
		examples: []string{"trove module delete acme/network/aws 1.2.0 --confirm", "trove module delete acme/network/aws --confirm"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			confirm := fs.Bool("confirm", false, "confirm the deletion: every configuration that uses a deleted version stops working")
			inUse := fs.Bool("in-use", false, fmt.Sprintf("delete even what consumers downloaded in the last %d days (see trove consumers)", apispec.InUseDays))
			return func(ctx context.Context, args []string) error {
				ns, name, system, err := moduleAddress(args[0])
				if err != nil {
					return err
				}
				what := strings.Join(args, " ")
				if !*confirm {
					return usagef("deleting %s breaks every configuration that uses it; add --confirm to delete it anyway", what)
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				var opts []client.DeleteOption
				if *inUse {
					opts = append(opts, client.InUse())
				}
				if len(args) == 2 {
					printBlastRadius(ctx, cl, c, []string{ns, name, system}, args[1])
					if err := c.DeleteModuleVersion(ctx, ns, name, system, args[1], opts...); err != nil {
						return err
					}
					fmt.Fprintf(cl.stdout, "Deleted %s\n", what)
					return nil
				}
				n, err := c.DeleteModule(ctx, ns, name, system, opts...)
				if err != nil {
					return err
				}
				fmt.Fprintf(cl.stdout, "Deleted %s (%d versions)\n", what, n)
				return nil
			}
		},
	}
}
