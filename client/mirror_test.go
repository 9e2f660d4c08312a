package client_test

import (
	"context"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/trovetest"
)

// TestMirrorUpstreamsAgainstTrove runs the mirror upstream methods against
// a real in-process Trove.
func TestMirrorUpstreamsAgainstTrove(t *testing.T) {
	ctx := context.Background()
	s := trovetest.Start(t)
	admin, err := client.New(s.URL, s.AdminToken, client.WithCAFile(s.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	ups, err := admin.ListMirrorUpstreams(ctx)
	if err != nil || len(ups) != 2 || ups[0].Host != "registry.opentofu.org" || ups[1].Host != "registry.terraform.io" {
		t.Fatalf("ListMirrorUpstreams = %+v, %v; want the two defaults", ups, err)
	}
	req := apispec.PutMirrorUpstreamRequest{
		ServiceURL: "https://127.0.0.1:9/v1/providers/", Description: "private",
		Allow: []apispec.MirrorRule{{Provider: "acme/*", Versions: ">= 1.0"}},
	}
	got, err := admin.PutMirrorUpstream(ctx, "Mirror.Example", req)
	if err != nil || got.Host != "mirror.example" || got.ServiceURL != req.ServiceURL || len(got.Allow) != 1 || got.Allow[0] != req.Allow[0] {
		t.Fatalf("PutMirrorUpstream = %+v, %v", got, err)
	}
	if _, err := admin.PutMirrorUpstream(ctx, "mirror.example", apispec.PutMirrorUpstreamRequest{Allow: []apispec.MirrorRule{{Provider: "acme"}}}); client.StatusCode(err) != 400 {
		t.Fatalf("invalid rule: %v, want 400", err)
	}
	if got, err := admin.GetMirrorUpstream(ctx, "mirror.example"); err != nil || got.Description != "private" {
		t.Fatalf("GetMirrorUpstream = %+v, %v", got, err)
	}
	if err := admin.DeleteMirrorUpstream(ctx, "mirror.example"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.GetMirrorUpstream(ctx, "mirror.example"); !client.IsNotFound(err) {
		t.Fatalf("after delete: %v, want not found", err)
	}

	// Only global admins manage upstreams.
	created, err := admin.CreateToken(ctx, apispec.CreateTokenRequest{Scopes: []string{"publish"}})
	if err != nil {
		t.Fatal(err)
	}
	publisher, err := client.New(s.URL, created.Secret, client.WithCAFile(s.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := publisher.ListMirrorUpstreams(ctx); !client.IsForbidden(err) {
		t.Fatalf("ListMirrorUpstreams as a publisher: %v, want forbidden", err)
	}
}
