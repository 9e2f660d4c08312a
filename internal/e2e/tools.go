//go:build e2edeps

package e2e

// The example provider and the test OpenID provider live under testdata,
// which `go mod tidy` does not scan; these imports keep their dependencies
// in go.mod. Tidy reads files of
// every build tag, while the tag keeps them out of every build (a tag of
// its own: dependencies use the customary "tools" for their own files).
import (
	_ "github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	_ "github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"
	_ "github.com/hashicorp/terraform-plugin-sdk/v2/plugin"
	_ "github.com/zitadel/oidc/v3/example/server/exampleop"
	_ "github.com/zitadel/oidc/v3/example/server/storage"
	_ "github.com/zitadel/oidc/v3/pkg/oidc"
	_ "github.com/zitadel/oidc/v3/pkg/op"
	_ "golang.org/x/text/language"
)
