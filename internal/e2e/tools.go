//go:build tools

package e2e

// The example provider lives under testdata, which `go mod tidy` does not
// scan; these imports keep its dependencies in go.mod. The build tag keeps
// them out of every build.
import (
	_ "github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	_ "github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"
	_ "github.com/hashicorp/terraform-plugin-sdk/v2/plugin"
)
