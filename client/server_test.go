package client_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest"
)

// release builds a signed provider release in memory, in upload order.
func release(t *testing.T, key *signingtest.Key, typ, version string, platforms ...string) []client.PublishFile {
	t.Helper()
	var files []client.PublishFile
	for _, f := range releasetest.Build(t, key, releasetest.Spec{Type: typ, Version: version, Platforms: platforms}).Files {
		files = append(files, client.PublishFile{Name: f.Name, Open: f.Open})
	}
	return files
}

// TestAgainstTrove runs every method against a real in-process Trove.
func TestAgainstTrove(t *testing.T) {
	ctx := context.Background()
	s := trovetest.Start(t)
	admin, err := client.New(s.URL, s.AdminToken, client.WithCAFile(s.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	me, err := admin.WhoAmI(ctx)
	must(err)
	if !slices.Equal(me.Scopes, []string{"admin"}) || me.Namespace != "" {
		t.Errorf("WhoAmI = %+v, want a global admin", me)
	}

	ns, err := admin.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: "acme", Description: "ACME"})
	must(err)
	if ns.Name != "acme" || ns.Description != "ACME" {
		t.Errorf("CreateNamespace = %+v", ns)
	}
	if _, err := admin.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: "acme"}); !client.IsConflict(err) {
		t.Errorf("second CreateNamespace error = %v, want a conflict", err)
	}
	if _, err := admin.GetNamespace(ctx, "nope"); !client.IsNotFound(err) {
		t.Errorf("GetNamespace(nope) error = %v, want not found", err)
	}
	desc := "ACME platform team"
	ns, err = admin.UpdateNamespace(ctx, "acme", apispec.UpdateNamespaceRequest{Description: &desc})
	must(err)
	if ns.Description != desc {
		t.Errorf("UpdateNamespace = %+v", ns)
	}
	list, err := admin.ListNamespaces(ctx)
	must(err)
	if len(list) != 1 || list[0].Name != "acme" {
		t.Errorf("ListNamespaces = %+v", list)
	}

	key := signingtest.NewKey(t, "acme")
	added, err := admin.AddSigningKey(ctx, "acme", apispec.AddSigningKeyRequest{ASCIIArmor: key.ArmoredPublic})
	must(err)
	if added.KeyID != key.KeyID || added.Fingerprint != key.Fingerprint {
		t.Errorf("AddSigningKey = %s %s, want %s %s", added.KeyID, added.Fingerprint, key.KeyID, key.Fingerprint)
	}
	keys, err := admin.ListSigningKeys(ctx, "acme")
	must(err)
	if len(keys) != 1 || keys[0].KeyID != key.KeyID {
		t.Errorf("ListSigningKeys = %+v", keys)
	}
	_, err = admin.GetSigningKey(ctx, "acme", key.KeyID)
	must(err)

	created, err := admin.CreateToken(ctx, apispec.CreateTokenRequest{
		Namespace: "acme", Scopes: []string{"publish"}, Description: "ci", ExpiresAt: client.ExpiresIn(time.Hour),
	})
	must(err)
	publisher, err := client.New(s.URL, created.Secret, client.WithCAFile(s.CAFile))
	must(err)
	files := release(t, key, "foo", "1.0.0", "linux_amd64", "darwin_arm64")
	res, err := publisher.PublishProvider(ctx, "acme", "foo", "1.0.0", files)
	must(err)
	if !res.Created || res.Version.Version != "1.0.0" || len(res.Version.Platforms) != 2 || res.Version.KeyID != key.KeyID {
		t.Errorf("PublishProvider = %+v", res)
	}
	res, err = publisher.PublishProvider(ctx, "acme", "foo", "1.0.0", files)
	must(err)
	if res.Created {
		t.Error("re-publishing the same release reported created")
	}
	other := release(t, key, "foo", "1.0.0", "linux_amd64")
	if _, err := publisher.PublishProvider(ctx, "acme", "foo", "1.0.0", other); !client.IsConflict(err) {
		t.Errorf("publishing other content error = %v, want a conflict", err)
	}
	if _, err := publisher.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: "other"}); !client.IsForbidden(err) {
		t.Errorf("publish token creating a namespace: %v, want forbidden", err)
	}

	providers, err := admin.ListProviders(ctx, "acme")
	must(err)
	if len(providers) != 1 || providers[0].Type != "foo" || providers[0].LatestVersion != "1.0.0" {
		t.Errorf("ListProviders = %+v", providers)
	}
	detail, err := admin.GetProvider(ctx, "acme", "foo")
	must(err)
	if len(detail.Versions) != 1 {
		t.Errorf("GetProvider = %+v", detail)
	}
	v, err := admin.GetProviderVersion(ctx, "acme", "foo", "1.0.0")
	must(err)
	if len(v.Platforms) != 2 {
		t.Errorf("GetProviderVersion = %+v", v)
	}
	if _, err := admin.GetProviderVersion(ctx, "acme", "foo", "9.9.9"); !client.IsNotFound(err) {
		t.Errorf("GetProviderVersion(9.9.9) error = %v, want not found", err)
	}

	tokens, err := admin.ListTokens(ctx, "acme")
	must(err)
	if len(tokens) != 1 || tokens[0].ID != created.Token.ID {
		t.Errorf("ListTokens(acme) = %+v", tokens)
	}
	got, err := admin.GetToken(ctx, created.Token.ID)
	must(err)
	if got.Description != "ci" || got.ExpiresAt == nil {
		t.Errorf("GetToken = %+v", got)
	}
	must(admin.RevokeToken(ctx, created.Token.ID))
	if _, err := publisher.WhoAmI(ctx); !client.IsUnauthenticated(err) {
		t.Errorf("WhoAmI with a revoked token: %v, want unauthenticated", err)
	}

	if err := admin.DeleteNamespace(ctx, "acme"); !client.IsConflict(err) {
		t.Errorf("DeleteNamespace of a namespace with versions: %v, want a conflict", err)
	}
	must(admin.DeleteSigningKey(ctx, "acme", key.KeyID))
	if _, err := admin.GetSigningKey(ctx, "acme", key.KeyID); !client.IsNotFound(err) {
		t.Errorf("GetSigningKey after delete: %v, want not found", err)
	}
	_, err = admin.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: "empty"})
	must(err)
	must(admin.DeleteNamespace(ctx, "empty"))
}
