package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/registry"
)

// The commands of holding mirrored versions back, for global admins:
// `trove mirror hold list|approve|unapprove|deny|undeny`.

// defaultMirrorHost is the host of a "namespace/type" address, as
// Terraform reads a source without one.
const defaultMirrorHost = "registry.terraform.io"

// parseMirrored splits HOST/NAMESPACE/TYPE (or NAMESPACE/TYPE of
// registry.terraform.io); the server checks the names.
func parseMirrored(addr string) (host, namespace, typ string, err error) {
	parts := strings.Split(strings.TrimSpace(addr), "/")
	switch {
	case len(parts) == 2 && parts[0] != "" && parts[1] != "":
		return defaultMirrorHost, parts[0], parts[1], nil
	case len(parts) == 3 && parts[0] != "" && parts[1] != "" && parts[2] != "":
		return parts[0], parts[1], parts[2], nil
	}
	return "", "", "", usagef("%q is not a provider address: write HOST/NAMESPACE/TYPE, such as registry.terraform.io/hashicorp/aws", registry.Elide(addr))
}

func mirrorHoldList() *command {
	return &command{
		name: "mirror hold list", args: "HOST/NAMESPACE/TYPE", minArgs: 1, maxArgs: 1, client: true,
		summary:  "List the versions of a mirrored provider with whether the mirror serves each, why not (held by a minimum age, denied), and its approvals and denials (needs a global admin token).",
		examples: []string{"trove mirror hold list registry.terraform.io/hashicorp/aws", "trove mirror hold list hashicorp/aws --json"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				host, ns, typ, err := parseMirrored(args[0])
				if err != nil {
					return err
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				p, err := c.GetMirrorProvider(ctx, host, ns, typ)
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(p)
				}
				if p.Rule != nil {
					fmt.Fprintf(cl.stdout, "Rule: %s\n", describeRule(*p.Rule))
				} else {
					fmt.Fprintf(cl.stdout, "%s is not an upstream: the versions the mirror holds, judged by the denials only\n", p.Host)
				}
				if p.Unreachable != "" {
					fmt.Fprintf(cl.stdout, "The upstream is unreachable (%s): the versions the mirror holds\n", p.Unreachable)
				}
				rows := make([]string, 0, len(p.Versions))
				for _, v := range p.Versions {
					rows = append(rows, row(v.Version, v.Status, whenPtr(v.Until, "-"), v.Reason))
				}
				if err := table(cl.stdout, "VERSION\tSTATUS\tUNTIL\tWHY", rows); err != nil {
					return err
				}
				if len(p.Decisions) > 0 {
					fmt.Fprintln(cl.stdout)
					rows = rows[:0]
					for _, d := range p.Decisions {
						rows = append(rows, row(d.Kind, d.Versions, d.CreatedBy, when(d.CreatedAt), d.Reason))
					}
					return table(cl.stdout, "DECISION\tVERSIONS\tBY\tAT\tREASON", rows)
				}
				return nil
			}
		},
	}
}

// holdDecision is one of the commands that make or withdraw a decision
// about versions of a mirrored provider; mirrorHoldDecision makes the
// command of it.
type holdDecision struct {
	verb, args, summary string
	examples            []string
	// reasonUsage is the usage of --reason; "" for a withdrawal, which
	// takes none.
	reasonUsage string
	// constraint is set for a denial: VERSION|CONSTRAINT is checked
	// before any request.
	constraint bool
	// call makes the request; it returns the decision stored, nil for a
	// withdrawal.
	call func(ctx context.Context, c *client.Client, host, ns, typ, versions, reason string) (*apispec.MirrorDecision, error)
	// done is what the command prints when it succeeded, a format of the
	// provider address and the versions.
	done string
}

// mirrorHoldDecision returns the command of d: it parses
// HOST/NAMESPACE/TYPE and the versions, makes the request and prints the
// decision (as JSON with --json) or what was withdrawn.
func mirrorHoldDecision(d holdDecision) *command {
	return &command{
		name: "mirror hold " + d.verb, args: d.args, minArgs: 2, maxArgs: 2, client: true, summary: d.summary, examples: d.examples,
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			reason := new(string)
			if d.reasonUsage != "" {
				reason, _ = textFlag(fs, "reason", d.reasonUsage, registry.DescriptionLimit)
			}
			return func(ctx context.Context, args []string) error {
				host, ns, typ, err := parseMirrored(args[0])
				if err != nil {
					return err
				}
				versions := args[1]
				if d.constraint {
					if err := registry.CheckVersionConstraint(strings.TrimSpace(versions)); err != nil || strings.TrimSpace(versions) == "" {
						return usagef("%q is neither a version nor a version constraint: write 5.81.0 or '>= 5.81.0, < 5.81.3'", registry.Elide(versions))
					}
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				dec, err := d.call(ctx, c, host, ns, typ, versions, *reason)
				if err != nil {
					return err
				}
				if dec != nil {
					if cl.jsonOut {
						return cl.printJSON(*dec)
					}
					versions = dec.Versions
				}
				if !cl.jsonOut {
					fmt.Fprintf(cl.stdout, d.done+"\n", host+"/"+ns+"/"+typ, versions)
				}
				return nil
			}
		},
	}
}

// decided adapts a request that stores a decision to holdDecision.call.
func decided(dec apispec.MirrorDecision, err error) (*apispec.MirrorDecision, error) {
	if err != nil {
		return nil, err
	}
	return &dec, nil
}

func mirrorHoldApprove() *command {
	return mirrorHoldDecision(holdDecision{
		verb: "approve", args: "HOST/NAMESPACE/TYPE VERSION [--reason TEXT]",
		summary:     "Release one version of a mirrored provider before its minimum age; a denial still wins (needs a global admin token).",
		examples:    []string{`trove mirror hold approve registry.terraform.io/hashicorp/aws 5.81.0 --reason "reviewed, needed for INC-42"`},
		reasonUsage: "`text` saying why, kept in the audit log",
		call: func(ctx context.Context, c *client.Client, host, ns, typ, versions, reason string) (*apispec.MirrorDecision, error) {
			return decided(c.ApproveMirroredVersion(ctx, host, ns, typ, versions, reason))
		},
		done: "Approved %s %s: the mirror serves it unless a denial matches it",
	})
}

func mirrorHoldUnapprove() *command {
	return mirrorHoldDecision(holdDecision{
		verb: "unapprove", args: "HOST/NAMESPACE/TYPE VERSION",
		summary:  "Withdraw an approval: the version is held again until its minimum age (needs a global admin token).",
		examples: []string{"trove mirror hold unapprove registry.terraform.io/hashicorp/aws 5.81.0"},
		call: func(ctx context.Context, c *client.Client, host, ns, typ, versions, _ string) (*apispec.MirrorDecision, error) {
			return nil, c.UnapproveMirroredVersion(ctx, host, ns, typ, versions)
		},
		done: "Withdrew the approval of %s %s",
	})
}

func mirrorHoldDeny() *command {
	return mirrorHoldDecision(holdDecision{
		verb: "deny", args: "HOST/NAMESPACE/TYPE VERSION|CONSTRAINT [--reason TEXT]",
		summary: "Deny versions of a mirrored provider (one version, or a constraint): the mirror stops listing, fetching and serving them, also those it holds already (needs a global admin token).",
		examples: []string{
			`trove mirror hold deny registry.terraform.io/hashicorp/aws 5.81.0 --reason "CVE-2026-0001"`,
			`trove mirror hold deny registry.terraform.io/hashicorp/aws '>= 5.81.0, < 5.81.3' --reason "compromised release"`,
		},
		reasonUsage: "`text` saying why, shown to clients and kept in the audit log",
		constraint:  true,
		call: func(ctx context.Context, c *client.Client, host, ns, typ, versions, reason string) (*apispec.MirrorDecision, error) {
			return decided(c.DenyMirroredVersions(ctx, host, ns, typ, versions, reason))
		},
		done: "Denied %s %s: the mirror no longer lists, fetches or serves it",
	})
}

func mirrorHoldUndeny() *command {
	return mirrorHoldDecision(holdDecision{
		verb: "undeny", args: "HOST/NAMESPACE/TYPE VERSION|CONSTRAINT",
		summary:  "Withdraw a denial, written as it was given (needs a global admin token).",
		examples: []string{"trove mirror hold undeny registry.terraform.io/hashicorp/aws '>= 5.81.0, < 5.81.3'"},
		call: func(ctx context.Context, c *client.Client, host, ns, typ, versions, _ string) (*apispec.MirrorDecision, error) {
			return nil, c.UndenyMirroredVersions(ctx, host, ns, typ, strings.TrimSpace(versions))
		},
		done: "Withdrew the denial of %s %s",
	})
}
