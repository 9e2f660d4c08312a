package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

// readGitCredential reads a credential from path ("-": stdin), without its
// trailing line break.
func readGitCredential(cl *cli, path, what string) (string, error) {
	data, name, err := readInput(path, cl.stdin, registry.MaxGitCredentialBytes)
	if err != nil {
		return "", err
	}
	if len(data) > registry.MaxGitCredentialBytes {
		return "", fmt.Errorf("%s in %s is longer than %d bytes", what, name, registry.MaxGitCredentialBytes)
	}
	return strings.TrimRight(string(data), "\r\n"), nil
}

func moduleSourceAdd() *command {
	return &command{
		name: "module source add", args: "NAMESPACE/NAME/SYSTEM URL [--subdir DIR] [--tag-prefix P] [--username U --password-file F | --ssh-key-file F --known-hosts-file F] [--poll-interval D]",
		minArgs: 2, maxArgs: 2, client: true,
		summary: "Take a module's versions from the semver tags of a Git repository (needs admin on the namespace); prints the push webhook's URL and secret once.",
		examples: []string{
			"trove module source add acme/network/aws https://git.example.com/acme/network.git",
			"trove module source add acme/network/aws https://git.example.com/acme/infra.git --subdir modules/network --tag-prefix network/",
			"printf %s \"$TOKEN\" | trove module source add acme/network/aws https://git.example.com/acme/network.git --username ci --password-file -",
			"trove module source add acme/network/aws git@git.example.com:acme/network.git --ssh-key-file deploy_key --known-hosts-file known_hosts",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			subdir := fs.String("subdir", "", "the module's `directory` in the repository (default: its root)")
			prefix := fs.String("tag-prefix", "", "take only tags starting with this `prefix` (e.g. network/ for network/v1.2.0)")
			user := fs.String("username", "", "basic-auth `user` for an https:// repository (with --password-file)")
			passwordFile := fs.String("password-file", "", "`file` holding the password or access token (\"-\": standard input); never give it on the command line")
			keyFile := fs.String("ssh-key-file", "", "`file` holding the SSH private key for an ssh:// or user@host:path repository (\"-\": standard input)")
			knownHostsFile := fs.String("known-hosts-file", "", "known_hosts `file` of the SSH server (e.g. made with ssh-keyscan); required with --ssh-key-file")
			poll := fs.String("poll-interval", "", "how often to poll the repository, e.g. 15m; \"never\" for webhooks only (default: the server's --git-poll-interval)")
			return func(ctx context.Context, args []string) error {
				ns, name, system, err := moduleAddress(args[0])
				if err != nil {
					return err
				}
				if _, err := registry.ParseGitURL(args[1]); err != nil {
					return usagef("%s", registry.Message(err))
				}
				req := apispec.CreateGitSourceRequest{URL: args[1], Subdir: *subdir, TagPrefix: *prefix}
				switch *poll {
				case "":
				case "never":
					req.PollIntervalSeconds = -1
				default:
					d, err := time.ParseDuration(*poll)
					if err != nil || d < registry.MinGitPollInterval {
						return usagef("--poll-interval must be a duration of at least %s (e.g. 15m) or never, got %q", registry.MinGitPollInterval, *poll)
					}
					req.PollIntervalSeconds = int64(d / time.Second)
				}
				switch {
				case *passwordFile != "" && *keyFile != "":
					return usagef("give --password-file (https) or --ssh-key-file (ssh), not both")
				case *passwordFile != "":
					if *user == "" {
						return usagef("--password-file needs --username (for a token, the user name the Git host expects, e.g. oauth2 or x-access-token)")
					}
					req.Auth, req.Username = registry.GitAuthBasic, *user
					if req.Password, err = readGitCredential(cl, *passwordFile, "the password"); err != nil {
						return err
					}
				case *keyFile != "":
					if *knownHostsFile == "" {
						return usagef("--ssh-key-file needs --known-hosts-file, so that Trove talks to no other server (ssh-keyscan HOST > known_hosts, then check it)")
					}
					req.Auth, req.Username = registry.GitAuthSSH, *user
					if req.SSHPrivateKey, err = readGitCredential(cl, *keyFile, "the SSH key"); err != nil {
						return err
					}
					if req.KnownHosts, err = readGitCredential(cl, *knownHostsFile, "known_hosts"); err != nil {
						return err
					}
				case *user != "":
					return usagef("--username needs --password-file")
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				created, err := c.CreateGitSource(ctx, ns, name, system, req)
				if err != nil {
					return cl.explain(err)
				}
				if cl.jsonOut {
					return cl.printJSON(created)
				}
				fmt.Fprintf(cl.stdout, "Added git source %s to %s/%s/%s; its first sync runs now (trove module source list %s shows the outcome)\n",
					created.URL, created.Namespace, created.Name, created.System, created.Namespace)
				fmt.Fprintf(cl.stdout, "Push webhook (optional): URL %s\n  secret %s\n  (GitHub: content type application/json and this secret; GitLab: this secret token; shown only now)\n",
					created.WebhookURL, created.WebhookSecret)
				return nil
			}
		},
	}
}

func moduleSourceList() *command {
	return &command{
		name: "module source list", args: "NAMESPACE", minArgs: 1, maxArgs: 1, client: true,
		summary:  "List the git sources of a namespace's modules with their last sync (needs publish on the namespace).",
		examples: []string{"trove module source list acme", "trove module source list acme --json"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				all, err := c.ListGitSources(ctx, args[0])
				if err != nil {
					return cl.explain(err)
				}
				if cl.jsonOut {
					return cl.printJSON(apispec.GitSourceList{GitSources: all})
				}
				rows := make([]string, 0, len(all))
				for _, g := range all {
					last, status := "never", "ok"
					if g.LastSyncAt != nil {
						last = g.LastSyncAt.UTC().Format(time.RFC3339)
					}
					if g.LastError != "" {
						status = g.LastError
					}
					poll := "default"
					switch {
					case g.PollIntervalSeconds < 0:
						poll = "never"
					case g.PollIntervalSeconds > 0:
						poll = (time.Duration(g.PollIntervalSeconds) * time.Second).String()
					}
					rows = append(rows, row(g.Namespace+"/"+g.Name+"/"+g.System, g.URL, g.Subdir, g.TagPrefix, g.Auth, poll, last, status))
				}
				return table(cl.stdout, "MODULE\tURL\tSUBDIR\tTAG PREFIX\tAUTH\tPOLL\tLAST SYNC\tSTATUS", rows)
			}
		},
	}
}

func moduleSourceRemove() *command {
	return &command{
		name: "module source remove", args: "NAMESPACE/NAME/SYSTEM", minArgs: 1, maxArgs: 1, client: true,
		summary:  "Stop taking a module's versions from Git (needs admin on the namespace); published versions stay.",
		examples: []string{"trove module source remove acme/network/aws"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				ns, name, system, err := moduleAddress(args[0])
				if err != nil {
					return err
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				if err := c.DeleteGitSource(ctx, ns, name, system); err != nil {
					return cl.explain(err)
				}
				fmt.Fprintf(cl.stdout, "Removed the git source of %s; its published versions stay\n", args[0])
				return nil
			}
		},
	}
}

func moduleSourceSync() *command {
	return &command{
		name: "module source sync", args: "NAMESPACE/NAME/SYSTEM", minArgs: 1, maxArgs: 1, client: true,
		summary:  "Publish a module's new version tags from its Git repository now (needs publish on the namespace).",
		examples: []string{"trove module source sync acme/network/aws"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				ns, name, system, err := moduleAddress(args[0])
				if err != nil {
					return err
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				res, err := c.SyncGitSource(ctx, ns, name, system)
				if err != nil {
					return cl.explain(err)
				}
				if cl.jsonOut {
					return cl.printJSON(res)
				}
				if len(res.Published) == 0 {
					fmt.Fprintf(cl.stdout, "Synced %s: nothing new (%d versions published before, %d tags without a version ignored)\n", args[0], res.Current, res.Ignored)
				} else {
					fmt.Fprintf(cl.stdout, "Synced %s: published %s\n", args[0], strings.Join(res.Published, ", "))
				}
				for _, r := range res.Refused {
					fmt.Fprintf(cl.stderr, "refused: %s\n", r)
				}
				if len(res.Refused) > 0 {
					return fmt.Errorf("%d tags were not published (see above)", len(res.Refused))
				}
				return nil
			}
		},
	}
}
