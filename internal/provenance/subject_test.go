package provenance

import (
	"strings"
	"testing"
)

// TestCheckSubject: a statement is accepted only for the release its
// externalParameters name; every other address, version or kind, and
// statements that name none or both, are refused with the reason.
func TestCheckSubject(t *testing.T) {
	provider := NewKeyless(release(), CIFromClaims("https://ci.example.test", githubClaims()))
	modRel := Release{Namespace: "acme", Name: "net", System: "aws", Version: "1.0.0", Archives: map[string]string{"net-aws-1.0.0.tar.gz": digestA}}
	module := NewPublish(modRel, Identity{User: "ann", TokenID: "t1"})
	with := func(s Statement, set map[string]string) Statement {
		ext := map[string]string{}
		for k, v := range s.Predicate.BuildDefinition.ExternalParameters {
			ext[k] = v
		}
		for k, v := range set {
			if v == "-" {
				delete(ext, k)
			} else {
				ext[k] = v
			}
		}
		s.Predicate.BuildDefinition.ExternalParameters = ext
		return s
	}
	for _, tc := range []struct {
		name                   string
		s                      Statement
		kind, address, version string
		want                   string // "" accepted, else a part of the error
	}{
		{"provider", provider, KindProvider, "acme/widget", "1.2.3", ""},
		{"provider, other case", provider, KindProvider, "ACME/Widget", "1.2.3", ""},
		{"module", module, KindModule, "acme/net/aws", "1.0.0", ""},
		{"another version", provider, KindProvider, "acme/widget", "1.2.4", "not version 1.2.4"},
		{"a version with a prefix", provider, KindProvider, "acme/widget", "v1.2.3", "not version v1.2.3"},
		{"a prerelease of it", provider, KindProvider, "acme/widget", "1.2.3-rc1", "not version"},
		{"another type", provider, KindProvider, "acme/gadget", "1.2.3", "not acme/gadget"},
		{"another namespace", provider, KindProvider, "evil/widget", "1.2.3", "not evil/widget"},
		{"a prefix of the address", provider, KindProvider, "acme/widge", "1.2.3", "not acme/widge"},
		{"a module's statement for a provider", module, KindProvider, "acme/net", "1.0.0", "is about module acme/net/aws"},
		{"a provider's statement for a module", provider, KindModule, "acme/widget/aws", "1.2.3", "is about provider acme/widget"},
		{"another module system", module, KindModule, "acme/net/gcp", "1.0.0", "not acme/net/gcp"},
		{"no address", with(provider, map[string]string{"provider": "-"}), KindProvider, "acme/widget", "1.2.3", "names no provider"},
		{"an empty address", with(provider, map[string]string{"provider": ""}), KindProvider, "acme/widget", "1.2.3", "names no provider"},
		{"no version", with(provider, map[string]string{"version": "-"}), KindProvider, "acme/widget", "1.2.3", `version ""`},
		{"both kinds", with(provider, map[string]string{"module": "acme/widget/aws"}), KindProvider, "acme/widget", "1.2.3", "names both"},
		{"no externalParameters", with(provider, map[string]string{"provider": "-", "version": "-", "repository": "-", "ref": "-", "workflow": "-", "commit": "-"}), KindModule, "acme/net/aws", "1.0.0", "names no module"},
		{"an unknown kind", provider, "policy", "acme/widget", "1.2.3", "unknown release kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.s.CheckSubject(tc.kind, tc.address, tc.version)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("CheckSubject = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckSubject = %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestCheckArchiveName: an offline check knows the archive's file name
// only; it must be one of the release the statement names.
func TestCheckArchiveName(t *testing.T) {
	provider := NewKeyless(release(), CIFromClaims("https://ci.example.test", githubClaims()))
	module := NewPublish(Release{Namespace: "acme", Name: "net", System: "aws", Version: "1.0.0"}, Identity{TokenID: "t1"})
	for _, tc := range []struct {
		s    Statement
		name string
		ok   bool
	}{
		{provider, "terraform-provider-widget_1.2.3_linux_amd64.zip", true},
		{provider, "terraform-provider-widget_1.2.4_linux_amd64.zip", false},
		{provider, "terraform-provider-gadget_1.2.3_linux_amd64.zip", false},
		{provider, "terraform-provider-widget_1.2.3_linux_amd64.tar.gz", false},
		{provider, "terraform-provider-widget_1.2.3_SHA256SUMS", false},
		{provider, "terraform-provider-widget_1.2.3_linux_amd64_x.zip", false},
		{provider, "widget.zip", false},
		{module, "net-aws-1.0.0.tar.gz", true},
		{module, "net-aws-1.0.0.zip", true},
		{module, "net-aws-1.0.1.tar.gz", false},
		{module, "net-gcp-1.0.0.tar.gz", false},
		{module, "net-aws-1.0.0.tar.gz.exe", false},
		{module, "terraform-provider-widget_1.2.3_linux_amd64.zip", false},
		{provider, "net-aws-1.0.0.tar.gz", false},
	} {
		err := tc.s.CheckArchiveName(tc.name)
		if (err == nil) != tc.ok {
			t.Errorf("%s: CheckArchiveName = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
	var empty Statement
	if err := empty.CheckArchiveName("net-aws-1.0.0.tar.gz"); err == nil {
		t.Error("a statement without externalParameters named an archive")
	}
}
