package main

import (
	"bytes"
	"net"
	"os"
	"reflect"
	"strings"
	"testing"

	"trove.dev/trove/internal/config"
)

func TestPrintBanner(t *testing.T) {
	addr := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8443}
	cfg := config.Config{PublicURL: "https://localhost:8443", DataDir: "/data"}
	insecure := config.Config{PublicURL: "https://registry.internal", DataDir: "/data", InsecureHTTP: true}
	tests := []struct {
		name                     string
		cfg                      config.Config
		caFile, cliConfig, token string
		want                     string
	}{
		{"first start, self-signed", cfg, "/data/tls/ca.pem", "/data/trove.localhost.tfrc", "trove_abc",
			"Trove listening on https://localhost:8443\n" +
				"Data directory: /data\n" +
				"To trust its self-signed certificate:\n" +
				"  export SSL_CERT_FILE=/data/tls/ca.pem\n" +
				"Terraform and OpenTofu reach this server as trove.localhost (sources like trove.localhost/<namespace>/<name>) with its host block:\n" +
				"  mkdir -p ~/.terraform.d && cp /data/trove.localhost.tfrc ~/.terraform.d/\n" +
				"First admin token (shown once; only its hash is stored):\n" +
				"  export TROVE_TOKEN=trove_abc\n"},
		{"later start, own certificate", cfg, "", "", "",
			"Trove listening on https://localhost:8443\nData directory: /data\n"},
		{"behind a proxy", insecure, "", "", "trove_abc",
			"Trove listening on http://127.0.0.1:8443 (plain HTTP, for the TLS proxy at https://registry.internal)\n" +
				"Data directory: /data\n" +
				"For the trove CLI, which talks to https://localhost:8443 by default:\n" +
				"  export TROVE_ADDR=https://registry.internal\n" +
				"First admin token (shown once; only its hash is stored):\n" +
				"  export TROVE_TOKEN=trove_abc\n"},
		{"another port", config.Config{PublicURL: "https://localhost:8543", DataDir: "/data"}, "/data/tls/ca.pem", "", "",
			"Trove listening on https://localhost:8543\n" +
				"Data directory: /data\n" +
				"For the trove CLI, which talks to https://localhost:8443 by default:\n" +
				"  export TROVE_ADDR=https://localhost:8543\n" +
				"To trust its self-signed certificate:\n" +
				"  export SSL_CERT_FILE=/data/tls/ca.pem\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			printBanner(&b, tt.cfg, addr, tt.caFile, tt.cliConfig, tt.token)
			if b.String() != tt.want {
				t.Errorf("banner =\n%s\nwant\n%s", b.String(), tt.want)
			}
		})
	}
}

func TestCertHosts(t *testing.T) {
	tests := []struct {
		listen, public string
		want           []string
	}{
		{"localhost:8443", "https://localhost:8443", []string{"localhost", "127.0.0.1", "trove.localhost"}},
		{":8443", "https://localhost:8443", []string{"localhost", "127.0.0.1", "trove.localhost"}},
		{"0.0.0.0:443", "https://registry.internal", []string{"registry.internal", "localhost", "127.0.0.1", "trove.localhost"}},
		{"10.0.0.5:8443", "https://registry.internal:8443", []string{"registry.internal", "10.0.0.5", "localhost", "127.0.0.1", "trove.localhost"}},
		{"[::1]:8443", "https://[::1]:8443", []string{"::1", "localhost", "127.0.0.1", "trove.localhost"}},
	}
	for _, tt := range tests {
		got := certHosts(config.Config{Listen: tt.listen, PublicURL: tt.public})
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("certHosts(%s, %s) = %q, want %q", tt.listen, tt.public, got, tt.want)
		}
	}
}

func TestNeedsLocalHostName(t *testing.T) {
	for url, want := range map[string]bool{
		"https://localhost:8443":         true,
		"https://127.0.0.1:8443":         true,
		"https://[::1]:8443":             true,
		"https://registry":               true,
		"https://registry.internal":      false,
		"https://registry.example:8443/": false,
	} {
		if got := needsLocalHostName(url); got != want {
			t.Errorf("needsLocalHostName(%s) = %v, want %v", url, got, want)
		}
	}
}

func TestWriteCLIConfig(t *testing.T) {
	dir := t.TempDir()
	path, err := writeCLIConfig(dir, map[string]any{"modules.v1": "https://localhost:8443/v1/modules/"})
	if err != nil {
		t.Fatal(err)
	}
	// A second start rewrites the file in place.
	path2, err := writeCLIConfig(dir, map[string]any{"modules.v1": "https://localhost:9443/v1/modules/"})
	if err != nil || path2 != path {
		t.Fatalf("second write: %q, %v; want %q", path2, err, path)
	}
	body, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "host \"trove.localhost\" {\n  services = {\n    \"modules.v1\" = \"https://localhost:9443/v1/modules/\"\n  }\n}\n"
	if !strings.HasSuffix(string(body), want) || strings.Contains(string(body), "8443") {
		t.Errorf("%s =\n%s\nwant it to end with\n%s", path, body, want)
	}
}
