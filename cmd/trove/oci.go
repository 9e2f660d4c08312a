package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"trove.dev/trove/client"
	"trove.dev/trove/internal/ocitransfer"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
)

// `trove oci push` and `trove oci pull` copy providers and modules between
// Trove and an external OCI registry (internal/ocitransfer, docs/oci.md).

// registryFlags are the flags that say how to reach the external
// registry.
type registryFlags struct {
	username      string
	passwordStdin bool
	plainHTTP     bool
	caFile        string
}

func (f *registryFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.username, "username", "", "user `name` at the OCI registry (default: the credentials of the Docker/Podman configuration, else anonymous)")
	fs.BoolVar(&f.passwordStdin, "password-stdin", false, "read the registry password (or token) from the first line of standard input (with --username)")
	fs.BoolVar(&f.plainHTTP, "plain-http", false, "speak plain HTTP to the OCI registry (for a test registry on loopback)")
	fs.StringVar(&f.caFile, "registry-ca-file", "", "PEM `file` of a certificate authority to trust for the OCI registry (default: the system roots)")
}

// registry returns how to reach the registry at host.
func (f *registryFlags) registry(cl *cli, host string) (ocitransfer.Registry, error) {
	reg := ocitransfer.Registry{Host: host, Insecure: f.plainHTTP}
	var auth remote.Option
	switch {
	case f.passwordStdin && f.username == "":
		return reg, usagef("--password-stdin needs --username")
	case f.username != "" && !f.passwordStdin:
		return reg, usagef("--username needs --password-stdin (the password is never taken from the command line)")
	case f.username != "":
		line, err := bufio.NewReader(io.LimitReader(cl.stdin, 64<<10)).ReadString('\n')
		if err != nil && err != io.EOF {
			return reg, fmt.Errorf("reading the password from standard input: %w", err)
		}
		password := strings.TrimRight(line, "\r\n")
		if password == "" {
			return reg, usagef("--password-stdin: standard input holds no password")
		}
		auth = remote.WithAuth(&authn.Basic{Username: f.username, Password: password})
	default:
		auth = remote.WithAuthFromKeychain(authn.DefaultKeychain)
	}
	tr := remote.DefaultTransport.(*http.Transport).Clone()
	if f.caFile != "" {
		pem, err := os.ReadFile(f.caFile)
		if err != nil {
			return reg, fmt.Errorf("reading --registry-ca-file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return reg, fmt.Errorf("--registry-ca-file %s holds no PEM certificate", f.caFile)
		}
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	}
	reg.Options = []remote.Option{auth, remote.WithTransport(tr), remote.WithUserAgent("trove-cli/" + buildVersion())}
	return reg, nil
}

// troveRegistry is the Trove server's own OCI API, read with c's TLS
// settings and token.
func troveRegistry(c *client.Client) ocitransfer.Registry {
	host, insecure := c.OCIHost()
	return ocitransfer.Registry{Host: host, Insecure: insecure, Options: []remote.Option{
		remote.WithTransport(c.OCITransport()), remote.WithUserAgent("trove-cli/" + buildVersion()),
	}}
}

// namespaceKeys returns the function that reads a namespace's public keys
// through the API.
func namespaceKeys(c *client.Client) ocitransfer.KeysFunc {
	return func(ctx context.Context, namespace string) ([]registry.SigningKey, error) {
		ks, err := c.ListSigningKeys(ctx, namespace)
		if err != nil {
			return nil, err
		}
		var keys []registry.SigningKey
		for _, k := range ks {
			pk, err := signing.ParsePublicKey(k.ASCIIArmor)
			if err != nil {
				return nil, fmt.Errorf("key %s of namespace %s: %w", k.KeyID, namespace, err)
			}
			keys = append(keys, pk)
		}
		return keys, nil
	}
}

// parseOCIItem parses NAMESPACE/TYPE or NAMESPACE/NAME/SYSTEM, with
// "@CONSTRAINT" when allowConstraint.
func parseOCIItem(arg string, allowConstraint bool) (ocitransfer.Item, error) {
	var it ocitransfer.Item
	addr, constraint, hasConstraint := strings.Cut(arg, "@")
	if hasConstraint {
		if !allowConstraint {
			return it, usagef("%q: a version constraint is not allowed here", arg)
		}
		c, err := registry.ParsePin(constraint)
		if err != nil {
			return it, usagef("%q: %s", arg, registry.Message(err))
		}
		it.Constraints, it.ConstraintsVersion = c, constraint
	}
	parts := strings.Split(addr, "/")
	bad := func(err error) error {
		return usagef("%q: want NAMESPACE/TYPE (a provider) or NAMESPACE/NAME/SYSTEM (a module): %s", arg, registry.Message(err))
	}
	var err error
	switch len(parts) {
	case 2:
		if it.Namespace, err = registry.ParseNamespace(parts[0]); err != nil {
			return it, bad(err)
		}
		if it.Type, err = registry.ParseProviderType(parts[1]); err != nil {
			return it, bad(err)
		}
	case 3:
		if it.Namespace, err = registry.ParseNamespace(parts[0]); err != nil {
			return it, bad(err)
		}
		if it.Name, err = registry.ParseModuleName(parts[1]); err != nil {
			return it, bad(err)
		}
		if it.System, err = registry.ParseModuleSystem(parts[2]); err != nil {
			return it, bad(err)
		}
	default:
		return it, usagef("%q: want NAMESPACE/TYPE (a provider) or NAMESPACE/NAME/SYSTEM (a module)", arg)
	}
	return it, nil
}

// splitRegistry splits "host[:port][/path]" into the host and the path;
// the host must look like one (a dot, a port or localhost) so that a
// repository path is never taken for a registry.
func splitRegistry(s string) (host, path string, err error) {
	host, path, _ = strings.Cut(s, "/")
	if host == "" || !(strings.ContainsAny(host, ".:") || host == "localhost") {
		return "", "", usagef("%q does not start with a registry host (such as ghcr.io or registry.example.com:5000)", s)
	}
	if _, err := name.NewRegistry(host, name.StrictValidation); err != nil {
		return "", "", usagef("%q: invalid registry host: %v", s, err)
	}
	return host, strings.Trim(path, "/"), nil
}

func ociPushCommand() *command {
	return &command{
		name: "oci push", args: "NAMESPACE/TYPE[@CONSTRAINT] | NAMESPACE/NAME/SYSTEM[@CONSTRAINT] ... --to REGISTRY[/PATH] [--username NAME --password-stdin] [--registry-ca-file FILE] [--plain-http]",
		minArgs: 1, maxArgs: 256, client: true,
		summary: "Copy providers and modules from Trove to an external OCI registry in OpenTofu's layout, verifying each provider's packages against its signed SHA256SUMS first.",
		examples: []string{
			"trove oci push acme/widget acme/modules/network/aws --to ghcr.io/acme",
			"trove oci push 'acme/widget@~> 1.2' --to registry.example.com/tofu",
			"echo \"$TOKEN\" | trove oci push acme/widget@1.2.0 --to registry.example.com --username ci --password-stdin",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			to := fs.String("to", "", "the OCI `registry[/path]` to push to: a provider goes to <registry>/<path>/<namespace>/<type>, a module to <registry>/<path>/<namespace>/modules/<name>/<system>")
			var rf registryFlags
			rf.define(fs)
			return func(ctx context.Context, args []string) error {
				if *to == "" {
					return usagef("trove oci push needs --to REGISTRY[/PATH]")
				}
				host, prefix, err := splitRegistry(*to)
				if err != nil {
					return err
				}
				var items []ocitransfer.Item
				for _, a := range args {
					it, err := parseOCIItem(a, true)
					if err != nil {
						return err
					}
					items = append(items, it)
				}
				target, err := rf.registry(cl, host)
				if err != nil {
					return err
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				p := &ocitransfer.Pusher{Trove: troveRegistry(c), Target: target, Prefix: prefix, Keys: namespaceKeys(c),
					Protocols: func(ctx context.Context, namespace, typ, version string) ([]string, error) {
						v, err := c.GetProviderVersion(ctx, namespace, typ, version)
						return v.Protocols, err
					},
					Log: func(format string, args ...any) { fmt.Fprintf(cl.stdout, format+"\n", args...) }}
				var all []ocitransfer.Pushed
				for _, it := range items {
					pushed, err := p.Push(ctx, it)
					all = append(all, pushed...)
					if err != nil {
						return err
					}
				}
				if cl.jsonOut {
					return cl.printJSON(all)
				}
				fmt.Fprintf(cl.stdout, "Pushed %d version(s) to %s\n", len(all), *to)
				return nil
			}
		},
	}
}

func ociPullCommand() *command {
	return &command{
		name: "oci pull", args: "REGISTRY/REPOSITORY:TAG|@DIGEST NAMESPACE/TYPE|NAMESPACE/NAME/SYSTEM [--version V] [--username NAME --password-stdin] [--registry-ca-file FILE] [--plain-http]",
		minArgs: 2, maxArgs: 2, client: true,
		summary: "Publish a provider or module version from an external OCI registry into Trove, after checking every digest and, for a provider, the SHA256SUMS signature against the namespace's keys.",
		examples: []string{
			"trove oci pull ghcr.io/acme/widget:1.2.0 acme/widget",
			"trove oci pull ghcr.io/acme/modules/network/aws:1.0.0 acme/network/aws",
			"trove oci pull ghcr.io/acme/network@sha256:0123... acme/network/aws --version 1.0.0",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			ver := fs.String("version", "", "the `version` to publish (default: the tag, with _ read as +; needed when pulling by digest)")
			var rf registryFlags
			rf.define(fs)
			return func(ctx context.Context, args []string) error {
				source, ref, err := splitReference(args[0])
				if err != nil {
					return err
				}
				host, path, err := splitRegistry(source)
				if err != nil {
					return err
				}
				if path == "" {
					return usagef("%q names no repository", args[0])
				}
				it, err := parseOCIItem(args[1], false)
				if err != nil {
					return err
				}
				src, err := rf.registry(cl, host)
				if err != nil {
					return err
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				p := &ocitransfer.Puller{Source: src, API: c, Keys: namespaceKeys(c),
					Log: func(format string, args ...any) { fmt.Fprintf(cl.stdout, format+"\n", args...) }}
				res, err := p.Pull(ctx, path, ref, it, *ver)
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(res)
				}
				if res.Created {
					fmt.Fprintf(cl.stdout, "Published %s %s (from %s)\n", args[1], res.Version, res.Digest)
				} else {
					fmt.Fprintf(cl.stdout, "%s %s was already published with the same content\n", args[1], res.Version)
				}
				return nil
			}
		},
	}
}

// ociTagPattern is the OCI distribution spec's grammar of a tag.
var ociTagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

// splitReference splits "host/repo:tag" or "host/repo@sha256:..." into the
// repository and the tag or digest.
func splitReference(s string) (repo, ref string, err error) {
	if r, d, ok := strings.Cut(s, "@"); ok {
		return r, d, nil
	}
	slash := strings.LastIndex(s, "/")
	colon := strings.LastIndex(s, ":")
	if colon <= slash {
		return "", "", usagef("%q names no tag: write REGISTRY/REPOSITORY:TAG or REGISTRY/REPOSITORY@sha256:...", s)
	}
	tag := s[colon+1:]
	if !ociTagPattern.MatchString(tag) {
		return "", "", usagef("%q: invalid tag %q", s, tag)
	}
	return s[:colon], tag, nil
}
