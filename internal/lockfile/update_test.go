package lockfile

import (
	"context"
	"strings"
	"testing"

	tfaddr "github.com/hashicorp/terraform-registry-address"

	"trove.dev/trove/internal/registry"
)

// A lock file as terraform init writes it on one linux machine, with a
// comment someone added and a provider Trove is not asked about.
const initLock = `# This file is maintained automatically by "terraform init".
# Manual edits may be lost in future updates.

provider "registry.terraform.io/hashicorp/random" {
  version = "3.6.0"
  hashes = [
    "h1:R5Ucn26riKIEijcsiOMBR3uOAjuOMfI1x7XvH4P6B1w=",
  ]
}

# Pinned on purpose: 1.1.0 broke our pipelines (INC-7).
provider "trove.example/acme/widget" {
  version     = "1.0.0"
  constraints = "~> 1.0"
  hashes = [
    "h1:linux=",
  ]
}
`

func TestResolvePinned(t *testing.T) {
	widget := tfaddr.MustParseProviderSource("trove.example/acme/widget")
	src := &fakeSource{}
	entries, err := Resolve(context.Background(), src, []Requirement{{Source: widget, Constraints: "~> 1.0", Pinned: "1.0.0"}}, nil)
	if err != nil || len(entries) != 1 || entries[0].Version != "1.0.0" {
		t.Fatalf("Resolve of a pin = %+v, %v; want 1.0.0 kept although 1.1.0 is newer", entries, err)
	}
	for _, c := range []struct {
		req  Requirement
		kind registry.Kind
		want string
	}{
		{Requirement{Source: widget, Pinned: "0.9.0"}, registry.NotFound, "the lock file pins 0.9.0, which this registry no longer offers"},
		{Requirement{Source: widget, Pinned: "0.9.0"}, registry.NotFound, "trove lock --upgrade"},
		{Requirement{Source: widget, Constraints: "~> 1.1", Pinned: "1.0.0"}, registry.Invalid, `constraint "~> 1.1" does not allow`},
		{Requirement{Source: widget, Pinned: "latest"}, registry.Invalid, "is not a version"},
		{Requirement{Source: widget, Pinned: "1.0.0\"; rm -rf /"}, registry.Invalid, "is not a version"},
		{Requirement{Source: tfaddr.MustParseProviderSource("acme/other"), Pinned: "1.0.0"}, registry.NotFound, "no longer offers"},
	} {
		_, err := Resolve(context.Background(), src, []Requirement{c.req}, nil)
		if !registry.IsKind(err, c.kind) || !strings.Contains(registry.Message(err), c.want) {
			t.Errorf("Resolve(%+v) = %v, want %s saying %q", c.req, err, c.kind, c.want)
		}
	}
}

func TestUpdate(t *testing.T) {
	widget := tfaddr.MustParseProviderSource("trove.example/acme/widget")
	aws := tfaddr.MustParseProviderSource("hashicorp/aws")

	// The pinned version gains the other platforms' hashes; the other
	// provider's block and the comment stay; a new provider is added.
	got, err := Update([]byte(initLock), ".terraform.lock.hcl", []Entry{
		{Source: widget, Version: "1.0.0", Constraints: "~> 1.0", Hashes: []string{"h1:darwin=", "h1:linux=", "zh:aa"}},
		{Source: aws, Version: "5.1.0", Constraints: "~> 5.0", Hashes: []string{"h1:xyz="}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `# This file is maintained automatically by "terraform init".
# Manual edits may be lost in future updates.

provider "registry.terraform.io/hashicorp/random" {
  version = "3.6.0"
  hashes = [
    "h1:R5Ucn26riKIEijcsiOMBR3uOAjuOMfI1x7XvH4P6B1w=",
  ]
}

# Pinned on purpose: 1.1.0 broke our pipelines (INC-7).
provider "trove.example/acme/widget" {
  version     = "1.0.0"
  constraints = "~> 1.0"
  hashes = [
    "h1:darwin=",
    "h1:linux=",
    "zh:aa",
  ]
}

provider "registry.terraform.io/hashicorp/aws" {
  version     = "5.1.0"
  constraints = "~> 5.0"
  hashes = [
    "h1:xyz=",
  ]
}
`
	if string(got) != want {
		t.Errorf("Update =\n%s\nwant\n%s", got, want)
	}
	if _, err := Parse(got, "updated"); err != nil {
		t.Errorf("the updated lock file does not parse: %v", err)
	}

	// An upgrade replaces the version and its hashes: the old version's
	// hashes would fail the new packages.
	got, err = Update([]byte(initLock), ".terraform.lock.hcl", []Entry{{Source: widget, Version: "1.1.0", Hashes: []string{"h1:new="}}})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := Parse(got, "upgraded")
	if err != nil || len(entries) != 2 || entries[1].Version != "1.1.0" || entries[1].Constraints != "" ||
		len(entries[1].Hashes) != 1 || entries[1].Hashes[0] != "h1:new=" || !strings.Contains(string(got), "# Pinned on purpose") {
		t.Errorf("upgraded lock file =\n%s (%v)", got, err)
	}

	// An empty file gets the blocks.
	got, err = Update(nil, "empty", []Entry{{Source: aws, Version: "5.1.0", Hashes: []string{"h1:xyz="}}})
	if entries, perr := Parse(got, "new"); err != nil || perr != nil || len(entries) != 1 {
		t.Errorf("Update of an empty file =\n%s (%v, %v)", got, err, perr)
	}

	// A file that is not a lock file is refused, not rewritten.
	for _, bad := range []string{
		`provider "registry.terraform.io/hashicorp/aws" {`,
		"provider \"not an address!\" {\n  version = \"1.0.0\"\n}\n",
		"provider \"hashicorp/aws\" {\n  version = \"one\"\n}\n",
		"provider \"hashicorp/aws\" {\n  version = \"1.0.0\"\n}\nprovider \"registry.terraform.io/hashicorp/aws\" {\n  version = \"1.0.0\"\n}\n",
		"\x00\x01binary",
	} {
		if _, err := Update([]byte(bad), "bad.hcl", nil); !registry.IsKind(err, registry.Invalid) {
			t.Errorf("Update(%q) = %v, want Invalid", bad, err)
		}
	}
}
