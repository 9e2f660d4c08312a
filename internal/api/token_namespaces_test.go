package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// TestTokenNamespaceSets checks tokens bound to several namespaces through
// the API: how they are requested and shown, who may create them, that
// they act in each namespace of their set and in no other, and that
// deleting one of their namespaces deletes them.
func TestTokenNamespaceSets(t *testing.T) {
	s, tokens := setup(t)
	ctx := t.Context()
	for _, ns := range []string{"third", "zeta"} {
		if err := s.Index.CreateNamespace(ctx, registry.Namespace{Name: ns, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	// create posts a token request as caller and returns the status, the
	// created token and the raw answer.
	create := func(caller, body string) (int, apispec.CreatedToken, string) {
		t.Helper()
		status, raw := apiDo(t, s, "POST", "/api/v1/tokens", caller, "application/json", strings.NewReader(body))
		var out apispec.CreatedToken
		if status == 201 {
			if err := json.Unmarshal(raw, &out); err != nil {
				t.Fatalf("POST /api/v1/tokens %s = %s: %v", body, raw, err)
			}
		}
		return status, out, string(raw)
	}

	t.Run("RequestAndAnswer", func(t *testing.T) {
		admin := tokens[globalAdmin]
		status, two, raw := create(admin, `{"namespaces":["Other","acme","acme"],"scopes":["publish"]}`)
		if status != 201 || !slices.Equal(two.Token.Namespaces, []string{"acme", "other"}) || two.Token.Namespace != "" ||
			strings.Contains(raw, `"namespace":`) {
			t.Errorf("token for namespaces Other, acme, acme = %d %s; want namespaces [acme other] and no namespace", status, raw)
		}
		status, one, raw := create(admin, `{"namespace":"ACME","scopes":["read"]}`)
		if status != 201 || !slices.Equal(one.Token.Namespaces, []string{"acme"}) || one.Token.Namespace != "acme" {
			t.Errorf("token for the deprecated namespace field = %d %s; want namespaces [acme] and namespace acme", status, raw)
		}
		status, global, raw := create(admin, `{"namespaces":[],"scopes":["read"]}`)
		if status != 201 || global.Token.Namespaces != nil || strings.Contains(raw, `"namespace`) {
			t.Errorf("token for no namespaces = %d %s; want a global token", status, raw)
		}
		for body, want := range map[string]int{
			`{"namespace":"acme","namespaces":["acme"],"scopes":["read"]}`:  400,
			`{"namespace":"other","namespaces":["acme"],"scopes":["read"]}`: 400,
			`{"namespaces":["acme","no/slash"],"scopes":["read"]}`:          400,
			`{"namespaces":["acme",""],"scopes":["read"]}`:                  400,
			`{"namespaces":["acme","nope"],"scopes":["read"]}`:              404,
		} {
			if status, _, raw := create(admin, body); status != want {
				t.Errorf("POST %s = %d %s, want %d", body, status, raw, want)
			} else if want == 400 && strings.Contains(body, `"namespace":`) && !strings.Contains(raw, "use namespaces alone") {
				t.Errorf("POST %s answers %s, which does not say to use namespaces alone", body, raw)
			}
		}
		many := make([]string, 101)
		for i := range many {
			many[i] = fmt.Sprintf("%q", fmt.Sprintf("ns%d", i))
		}
		body := `{"namespaces":[` + strings.Join(many, ",") + `],"scopes":["read"]}`
		if status, _, raw := create(admin, body); status != 400 || !strings.Contains(raw, "at most 100 namespaces") {
			t.Errorf("POST a token for 101 namespaces = %d %s, want 400", status, raw)
		}
	})

	t.Run("WhoMayCreate", func(t *testing.T) {
		both := "Bearer " + mint(t, s, "acme", registry.ScopeAdmin, func(tk *registry.Token) { tk.Namespaces = []string{"acme", "other"} })
		for _, tc := range []struct {
			caller, body string
			want         int
		}{
			// A service token: admin of every namespace of the set.
			{tokens[acmeAdmin], `{"namespaces":["acme"],"scopes":["publish"]}`, 201},
			{tokens[acmeAdmin], `{"namespaces":["acme","other"],"scopes":["publish"]}`, 403},
			{tokens[otherAdmin], `{"namespaces":["acme","other"],"scopes":["publish"]}`, 403},
			{tokens[acmePublish], `{"namespaces":["acme"],"scopes":["publish"]}`, 403},
			{both, `{"namespaces":["acme","other"],"scopes":["publish"]}`, 201},
			{both, `{"namespaces":["other"],"scopes":["read"]}`, 201},
			{both, `{"namespaces":["acme","third"],"scopes":["publish"]}`, 403},
			{both, `{"scopes":["read"]}`, 403},
			// A personal token of ada (admin of acme, nothing else) for
			// herself: a namespace she may not read is not found.
			{tokens[userAdmin], `{"user":"ada","namespaces":["acme","open"],"scopes":["admin"]}`, 201},
			{tokens[userAdmin], `{"user":"ada","namespaces":["acme","other"],"scopes":["admin"]}`, 404},
		} {
			if status, _, raw := create(tc.caller, tc.body); status != tc.want {
				t.Errorf("POST %s = %d %s, want %d", tc.body, status, raw, tc.want)
			}
		}
		// A personal token bound to a set creates tokens bound to some of
		// it only.
		_, narrow, _ := create(tokens[userAdmin], `{"user":"ada","namespaces":["acme","open"],"scopes":["admin"]}`)
		caller := "Bearer " + narrow.Secret
		for body, want := range map[string]int{
			`{"user":"ada","namespaces":["acme"],"scopes":["publish"]}`:         201,
			`{"user":"ada","namespaces":["open","acme"],"scopes":["read"]}`:     201,
			`{"user":"ada","namespaces":["acme","third"],"scopes":["publish"]}`: 403,
			`{"user":"ada","scopes":["read"]}`:                                  403,
		} {
			if status, _, raw := create(caller, body); status != want {
				t.Errorf("POST %s with a personal token bound to acme, open = %d %s, want %d", body, status, raw, want)
			}
		}
	})

	t.Run("ActsInItsSetOnly", func(t *testing.T) {
		status, tok, raw := create(tokens[globalAdmin], `{"namespaces":["acme","other"],"scopes":["publish"]}`)
		if status != 201 {
			t.Fatalf("create = %d %s", status, raw)
		}
		bearer := "Bearer " + tok.Secret
		archive := moduleArchive(t, networkModule)
		for ns, want := range map[string]int{"acme": 201, "other": 201, "open": 403, "third": 404} {
			path := "/api/v1/namespaces/" + ns + "/modules/network/aws/versions/1.0.0"
			if status, raw := apiDo(t, s, "POST", path, bearer, apispec.ModuleArchiveTarGz, bytes.NewReader(archive)); status != want {
				t.Errorf("publish in %s = %d %s, want %d", ns, status, raw, want)
			}
		}
		// Both namespaces list it, and their admins manage it; others do not see it.
		for _, q := range []struct{ caller, ns string }{{tokens[acmeAdmin], "acme"}, {tokens[otherAdmin], "other"}} {
			status, raw := apiDo(t, s, "GET", "/api/v1/tokens?namespace="+q.ns, q.caller, "", nil)
			var list apispec.TokenList
			if status != 200 || json.Unmarshal(raw, &list) != nil || !slices.ContainsFunc(list.Tokens, func(x apispec.Token) bool { return x.ID == tok.Token.ID }) {
				t.Errorf("tokens of %s = %d %s, want it to list %s", q.ns, status, raw, tok.Token.ID)
			}
			if status, raw := apiDo(t, s, "GET", "/api/v1/tokens/"+tok.Token.ID, q.caller, "", nil); status != 200 {
				t.Errorf("GET the token as admin of %s = %d %s, want 200", q.ns, status, raw)
			}
		}
		if status, raw := apiDo(t, s, "GET", "/api/v1/tokens/"+tok.Token.ID, tokens[acmeRead], "", nil); status != 403 {
			t.Errorf("GET the token as reader of acme = %d %s, want 403", status, raw)
		}
		// Its creation is in the audit log of each of its namespaces.
		for _, ns := range []string{"acme", "other"} {
			status, raw := apiDo(t, s, "GET", "/api/v1/audit?action=token.create&namespace="+ns, tokens[globalAdmin], "", nil)
			if status != 200 || !strings.Contains(string(raw), tok.Token.ID) {
				t.Errorf("token.create events of %s = %d %s, want one for %s", ns, status, raw, tok.Token.ID)
			}
		}
		if status, raw := apiDo(t, s, "DELETE", "/api/v1/tokens/"+tok.Token.ID, tokens[otherAdmin], "", nil); status != 204 {
			t.Errorf("revoke by the admin of other = %d %s, want 204", status, raw)
		}
		if status, _ := apiDo(t, s, "GET", "/api/v1/whoami", bearer, "", nil); status != 401 {
			t.Errorf("whoami with the revoked token = %d, want 401", status)
		}
	})

	t.Run("OtherNamespacesStayHidden", func(t *testing.T) {
		// acme's admin manages a token bound to acme and to the private
		// namespace other, whose name it may not learn.
		status, tok, raw := create(tokens[globalAdmin], `{"namespaces":["acme","other"],"scopes":["publish"],"description":"shared"}`)
		if status != 201 {
			t.Fatalf("create = %d %s", status, raw)
		}
		var one apispec.Token
		status, body := apiDo(t, s, "GET", "/api/v1/tokens/"+tok.Token.ID, tokens[acmeAdmin], "", nil)
		if err := json.Unmarshal(body, &one); status != 200 || err != nil {
			t.Fatalf("GET the token as acme's admin = %d %s", status, body)
		}
		var list apispec.TokenList
		status, listed := apiDo(t, s, "GET", "/api/v1/tokens?namespace=acme", tokens[acmeAdmin], "", nil)
		if err := json.Unmarshal(listed, &list); status != 200 || err != nil {
			t.Fatalf("GET tokens of acme as acme's admin = %d %s", status, listed)
		}
		i := slices.IndexFunc(list.Tokens, func(x apispec.Token) bool { return x.ID == tok.Token.ID })
		if i < 0 {
			t.Fatalf("the token is not in acme's list: %s", listed)
		}
		for what, doc := range map[string]apispec.Token{"GET": one, "list": list.Tokens[i]} {
			if !slices.Equal(doc.Namespaces, []string{"acme"}) || doc.HiddenNamespaces != 1 || doc.Global() || doc.Namespace != "" {
				t.Errorf("%s as acme's admin = %+v; want namespaces [acme], 1 hidden, not global", what, doc)
			}
		}
		status, audit := apiDo(t, s, "GET", "/api/v1/audit?action=token.create&namespace=acme", tokens[acmeAdmin], "", nil)
		if status != 200 || !strings.Contains(string(audit), tok.Token.ID) {
			t.Fatalf("acme's audit log = %d %s, want the token's creation", status, audit)
		}
		for what, b := range map[string][]byte{"GET": body, "list": listed, "audit log": audit} {
			if bytes.Contains(b, []byte(`"other"`)) || bytes.Contains(b, []byte("acme,other")) || bytes.Contains(b, []byte("acme, other")) ||
				bytes.Contains(b, []byte("on other")) {
				t.Errorf("the %s shown to acme's admin names the namespace other: %s", what, b)
			}
		}
		var full apispec.Token
		status, body = apiDo(t, s, "GET", "/api/v1/tokens/"+tok.Token.ID, tokens[globalAdmin], "", nil)
		if err := json.Unmarshal(body, &full); status != 200 || err != nil || !slices.Equal(full.Namespaces, []string{"acme", "other"}) ||
			full.HiddenNamespaces != 0 {
			t.Errorf("GET the token as global admin = %d %s; want both namespaces, none hidden", status, body)
		}
	})
	t.Run("NamespaceDeleteDeletesTheToken", func(t *testing.T) {
		status, tok, raw := create(tokens[globalAdmin], `{"namespaces":["acme","zeta"],"scopes":["publish"]}`)
		if status != 201 {
			t.Fatalf("create = %d %s", status, raw)
		}
		bearer := "Bearer " + tok.Secret
		if status, raw := apiDo(t, s, "GET", "/api/v1/whoami", bearer, "", nil); status != 200 {
			t.Fatalf("whoami = %d %s", status, raw)
		}
		if status, raw := apiDo(t, s, "DELETE", "/api/v1/namespaces/zeta", tokens[globalAdmin], "", nil); status != 204 {
			t.Fatalf("delete zeta = %d %s", status, raw)
		}
		// Gone, not bound to acme alone, let alone global.
		if status, raw := apiDo(t, s, "GET", "/api/v1/whoami", bearer, "", nil); status != 401 {
			t.Errorf("whoami after deleting zeta = %d %s, want 401", status, raw)
		}
		if status, raw := apiDo(t, s, "GET", "/api/v1/namespaces/acme/modules", bearer, "", nil); status != 401 {
			t.Errorf("listing acme's modules after deleting zeta = %d %s, want 401", status, raw)
		}
		if status, raw := apiDo(t, s, "GET", "/api/v1/tokens/"+tok.Token.ID, tokens[globalAdmin], "", nil); status != 404 {
			t.Errorf("GET the token after deleting zeta = %d %s, want 404", status, raw)
		}
		left, err := s.Index.(store.Tokens).ListTokens(ctx, "acme")
		if err != nil || slices.ContainsFunc(left, func(x registry.Token) bool { return x.ID == tok.Token.ID }) {
			t.Errorf("tokens of acme after deleting zeta = %+v, %v; want no %s", left, err, tok.Token.ID)
		}
	})
}
