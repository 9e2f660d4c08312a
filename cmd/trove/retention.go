package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

// repeatFlag is a repeatable flag that keeps each value whole (version
// constraints contain commas).
type repeatFlag []string

// String returns the values, separated by "; ".
func (r *repeatFlag) String() string { return strings.Join(*r, "; ") }

// Set adds one value.
func (r *repeatFlag) Set(s string) error {
	*r = append(*r, s)
	return nil
}

func retentionSet() *command {
	return &command{
		name: "retention set", args: "NAMESPACE [--keep-last N] [--keep-within DURATION] [--pin CONSTRAINT]...", minArgs: 1, maxArgs: 1, client: true,
		summary:  "Set the retention rule of a namespace (admin on it): garbage collections delete every provider and module version it does not keep.",
		examples: []string{`trove retention set acme --keep-last 10 --keep-within 180d --pin "~> 1.0" --pin 2.3.4`},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			keepLast := fs.Int("keep-last", 0, "keep the `N` highest versions of each provider and module")
			keepWithin := fs.String("keep-within", "", "keep versions published within this `duration` (90d, or a Go duration such as 2160h; at least 1d)")
			var pins repeatFlag
			fs.Var(&pins, "pin", "keep versions matching this version `constraint` (repeatable), e.g. \"~> 1.0\" or 2.3.4")
			return func(ctx context.Context, args []string) error {
				req := apispec.RetentionRequest{KeepLast: *keepLast, KeepWithin: *keepWithin, Pin: pins}
				if err := req.Validate(); err != nil {
					return usagef("%s", registry.Message(err))
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				rule, err := c.PutRetentionRule(ctx, args[0], req)
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(rule)
				}
				fmt.Fprintf(cl.stdout, "Retention rule of %s: %s\n", rule.Namespace, describeRetention(rule))
				return nil
			}
		},
	}
}

// describeRetention says what a rule keeps, in one line.
func describeRetention(r apispec.RetentionRule) string {
	var keeps []string
	if r.KeepLast > 0 {
		keeps = append(keeps, "the last "+strconv.Itoa(r.KeepLast)+" versions")
	}
	if r.KeepWithin != "" {
		keeps = append(keeps, "versions published within "+r.KeepWithin)
	}
	if len(r.Pin) > 0 {
		keeps = append(keeps, "versions matching "+strings.Join(r.Pin, " or "))
	}
	return "keep " + strings.Join(keeps, ", ") + " (and always the highest, the newest and deprecated versions not revoked)"
}

func retentionShow() *command {
	return &command{
		name: "retention show", args: "NAMESPACE", minArgs: 1, maxArgs: 1, client: true,
		summary:  "Show the retention rule of a namespace.",
		examples: []string{"trove retention show acme"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				rule, err := c.GetRetentionRule(ctx, args[0])
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(rule)
				}
				return table(cl.stdout, "Namespace:\t"+cell(rule.Namespace), []string{
					"Keep last:\t" + cell(strconv.Itoa(rule.KeepLast)),
					"Keep within:\t" + cell(rule.KeepWithin),
					"Pins:\t" + cell(strings.Join(rule.Pin, "; ")),
					"Rule:\t" + cell(describeRetention(rule)),
					"Updated:\t" + cell(when(rule.UpdatedAt)+" by "+rule.UpdatedBy),
				})
			}
		},
	}
}

func retentionDelete() *command {
	return &command{
		name: "retention delete", args: "NAMESPACE", minArgs: 1, maxArgs: 1, client: true,
		summary:  "Remove the retention rule of a namespace (admin on it): collections then keep every version.",
		examples: []string{"trove retention delete acme"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				if err := c.DeleteRetentionRule(ctx, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(cl.stdout, "Removed the retention rule of %s\n", args[0])
				return nil
			}
		},
	}
}
