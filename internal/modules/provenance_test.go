package modules

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/provenance"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
)

// withManaged gives e's publisher managed signing with the secret in file
// secret (written with content unless empty) and returns the Managed.
func (e *publishEnv) withManaged(t *testing.T, secret, content string) *signing.Managed {
	t.Helper()
	if content != "" {
		if err := os.WriteFile(secret, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	m := signing.NewManaged(signing.ManagedOptions{Keys: e.idx, Secret: signing.SecretFile{Path: secret}, KeyBits: 2048})
	e.pub = NewPublisher(Options{Index: e.idx, Blobs: e.blobs, TempDir: e.tempDir, MaxArchiveBytes: 1 << 20, Managed: m})
	return m
}

// TestPublishSignsProvenance: a publish with an origin into a namespace
// with a managed key stores a statement, signed by that key, about the
// archive under its served file name and digest, naming the module and
// the publisher; a keyless origin names the CI build; a publish without
// an origin (git sources, the mirror) and a namespace without a managed
// key store none; a managed key that cannot sign refuses the publish and
// stores nothing.
func TestPublishSignsProvenance(t *testing.T) {
	e := newPublishEnv(t)
	secret := filepath.Join(t.TempDir(), "signing-secret")
	m := e.withManaged(t, secret, strings.Repeat("k", 44))
	key, err := m.Generate(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	archive := packed(t, map[string]string{"main.tf": "variable \"x\" {}\n"})
	publishAs := func(t *testing.T, ctx0 func() (Result, error)) registry.ModuleVersion {
		t.Helper()
		res, err := ctx0()
		if err != nil || !res.Created {
			t.Fatalf("publish = %+v, %v", res, err)
		}
		return res.Version
	}
	verified := func(t *testing.T, v registry.ModuleVersion) provenance.Statement {
		t.Helper()
		env, err := e.idx.ModuleProvenance(t.Context(), v.Namespace, v.Name, v.System, v.Version)
		if err != nil {
			t.Fatalf("ModuleProvenance: %v", err)
		}
		got, err := provenance.Verify(t.Context(), env, []registry.SigningKey{key}, time.Time{})
		if err != nil {
			t.Fatalf("the stored provenance does not verify with the managed key: %v", err)
		}
		st := got.Statement
		name := v.Name + "-" + v.System + "-" + v.Version + ".tar.gz"
		if len(st.Subject) != 1 || st.CheckArchive(name, v.ArchiveDigest) != nil {
			t.Errorf("subjects %+v, want %s with sha256 %s", st.Subject, name, v.ArchiveDigest)
		}
		ext := st.Predicate.BuildDefinition.ExternalParameters
		if ext["module"] != v.Namespace+"/"+v.Name+"/"+v.System || ext["version"] != v.Version || ext["provider"] != "" {
			t.Errorf("external parameters %+v", ext)
		}
		return st
	}

	t.Run("token", func(t *testing.T) {
		ctx := provenance.WithOrigin(t.Context(), provenance.Origin{User: "pat", TokenID: "tok_1"})
		v := publishAs(t, func() (Result, error) {
			return e.pub.Publish(ctx, Upload{Namespace: "acme", Name: "net", System: "aws", Version: "1.0.0", Archive: bytes.NewReader(archive)})
		})
		st := verified(t, v)
		p := st.Predicate
		if p.BuildDefinition.BuildType != provenance.BuildTypePublish || p.RunDetails.Builder.ID != provenance.TroveBuilderID ||
			p.BuildDefinition.ExternalParameters["token"] != "tok_1" || p.BuildDefinition.ExternalParameters["user"] != "pat" {
			t.Errorf("the statement of a token publish: %+v", p)
		}
	})
	t.Run("keyless", func(t *testing.T) {
		ci := &registry.CIClaims{Issuer: "https://ci.example", Repository: "acme/net", Ref: "refs/tags/v1.1.0", Commit: "abc", RunID: "42"}
		ctx := provenance.WithOrigin(t.Context(), provenance.Origin{CI: ci, TokenID: "tok_2"})
		v := publishAs(t, func() (Result, error) {
			return e.pub.Publish(ctx, Upload{Namespace: "acme", Name: "net", System: "aws", Version: "1.1.0", Archive: bytes.NewReader(archive)})
		})
		p := verified(t, v).Predicate
		if p.BuildDefinition.BuildType != provenance.BuildTypeKeyless || p.RunDetails.Builder.ID != ci.Issuer ||
			p.BuildDefinition.ExternalParameters["repository"] != "acme/net" || p.RunDetails.Metadata.InvocationID != "42" {
			t.Errorf("the statement of a keyless publish: %+v", p)
		}
	})
	t.Run("no origin", func(t *testing.T) {
		v := publishAs(t, func() (Result, error) {
			return e.pub.Publish(t.Context(), Upload{Namespace: "acme", Name: "net", System: "aws", Version: "1.2.0", Archive: bytes.NewReader(archive)})
		})
		if _, err := e.idx.ModuleProvenance(t.Context(), "acme", "net", "aws", v.Version); !registry.IsKind(err, registry.NotFound) {
			t.Errorf("a publish without an origin stored provenance (%v)", err)
		}
	})
	t.Run("no managed key", func(t *testing.T) {
		ctx := provenance.WithOrigin(t.Context(), provenance.Origin{TokenID: "tok_3"})
		if err := e.idx.CreateNamespace(t.Context(), registry.Namespace{Name: "plain", CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		publishAs(t, func() (Result, error) {
			return e.pub.Publish(ctx, Upload{Namespace: "plain", Name: "net", System: "aws", Version: "1.0.0", Archive: bytes.NewReader(archive)})
		})
		if _, err := e.idx.ModuleProvenance(t.Context(), "plain", "net", "aws", "1.0.0"); !registry.IsKind(err, registry.NotFound) {
			t.Errorf("a namespace without a managed key got provenance (%v)", err)
		}
	})
	t.Run("key cannot sign", func(t *testing.T) {
		e.withManaged(t, filepath.Join(t.TempDir(), "missing-secret"), "")
		ctx := provenance.WithOrigin(t.Context(), provenance.Origin{TokenID: "tok_4"})
		other := packed(t, map[string]string{"main.tf": "variable \"y\" {}\n"})
		before := blobNames(t, e)
		_, err := e.pub.Publish(ctx, Upload{Namespace: "acme", Name: "net", System: "aws", Version: "2.0.0", Archive: bytes.NewReader(other)})
		if !registry.IsKind(err, registry.Unavailable) || !strings.Contains(err.Error(), "cannot sign the provenance") {
			t.Fatalf("publish with an unopenable managed key = %v, want Unavailable saying it cannot sign", err)
		}
		if _, err := e.idx.GetModuleVersion(t.Context(), "acme", "net", "aws", "2.0.0"); !registry.IsKind(err, registry.NotFound) {
			t.Errorf("the refused version was stored (%v)", err)
		}
		if after := blobNames(t, e); after != before {
			t.Errorf("the refused publish stored blobs: %s -> %s", before, after)
		}
	})
}

// blobNames lists e's blobs.
func blobNames(t *testing.T, e *publishEnv) string {
	t.Helper()
	var names []string
	if err := e.blobs.Walk(t.Context(), func(d string, _ int64) error { names = append(names, d); return nil }); err != nil {
		t.Fatal(err)
	}
	return strings.Join(names, ",")
}
