package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/registry"
)

// providerDelete is "trove provider delete NAMESPACE/TYPE [VERSION]
// --confirm": one version, or the whole provider without VERSION.
func providerDelete() *command {
	return &command{
		name: "provider delete", args: "NAMESPACE/TYPE [VERSION] --confirm [--in-use]", minArgs: 1, maxArgs: 2, client: true,
		summary:  "Delete a provider version, or without VERSION every version (needs admin on the namespace and --confirm: lock files pinning it break). `trove gc` reclaims the files.",
		examples: []string{"trove provider delete acme/foo 1.2.0 --confirm", "trove provider delete acme/foo --confirm"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			confirm := fs.Bool("confirm", false, "confirm the deletion: every lock file that pins a deleted version stops installing")
			inUse := fs.Bool("in-use", false, fmt.Sprintf("delete even what consumers downloaded in the last %d days (see trove consumers)", apispec.InUseDays))
			return func(ctx context.Context, args []string) error {
				parts := strings.Split(args[0], "/")
				if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
					return usagef("want NAMESPACE/TYPE, e.g. acme/foo, got %q", args[0])
				}
				what := args[0]
				if len(args) == 2 {
					if _, err := registry.ParseVersion(args[1]); err != nil {
						return usagef("%s", registry.Message(err))
					}
					what += " " + args[1]
				}
				if !*confirm {
					return usagef("deleting %s breaks every lock file that pins it; add --confirm to delete it anyway", what)
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
					printBlastRadius(ctx, cl, c, parts, args[1])
					if err := c.DeleteProviderVersion(ctx, parts[0], parts[1], args[1], opts...); err != nil {
						return err
					}
					fmt.Fprintf(cl.stdout, "Deleted %s\n", what)
					return nil
				}
				n, err := c.DeleteProvider(ctx, parts[0], parts[1], opts...)
				if err != nil {
					return err
				}
				fmt.Fprintf(cl.stdout, "Deleted %s (%d versions)\n", what, n)
				return nil
			}
		},
	}
}

// gcCommand is "trove gc [--dry-run] [--grace D]": one garbage collection,
// run by the server.
func gcCommand() *command {
	return &command{
		name: "gc", args: "[--dry-run] [--grace DURATION]", client: true,
		summary:  "Reclaim the stored files no version references any more (global admins); --dry-run lists them with their sizes.",
		examples: []string{"trove gc --dry-run", "trove gc --grace 2h"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			dry := fs.Bool("dry-run", false, "list what would be reclaimed, delete nothing")
			grace := fs.Duration("grace", 0, "keep files modified within this `duration` (at least 1m; default the server's, 1h): a publish in progress on any replica has stored its files but not yet its version")
			return func(ctx context.Context, _ []string) error {
				req := apispec.GCRequest{DryRun: *dry}
				if *grace != 0 {
					if *grace < time.Minute {
						return usagef("--grace must be at least 1m, got %s", *grace)
					}
					req.Grace = grace.String()
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				rep, err := c.RunGC(ctx, req)
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(rep)
				}
				verb, deleted := "Reclaimed", "Deleted"
				if rep.DryRun {
					verb, deleted = "Would reclaim", "Would delete"
				}
				for _, e := range rep.ExpiredVersions {
					address := e.Namespace + "/" + e.Name
					if e.System != "" {
						address += "/" + e.System
					}
					fmt.Fprintf(cl.stdout, "%s %s %s %s (retention rule of %s)\n", deleted, e.Kind, address, e.Version, e.Namespace)
				}
				for _, b := range rep.Reclaimed {
					fmt.Fprintf(cl.stdout, "%s\t%s\n", b.Digest, size(b.Size))
				}
				fmt.Fprintf(cl.stdout, "%s %d files, %s in total (%d stored, %d referenced; %d unreferenced kept within the %s grace period)\n",
					verb, len(rep.Reclaimed), size(rep.ReclaimedBytes), rep.StoredBlobs, rep.ReferencedBlobs, rep.YoungBlobs, rep.Grace)
				return nil
			}
		},
	}
}
