package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing/signingtest"
)

// TestManagementActionsAudited checks that provider publishes, signing
// key additions and removals and namespace deletions are audited with
// who did it (user or service token), from where, and on which namespace.
func TestManagementActionsAudited(t *testing.T) {
	s, tokens := setup(t)
	ctx := context.Background()
	do := func(method, path, authz, ctype string, body io.Reader) {
		t.Helper()
		req, _ := http.NewRequest(method, s.URL+path, body)
		req.Header.Set("Authorization", authz)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := s.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s = %d %s", method, path, resp.StatusCode, raw)
		}
	}
	tokenActor := func(principal string) string {
		tok, err := s.Index.TokenByHash(ctx, auth.HashToken(strings.TrimPrefix(tokens[principal], "Bearer ")))
		if err != nil {
			t.Fatal(err)
		}
		return "token:" + tok.ID
	}

	key := signingtest.NewKey(t, "acme")
	addKey, _ := json.Marshal(apispec.AddSigningKeyRequest{ASCIIArmor: key.ArmoredPublic})
	do("POST", "/api/v1/namespaces/acme/keys", tokens[userAdmin], "application/json", bytes.NewReader(addKey))

	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for _, f := range releasetest.Build(t, key, releasetest.Spec{Type: "example", Version: "1.0.0", Platforms: []string{"linux_amd64"}}).Files {
		w, err := mw.CreateFormFile(apispec.PublishFileField, f.Name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(f.Data)
	}
	mw.Close()
	do("POST", "/api/v1/namespaces/acme/providers/example/versions/1.0.0", tokens[userPublisher], mw.FormDataContentType(), &body)

	do("DELETE", "/api/v1/namespaces/acme/keys/"+key.KeyID, tokens[acmeAdmin], "", nil)
	do("DELETE", "/api/v1/namespaces/other", tokens[userGlobal], "", nil)

	want := []struct {
		action, actor, namespace, target string
	}{
		{registry.AuditKeyAdd, "user:ada", "acme", key.KeyID},
		{registry.AuditProviderPublish, "user:paul", "acme", "acme/example 1.0.0"},
		{registry.AuditKeyRemove, tokenActor(acmeAdmin), "acme", key.KeyID},
		{registry.AuditNamespaceDelete, "user:gina", "other", "other"},
	}
	for _, w := range want {
		events, err := s.Index.ListAudit(ctx, registry.AuditFilter{Action: w.action})
		if err != nil {
			t.Fatal(err)
		}
		if len(events) != 1 {
			t.Errorf("%s: %d events %+v, want 1", w.action, len(events), events)
			continue
		}
		e := events[0]
		if e.Actor != w.actor || e.SourceAddr != "127.0.0.1" || e.Namespace != w.namespace || e.Target != w.target || e.Time.IsZero() {
			t.Errorf("%s event = %+v, want actor %s, source 127.0.0.1, namespace %s, target %s", w.action, e, w.actor, w.namespace, w.target)
		}
	}
}
