package main

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"

	"trove.dev/trove/internal/config"
)

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
	return hosts
}

// printBanner prints the start-up lines on stdout. Tests parse the
// "export SSL_CERT_FILE=" and "export TROVE_TOKEN=" lines; an
// "export TROVE_ADDR=" line points the CLI at a server that is not at
// defaultAddr.
// caFile is the self-signed CA ("" for a user certificate or plain HTTP)
// and adminToken the first admin token ("" unless just created).
func printBanner(w io.Writer, cfg config.Config, addr net.Addr, caFile, adminToken string) {
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
	if adminToken != "" {
		fmt.Fprintf(w, "First admin token (shown once; only its hash is stored):\n  export TROVE_TOKEN=%s\n", adminToken)
	}
}
