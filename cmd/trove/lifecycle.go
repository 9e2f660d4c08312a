package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

// lifecycleSummaries say what each operation does to a provider or a
// module version, as the clients show it, and the right it needs.
var lifecycleSummaries = map[string]struct{ provider, module string }{
	"deprecate": {
		provider: "Deprecate a provider version with a reason and an optional link: it stays installable; terraform and tofu init print the reason (needs publish on the namespace).",
		module:   "Deprecate a module version with a reason and an optional link: it stays installable; the API and web UI show the reason, no released terraform or tofu prints it (needs publish on the namespace).",
	},
	"undeprecate": {
		provider: "Clear the deprecation of a provider version (needs publish on the namespace).",
		module:   "Clear the deprecation of a module version (needs publish on the namespace).",
	},
	"revoke": {
		provider: "Revoke a provider version: it is no longer listed, so new resolutions skip it, and a lock file that pins it stops installing (needs admin on the namespace).",
		module:   "Revoke a module version: it is no longer listed, so version constraints skip it and a configuration that pins it stops installing (needs admin on the namespace).",
	},
	"restore": {
		provider: "Restore a revoked provider version: it is listed and installs again (needs admin on the namespace).",
		module:   "Restore a revoked module version: it is listed and installs again (needs admin on the namespace).",
	},
}

// lifecycleCommand builds "trove provider|module OP ADDRESS VERSION".
func lifecycleCommand(module bool, op string) *command {
	kind, address, example := "provider", "NAMESPACE/TYPE", "acme/foo"
	if module {
		kind, address, example = "module", "NAMESPACE/NAME/SYSTEM", "acme/network/aws"
	}
	args := address + " VERSION"
	examples := []string{fmt.Sprintf("trove %s %s %s 1.2.0", kind, op, example)}
	switch op {
	case "deprecate":
		args += " --reason TEXT [--link URL]"
		examples = []string{fmt.Sprintf("trove %s deprecate %s 1.2.0 --reason \"CVE-2025-1234: upgrade to 1.3\" --link https://example.com/advisory", kind, example)}
	case "revoke":
		args += " --reason TEXT"
		examples = []string{fmt.Sprintf("trove %s revoke %s 1.2.0 --reason \"packages built from the wrong commit\"", kind, example)}
	}
	return &command{
		name: kind + " " + op, args: args, minArgs: 2, maxArgs: 2, client: true,
		summary:  lifecycleSummary(op, module),
		examples: examples,
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			var reason, link *string
			if op == "deprecate" || op == "revoke" {
				reason = fs.String("reason", "", fmt.Sprintf("why, in one line of at most %d characters (required)", registry.MaxLifecycleReason))
			}
			if op == "deprecate" {
				link = fs.String("link", "", "an https `URL` with more information (optional)")
			}
			return func(ctx context.Context, args []string) error {
				parts := strings.Split(args[0], "/")
				if want := 2 + btoi(module); len(parts) != want || slices0(parts) {
					return usagef("want %s, e.g. %s, got %q", address, example, args[0])
				}
				version := args[1]
				if _, err := registry.ParseVersion(version); err != nil {
					return usagef("%s", registry.Message(err))
				}
				var depReq apispec.DeprecateRequest
				var revReq apispec.RevokeRequest
				switch op {
				case "deprecate":
					depReq = apispec.DeprecateRequest{Reason: *reason, Link: *link}
					if err := depReq.Validate(); err != nil {
						return usagef("--reason/--link: %s", registry.Message(err))
					}
				case "revoke":
					revReq = apispec.RevokeRequest{Reason: *reason}
					if err := revReq.Validate(); err != nil {
						return usagef("--reason: %s", registry.Message(err))
					}
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				if op == "deprecate" || op == "revoke" {
					printBlastRadius(ctx, cl, c, parts, version)
				}
				var out any
				var dep *apispec.Deprecation
				var rev *apispec.Revocation
				if module {
					ns, name, system := parts[0], parts[1], parts[2]
					var v apispec.ModuleVersion
					switch op {
					case "deprecate":
						v, err = c.DeprecateModuleVersion(ctx, ns, name, system, version, depReq)
					case "undeprecate":
						v, err = c.UndeprecateModuleVersion(ctx, ns, name, system, version)
					case "revoke":
						v, err = c.RevokeModuleVersion(ctx, ns, name, system, version, revReq)
					default:
						v, err = c.RestoreModuleVersion(ctx, ns, name, system, version)
					}
					out, dep, rev = v, v.Deprecation, v.Revocation
				} else {
					ns, typ := parts[0], parts[1]
					var v apispec.ProviderVersion
					switch op {
					case "deprecate":
						v, err = c.DeprecateProviderVersion(ctx, ns, typ, version, depReq)
					case "undeprecate":
						v, err = c.UndeprecateProviderVersion(ctx, ns, typ, version)
					case "revoke":
						v, err = c.RevokeProviderVersion(ctx, ns, typ, version, revReq)
					default:
						v, err = c.RestoreProviderVersion(ctx, ns, typ, version)
					}
					out, dep, rev = v, v.Deprecation, v.Revocation
				}
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(out)
				}
				fmt.Fprintf(cl.stdout, "%s %s %s: %s\n", kind, args[0], version, lifecycleState(dep, rev))
				return nil
			}
		},
	}
}

// lifecycleState describes a version's lifecycle in one line.
func lifecycleState(dep *apispec.Deprecation, rev *apispec.Revocation) string {
	var parts []string
	if dep != nil {
		parts = append(parts, "deprecated ("+deprecationText(dep)+")")
	}
	if rev != nil {
		parts = append(parts, "revoked ("+rev.Reason+")")
	}
	if len(parts) == 0 {
		return "active (neither deprecated nor revoked)"
	}
	return strings.Join(parts, ", ")
}

// deprecationText is a deprecation's reason, with its link if any.
func deprecationText(d *apispec.Deprecation) string {
	if d.Link == "" {
		return d.Reason
	}
	return d.Reason + " " + d.Link
}

// versionLabel is a version in a list, marked when deprecated or revoked.
func versionLabel(version string, dep *apispec.Deprecation, rev *apispec.Revocation) string {
	switch {
	case rev != nil:
		return version + " (revoked)"
	case dep != nil:
		return version + " (deprecated)"
	}
	return version
}

// lifecycleRows are the rows "show" prints for a deprecated or revoked
// version.
func lifecycleRows(dep *apispec.Deprecation, rev *apispec.Revocation) []string {
	var rows []string
	if dep != nil {
		rows = append(rows, "Deprecated:\t"+cell(deprecationText(dep)+", "+when(dep.DeprecatedAt)+" by "+dep.DeprecatedBy))
	}
	if rev != nil {
		rows = append(rows, "Revoked:\t"+cell(rev.Reason+", "+when(rev.RevokedAt)+" by "+rev.RevokedBy))
	}
	return rows
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// slices0 reports whether any part is empty.
func slices0(parts []string) bool {
	for _, p := range parts {
		if p == "" {
			return true
		}
	}
	return false
}

// lifecycleSummary is the summary of "trove provider|module OP".
func lifecycleSummary(op string, module bool) string {
	if module {
		return lifecycleSummaries[op].module
	}
	return lifecycleSummaries[op].provider
}
