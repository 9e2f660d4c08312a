package lockfile

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	tfaddr "github.com/hashicorp/terraform-registry-address"

	"trove.dev/trove/internal/registry"
)

func TestRender(t *testing.T) {
	widget := tfaddr.MustParseProviderSource("trove.example/acme/widget")
	aws := tfaddr.MustParseProviderSource("hashicorp/aws")
	got := string(Render([]Entry{
		{Source: widget, Version: "1.2.0", Hashes: []string{"h1:abc=", "zh:0123"}},
		{Source: aws, Version: "5.1.0", Constraints: "~> 5.0", Hashes: []string{"h1:xyz="}},
	}))
	// The layout terraform init writes (entries by address).
	want := `# This file is maintained automatically by "terraform init".
# Manual edits may be lost in future updates.

provider "registry.terraform.io/hashicorp/aws" {
  version     = "5.1.0"
  constraints = "~> 5.0"
  hashes = [
    "h1:xyz=",
  ]
}

provider "trove.example/acme/widget" {
  version = "1.2.0"
  hashes = [
    "h1:abc=",
    "zh:0123",
  ]
}
`
	if got != want {
		t.Errorf("Render =\n%s\nwant\n%s", got, want)
	}
}

func TestRequirements(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`
terraform {
  required_providers {
    widget = {
      source  = "trove.example/acme/widget"
      version = "~> 1.2"
    }
    random = "3.1.0"
    aws = {
      source = "hashicorp/aws"
    }
  }
}

resource "widget_thing" "x" {}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "versions.tf"), []byte(`
terraform {
  required_providers {
    widget = {
      source  = "TROVE.example/acme/widget"
      version = "< 2.0"
    }
  }
}
`), 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not terraform"), 0o644)
	reqs, err := Requirements(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range reqs {
		got = append(got, r.Source.String()+" "+r.Constraints)
	}
	want := []string{
		"registry.terraform.io/hashicorp/aws ",
		"registry.terraform.io/hashicorp/random 3.1.0",
		"trove.example/acme/widget ~> 1.2, < 2.0",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Requirements = %q, want %q", got, want)
	}

	empty := t.TempDir()
	if _, err := Requirements(empty); !registry.IsKind(err, registry.Invalid) || !strings.Contains(registry.Message(err), "no .tf file") {
		t.Errorf("Requirements of an empty directory: %v", err)
	}
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, "main.tf"), []byte(`terraform { required_providers { x = { source = "not a source!" } } }`), 0o644)
	if _, err := Requirements(bad); !registry.IsKind(err, registry.Invalid) || !strings.Contains(registry.Message(err), "main.tf") {
		t.Errorf("Requirements with a bad source: %v, want an error naming the file", err)
	}
}

func TestNewest(t *testing.T) {
	versions := []string{"1.0.0", "1.2.0", "1.10.0", "2.0.0-rc.1", "2.0.0-beta"}
	for _, c := range []struct{ constraints, want string }{
		{"", "1.10.0"}, {"~> 1.2.0", "1.2.0"}, {"< 1.5", "1.2.0"}, {"2.0.0-rc.1", "2.0.0-rc.1"}, {">= 1.0", "1.10.0"},
	} {
		if got, err := Newest(versions, c.constraints); err != nil || got != c.want {
			t.Errorf("Newest(%q) = %q, %v; want %s", c.constraints, got, err, c.want)
		}
	}
	if _, err := Newest(versions, ">= 3.0"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("Newest(>= 3.0): %v, want NotFound", err)
	}
}

func TestAllowed(t *testing.T) {
	versions := []string{"1.10.0", "1.0.0", "not-a-version", "1.2.0", "2.0.0-rc.1", "1.2.1"}
	for _, c := range []struct {
		constraints string
		want        []string
	}{
		{"", []string{"1.0.0", "1.2.0", "1.2.1", "1.10.0"}},
		{"~> 1.2.0", []string{"1.2.0", "1.2.1"}},
		{"2.0.0-rc.1", []string{"2.0.0-rc.1"}},
		{">= 1.2, < 1.10", []string{"1.2.0", "1.2.1"}},
	} {
		if got, err := Allowed(versions, c.constraints); err != nil || !slices.Equal(got, c.want) {
			t.Errorf("Allowed(%q) = %q, %v; want %q", c.constraints, got, err, c.want)
		}
	}
	if _, err := Allowed(versions, ">= 3.0"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("Allowed(>= 3.0): %v, want NotFound", err)
	}
	if _, err := Allowed(versions, "~>"); !registry.IsKind(err, registry.Invalid) {
		t.Errorf("Allowed(~>): %v, want Invalid", err)
	}
}

// fakeSource serves one version of one provider.
type fakeSource struct{ hashed []string }

func (f *fakeSource) Versions(_ context.Context, p tfaddr.Provider) ([]string, error) {
	if p.Type != "widget" {
		return nil, registry.Errorf(registry.NotFound, "provider %s not found", p)
	}
	return []string{"1.0.0", "1.1.0"}, nil
}

func (f *fakeSource) Version(_ context.Context, p tfaddr.Provider, v string) (registry.ProviderVersion, error) {
	return registry.ProviderVersion{Namespace: p.Namespace, Type: p.Type, Version: v, Platforms: []registry.Platform{
		{OS: "linux", Arch: "amd64", SHA256: "aa"}, {OS: "darwin", Arch: "arm64", SHA256: "bb", H1: "h1:known="},
	}}, nil
}

func (f *fakeSource) PackageHash(_ context.Context, _ tfaddr.Provider, _ registry.ProviderVersion, pl registry.Platform) (string, error) {
	f.hashed = append(f.hashed, pl.OS+"_"+pl.Arch)
	if pl.H1 != "" {
		return pl.H1, nil
	}
	return "h1:" + pl.OS + "=", nil
}

func (f *fakeSource) SHASums(context.Context, registry.ProviderVersion) ([]byte, error) {
	return []byte(strings.Repeat("a", 64) + "  terraform-provider-widget_1.1.0_linux_amd64.zip\n" +
		strings.Repeat("b", 64) + "  terraform-provider-widget_1.1.0_darwin_arm64.zip\n"), nil
}

func TestResolve(t *testing.T) {
	src := &fakeSource{}
	req, err := ParseRequirement("trove.example/acme/widget", "~> 1.0")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := Resolve(context.Background(), src, []Requirement{req}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"h1:known=", "h1:linux=", "zh:" + strings.Repeat("a", 64), "zh:" + strings.Repeat("b", 64)}
	if len(entries) != 1 || entries[0].Version != "1.1.0" || !slices.Equal(entries[0].Hashes, want) {
		t.Errorf("Resolve = %+v, want 1.1.0 with %v", entries, want)
	}

	src.hashed = nil
	if entries, err = Resolve(context.Background(), src, []Requirement{req}, []string{"darwin_arm64"}); err != nil || !slices.Equal(src.hashed, []string{"darwin_arm64"}) {
		t.Errorf("Resolve for darwin_arm64 hashed %v (%v), want that platform alone", src.hashed, err)
	}
	for _, c := range []struct {
		platforms []string
		reqs      []Requirement
		want      string
	}{
		{[]string{"linux"}, []Requirement{req}, "os_arch"},
		{[]string{"windows_386"}, []Requirement{req}, "no package for windows_386"},
		{nil, []Requirement{req, req}, "named twice"},
		{nil, []Requirement{{Source: tfaddr.MustParseProviderSource("acme/other")}}, "not found"},
	} {
		if _, err := Resolve(context.Background(), src, c.reqs, c.platforms); err == nil || !strings.Contains(registry.Message(err), c.want) {
			t.Errorf("Resolve(%v, %d requirements) = %v, want an error saying %q", c.platforms, len(c.reqs), err, c.want)
		}
	}
	if _, err := ParseRequirement("acme/widget", "about five"); !registry.IsKind(err, registry.Invalid) {
		t.Errorf("ParseRequirement with a bad constraint: %v", err)
	}
}
