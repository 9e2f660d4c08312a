package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/config"
	"trove.dev/trove/internal/registry"
)

func tokenCreate() *command {
	return &command{
		name: "token create", args: "[--namespace NS]... [--user NAME] --scope publish[,read,...] [--description TEXT] [--expires-in 720h]", client: true,
		summary: "Create a service token, or with --user a personal token, and print its secret, which is shown only once.",
		examples: []string{
			`trove token create --namespace acme --scope publish --description "CI of terraform-provider-foo" --expires-in 2160h`,
			`trove token create --namespace acme --namespace acme-labs --scope publish --description "CI publishing to two namespaces"`,
			`secret=$(trove token create --namespace acme --scope read --description "terraform init on laptops")`,
			`trove token create --user alice --scope read --expires-in 24h   # a personal token: alice's rights, read only`,
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			var namespaces listFlag
			fs.Var(&namespaces, "namespace", "`namespace` the token is bound to; repeat it, or separate names with commas, to bind it to several (default: a global token, global admins only)")
			user := fs.String("user", "", "make a personal token of this `user`: it carries the user's rights, narrowed by --scope, --namespace and --expires-in (global admins for anyone, users for themselves)")
			var scopes []string
			fs.Func("scope", "comma-separated `scopes`: read, publish, admin (admin implies publish, publish implies read)", func(v string) error {
				for _, s := range splitList(v) {
					if _, err := registry.ParseScope(s); err != nil {
						return errors.New(registry.Message(err))
					}
					scopes = append(scopes, s)
				}
				return nil
			})
			description, _ := textFlag(fs, "description", "`text` saying what the token is for", registry.DescriptionLimit)
			expiresIn := fs.Duration("expires-in", 0, "lifetime of the token, e.g. 720h (default: never expires)")
			return func(ctx context.Context, args []string) error {
				if len(scopes) == 0 {
					return usagef("--scope is required, e.g. --scope publish")
				}
				if *expiresIn < 0 {
					return usagef("--expires-in must be positive, got %s", config.ShortDuration(*expiresIn))
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				created, err := c.CreateToken(ctx, apispec.CreateTokenRequest{
					Namespaces: namespaces, User: *user, Scopes: scopes, Description: *description,
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
	s := strings.Join(t.Scopes, ", ") + " on " + t.NamespacesText()
	if t.User != "" {
		s = "personal token of " + t.User + ": " + s
	}
	if t.ExpiresAt != nil {
		s += ", expires " + when(*t.ExpiresAt)
	}
	return s
}

// listFlag is a repeatable flag whose values may also be comma-separated
// lists; it collects every item.
type listFlag []string

// String returns the items, comma-separated.
func (l *listFlag) String() string { return strings.Join(*l, ",") }

// Set adds the items of one occurrence of the flag.
func (l *listFlag) Set(s string) error {
	*l = append(*l, splitList(s)...)
	return nil
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
		name: "token list", args: "[--namespace NS | --user NAME]", client: true,
		summary:  "List tokens (their secrets are never shown again).",
		examples: []string{"trove token list", "trove token list --namespace acme", "trove token list --user alice"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			namespace := fs.String("namespace", "", "list only the tokens bound to this `namespace` (among others)")
			user := fs.String("user", "", "list only the personal tokens of this `user`")
			return func(ctx context.Context, args []string) error {
				if *namespace != "" && *user != "" {
					return usagef("pass --namespace or --user, not both")
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				var tokens []apispec.Token
				if *user != "" {
					tokens, err = c.ListUserTokens(ctx, *user)
				} else {
					tokens, err = c.ListTokens(ctx, *namespace)
				}
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
					ns := strings.Join(t.NamespaceSet(), ",")
					switch {
					case t.Global():
						ns = "(global)"
					case t.HiddenNamespaces > 0:
						ns = strings.TrimPrefix(ns+fmt.Sprintf(",(%d hidden)", t.HiddenNamespaces), ",")
					}
					rows = append(rows, row(t.ID, ns, t.User, strings.Join(t.Scopes, ","), t.Description,
						when(t.CreatedAt), whenPtr(t.ExpiresAt, "never"), tokenStatus(t, now)))
				}
				return table(cl.stdout, "ID\tNAMESPACES\tUSER\tSCOPES\tDESCRIPTION\tCREATED\tEXPIRES\tSTATUS", rows)
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

func tokenExpire() *command {
	return &command{
		name: "token expire", args: "ID [--in DURATION]", minArgs: 1, maxArgs: 1, client: true,
		summary:  "Make a token expire now, or after --in; an expiry can be brought forward, never pushed back.",
		examples: []string{"trove token expire tok_0123456789abcdef", "trove token expire tok_0123456789abcdef --in 24h"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			in := fs.Duration("in", 0, "time from now until the token expires (default: now)")
			return func(ctx context.Context, args []string) error {
				if *in < 0 {
					return usagef("--in must not be negative, got %s", config.ShortDuration(*in))
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				t, err := c.ExpireToken(ctx, args[0], time.Now().Add(*in).Truncate(time.Second))
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(t)
				}
				fmt.Fprintf(cl.stdout, "Token %s expires %s\n", t.ID, whenPtr(t.ExpiresAt, "never"))
				return nil
			}
		},
	}
}
