package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tfaddr "github.com/hashicorp/terraform-registry-address"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/lockfile"
	"trove.dev/trove/internal/provenance"
	"trove.dev/trove/internal/signing/signingtest"
)

// TestVerifyMirroredEntrySubject: a mirrored provider's provenance is
// accepted for a locked version only when its statement is about that
// namespace/type and version; the same archive digest under another
// version or provider fails the check with the reason.
func TestVerifyMirroredEntrySubject(t *testing.T) {
	key := signingtest.NewKey(t, "exporter")
	digest := strings.Repeat("ab", 32)
	rel := provenance.Release{Namespace: "acme", Type: "widget", Version: "1.0.0",
		Archives: map[string]string{"terraform-provider-widget_1.0.0_linux_amd64.zip": digest}}
	env := signedPublishStatement(t, key, rel)
	prov := apispec.MirroredProvenance{Envelope: env, Keys: []apispec.BundleKey{{KeyID: key.KeyID, ASCIIArmor: key.ArmoredPublic}}}
	for _, c := range []struct {
		source, version string
		want            string // "" all OK
	}{
		{"example.com/acme/widget", "1.0.0", ""},
		{"example.com/acme/widget", "1.0.1", "not version 1.0.1"},
		{"example.com/acme/gadget", "1.0.0", "not acme/gadget"},
		{"example.com/evil/widget", "1.0.0", "not evil/widget"},
	} {
		var lines []string
		failed := 0
		report := func(ok bool, format string, args ...any) {
			if !ok {
				failed++
			}
			lines = append(lines, fmt.Sprintf("%v %s", ok, fmt.Sprintf(format, args...)))
		}
		e := lockfile.Entry{Source: tfaddr.MustParseProviderSource(c.source), Version: c.version, Hashes: []string{"zh:" + digest}}
		verifyMirroredEntry(t.Context(), e, prov, nil, time.Now(), report)
		out := strings.Join(lines, "\n")
		if c.want == "" && failed != 0 {
			t.Errorf("%s %s: failed\n%s", c.source, c.version, out)
		}
		if c.want != "" && (failed == 0 || !strings.Contains(out, c.want)) {
			t.Errorf("%s %s: want a failure saying %q\n%s", c.source, c.version, c.want, out)
		}
	}
}
