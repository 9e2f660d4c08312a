package operations_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/audit"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/provenance"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/trovetest/testarchive"
	"trove.dev/trove/internal/webhook"
)

// TestPublishModuleProvenance: with a managed key in the namespace, a
// module publish with a user's token stores provenance naming the user
// and the token; the publishes Trove makes itself (a git source's, as an
// operator, and the module mirror's) store none.
func TestPublishModuleProvenance(t *testing.T) {
	e := newPublishEnv(t)
	secret := filepath.Join(t.TempDir(), "signing-secret")
	if err := os.WriteFile(secret, []byte(strings.Repeat("k", 44)), 0o600); err != nil {
		t.Fatal(err)
	}
	m := signing.NewManaged(signing.ManagedOptions{Keys: e.idx, Secret: signing.SecretFile{Path: secret}, KeyBits: 2048})
	tmp := t.TempDir()
	e.ops = operations.New(operations.Options{
		Index: e.idx, Access: auth.NewAccess(e.authn, e.idx), Audit: audit.New(e.idx, nil),
		Events:  webhook.NewEmitter(webhook.EmitterOptions{Store: e.idx}),
		Modules: modules.NewPublisher(modules.Options{Index: e.idx, Blobs: e.blobs, TempDir: tmp, Managed: m}),
		Blobs:   e.blobs,
		Now:     func() time.Time { return e.now },
	})
	var keys []registry.SigningKey
	for _, ns := range []string{"acme", "open"} {
		k, err := m.Generate(t.Context(), ns)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	archive := testarchive.TarGz(t, map[string]string{"main.tf": "variable \"x\" {}\n"})
	up := func(ns, version string) modules.Upload {
		return modules.Upload{Namespace: ns, Name: "net", System: "aws", Version: version, Archive: bytes.NewReader(archive)}
	}
	pat := e.user(t, "pat")
	if _, err := e.ops.PublishModule(t.Context(), pat, up("acme", "2.0.0")); err != nil {
		t.Fatal(err)
	}
	env, err := e.idx.ModuleProvenance(t.Context(), "acme", "net", "aws", "2.0.0")
	if err != nil {
		t.Fatalf("a token publish stored no provenance: %v", err)
	}
	v, err := provenance.Verify(t.Context(), env, keys[:1], time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	ext := v.Statement.Predicate.BuildDefinition.ExternalParameters
	if ext["user"] != "pat" || ext["token"] != pat.Principal.Token.ID || ext["module"] != "acme/net/aws" {
		t.Errorf("external parameters %+v, want user pat and token %s", ext, pat.Principal.Token.ID)
	}

	if _, err := e.ops.PublishModule(t.Context(), operations.Actor{Operator: "git-source gs_1"}, up("acme", "3.0.0")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.ops.PublishMirroredModule(t.Context(), up("open", "1.0.0")); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]string{{"acme", "3.0.0"}, {"open", "1.0.0"}} {
		if _, err := e.idx.ModuleProvenance(t.Context(), c[0], "net", "aws", c[1]); !registry.IsKind(err, registry.NotFound) {
			t.Errorf("%s net/aws %s, published by Trove itself, has provenance (%v)", c[0], c[1], err)
		}
	}
}
