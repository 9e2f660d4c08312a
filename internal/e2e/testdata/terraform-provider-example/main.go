// Command terraform-provider-example is a tiny Terraform provider used by
// Trove's end-to-end tests: the tests package it goreleaser-style, publish
// it to a real Trove and let the real terraform CLI install and run it. It
// speaks plugin protocol 5 (terraform-plugin-sdk/v2) and keeps all of its
// state in Terraform's state: it calls no API.
//
// It lives under testdata so that `go test ./...` and `go vet ./...` skip
// it; build it with an explicit path:
//
//	go build ./internal/e2e/testdata/terraform-provider-example
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"
	"github.com/hashicorp/terraform-plugin-sdk/v2/plugin"
)

func main() {
	plugin.Serve(&plugin.ServeOpts{ProviderFunc: provider})
}

// provider returns the provider: one resource, example_thing, and one data
// source, example_echo.
func provider() *schema.Provider {
	return &schema.Provider{
		ResourcesMap: map[string]*schema.Resource{
			"example_thing": resourceThing(),
		},
		DataSourcesMap: map[string]*schema.Resource{
			"example_echo": dataSourceEcho(),
		},
	}
}

// thingID derives the ID of a thing from its name, so that the tests can
// predict it.
func thingID(name string) string {
	sum := sha256.Sum256([]byte("example_thing:" + name))
	return hex.EncodeToString(sum[:8])
}

func resourceThing() *schema.Resource {
	return &schema.Resource{
		Description: "A thing that exists only in Terraform's state.",
		Schema: map[string]*schema.Schema{
			"name": {
				Type:        schema.TypeString,
				Required:    true,
				ForceNew:    true,
				Description: "Name of the thing.",
			},
		},
		CreateContext: func(_ context.Context, d *schema.ResourceData, _ any) diag.Diagnostics {
			d.SetId(thingID(d.Get("name").(string)))
			return nil
		},
		ReadContext: func(context.Context, *schema.ResourceData, any) diag.Diagnostics {
			return nil
		},
		DeleteContext: func(_ context.Context, d *schema.ResourceData, _ any) diag.Diagnostics {
			d.SetId("")
			return nil
		},
	}
}

func dataSourceEcho() *schema.Resource {
	return &schema.Resource{
		Description: "Echoes its input back, upper-cased in `result`.",
		Schema: map[string]*schema.Schema{
			"input": {
				Type:        schema.TypeString,
				Required:    true,
				Description: "Text to echo.",
			},
			"result": {
				Type:        schema.TypeString,
				Computed:    true,
				Description: "The input, prefixed with `echo: `.",
			},
		},
		ReadContext: func(_ context.Context, d *schema.ResourceData, _ any) diag.Diagnostics {
			in := d.Get("input").(string)
			d.SetId(thingID("echo:" + in))
			if err := d.Set("result", "echo: "+in); err != nil {
				return diag.FromErr(err)
			}
			return nil
		},
	}
}
