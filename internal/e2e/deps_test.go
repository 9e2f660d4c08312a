package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinariesAreFenced checks what each binary links: the Terraform
// provider speaks to Trove only through the public API client (client,
// apispec and the domain's rules), so none of the server, its storage
// drivers or its SDKs end up in it; and neither the provider's plugin SDK
// nor the load harness end up in trove. A new import that breaks the
// fence fails here with the chain to look at (go mod why -m, go list
// -deps).
func TestBinariesAreFenced(t *testing.T) {
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	deps := func(t *testing.T, pkg string) []string {
		t.Helper()
		cmd := exec.Command("go", "list", "-deps", pkg)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		return strings.Fields(string(out))
	}
	tests := []struct {
		binary string
		allow  func(dep string) bool // for the module's own packages
		deny   []string              // prefixes of third-party packages
	}{
		{
			binary: "./terraform-provider-trove",
			allow: func(dep string) bool {
				switch dep {
				case "trove.dev/trove/client", "trove.dev/trove/apispec", "trove.dev/trove/internal/registry",
					// The one rule of which addresses are public (standard
					// library only), which the registry's webhook URL check
					// calls: the provider checks URLs as the server does.
					"trove.dev/trove/internal/netguard",
					"trove.dev/trove/internal/provider", "trove.dev/trove/terraform-provider-trove":
					return true
				}
				return false
			},
			deny: []string{"github.com/jackc/pgx", "modernc.org/sqlite", "github.com/aws/", "github.com/prometheus/", "github.com/hashicorp/terraform-config-inspect"},
		},
		{
			binary: "./cmd/trove",
			allow: func(dep string) bool {
				return !isPackage(dep, "trove.dev/trove/internal/provider") &&
					!strings.HasPrefix(dep, "trove.dev/trove/internal/loadtest") &&
					!strings.HasPrefix(dep, "trove.dev/trove/internal/e2e") &&
					!strings.HasSuffix(dep, "test") // storetest, trovetest, signingtest, ...
			},
			deny: []string{"github.com/hashicorp/terraform-plugin-sdk", "github.com/hashicorp/terraform-plugin-testing", "github.com/hashicorp/terraform-plugin-go"},
		},
		{
			binary: "./cmd/trove-loadtest",
			allow: func(dep string) bool {
				return !isPackage(dep, "trove.dev/trove/internal/provider") && !strings.HasPrefix(dep, "trove.dev/trove/internal/e2e")
			},
			deny: []string{"github.com/hashicorp/terraform-plugin-sdk", "github.com/hashicorp/terraform-plugin-testing"},
		},
	}
	for _, tt := range tests {
		t.Run(strings.TrimPrefix(tt.binary, "./"), func(t *testing.T) {
			for _, dep := range deps(t, tt.binary) {
				if strings.HasPrefix(dep, "trove.dev/trove") {
					if !tt.allow(dep) {
						t.Errorf("%s links %s", tt.binary, dep)
					}
					continue
				}
				for _, d := range tt.deny {
					if strings.HasPrefix(dep, d) {
						t.Errorf("%s links %s", tt.binary, dep)
					}
				}
			}
		})
	}
}

// isPackage reports whether dep is the package pkg or one below it
// (internal/provider/..., not internal/providerdocs).
func isPackage(dep, pkg string) bool {
	return dep == pkg || strings.HasPrefix(dep, pkg+"/")
}
