package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"trove.dev/trove/internal/apispec"
	"trove.dev/trove/internal/client"
)

func tokenCreate() *command {
	return &command{
		name: "token create", args: "[--namespace NS] --scope publish[,read,...] [--description TEXT] [--expires-in 720h]", client: true,
		summary: "Create a token and print its secret, which is shown only once.",
		examples: []string{
			`trove token create --namespace acme --scope publish --description "CI of terraform-provider-foo" --expires-in 2160h`,
			`secret=$(trove token create --namespace acme --scope read --description "terraform init on laptops")`,
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			namespace := fs.String("namespace", "", "`namespace` the token is bound to (default: a global token, global admins only)")
			scope := fs.String("scope", "", "comma-separated `scopes`: read, publish, admin (admin implies publish, publish implies read)")
			description := fs.String("description", "", "`text` saying what the token is for")
			expiresIn := fs.Duration("expires-in", 0, "lifetime of the token, e.g. 720h (default: never expires)")
			return func(ctx context.Context, args []string) error {
				scopes := splitList(*scope)
				if len(scopes) == 0 {
					return usagef("--scope is required, e.g. --scope publish")
				}
				if *expiresIn < 0 {
					return usagef("--expires-in must be positive, got %s", *expiresIn)
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				created, err := c.CreateToken(ctx, apispec.CreateTokenRequest{
					Namespace: *namespace, Scopes: scopes, Description: *description,
					ExpiresAt: client.ExpiresIn(*expiresIn),
				})
				if err != nil {
					return err
				}
				if cl.jsonOut {
					if err := cl.printJSON(created); err != nil {
						return err
					}
				} else {
					fmt.Fprintln(cl.stdout, created.Secret)
				}
				fmt.Fprintf(cl.stderr, "Created token %s (%s). Its secret is shown only once and only its hash is stored: keep it now.\n",
					created.Token.ID, describeToken(created.Token))
				return nil
			}
		},
	}
}

// describeToken says what a token grants, for humans.
func describeToken(t apispec.Token) string {
	where := "every namespace"
	if t.Namespace != "" {
		where = "namespace " + t.Namespace
	}
	s := strings.Join(t.Scopes, ", ") + " on " + where
	if t.ExpiresAt != nil {
		s += ", expires " + when(*t.ExpiresAt)
	}
	return s
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func tokenList() *command {
	return &command{
		name: "token list", args: "[--namespace NS]", client: true,
		summary:  "List tokens (their secrets are never shown again).",
		examples: []string{"trove token list", "trove token list --namespace acme"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			namespace := fs.String("namespace", "", "list only the tokens bound to this `namespace`")
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				tokens, err := c.ListTokens(ctx, *namespace)
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(apispec.TokenList{Tokens: nonNil(tokens)})
				}
				if len(tokens) == 0 {
					fmt.Fprintln(cl.stdout, "No tokens.")
					return nil
				}
				now := time.Now()
				rows := make([]string, 0, len(tokens))
				for _, t := range tokens {
					ns := t.Namespace
					if ns == "" {
						ns = "(global)"
					}
					rows = append(rows, row(t.ID, ns, strings.Join(t.Scopes, ","), t.Description,
						when(t.CreatedAt), whenPtr(t.ExpiresAt, "never"), tokenStatus(t, now)))
				}
				return table(cl.stdout, "ID\tNAMESPACE\tSCOPES\tDESCRIPTION\tCREATED\tEXPIRES\tSTATUS", rows)
			}
		},
	}
}

func tokenStatus(t apispec.Token, now time.Time) string {
	switch {
	case t.RevokedAt != nil:
		return "revoked " + when(*t.RevokedAt)
	case t.ExpiresAt != nil && !now.Before(*t.ExpiresAt):
		return "expired"
	default:
		return "active"
	}
}

func tokenRevoke() *command {
	return &command{
		name: "token revoke", args: "ID", minArgs: 1, maxArgs: 1, client: true,
		summary:  "Revoke a token; it stops working at once.",
		examples: []string{"trove token revoke tok_0123456789abcdef"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				if err := c.RevokeToken(ctx, args[0]); err != nil {
					return err
				}
				if !cl.jsonOut {
					fmt.Fprintf(cl.stdout, "Revoked token %s\n", args[0])
				}
				return nil
			}
		},
	}
}
