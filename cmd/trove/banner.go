package main

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"

	"trove.dev/trove/internal/config"
	"trove.dev/trove/internal/protocol/discovery"
)

// localHostName is the host name Terraform and OpenTofu use for a Trove
// whose public URL has no dot in its host (discovery.LocalHostName).
const localHostName = discovery.LocalHostName

// cliConfigFile is the CLI configuration serve writes into the data
// directory for localHostName. Copied into the CLI configuration directory
// (~/.terraform.d), Terraform and OpenTofu read it beside
// credentials.tfrc.json, so `terraform login` tokens keep working; a file
// named by TF_CLI_CONFIG_FILE would make them ignore that directory.
const cliConfigFile = localHostName + ".tfrc"

// cliConfigDir is the CLI configuration directory of Terraform and
// OpenTofu on Linux and macOS, as the banner tells a shell to write it.
const cliConfigDir = "~/.terraform.d"

// needsLocalHostName reports whether the public URL's host cannot be a
// module host by itself.
func needsLocalHostName(publicURL string) bool { return discovery.NeedsLocalHostName(publicURL) }

// writeCLIConfig writes the Terraform/OpenTofu CLI configuration that maps
// localHostName to the server's services (absolute URLs) into the data
// directory and returns its path. It is rewritten at every start, so it
// follows the public URL.
func writeCLIConfig(dataDir string, services map[string]any) (string, error) {
	path := filepath.Join(dataDir, cliConfigFile)
	body := "# Written by trove serve at every start: Terraform and OpenTofu reach this\n" +
		"# Trove as " + localHostName + ". Copy this file into " + cliConfigDir + "/ (or the block\n" +
		"# into the file TF_CLI_CONFIG_FILE names, if that is set).\n" +
		discovery.HostBlock(localHostName, services)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return path, nil
}

// certHosts returns the names the self-signed certificate is valid for:
// the public URL's host, the listen host, localhost and 127.0.0.1.
func certHosts(cfg config.Config) []string {
	hosts := []string{}
	add := func(h string) {
		if h != "" && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	if u, err := url.Parse(cfg.PublicURL); err == nil {
		add(u.Hostname())
	}
	if h, _, err := net.SplitHostPort(cfg.Listen); err == nil {
		if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
			add(h)
		}
	}
	add("localhost")
	add("127.0.0.1")
	add(localHostName)
	return hosts
}

// printBanner prints the start-up lines on stdout: what happens, and
// indented below it the shell command a user pastes. Tests parse the
// "export SSL_CERT_FILE=" and "export TROVE_TOKEN=" lines; an
// "export TROVE_ADDR=" line points the CLI at a server that is not at
// defaultAddr.
// caFile is the self-signed CA ("" for a user certificate or plain HTTP),
// cliConfig the CLI configuration for localHostName ("" if the public URL
// needs none) and adminToken the first admin token ("" unless just
// created).
func printBanner(w io.Writer, cfg config.Config, addr net.Addr, caFile, cliConfig, adminToken string) {
	if cfg.InsecureHTTP {
		fmt.Fprintf(w, "Trove listening on http://%s (plain HTTP, for the TLS proxy at %s)\n", addr, cfg.PublicURL)
	} else {
		fmt.Fprintf(w, "Trove listening on %s\n", cfg.PublicURL)
	}
	fmt.Fprintf(w, "Data directory: %s\n", cfg.DataDir)
	if cfg.PublicURL != defaultAddr {
		fmt.Fprintf(w, "For the trove CLI, which talks to %s by default:\n  export TROVE_ADDR=%s\n", defaultAddr, cfg.PublicURL)
	}
	if caFile != "" {
		fmt.Fprintf(w, "To trust its self-signed certificate:\n  export SSL_CERT_FILE=%s\n", caFile)
	}
	if cliConfig != "" {
		fmt.Fprintf(w, "Terraform and OpenTofu reach this server as %s (sources like %s/<namespace>/<name>) with its host block:\n  mkdir -p %s && cp %s %s/\n",
			localHostName, localHostName, cliConfigDir, cliConfig, cliConfigDir)
	}
	if adminToken != "" {
		fmt.Fprintf(w, "First admin token (shown once; only its hash is stored):\n  export TROVE_TOKEN=%s\n", adminToken)
	}
}
