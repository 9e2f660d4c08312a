package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

// claimFlags collects repeated --claim NAME=PATTERN flags.
type claimFlags map[string]string

func (c claimFlags) String() string { return "" }

func (c claimFlags) Set(v string) error {
	name, pattern, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME=PATTERN, such as repository=acme/infra, not %q", v)
	}
	if _, dup := c[name]; dup {
		return fmt.Errorf("claim %s is given twice: one pattern per claim (use * and ? for alternatives)", name)
	}
	c[name] = pattern
	return nil
}

func trustPolicyCreate() *command {
	return &command{
		name: "trust-policy create", args: "NAMESPACE --issuer URL --claim NAME=PATTERN... [--audience AUD] [--scope publish|read] [--ttl D] [--description TEXT]",
		minArgs: 1, maxArgs: 1, client: true,
		summary: "Trust a CI system's ID tokens to publish to the namespace without a stored secret (needs admin on the namespace).",
		examples: []string{
			"trove trust-policy create acme --issuer https://token.actions.githubusercontent.com \\\n" +
				"      --claim repository=acme/infra --claim 'ref=refs/tags/v*'",
			"trove trust-policy create acme --issuer https://gitlab.com \\\n" +
				"      --claim project_path=acme/infra --claim ref_type=tag --claim environment=production",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			claims := claimFlags{}
			issuer := fs.String("issuer", "", "the OpenID Connect issuer `URL`, exactly as the tokens' iss claim writes it")
			fs.Var(claims, "claim", "a condition `NAME=PATTERN` on a claim of the token (repeat; at least one); * and ? are wildcards")
			audience := fs.String("audience", "", "the `aud` the tokens must carry (default: the registry's URL)")
			scope := fs.String("scope", "publish", "what the issued tokens may do: publish or read")
			ttl := fs.Duration("ttl", registry.DefaultTrustTokenTTL, "lifetime of the issued tokens (1m to 1h)")
			description, _ := textFlag(fs, "description", "free `text` describing the policy", registry.DescriptionLimit)
			return func(ctx context.Context, args []string) error {
				if *issuer == "" {
					return usagef("--issuer is required")
				}
				if len(claims) == 0 {
					return usagef("at least one --claim NAME=PATTERN is required: without one the policy would trust every pipeline of the issuer")
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				p, err := c.CreateTrustPolicy(ctx, args[0], apispec.CreateTrustPolicyRequest{
					Issuer: *issuer, Audience: *audience, Conditions: claims, Scope: *scope,
					TokenTTLSeconds: int64(*ttl / time.Second), Description: *description,
				})
				if err != nil {
					return cl.explain(err)
				}
				if cl.jsonOut {
					return cl.printJSON(p)
				}
				fmt.Fprintf(cl.stdout, "Created trust policy %s of namespace %s: ID tokens of %s for audience %s whose claims match %s get a %s token of %s for %s\n",
					p.ID, p.Namespace, p.Issuer, p.Audience, conditionList(p.Conditions), p.Scope, p.Namespace, time.Duration(p.TokenTTLSeconds)*time.Second)
				return nil
			}
		},
	}
}

func trustPolicyList() *command {
	return &command{
		name: "trust-policy list", args: "NAMESPACE", minArgs: 1, maxArgs: 1, client: true,
		summary:  "List the trust policies of a namespace (needs admin on the namespace).",
		examples: []string{"trove trust-policy list acme", "trove trust-policy list acme --json"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				ps, err := c.ListTrustPolicies(ctx, args[0])
				if err != nil {
					return cl.explain(err)
				}
				if cl.jsonOut {
					return cl.printJSON(apispec.TrustPolicyList{Policies: ps})
				}
				rows := make([]string, 0, len(ps))
				for _, p := range ps {
					rows = append(rows, row(p.ID, p.Issuer, p.Audience, conditionList(p.Conditions), p.Scope,
						(time.Duration(p.TokenTTLSeconds)*time.Second).String(), p.Description))
				}
				return table(cl.stdout, "ID\tISSUER\tAUDIENCE\tCONDITIONS\tSCOPE\tTTL\tDESCRIPTION", rows)
			}
		},
	}
}

func trustPolicyDelete() *command {
	return &command{
		name: "trust-policy delete", args: "NAMESPACE POLICY_ID", minArgs: 2, maxArgs: 2, client: true,
		summary:  "Delete a trust policy (needs admin on the namespace); tokens issued under it live until they expire.",
		examples: []string{"trove trust-policy delete acme tp_0123456789abcdef"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				if _, err := registry.ParseTrustPolicyID(args[1]); err != nil {
					return usagef("%s", registry.Message(err))
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				if err := c.DeleteTrustPolicy(ctx, args[0], args[1]); err != nil {
					return cl.explain(err)
				}
				fmt.Fprintf(cl.stdout, "Deleted trust policy %s of namespace %s\n", args[1], args[0])
				return nil
			}
		},
	}
}

// conditionList writes conditions as "name=pattern, ..." sorted by name.
func conditionList(c map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range c {
			if !yield(k) {
				return
			}
		}
	}) {
		parts = append(parts, k+"="+c[k])
	}
	return strings.Join(parts, ", ")
}
