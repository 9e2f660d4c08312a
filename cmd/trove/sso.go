package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"strings"

	"trove.dev/trove/apispec"
)

// The commands of single sign-on, for global admins:
// `trove sso provider list|set|remove` and `trove sso mapping
// list|add|remove`.

func ssoProviderList() *command {
	return &command{
		name: "sso provider list", args: "", client: true,
		summary:  "List the OpenID Connect identity providers people sign in with (needs a global admin token).",
		examples: []string{"trove sso provider list", "trove sso provider list --json"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				list, err := c.ListIdentityProviders(ctx)
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(apispec.IdentityProviderList{Providers: nonNil(list)})
				}
				if len(list) == 0 {
					fmt.Fprintln(cl.stdout, "No identity providers. Add one with: trove sso provider set NAME --issuer URL --client-id ID")
					return nil
				}
				rows := make([]string, 0, len(list))
				for _, p := range list {
					rows = append(rows, row(p.Name, p.Issuer, p.ClientID, p.RedirectURI, when(p.UpdatedAt)))
				}
				return table(cl.stdout, "NAME\tISSUER\tCLIENT ID\tREDIRECT URI\tUPDATED", rows)
			}
		},
	}
}

func ssoProviderSet() *command {
	var req apispec.PutIdentityProviderRequest
	var scopes string
	return &command{
		name: "sso provider set", args: "NAME --issuer URL --client-id ID [--client-secret-env VAR] [--scopes LIST] [--username-claim CLAIM] [--display-name TEXT]", minArgs: 1, maxArgs: 1, client: true,
		summary: "Add an OpenID Connect identity provider or replace its whole configuration (needs a global admin token). " +
			"Register <public URL>/oauth/sso/NAME/callback as the redirect URI at the provider.",
		examples: []string{"trove sso provider set corp --issuer https://login.example.com/realms/corp --client-id trove " +
			"--client-secret-env TROVE_OIDC_SECRET_CORP --scopes profile,email,groups --display-name 'Example Corp'"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			fs.StringVar(&req.Issuer, "issuer", "", "issuer `URL` of the provider, exactly as its discovery document names it (checked when Trove can read it)")
			fs.StringVar(&req.ClientID, "client-id", "", "Trove's client `ID` at the provider")
			fs.StringVar(&req.ClientSecretEnv, "client-secret-env", "", "environment `variable` (TROVE_OIDC_SECRET_...) of every Trove replica that holds the client secret; none for a public client")
			fs.StringVar(&scopes, "scopes", "profile,email", "comma-separated `scopes` requested besides openid")
			fs.StringVar(&req.UsernameClaim, "username-claim", "", "`claim` new users' names are derived from (default preferred_username, then email)")
			fs.StringVar(&req.DisplayName, "display-name", "", "`name` on the sign-in buttons (default NAME)")
			return func(ctx context.Context, args []string) error {
				req.Scopes = nil
				for _, s := range strings.Split(scopes, ",") {
					if s = strings.TrimSpace(s); s != "" {
						req.Scopes = append(req.Scopes, s)
					}
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				p, err := c.PutIdentityProvider(ctx, args[0], req)
				if err != nil {
					return err
				}
				for _, w := range p.Warnings {
					fmt.Fprintf(cl.stderr, "warning: %s\n", printable(w))
				}
				if cl.jsonOut {
					return cl.printJSON(p)
				}
				fmt.Fprintf(cl.stdout, "Set identity provider %s (issuer %s). Its redirect URI: %s\n", p.Name, p.Issuer, p.RedirectURI)
				return nil
			}
		},
	}
}

func ssoProviderRemove() *command {
	return &command{
		name: "sso provider remove", args: "NAME", minArgs: 1, maxArgs: 1, client: true,
		summary:  "Remove an identity provider and its role mappings; the users it created stay (needs a global admin token).",
		examples: []string{"trove sso provider remove corp"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				if err := c.DeleteIdentityProvider(ctx, args[0]); err != nil {
					return err
				}
				if !cl.jsonOut {
					fmt.Fprintf(cl.stdout, "Removed identity provider %s\n", args[0])
				}
				return nil
			}
		},
	}
}

func ssoMappingList() *command {
	var provider string
	return &command{
		name: "sso mapping list", args: "[--provider NAME]", client: true,
		summary:  "List the role mappings of identity providers (needs a global admin token).",
		examples: []string{"trove sso mapping list", "trove sso mapping list --provider corp"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			fs.StringVar(&provider, "provider", "", "only the mappings of this identity `provider`")
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				list, err := c.ListRoleMappings(ctx, provider)
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(apispec.RoleMappingList{Mappings: nonNil(list)})
				}
				if len(list) == 0 {
					fmt.Fprintln(cl.stdout, "No role mappings. Add one with: trove sso mapping add PROVIDER --claim groups --value GROUP --namespace NS --role ROLE")
					return nil
				}
				rows := make([]string, 0, len(list))
				for _, m := range list {
					rows = append(rows, row(strconv.FormatInt(m.ID, 10), m.Provider, m.Claim+"="+m.Value, m.Namespace, m.Role))
				}
				return table(cl.stdout, "ID\tPROVIDER\tCLAIM\tNAMESPACE\tROLE", rows)
			}
		},
	}
}

func ssoMappingAdd() *command {
	var req apispec.CreateRoleMappingRequest
	return &command{
		name: "sso mapping add", args: "PROVIDER --claim CLAIM --value VALUE --namespace NS --role ROLE", minArgs: 1, maxArgs: 1, client: true,
		summary: "Give people whose ID token has a claim value a role in a namespace, or the global admin flag with --namespace '*' --role admin; " +
			"applied at every sign-in (needs a global admin token).",
		examples: []string{"trove sso mapping add corp --claim groups --value platform --namespace acme --role publisher",
			"trove sso mapping add corp --claim groups --value registry-admins --namespace '*' --role admin"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			fs.StringVar(&req.Claim, "claim", "groups", "`claim` of the ID token")
			fs.StringVar(&req.Value, "value", "", "`value` the claim must be or hold")
			fs.StringVar(&req.Namespace, "namespace", "", "`namespace` of the role, or '*' for the global admin flag")
			fs.StringVar(&req.Role, "role", "reader", "`role`: reader, publisher or admin")
			return func(ctx context.Context, args []string) error {
				req.Provider = args[0]
				c, err := cl.client()
				if err != nil {
					return err
				}
				m, err := c.CreateRoleMapping(ctx, req)
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(m)
				}
				fmt.Fprintf(cl.stdout, "Added role mapping %d: %s=%s gives %s in %s\n", m.ID, m.Claim, m.Value, m.Role, m.Namespace)
				return nil
			}
		},
	}
}

func ssoMappingRemove() *command {
	return &command{
		name: "sso mapping remove", args: "ID", minArgs: 1, maxArgs: 1, client: true,
		summary:  "Remove a role mapping; the roles it granted go at each user's next sign-in (needs a global admin token).",
		examples: []string{"trove sso mapping remove 3"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				id, err := strconv.ParseInt(args[0], 10, 64)
				if err != nil || id <= 0 {
					return &usageError{"the ID must be the number trove sso mapping list shows"}
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				if err := c.DeleteRoleMapping(ctx, id); err != nil {
					return err
				}
				if !cl.jsonOut {
					fmt.Fprintf(cl.stdout, "Removed role mapping %d\n", id)
				}
				return nil
			}
		},
	}
}
