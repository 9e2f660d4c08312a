package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

// readPasswords reads n passwords from r, one per line (a trailing "\r"
// is dropped). Passwords are never taken from flags: those show in the
// process list and the shell history.
func readPasswords(r io.Reader, n int) ([]string, error) {
	sc := bufio.NewScanner(io.LimitReader(r, 64<<10))
	var out []string
	for len(out) < n && sc.Scan() {
		out = append(out, strings.TrimSuffix(sc.Text(), "\r"))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the password from standard input: %w", err)
	}
	if len(out) < n {
		return nil, usagef("expected %d line(s) on standard input with the password(s), got %d", n, len(out))
	}
	return out, nil
}

func userCreate() *command {
	return &command{
		name: "user create", args: "NAME [--admin] [--password | --password-stdin]", minArgs: 1, maxArgs: 1, client: true,
		summary: "Create a user account (needs a global admin token).",
		examples: []string{
			`trove user create alice --password   # asks for the password twice, without echo`,
			`printf '%s\n' "$PASSWORD" | trove user create alice --password-stdin`,
			`trove user create ci-bot   # no password: the account gets personal tokens only`,
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			admin := fs.Bool("admin", false, "make the user a global administrator")
			ask := fs.Bool("password", false, "give the user a password: asked on the terminal without echo, twice; read from the first line of standard input when that is not a terminal")
			stdin := fs.Bool("password-stdin", false, "read the password from the first line of standard input, even on a terminal")
			return func(ctx context.Context, args []string) error {
				req := apispec.CreateUserRequest{Name: args[0], Admin: *admin}
				var pw []string
				var err error
				switch {
				case *ask && *stdin:
					return usagef("pass --password or --password-stdin, not both")
				case *stdin:
					pw, err = readPasswords(cl.stdin, 1)
				case *ask:
					pw, err = cl.readPasswordsInteractive(passwordPrompt{prompt: "Password for " + args[0] + ": ", confirm: true})
				}
				if err != nil {
					return err
				}
				if len(pw) > 0 {
					req.Password = pw[0]
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				u, err := c.CreateUser(ctx, req)
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(u)
				}
				fmt.Fprintf(cl.stdout, "Created user %s\n", u.Name)
				return nil
			}
		},
	}
}

func userList() *command {
	return &command{
		name: "user list", args: "", client: true,
		summary:  "List the user accounts (needs a global admin token).",
		examples: []string{"trove user list"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				users, err := c.ListUsers(ctx)
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(apispec.UserList{Users: nonNil(users)})
				}
				if len(users) == 0 {
					fmt.Fprintln(cl.stdout, "No users.")
					return nil
				}
				rows := make([]string, 0, len(users))
				for _, u := range users {
					rows = append(rows, row(u.Name, userRole(u), userStatus(u), when(u.CreatedAt)))
				}
				return table(cl.stdout, "NAME\tROLE\tSTATUS\tCREATED", rows)
			}
		},
	}
}

func userRole(u apispec.User) string {
	if u.Admin {
		return "global admin"
	}
	return "user"
}

func userStatus(u apispec.User) string {
	switch {
	case u.Disabled:
		return "disabled"
	case !u.HasPassword:
		return "no password"
	}
	return "active"
}

func userShow() *command {
	return &command{
		name: "user show", args: "NAME", minArgs: 1, maxArgs: 1, client: true,
		summary:  "Show a user and their namespace memberships (global admins, or the user with a personal token).",
		examples: []string{"trove user show alice"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				u, err := c.GetUser(ctx, args[0])
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(u)
				}
				if err := table(cl.stdout, "Name:\t"+cell(u.Name), []string{
					"Role:\t" + cell(userRole(u)),
					"Status:\t" + cell(userStatus(u)),
					"Created:\t" + cell(when(u.CreatedAt)),
				}); err != nil {
					return err
				}
				if len(u.Memberships) == 0 {
					fmt.Fprintln(cl.stdout, "\nNo namespace memberships.")
					return nil
				}
				fmt.Fprintln(cl.stdout)
				rows := make([]string, 0, len(u.Memberships))
				for _, m := range u.Memberships {
					rows = append(rows, row(m.Namespace, m.Role, when(m.CreatedAt)))
				}
				return table(cl.stdout, "NAMESPACE\tROLE\tSINCE", rows)
			}
		},
	}
}

func userPasswd() *command {
	return &command{
		name: "user passwd", args: "NAME [--current]", minArgs: 1, maxArgs: 1, client: true,
		summary: "Set a user's password, asked on the terminal without echo or read from standard input (your own needs the current one first, asked for even without --current; global admins reset anyone's).",
		examples: []string{
			`trove user passwd alice --current   # asks for the current password, then the new one twice`,
			`printf '%s\n%s\n' "$OLD" "$NEW" | trove user passwd alice --current`,
			`printf '%s\n' "$NEW" | trove user passwd bob   # as a global admin`,
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			current := fs.Bool("current", false, "ask for the current password first (without a terminal: standard input holds it on its first line and the new one on the second)")
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				// Your own password needs the current one, also for a
				// global admin: on a terminal, ask for it first, before
				// the new one, rather than be refused after. (Standard
				// input keeps its lines as --current says.)
				if !*current && cl.secret != nil {
					if t, err := c.WhoAmI(ctx); err == nil && t.User != "" && strings.EqualFold(t.User, args[0]) {
						*current = true
					}
				}
				n := 1
				prompts := []passwordPrompt{{prompt: "New password for " + args[0] + ": ", confirm: true}}
				if *current {
					n = 2
					prompts = append([]passwordPrompt{{prompt: "Current password of " + args[0] + ": "}}, prompts...)
				}
				pw, err := cl.readPasswordsInteractive(prompts...)
				if err != nil {
					return err
				}
				req := apispec.UpdateUserRequest{Password: &pw[n-1]}
				if *current {
					req.CurrentPassword = &pw[0]
				}
				if _, err := c.UpdateUser(ctx, args[0], req); err != nil {
					return err
				}
				if !cl.jsonOut {
					fmt.Fprintf(cl.stdout, "Changed the password of user %s\n", args[0])
				}
				return nil
			}
		},
	}
}

// userFlagCommand is a command that sets one flag of a user.
func userFlagCommand(name, summary, done string, set func(req *apispec.UpdateUserRequest)) *command {
	return &command{
		name: name, args: "NAME", minArgs: 1, maxArgs: 1, client: true,
		summary:  summary,
		examples: []string{"trove " + name + " alice"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				var req apispec.UpdateUserRequest
				set(&req)
				c, err := cl.client()
				if err != nil {
					return err
				}
				u, err := c.UpdateUser(ctx, args[0], req)
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(u)
				}
				fmt.Fprintf(cl.stdout, "%s user %s\n", done, u.Name)
				return nil
			}
		},
	}
}

func userDisable() *command {
	return userFlagCommand("user disable", "Disable a user: they cannot log in and their tokens stop working (needs a global admin token).",
		"Disabled", func(req *apispec.UpdateUserRequest) { t := true; req.Disabled = &t })
}

func userEnable() *command {
	return userFlagCommand("user enable", "Enable a disabled user again (needs a global admin token).",
		"Enabled", func(req *apispec.UpdateUserRequest) { f := false; req.Disabled = &f })
}

func userAdmin() *command {
	return &command{
		name: "user admin", args: "NAME true|false", minArgs: 2, maxArgs: 2, client: true,
		summary:  "Make a user a global administrator, or no longer one (needs a global admin token).",
		examples: []string{"trove user admin alice true", "trove user admin alice false"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				admin, err := strconv.ParseBool(args[1])
				if err != nil {
					return usagef("the second argument must be true or false, got %q", args[1])
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				u, err := c.UpdateUser(ctx, args[0], apispec.UpdateUserRequest{Admin: &admin})
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(u)
				}
				fmt.Fprintf(cl.stdout, "User %s is now: %s\n", u.Name, userRole(u))
				return nil
			}
		},
	}
}

func memberAdd() *command {
	return &command{
		name: "member add", args: "NAMESPACE USER --role reader|publisher|admin", minArgs: 2, maxArgs: 2, client: true,
		summary: "Give a user a role in a namespace, or change it (needs admin on the namespace).",
		examples: []string{
			"trove member add acme alice --role publisher",
			"trove member add acme bob --role reader",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			role := new(string)
			fs.Func("role", "`role`: reader (read), publisher (read and publish) or admin (also keys, tokens and members)", func(v string) error {
				*role = v
				return checkKeyword(registry.ParseRole, v)
			})
			return func(ctx context.Context, args []string) error {
				if *role == "" {
					return usagef("--role is required: reader, publisher or admin")
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				m, err := c.SetMember(ctx, args[0], args[1], *role)
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(m)
				}
				fmt.Fprintf(cl.stdout, "User %s is %s of namespace %s\n", m.User, m.Role, m.Namespace)
				return nil
			}
		},
	}
}

func memberList() *command {
	return &command{
		name: "member list", args: "NAMESPACE", minArgs: 1, maxArgs: 1, client: true,
		summary:  "List the members of a namespace and their roles (needs admin on the namespace).",
		examples: []string{"trove member list acme"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				ms, err := c.ListMembers(ctx, args[0])
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(apispec.MembershipList{Members: nonNil(ms)})
				}
				if len(ms) == 0 {
					fmt.Fprintf(cl.stdout, "Namespace %s has no members.\n", args[0])
					return nil
				}
				rows := make([]string, 0, len(ms))
				for _, m := range ms {
					rows = append(rows, row(m.User, m.Role, when(m.CreatedAt)))
				}
				return table(cl.stdout, "USER\tROLE\tSINCE", rows)
			}
		},
	}
}

func memberRemove() *command {
	return &command{
		name: "member remove", args: "NAMESPACE USER", minArgs: 2, maxArgs: 2, client: true,
		summary:  "Remove a user from a namespace (needs admin on the namespace).",
		examples: []string{"trove member remove acme bob"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				if err := c.RemoveMember(ctx, args[0], args[1]); err != nil {
					return err
				}
				if !cl.jsonOut {
					fmt.Fprintf(cl.stdout, "Removed user %s from namespace %s\n", args[1], args[0])
				}
				return nil
			}
		},
	}
}
