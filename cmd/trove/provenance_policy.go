package main

import (
	"context"
	"flag"
	"fmt"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

func provenancePolicySet() *command {
	return &command{
		name: "provenance policy set", args: "NAMESPACE --repository REPO [--refs PATTERN] [--issuer URL]", minArgs: 1, maxArgs: 1, client: true,
		summary:  "Accept provider and module releases into a namespace only from CI builds of one repository (admin on it): other publishes are refused with the reason.",
		examples: []string{`trove provenance policy set acme --repository acme/infra --refs 'refs/tags/v*'`},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			var req apispec.ProvenancePolicyRequest
			fs.StringVar(&req.Repository, "repository", "", "the CI `repository` releases must be built from, exactly (required)")
			fs.StringVar(&req.Refs, "refs", "", "a `pattern` the build's ref must match: * and ? within a path segment, [...] (e.g. refs/tags/v*)")
			fs.StringVar(&req.Issuer, "issuer", "", "the CI issuer `URL` the build must come from (any trusted issuer if empty)")
			return func(ctx context.Context, args []string) error {
				if err := req.Validate(); err != nil {
					return usagef("%s", registry.Message(err))
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				p, err := c.SetProvenancePolicy(ctx, args[0], req)
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(p)
				}
				fmt.Fprintf(cl.stdout, "Provenance policy of %s: %s\n", p.Namespace, describePolicy(p))
				return nil
			}
		},
	}
}

func provenancePolicyShow() *command {
	return &command{
		name: "provenance policy show", args: "NAMESPACE", minArgs: 1, maxArgs: 1, client: true,
		summary:  "Show the provenance policy of a namespace.",
		examples: []string{"trove provenance policy show acme"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				p, err := c.GetProvenancePolicy(ctx, args[0])
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(p)
				}
				fmt.Fprintf(cl.stdout, "Provenance policy of %s: %s (set %s by %s)\n", p.Namespace, describePolicy(p), when(p.UpdatedAt), p.UpdatedBy)
				return nil
			}
		},
	}
}

func provenancePolicyDelete() *command {
	return &command{
		name: "provenance policy delete", args: "NAMESPACE", minArgs: 1, maxArgs: 1, client: true,
		summary:  "Remove the provenance policy of a namespace (admin on it): every publish with the publish right is accepted again.",
		examples: []string{"trove provenance policy delete acme"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				if err := c.DeleteProvenancePolicy(ctx, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(cl.stdout, "Removed the provenance policy of %s\n", args[0])
				return nil
			}
		},
	}
}

// describePolicy says what a policy admits, in one line.
func describePolicy(p apispec.ProvenancePolicy) string {
	s := "releases built from " + p.Repository
	if p.Refs != "" {
		s += " on refs matching " + p.Refs
	}
	if p.Issuer != "" {
		s += " by " + p.Issuer
	}
	return s
}
