// Command terraform-provider-trove is the Terraform provider of Trove: it
// manages a Trove's namespaces, signing keys, tokens, users and memberships
// as code. Terraform starts it as a plugin (protocol 5); see
// internal/provider for the provider itself, examples/ for its use and
// docs/ for the documentation generated from both.
//
// Regenerate docs/ after changing a schema description or an example:
//
//	go generate ./terraform-provider-trove
//
// and check them as CI does with scripts/check-provider-docs.sh.
package main

//go:generate bash ../scripts/check-provider-docs.sh --update

import (
	"flag"

	"github.com/hashicorp/terraform-plugin-sdk/v2/plugin"

	"trove.dev/trove/internal/provider"
)

// version is set by the release build (goreleaser's ldflags).
var version = "dev"

func main() {
	debug := flag.Bool("debug", false, "run the provider with support for debuggers like delve; prints the TF_REATTACH_PROVIDERS value to use")
	address := flag.String("address", "localhost:8443/trove/trove", "source address the provider is installed under (used with -debug)")
	flag.Parse()

	plugin.Serve(&plugin.ServeOpts{
		ProviderFunc: provider.New(version),
		ProviderAddr: *address,
		Debug:        *debug,
	})
}
