package web_test

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest"
)

// TestMirroredPageShowsHolds: the page of a mirrored provider says which
// versions the mirror holds back or denies, and why.
func TestMirroredPageShowsHolds(t *testing.T) {
	ctx := context.Background()
	up := trovetest.Start(t)
	upc, err := client.New(up.URL, up.AdminToken, client.WithCAFile(up.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := upc.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: "acme", Visibility: "public"}); err != nil {
		t.Fatal(err)
	}
	key := signingtest.NewKey(t, "acme")
	if _, err := upc.AddSigningKey(ctx, "acme", apispec.AddSigningKeyRequest{ASCIIArmor: key.ArmoredPublic}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		rel := releasetest.Build(t, key, releasetest.Spec{Type: "widget", Version: v, Platforms: []string{"linux_amd64"}, Protocols: []string{"5.0"}})
		var files []client.PublishFile
		for _, f := range rel.Files {
			files = append(files, client.PublishFile{Name: f.Name, Open: f.Open})
		}
		if _, err := upc.PublishProvider(ctx, "acme", "widget", v, files); err != nil {
			t.Fatal(err)
		}
	}

	e := start(t)
	ca, err := os.ReadFile(up.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.PutMirrorUpstream(ctx, up.Host, apispec.PutMirrorUpstreamRequest{ServiceURL: up.URL + "/v1/providers/",
		CACertificates: string(ca), Allow: []apispec.MirrorRule{{Provider: "acme/widget", MinAge: "7d"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin.ApproveMirroredVersion(ctx, up.Host, "acme", "widget", "1.0.0", "reviewed"); err != nil {
		t.Fatal(err)
	}
	// A client's install stores 1.0.0 in the mirror.
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/v1/mirror/"+up.Host+"/acme/widget/1.0.0.json", nil)
	req.Header.Set("Authorization", "Bearer "+e.srv.AdminToken)
	resp, err := e.srv.HTTPClient().Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("1.0.0.json: %v %v", resp, err)
	}
	resp.Body.Close()
	if _, err := e.admin.DenyMirroredVersions(ctx, up.Host, "acme", "widget", "1.0.0", "CVE-2026-0001"); err != nil {
		t.Fatal(err)
	}

	b := e.browser(t)
	b.signIn("bob", password)
	p := b.get("/mirror/" + up.Host + "/acme/widget")
	if p.status != 200 {
		t.Fatalf("mirrored page: %d\n%s", p.status, p.body)
	}
	for _, want := range []string{"Held back", "once they are 7d old", "<td>1.1.0</td><td>held</td>", "held until", "<td>1.0.0</td><td>denied</td>", "CVE-2026-0001"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("the mirrored page lacks %q:\n%s", want, p.body)
		}
	}
}
