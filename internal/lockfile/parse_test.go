package lockfile

import (
	"slices"
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
)

// TestParse reads back what Render writes, and a lock file as terraform
// init writes it; broken ones are Invalid with their position.
func TestParse(t *testing.T) {
	aws, _ := ParseRequirement("hashicorp/aws", "")
	widget, _ := ParseRequirement("trove.example.com/acme/widget", "")
	written := []Entry{
		{Source: widget.Source, Version: "1.2.0-rc.1", Hashes: []string{"h1:abc=", "zh:01"}},
		{Source: aws.Source, Version: "5.80.0", Constraints: "~> 5.0", Hashes: []string{"h1:def=", "zh:02", "zh:03"}},
	}
	got, err := Parse(Render(written), ".terraform.lock.hcl")
	if err != nil {
		t.Fatal(err)
	}
	// Render orders by address: registry.terraform.io/... first.
	want := []Entry{written[1], written[0]}
	if len(got) != len(want) {
		t.Fatalf("Parse(Render) = %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Source != w.Source || g.Version != w.Version || g.Constraints != w.Constraints || !slices.Equal(g.Hashes, w.Hashes) {
			t.Errorf("entry %d = %+v, want %+v", i, g, w)
		}
	}

	for name, c := range map[string]struct{ src, want string }{
		"bad address":   {`provider "not an address!" { version = "1.0.0" }`, "not an address!"},
		"no version":    {`provider "registry.terraform.io/hashicorp/aws" { hashes = [] }`, "version"},
		"bad version":   {`provider "registry.terraform.io/hashicorp/aws" { version = "v1.0" }`, "leading"},
		"twice":         {"provider \"hashicorp/aws\" {\n version = \"1.0.0\"\n}\nprovider \"registry.terraform.io/hashicorp/aws\" {\n version = \"1.1.0\"\n}\n", "locked twice"},
		"not HCL":       {`provider "hashicorp/aws" {`, "lock.hcl"},
		"missing label": {`provider { version = "1.0.0" }`, "lock.hcl"},
	} {
		_, err := Parse([]byte(c.src), "test.lock.hcl")
		if !registry.IsKind(err, registry.Invalid) || !strings.Contains(registry.Message(err), c.want) {
			t.Errorf("%s: Parse = %v, want Invalid saying %q", name, err, c.want)
		}
	}
}
