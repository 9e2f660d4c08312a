package web

import (
	"strings"
	"testing"

	"trove.dev/trove/internal/modules"
)

func TestVersionConstraint(t *testing.T) {
	for _, c := range []struct {
		version string
		latest  bool
		want    string
	}{
		{"1.2.3", true, "~> 1.2"},
		{"1.2.3", false, "~> 1.2.3"},
		{"0.4.1", true, "~> 0.4.1"},
		{"2.0.0-beta.1", true, "2.0.0-beta.1"},
		{"1.0.0+build.5", true, "1.0.0+build.5"},
		{"not a version", true, "not a version"},
	} {
		if got := versionConstraint(c.version, c.latest); got != c.want {
			t.Errorf("versionConstraint(%q, %v) = %q, want %q", c.version, c.latest, got, c.want)
		}
	}
}

func TestModuleSnippetPlaceholders(t *testing.T) {
	got := moduleSnippet("vpc", "trove.localhost/acme/vpc/aws", "~> 1.2", []modules.Input{
		{Name: "name", Type: "string", Description: "Name of the VPC.\nSecond line."},
		{Name: "azs", Type: "list(string)"},
		{Name: "subnets", Type: "map(object({\n  cidr = string\n}))"},
		{Name: "settings", Type: "object({ a = string })"},
		{Name: "count_of_things", Type: "number"},
		{Name: "enabled", Type: "bool"},
		{Name: "anything"},
		{Name: "long", Description: strings.Repeat("é", 100)},
	})
	for _, want := range []string{
		`version = "~> 1.2"`,
		`  name            = "" # string: Name of the VPC.` + "\n",
		`  azs             = [] # list(string)` + "\n",
		`  subnets         = {} # map(object({ cidr = string }))` + "\n",
		`  settings        = {} # object({ a = string })` + "\n",
		`  count_of_things = 0 # number` + "\n",
		`  enabled         = false # bool` + "\n",
		`  anything        = null # any` + "\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the snippet lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Second line") || !strings.Contains(got, "...") {
		t.Errorf("descriptions are not cut to their first line of at most 80 bytes:\n%s", got)
	}
}

func TestWrapType(t *testing.T) {
	got := string(wrapType(`map(object({ a = string, b = "<x>" }))`))
	want := `map(<wbr>object(<wbr>{<wbr> a =<wbr> string,<wbr> b =<wbr> &#34;&lt;x&gt;&#34; }))`
	if got != want {
		t.Errorf("wrapType = %q, want %q", got, want)
	}
}
