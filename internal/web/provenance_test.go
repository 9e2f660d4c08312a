package web_test

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestModulePageShowsProvenance: a module version published with a token
// into a namespace with a managed key shows its verified provenance (the
// publisher's token, the managed key, the API address); a version whose
// stored envelope does not verify says so with the reason; a version
// without provenance shows no such section.
func TestModulePageShowsProvenance(t *testing.T) {
	e := start(t)
	ctx := t.Context()
	key, err := e.admin.GenerateSigningKey(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	e.publishModule(t, "acme", "network", "aws", "1.0.0", networkModule)
	good, err := e.srv.Index.ModuleProvenance(ctx, "acme", "network", "aws", "1.0.0")
	if err != nil {
		t.Fatalf("the token publish stored no provenance: %v", err)
	}
	v, err := e.srv.Index.GetModuleVersion(ctx, "acme", "network", "aws", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	for version, env := range map[string][]byte{
		"1.1.0": bytes.Replace(good, []byte(`"payload":"`), []byte(`"payload":"eyJ`), 1), // tampered
		"1.2.0": nil,                                                                     // none
	} {
		v.Version, v.Provenance, v.PublishedAt = version, env, time.Now()
		if err := e.srv.Index.CreateModuleVersion(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	b := e.browser(t)
	for path, c := range map[string]struct{ want, not []string }{
		"/modules/acme/network/aws/1.0.0": {want: []string{`id="provenance-h"`, "Published through Trove", "with token <code>", "signed by key <code>" + key.KeyID,
			"/api/v1/namespaces/acme/modules/network/aws/versions/1.0.0/provenance"}, not: []string{"does not verify"}},
		"/modules/acme/network/aws/1.1.0": {want: []string{`id="provenance-h"`, "The provenance stored with this version does not verify"}, not: []string{"Published through Trove"}},
		"/modules/acme/network/aws/1.2.0": {not: []string{`id="provenance-h"`}},
	} {
		p := b.get(path)
		if p.status != 200 {
			t.Fatalf("GET %s: %d", path, p.status)
		}
		for _, w := range c.want {
			if !strings.Contains(p.body, w) {
				t.Errorf("GET %s lacks %q", path, w)
			}
		}
		for _, w := range c.not {
			if strings.Contains(p.body, w) {
				t.Errorf("GET %s has %q", path, w)
			}
		}
	}
}
