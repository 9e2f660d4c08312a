package operations_test

import (
	"context"
	"path/filepath"
	"testing"

	"trove.dev/trove/internal/audit"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/gitsource"
	"trove.dev/trove/internal/modules"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/webhook"
)

// TestGitSourcesRefused: only a namespace's admins add and remove its
// git sources, publishers sync; hostile modules and URLs (a non-public
// host: the SSRF guard) are refused; nothing is stored.
func TestGitSourcesRefused(t *testing.T) {
	e := newEnv(t)
	dir, blobs := e.st.Dir, e.st.Blobs
	svc := gitsource.New(gitsource.Options{Index: e.idx, TempDir: filepath.Join(dir, "tmp"),
		Modules: modules.NewPublisher(modules.Options{Index: e.idx, Blobs: blobs, TempDir: filepath.Join(dir, "tmp")}),
		Secret:  signing.SecretFile{Path: filepath.Join(dir, "signing-secret"), Create: true}})
	ops := operations.New(operations.Options{Index: e.idx, Access: auth.NewAccess(e.authn, e.idx), Audit: audit.New(e.idx, nil),
		Events: webhook.NewEmitter(webhook.EmitterOptions{Store: e.idx}), GitSources: svc})
	alice, pat, bob, eve := e.user(t, "alice"), e.user(t, "pat"), e.user(t, "bob"), e.user(t, "eve")
	good := "https://git.example.com/acme/net.git"
	for _, tc := range []struct {
		name                   string
		actor                  operations.Actor
		ns, module, system, to string
		want                   registry.Kind
	}{
		{"by a publisher", pat, "acme", "net", "aws", good, registry.Forbidden},
		{"by a reader", bob, "acme", "net", "aws", good, registry.Forbidden},
		{"by an outsider", eve, "acme", "net", "aws", good, registry.NotFound},
		{"namespace path", alice, "../acme", "net", "aws", good, registry.Invalid},
		{"module path", alice, "acme", "../net", "aws", good, registry.Invalid},
		{"system upper case", alice, "acme", "net", "AWS", good, registry.Invalid},
		{"loopback", alice, "acme", "net", "aws", "http://127.1/net.git", registry.Invalid},
		{"metadata", alice, "acme", "net", "aws", "http://169.254.169.254/net.git", registry.Invalid},
		{"localhost", alice, "acme", "net", "aws", "git@localhost.:net.git", registry.Invalid},
		{"file", alice, "acme", "net", "aws", "file:///etc", registry.Invalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e.refused(t, tc.want, func(ctx context.Context) error {
				_, err := ops.CreateGitSource(ctx, tc.actor, gitsource.Source{Namespace: tc.ns, Name: tc.module, System: tc.system, URL: tc.to})
				return err
			})
			if all, _ := e.idx.ListGitSources(t.Context(), ""); len(all) != 0 {
				t.Fatalf("stored %+v", all)
			}
		})
	}
	created, err := ops.CreateGitSource(t.Context(), alice, gitsource.Source{Namespace: "acme", Name: "net", System: "aws", URL: good})
	if err != nil || created.Source.CreatedBy != "user:alice" {
		t.Fatalf("create by an admin: %+v, %v", created.Source, err)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditGitSourceCreate || a.Target != "acme/net/aws" || a.SourceAddr != "192.0.2.7" {
		t.Fatalf("audit %+v", a)
	}
	for _, a := range []operations.Actor{pat, bob} {
		e.refused(t, registry.Forbidden, func(ctx context.Context) error {
			return ops.DeleteGitSource(ctx, a, operations.GitSourceRef{Namespace: "acme", Name: "net", System: "aws"})
		})
	}
	e.refused(t, registry.Forbidden, func(ctx context.Context) error {
		_, err := ops.SyncGitSource(ctx, bob, operations.GitSourceRef{Namespace: "acme", Name: "net", System: "aws"})
		return err
	})
	if err := ops.DeleteGitSource(t.Context(), alice, operations.GitSourceRef{Namespace: "acme", Name: "net", System: "aws"}); err != nil {
		t.Fatal(err)
	}
	if a := e.lastAudit(t); a.Action != registry.AuditGitSourceDelete {
		t.Fatalf("audit %+v", a)
	}
}
