//go:build e2edeps

package e2e

// The example provider lives under testdata, which `go mod tidy` does not
// scan; these imports keep its dependencies in go.mod. Tidy reads files of
// every build tag, while the tag keeps them out of every build (a tag of
// its own: dependencies use the customary "tools" for their own files).
import (
	_ "github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	_ "github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"
	_ "github.com/hashicorp/terraform-plugin-sdk/v2/plugin"
)
