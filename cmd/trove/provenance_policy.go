package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
)

func provenancePolicySet() *command {
	return &command{
		name: "provenance policy set", args: "NAMESPACE --repository REPO [--refs PATTERN] [--issuer URL] [--import-key FILE ...]", minArgs: 1, maxArgs: 1, client: true,
		summary: "Accept provider and module releases into a namespace only from CI builds of one repository (admin on it): other publishes are refused with the reason. " +
			"Modules of air-gap bundles are accepted only with provenance signed by an --import-key. It replaces the whole policy: repeat every flag, every import key included.",
		examples: []string{
			`trove provenance policy set acme --repository acme/infra --refs 'refs/tags/v*'`,
			`trove provenance policy set acme --repository acme/infra --refs 'refs/tags/v*' --import-key exporting-trove.asc`,
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			var req apispec.ProvenancePolicyRequest
			fs.StringVar(&req.Repository, "repository", "", "the CI `repository` releases must be built from, exactly (required)")
			fs.StringVar(&req.Refs, "refs", "", "a `pattern` the build's ref must match: * and ? within a path segment, [...] (e.g. refs/tags/v*)")
			fs.StringVar(&req.Issuer, "issuer", "", "the CI issuer `URL` the build must come from (any trusted issuer if empty)")
			var keyFiles []string
			fs.Func("import-key", "an ASCII-armored public key `file` of an exporting Trove's namespace (its managed key, trove key list there) whose provenance bundles may bring into this namespace; repeat it", func(v string) error {
				keyFiles = append(keyFiles, v)
				return nil
			})
			return func(ctx context.Context, args []string) error {
				req.ImportKeys = nil
				for _, f := range keyFiles {
					data, err := readLimited(f, maxVerifyKey)
					if err != nil {
						return err
					}
					k, err := signing.ParsePublicKey(string(data))
					if err != nil {
						return usagef("--import-key %s: %s", f, registry.Message(err))
					}
					req.ImportKeys = append(req.ImportKeys, apispec.BundleKey{KeyID: k.KeyID, ASCIIArmor: k.ASCIIArmor})
				}
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
	if len(p.ImportKeys) == 0 {
		return s + "; no import keys (bundles bring no modules into it)"
	}
	ids := make([]string, 0, len(p.ImportKeys))
	for _, k := range p.ImportKeys {
		ids = append(ids, k.KeyID)
	}
	return s + "; bundle modules signed by import keys " + strings.Join(ids, ", ")
}
