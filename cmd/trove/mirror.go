package main

import (
	"context"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/mirror"
	"trove.dev/trove/internal/registry"
)

// The commands of the provider mirror's upstream registries, for global
// admins: `trove mirror upstream list|show|set|remove`.

func mirrorUpstreamList() *command {
	return &command{
		name: "mirror upstream list", args: "", client: true,
		summary:  "List the registries the provider mirror fetches from, with what each allows (needs a global admin token).",
		examples: []string{"trove mirror upstream list", "trove mirror upstream list --json"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				list, err := c.ListMirrorUpstreams(ctx)
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(apispec.MirrorUpstreamList{Upstreams: nonNil(list)})
				}
				if len(list) == 0 {
					fmt.Fprintln(cl.stdout, "No mirror upstreams: the mirror fetches nothing. Add one with: trove mirror upstream set HOST --allow 'NAMESPACE/*'")
					return nil
				}
				rows := make([]string, 0, len(list))
				for _, u := range list {
					rows = append(rows, row(u.Host, describeRules(u.Allow), serviceText(u.ServiceURL), u.Description, when(u.UpdatedAt)))
				}
				return table(cl.stdout, "HOST\tALLOW\tSERVICE URL\tDESCRIPTION\tUPDATED", rows)
			}
		},
	}
}

func mirrorUpstreamShow() *command {
	return &command{
		name: "mirror upstream show", args: "HOST", minArgs: 1, maxArgs: 1, client: true,
		summary:  "Show one upstream registry of the provider mirror (needs a global admin token).",
		examples: []string{"trove mirror upstream show registry.terraform.io"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				u, err := c.GetMirrorUpstream(ctx, args[0])
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(u)
				}
				rows := []string{"Service URL:\t" + cell(serviceText(u.ServiceURL))}
				rows = append(rows, "CA certificates:\t"+cell(certificatesText(u.CACertificates)))
				if len(u.Allow) == 0 {
					rows = append(rows, "Allow:\tnothing (no provider of this host is mirrored)")
				}
				for i, r := range u.Allow {
					label := ""
					if i == 0 {
						label = "Allow:"
					}
					rows = append(rows, label+"\t"+cell(describeRule(r)))
				}
				rows = append(rows, "Description:\t"+cell(u.Description), "Created:\t"+cell(when(u.CreatedAt)), "Updated:\t"+cell(when(u.UpdatedAt)))
				return table(cl.stdout, "Host:\t"+cell(u.Host), rows)
			}
		},
	}
}

// maxCAFileBytes bounds the file of --upstream-ca-file (the API's limit).
const maxCAFileBytes = registry.MaxCACertificatesLength

func mirrorUpstreamSet() *command {
	return &command{
		name: "mirror upstream set", args: "HOST [--allow NAMESPACE/TYPE[=CONSTRAINT]]... [--min-age AGE] [--service-url URL] [--upstream-ca-file PEMFILE] [--description TEXT]",
		minArgs: 1, maxArgs: 1, client: true,
		summary: "Create an upstream registry of the provider mirror, or replace its whole configuration (needs a global admin token).",
		examples: []string{
			`trove mirror upstream set registry.terraform.io --allow 'hashicorp/*' --allow 'acme/widget=~> 1.2'`,
			`trove mirror upstream set registry.terraform.io --allow '*/*' --min-age 7d   # hold new releases back a week`,
			`trove mirror upstream set registry.example.com --allow '*/*' --upstream-ca-file corp-ca.pem --description "ACME's internal registry"`,
			`trove mirror upstream set registry.opentofu.org   # no --allow: mirror nothing from it`,
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			var req apispec.PutMirrorUpstreamRequest
			fs.Func("allow", "allow the providers `NAMESPACE/TYPE` (* for any namespace or type), at the versions of an optional =CONSTRAINT; repeat it for more rules (default: allow nothing)", func(v string) error {
				provider, versions, _ := strings.Cut(v, "=")
				rule := registry.MirrorRule{Provider: strings.TrimSpace(provider), Versions: strings.TrimSpace(versions)}
				if err := registry.MirrorProviderLimit.CheckText(rule.Provider); err != nil {
					return errors.New(registry.Message(err))
				}
				if err := registry.VersionConstraintLimit.CheckText(rule.Versions); err != nil {
					return errors.New(registry.Message(err))
				}
				if err := mirror.CheckRule(rule); err != nil {
					return errors.New(registry.Message(err))
				}
				req.Allow = append(req.Allow, apispec.MirrorRule{Provider: rule.Provider, Versions: rule.Versions})
				return nil
			})
			minAge := fs.String("min-age", "", "hold new versions back until they are `AGE` old (7d, 36h, 1d12h), for every --allow rule; an admin may approve one earlier (trove mirror hold approve)")
			serviceURL, _ := textFlag(fs, "service-url", "the upstream's providers.v1 base `URL`, instead of service discovery on HOST", registry.ServiceURLLimit)
			caFile := fs.String("upstream-ca-file", "", "PEM `file` of certificate authorities to trust, besides the system's, when connecting to the upstream (- for standard input)")
			description, _ := textFlag(fs, "description", "`text` saying what the upstream is", registry.DescriptionLimit)
			return func(ctx context.Context, args []string) error {
				req.ServiceURL, req.Description = *serviceURL, *description
				if *minAge != "" {
					if _, err := registry.ParseAge(*minAge); err != nil {
						return usagef("--min-age: %s", registry.Message(err))
					}
					for i := range req.Allow {
						req.Allow[i].MinAge = *minAge
					}
				}
				if *caFile != "" {
					pemText, err := readCAFile(*caFile, cl.stdin)
					if err != nil {
						return err
					}
					req.CACertificates = pemText
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				u, err := c.PutMirrorUpstream(ctx, args[0], req)
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(u)
				}
				if len(u.Allow) == 0 {
					fmt.Fprintf(cl.stdout, "Set mirror upstream %s: it allows no provider (pass --allow to mirror some)\n", u.Host)
					return nil
				}
				fmt.Fprintf(cl.stdout, "Set mirror upstream %s: it allows %s\n", u.Host, cell(describeRules(u.Allow)))
				return nil
			}
		},
	}
}

func mirrorUpstreamRemove() *command {
	return &command{
		name: "mirror upstream remove", args: "HOST", minArgs: 1, maxArgs: 1, client: true,
		summary:  "Remove an upstream registry of the provider mirror; what was mirrored from it stays (needs a global admin token).",
		examples: []string{"trove mirror upstream remove registry.opentofu.org"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				if err := c.DeleteMirrorUpstream(ctx, args[0]); err != nil {
					return err
				}
				if !cl.jsonOut {
					fmt.Fprintf(cl.stdout, "Removed mirror upstream %s\n", args[0])
				}
				return nil
			}
		},
	}
}

// readCAFile reads the PEM certificates of --upstream-ca-file ("-":
// standard input), refusing a file without a certificate or with a
// private key before anything is sent.
func readCAFile(path string, stdin io.Reader) (string, error) {
	data, name, err := readInput(path, stdin, maxCAFileBytes)
	if err != nil {
		return "", err
	}
	switch text := string(data); {
	case len(data) > maxCAFileBytes:
		return "", fmt.Errorf("%s is larger than %d bytes: give only the certificates of the upstream's certificate authorities", name, maxCAFileBytes)
	case strings.Contains(text, "PRIVATE KEY"):
		return "", fmt.Errorf("%s holds a private key: give only the certificates of the upstream's certificate authorities", name)
	case certificateCount(text) == 0:
		return "", fmt.Errorf("%s holds no PEM certificate (-----BEGIN CERTIFICATE-----)", name)
	default:
		return text, nil
	}
}

// certificateCount counts the PEM certificate blocks of text.
func certificateCount(text string) int {
	n := 0
	for rest := []byte(text); ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			return n
		}
		if block.Type == "CERTIFICATE" {
			n++
		}
	}
}

func certificatesText(pemText string) string {
	switch n := certificateCount(pemText); {
	case pemText == "":
		return "the system's"
	case n == 1:
		return "1 certificate, besides the system's"
	default:
		return fmt.Sprintf("%d certificates, besides the system's", n)
	}
}

func serviceText(url string) string {
	if url == "" {
		return "(service discovery)"
	}
	return url
}

// describeRule writes a rule as --allow takes it, with a space:
// "acme/widget ~> 1.2".
func describeRule(r apispec.MirrorRule) string {
	s := r.Provider
	if r.Versions != "" {
		s += " " + r.Versions
	}
	if r.MinAge != "" && r.MinAge != "0" {
		s += " (min age " + r.MinAge + ")"
	}
	return s
}

// describeRules lists the rules of an upstream on one line.
func describeRules(rules []apispec.MirrorRule) string {
	if len(rules) == 0 {
		return "nothing"
	}
	parts := make([]string, len(rules))
	for i, r := range rules {
		parts[i] = describeRule(r)
	}
	return strings.Join(parts, ", ")
}
