package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"strings"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
)

func consumersCommand() *command {
	return &command{
		name: "consumers", args: "NAMESPACE/TYPE | NAMESPACE/NAME/SYSTEM [--days N] [--versions CONSTRAINT]", minArgs: 1, maxArgs: 1, client: true,
		summary: "Show who downloaded a provider's or module's versions, with which clients (needs publish rights).",
		examples: []string{
			"trove consumers acme/cloud",
			"trove consumers acme/cloud --versions '< 2.0' --days 90",
			"trove consumers acme/network/aws --json",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			var q client.ConsumerQuery
			fs.IntVar(&q.Days, "days", apispec.DefaultConsumerDays, "the window in days, ending today (UTC)")
			fs.StringVar(&q.Versions, "versions", "", "only the versions matching this constraint, e.g. '< 2.0'")
			return func(ctx context.Context, args []string) error {
				if q.Days < 1 {
					return usagef("--days must be at least 1, got %d", q.Days)
				}
				parts := strings.Split(args[0], "/")
				for _, p := range parts {
					if p == "" {
						parts = nil
					}
				}
				if len(parts) != 2 && len(parts) != 3 {
					return usagef("want NAMESPACE/TYPE for a provider or NAMESPACE/NAME/SYSTEM for a module, e.g. acme/cloud, got %q", args[0])
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				var report apispec.ConsumerReport
				if len(parts) == 2 {
					report, err = c.ProviderConsumers(ctx, parts[0], parts[1], q)
				} else {
					report, err = c.ModuleConsumers(ctx, parts[0], parts[1], parts[2], q)
				}
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(report)
				}
				return printConsumers(cl, args[0], report)
			}
		},
	}
}

// printConsumers writes a consumer report as two tables: consumers, then
// the client mix.
func printConsumers(cl *cli, what string, r apispec.ConsumerReport) error {
	versions := "every version"
	if r.Versions != "" {
		versions = "versions " + r.Versions
	}
	fmt.Fprintf(cl.stdout, "%s, %s, %s to %s (UTC): %d downloads by %d consumers\n", what, versions, r.Since, r.Until, r.Downloads, len(r.Consumers))
	if len(r.Consumers) == 0 {
		return nil
	}
	fmt.Fprintln(cl.stdout)
	rows := make([]string, 0, len(r.Consumers))
	for _, u := range r.Consumers {
		rows = append(rows, row(u.Consumer, fmt.Sprint(u.Downloads), u.LastSeen, strings.Join(u.Versions, ", "), strings.Join(u.Clients, ", ")))
	}
	if err := table(cl.stdout, "CONSUMER\tDOWNLOADS\tLAST SEEN\tVERSIONS\tCLIENTS", rows); err != nil {
		return err
	}
	fmt.Fprintln(cl.stdout)
	rows = rows[:0]
	for _, c := range r.Clients {
		rows = append(rows, row(c.Client, cmp.Or(c.Version, "-"), fmt.Sprint(c.Downloads)))
	}
	return table(cl.stdout, "CLIENT\tVERSION\tDOWNLOADS", rows)
}

// blastRadiusDays is the window of the blast radius printed before a
// deprecation, revocation or delete.
const blastRadiusDays = 30

// printBlastRadius tells on stderr who downloaded one version in the last
// blastRadiusDays days, before a deprecation, revocation or delete
// changes it for them. parts is NAMESPACE/TYPE or NAMESPACE/NAME/SYSTEM,
// split. A caller who may not read consumers (publish rights), or a
// server that does not answer, gets no report: the operation itself
// decides.
func printBlastRadius(ctx context.Context, cl *cli, c *client.Client, parts []string, version string) {
	r, err := blastRadius(ctx, c, parts, version)
	if err != nil {
		return
	}
	if len(r.Consumers) == 0 {
		fmt.Fprintf(cl.stderr, "No consumer downloaded %s %s in the last %d days.\n", strings.Join(parts, "/"), version, blastRadiusDays)
		return
	}
	names := make([]string, 0, len(r.Consumers))
	for i, u := range r.Consumers {
		if i == 5 {
			names = append(names, fmt.Sprintf("and %d more", len(r.Consumers)-5))
			break
		}
		names = append(names, fmt.Sprintf("%s (%d, last %s)", u.Consumer, u.Downloads, u.LastSeen))
	}
	fmt.Fprintf(cl.stderr, "%d consumers downloaded %s %s in the last %d days: %s.\nSee them all with: trove consumers %s --versions '= %s'\n",
		len(r.Consumers), strings.Join(parts, "/"), version, blastRadiusDays, strings.Join(names, ", "), strings.Join(parts, "/"), version)
}

// blastRadius reads the consumers of one version over the last
// blastRadiusDays days.
func blastRadius(ctx context.Context, c *client.Client, parts []string, version string) (apispec.ConsumerReport, error) {
	q := client.ConsumerQuery{Days: blastRadiusDays, Versions: "= " + version}
	if len(parts) == 2 {
		return c.ProviderConsumers(ctx, parts[0], parts[1], q)
	}
	return c.ModuleConsumers(ctx, parts[0], parts[1], parts[2], q)
}
