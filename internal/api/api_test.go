package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/trovetest"
)

// principal names used in the matrix.
const (
	none         = "no token"
	malformed    = "malformed"
	unknown      = "unknown token"
	expired      = "expired"
	revoked      = "revoked"
	acmeRead     = "acme reader"
	acmePublish  = "acme publisher"
	acmeAdmin    = "acme admin"
	otherAdmin   = "admin of another namespace"
	globalRead   = "global reader"
	globalAdmin  = "global admin"
	unauthorized = 401
)

var principals = []string{none, malformed, unknown, expired, revoked, acmeRead, acmePublish, acmeAdmin, otherAdmin, globalRead, globalAdmin}

// Personal tokens of users, whose rights come from their roles. Each
// token carries scope admin (all of its user's rights) unless its name
// says otherwise.
const (
	userReader    = "acme reader user"
	userPublisher = "acme publisher user"
	userAdmin     = "acme admin user"
	userOther     = "admin user of another namespace"
	userGlobal    = "global admin user"
	userNarrow    = "global admin user, read-only token"
	userDisabled  = "disabled admin user"
)

var userPrincipals = []string{userReader, userPublisher, userAdmin, userOther, userGlobal, userNarrow, userDisabled}

// mint stores a token directly in the index (so that expired ones can
// exist) and returns its secret.
func mint(t *testing.T, s *trovetest.Server, ns string, scope registry.Scope, mutate func(*registry.Token)) string {
	t.Helper()
	secret, hash, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := auth.NewID()
	tok := registry.Token{ID: id, Hash: hash, Scopes: []registry.Scope{scope}, CreatedAt: time.Now()}
	if ns != "" {
		tok.Namespaces = []string{ns}
	}
	if mutate != nil {
		mutate(&tok)
	}
	if err := s.Index.CreateToken(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	return secret
}

func setup(t *testing.T, opts ...trovetest.Options) (*trovetest.Server, map[string]string) {
	t.Helper()
	s := trovetest.Start(t, opts...)
	ctx := context.Background()
	for _, ns := range []string{"acme", "other"} {
		if err := s.Index.CreateNamespace(ctx, registry.Namespace{Name: ns, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	tokens := map[string]string{
		none:        "",
		malformed:   "Basic dXNlcjpwYXNz",
		unknown:     "Bearer trove_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		expired:     "Bearer " + mint(t, s, "acme", registry.ScopeAdmin, func(tk *registry.Token) { tk.ExpiresAt = time.Now().Add(-time.Minute) }),
		revoked:     "Bearer " + mint(t, s, "acme", registry.ScopeAdmin, func(tk *registry.Token) { tk.RevokedAt = time.Now().Add(-time.Minute) }),
		acmeRead:    "Bearer " + mint(t, s, "acme", registry.ScopeRead, nil),
		acmePublish: "Bearer " + mint(t, s, "acme", registry.ScopePublish, nil),
		acmeAdmin:   "Bearer " + mint(t, s, "acme", registry.ScopeAdmin, nil),
		otherAdmin:  "Bearer " + mint(t, s, "other", registry.ScopeAdmin, nil),
		globalRead:  "Bearer " + mint(t, s, "", registry.ScopeRead, nil),
		globalAdmin: "Bearer " + s.AdminToken,
	}
	if err := s.Index.CreateNamespace(ctx, registry.Namespace{Name: "open", Visibility: registry.VisibilityPublic, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	acc := s.Index.(store.Access)
	users := []struct {
		principal, name, ns string
		role                registry.Role
		admin, disabled     bool
		scope               registry.Scope
	}{
		{userReader, "rita", "acme", registry.RoleReader, false, false, registry.ScopeAdmin},
		{userPublisher, "paul", "acme", registry.RolePublisher, false, false, registry.ScopeAdmin},
		{userAdmin, "ada", "acme", registry.RoleAdmin, false, false, registry.ScopeAdmin},
		{userOther, "otto", "other", registry.RoleAdmin, false, false, registry.ScopeAdmin},
		{userGlobal, "gina", "", "", true, false, registry.ScopeAdmin},
		{userNarrow, "gina", "", "", true, false, registry.ScopeRead},
		{userDisabled, "dan", "acme", registry.RoleAdmin, true, true, registry.ScopeAdmin},
	}
	for _, u := range users {
		if _, err := acc.GetUser(ctx, u.name); registry.IsKind(err, registry.NotFound) {
			if err := acc.CreateUser(ctx, registry.User{Name: u.name, Admin: u.admin, Disabled: u.disabled, CreatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		if u.role != "" {
			if err := acc.SetMembership(ctx, registry.Membership{User: u.name, Namespace: u.ns, Role: u.role, CreatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
		}
		tokens[u.principal] = "Bearer " + mint(t, s, "", u.scope, func(tk *registry.Token) { tk.User = u.name })
	}
	return s, tokens
}

type call struct {
	method, path string
	body         func() (io.Reader, string) // body and content type
}

func jsonBody(v string) func() (io.Reader, string) {
	return func() (io.Reader, string) { return strings.NewReader(v), "application/json" }
}

func emptyMultipart() (io.Reader, string) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.Close()
	return &buf, mw.FormDataContentType()
}

// TestAuthorizationMatrix asserts the status of every management route for
// every kind of caller. Valid callers without the right to read a
// namespace get 404, so that namespace names do not leak.
func TestAuthorizationMatrix(t *testing.T) {
	s, tokens := setup(t)
	ctx := context.Background()
	// Things that exist in acme: a signing key, a provider version, and
	// rita's password (her own change must name it).
	const ritaPassword = "rita's current password"
	key := registry.SigningKey{Namespace: "acme", KeyID: "FEDCBA9876543210", Fingerprint: strings.Repeat("E", 40), ASCIIArmor: "x", CreatedAt: time.Now()}
	if err := s.Index.AddSigningKey(ctx, key); err != nil {
		t.Fatal(err)
	}
	err := s.Index.CreateProviderVersion(ctx, registry.ProviderVersion{
		Namespace: "acme", Type: "widget", Version: "1.0.0", Protocols: []string{"5.0"},
		SHASumsDigest: stored(t, s, "a"), SHASumsSignatureDigest: stored(t, s, "b"), SigningKey: key,
		Platforms:   []registry.Platform{{OS: "linux", Arch: "amd64", Filename: "terraform-provider-widget_1.0.0_linux_amd64.zip", SHA256: stored(t, s, "d"), Size: 1}},
		PublishedAt: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	acc := s.Index.(store.Access)
	rita, err := acc.GetUser(ctx, "rita")
	if err != nil {
		t.Fatal(err)
	}
	if rita.PasswordHash, err = auth.HashPassword(ritaPassword); err != nil {
		t.Fatal(err)
	}
	if err := acc.UpdateUser(ctx, rita); err != nil {
		t.Fatal(err)
	}
	n := 0
	// Shorthands for the answers of user principals.
	readers := func(m map[string]int, reader, publisher, admin, other, global, narrow int) map[string]int {
		m[userReader], m[userPublisher], m[userAdmin], m[userOther], m[userGlobal], m[userNarrow] = reader, publisher, admin, other, global, narrow
		return m
	}
	all := func(code int) map[string]int {
		m := map[string]int{}
		for _, p := range append(slices.Clone(principals[5:]), userPrincipals[:6]...) {
			m[p] = code
		}
		return m
	}
	past := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	cases := []struct {
		name string
		call call
		want map[string]int // valid principals only; invalid ones (and disabled users) always get 401
	}{
		{"list namespaces", call{"GET", "/api/v1/namespaces", nil}, all(200)},
		{"create namespace", call{"POST", "/api/v1/namespaces", nil},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 403, otherAdmin: 403, globalRead: 403, globalAdmin: 201}, 403, 403, 403, 403, 201, 403)},
		{"get namespace", call{"GET", "/api/v1/namespaces/acme", nil},
			readers(map[string]int{acmeRead: 200, acmePublish: 200, acmeAdmin: 200, otherAdmin: 404, globalRead: 200, globalAdmin: 200}, 200, 200, 200, 404, 200, 200)},
		{"get public namespace", call{"GET", "/api/v1/namespaces/open", nil}, all(200)},
		{"update namespace", call{"PATCH", "/api/v1/namespaces/acme", jsonBody(`{"description":"d"}`)},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 200, otherAdmin: 404, globalRead: 403, globalAdmin: 200}, 403, 403, 200, 404, 200, 403)},
		{"set visibility", call{"PATCH", "/api/v1/namespaces/acme", jsonBody(`{"visibility":"private"}`)},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 200, otherAdmin: 404, globalRead: 403, globalAdmin: 200}, 403, 403, 200, 404, 200, 403)},
		{"update public namespace", call{"PATCH", "/api/v1/namespaces/open", jsonBody(`{"description":"d"}`)},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 403, otherAdmin: 403, globalRead: 403, globalAdmin: 200}, 403, 403, 403, 403, 200, 403)},
		{"delete namespace", call{"DELETE", "/api/v1/namespaces/nosuch", nil},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 403, otherAdmin: 403, globalRead: 403, globalAdmin: 404}, 403, 403, 403, 403, 404, 403)},
		{"list keys", call{"GET", "/api/v1/namespaces/acme/keys", nil},
			readers(map[string]int{acmeRead: 200, acmePublish: 200, acmeAdmin: 200, otherAdmin: 404, globalRead: 200, globalAdmin: 200}, 200, 200, 200, 404, 200, 200)},
		{"add key (invalid armor)", call{"POST", "/api/v1/namespaces/acme/keys", jsonBody(`{"ascii_armor":"nope"}`)},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 400, otherAdmin: 404, globalRead: 403, globalAdmin: 400}, 403, 403, 400, 404, 400, 403)},
		{"remove key", call{"DELETE", "/api/v1/namespaces/acme/keys/0123456789ABCDEF", nil},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 404, otherAdmin: 404, globalRead: 403, globalAdmin: 404}, 403, 403, 404, 404, 404, 403)},
		{"list all tokens", call{"GET", "/api/v1/tokens", nil},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 403, otherAdmin: 403, globalRead: 403, globalAdmin: 200}, 403, 403, 403, 403, 200, 403)},
		{"list acme tokens", call{"GET", "/api/v1/tokens?namespace=acme", nil},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 200, otherAdmin: 403, globalRead: 403, globalAdmin: 200}, 403, 403, 200, 403, 200, 403)},
		{"list rita's tokens", call{"GET", "/api/v1/tokens?user=rita", nil},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 403, otherAdmin: 403, globalRead: 403, globalAdmin: 200}, 200, 403, 403, 403, 200, 403)},
		{"create acme token", call{"POST", "/api/v1/tokens", jsonBody(`{"namespace":"acme","scopes":["read"]}`)},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 201, otherAdmin: 403, globalRead: 403, globalAdmin: 201}, 403, 403, 201, 403, 201, 403)},
		{"create global token", call{"POST", "/api/v1/tokens", jsonBody(`{"scopes":["read"]}`)},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 403, otherAdmin: 403, globalRead: 403, globalAdmin: 201}, 403, 403, 403, 403, 201, 403)},
		{"create personal token of rita", call{"POST", "/api/v1/tokens", jsonBody(`{"user":"rita","scopes":["read"]}`)},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 403, otherAdmin: 403, globalRead: 403, globalAdmin: 201}, 201, 403, 403, 403, 201, 403)},
		{"expire a missing token", call{"PATCH", "/api/v1/tokens/tok_nosuch", jsonBody(`{"expires_at":"` + past + `"}`)}, all(404)},
		// {acme token} is a new read token bound to acme for every caller.
		{"show an acme token", call{"GET", "/api/v1/tokens/{acme token}", nil},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 200, otherAdmin: 404, globalRead: 403, globalAdmin: 200}, 403, 403, 200, 404, 200, 403)},
		{"revoke an acme token", call{"DELETE", "/api/v1/tokens/{acme token}", nil},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 204, otherAdmin: 404, globalRead: 403, globalAdmin: 204}, 403, 403, 204, 404, 204, 403)},
		{"show a key", call{"GET", "/api/v1/namespaces/acme/keys/FEDCBA9876543210", nil},
			readers(map[string]int{acmeRead: 200, acmePublish: 200, acmeAdmin: 200, otherAdmin: 404, globalRead: 200, globalAdmin: 200}, 200, 200, 200, 404, 200, 200)},
		{"show a provider", call{"GET", "/api/v1/namespaces/acme/providers/widget", nil},
			readers(map[string]int{acmeRead: 200, acmePublish: 200, acmeAdmin: 200, otherAdmin: 404, globalRead: 200, globalAdmin: 200}, 200, 200, 200, 404, 200, 200)},
		{"show a provider version", call{"GET", "/api/v1/namespaces/acme/providers/widget/versions/1.0.0", nil},
			readers(map[string]int{acmeRead: 200, acmePublish: 200, acmeAdmin: 200, otherAdmin: 404, globalRead: 200, globalAdmin: 200}, 200, 200, 200, 404, 200, 200)},
		{"show a missing provider", call{"GET", "/api/v1/namespaces/acme/providers/nosuch", nil},
			readers(map[string]int{acmeRead: 404, acmePublish: 404, acmeAdmin: 404, otherAdmin: 404, globalRead: 404, globalAdmin: 404}, 404, 404, 404, 404, 404, 404)},
		// Setting rita's password to what it is changes nothing, whoever may.
		{"change rita's password", call{"PATCH", "/api/v1/users/rita", jsonBody(`{"password":"` + ritaPassword + `","current_password":"` + ritaPassword + `"}`)},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 403, otherAdmin: 403, globalRead: 403, globalAdmin: 200}, 200, 403, 403, 403, 200, 403)},
		{"list providers", call{"GET", "/api/v1/namespaces/acme/providers", nil},
			readers(map[string]int{acmeRead: 200, acmePublish: 200, acmeAdmin: 200, otherAdmin: 404, globalRead: 200, globalAdmin: 200}, 200, 200, 200, 404, 200, 200)},
		{"list providers of a public namespace", call{"GET", "/api/v1/namespaces/open/providers", nil}, all(200)},
		{"publish (empty release)", call{"POST", "/api/v1/namespaces/acme/providers/example/versions/1.0.0", emptyMultipart},
			readers(map[string]int{acmeRead: 403, acmePublish: 400, acmeAdmin: 400, otherAdmin: 404, globalRead: 403, globalAdmin: 400}, 403, 400, 400, 404, 400, 403)},
		{"publish to a public namespace", call{"POST", "/api/v1/namespaces/open/providers/example/versions/1.0.0", emptyMultipart},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 403, otherAdmin: 403, globalRead: 403, globalAdmin: 400}, 403, 403, 403, 403, 400, 403)},
		{"list users", call{"GET", "/api/v1/users", nil},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 403, otherAdmin: 403, globalRead: 403, globalAdmin: 200}, 403, 403, 403, 403, 200, 403)},
		{"create user", call{"POST", "/api/v1/users", nil},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 403, otherAdmin: 403, globalRead: 403, globalAdmin: 201}, 403, 403, 403, 403, 201, 403)},
		{"show rita", call{"GET", "/api/v1/users/rita", nil},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 403, otherAdmin: 403, globalRead: 403, globalAdmin: 200}, 200, 403, 403, 403, 200, 403)},
		{"disable rita (no change)", call{"PATCH", "/api/v1/users/rita", jsonBody(`{"disabled":false}`)},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 403, otherAdmin: 403, globalRead: 403, globalAdmin: 200}, 403, 403, 403, 403, 200, 403)},
		{"list acme members", call{"GET", "/api/v1/namespaces/acme/members", nil},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 200, otherAdmin: 404, globalRead: 403, globalAdmin: 200}, 403, 403, 200, 404, 200, 403)},
		{"set rita's role", call{"PUT", "/api/v1/namespaces/acme/members/rita", jsonBody(`{"role":"reader"}`)},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 200, otherAdmin: 404, globalRead: 403, globalAdmin: 200}, 403, 403, 200, 404, 200, 403)},
		{"remove a non-member", call{"DELETE", "/api/v1/namespaces/acme/members/gina", nil},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 404, otherAdmin: 404, globalRead: 403, globalAdmin: 404}, 403, 403, 404, 404, 404, 403)},
		{"read the whole audit log", call{"GET", "/api/v1/audit", nil},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 403, otherAdmin: 403, globalRead: 403, globalAdmin: 200}, 403, 403, 403, 403, 200, 403)},
		{"read acme's audit log", call{"GET", "/api/v1/audit?namespace=acme", nil},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 200, otherAdmin: 403, globalRead: 403, globalAdmin: 200}, 403, 403, 200, 403, 200, 403)},
		{"whoami", call{"GET", "/api/v1/whoami", nil}, all(200)},
		{"list mirror upstreams", call{"GET", "/api/v1/mirror/upstreams", nil},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 403, otherAdmin: 403, globalRead: 403, globalAdmin: 200}, 403, 403, 403, 403, 200, 403)},
		{"show a mirror upstream", call{"GET", "/api/v1/mirror/upstreams/registry.terraform.io", nil},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 403, otherAdmin: 403, globalRead: 403, globalAdmin: 200}, 403, 403, 403, 403, 200, 403)},
		{"set a mirror upstream (invalid rule)", call{"PUT", "/api/v1/mirror/upstreams/mirror.example", jsonBody(`{"allow":[{"provider":"nope"}]}`)},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 403, otherAdmin: 403, globalRead: 403, globalAdmin: 400}, 403, 403, 403, 403, 400, 403)},
		{"remove a missing mirror upstream", call{"DELETE", "/api/v1/mirror/upstreams/nosuch.example", nil},
			readers(map[string]int{acmeRead: 403, acmePublish: 403, acmeAdmin: 403, otherAdmin: 403, globalRead: 403, globalAdmin: 404}, 403, 403, 403, 403, 404, 403)},
	}
	for _, c := range cases {
		for _, p := range append(slices.Clone(principals), userPrincipals...) {
			want, valid := c.want[p]
			if !valid {
				want = unauthorized
			}
			t.Run(c.name+"/"+p, func(t *testing.T) {
				body, ctype := io.Reader(nil), ""
				switch {
				case c.call.body != nil:
					body, ctype = c.call.body()
				case c.call.method == "POST" && c.call.path == "/api/v1/namespaces":
					n++
					body, ctype = strings.NewReader(fmt.Sprintf(`{"name":"ns-%d"}`, n)), "application/json"
				case c.call.method == "POST" && c.call.path == "/api/v1/users":
					n++
					body, ctype = strings.NewReader(fmt.Sprintf(`{"name":"user-%d","password":"a long enough password"}`, n)), "application/json"
				}
				path := c.call.path
				if strings.Contains(path, "{acme token}") {
					secret := mint(t, s, "acme", registry.ScopeRead, nil)
					tok, err := s.Index.TokenByHash(context.Background(), auth.HashToken(secret))
					if err != nil {
						t.Fatal(err)
					}
					path = strings.Replace(path, "{acme token}", tok.ID, 1)
				}
				req, _ := http.NewRequest(c.call.method, s.URL+path, body)
				if ctype != "" {
					req.Header.Set("Content-Type", ctype)
				}
				if tokens[p] != "" {
					req.Header.Set("Authorization", tokens[p])
				}
				resp, err := s.HTTPClient().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				raw, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != want {
					t.Fatalf("%s %s as %s = %d %s, want %d", c.call.method, path, p, resp.StatusCode, raw, want)
				}
				if resp.StatusCode >= 400 {
					var e struct{ Errors []string }
					if json.Unmarshal(raw, &e) != nil || len(e.Errors) == 0 || e.Errors[0] == "" {
						t.Fatalf("error body %q is not {\"errors\": [...]}", raw)
					}
				}
				if secret, _ := strings.CutPrefix(tokens[p], "Bearer "); secret != "" && bytes.Contains(raw, []byte(secret)) {
					t.Fatalf("answer echoes the token")
				}
			})
		}
	}
}

func TestTokenLifecycle(t *testing.T) {
	s, tokens := setup(t)
	do := func(method, path, auth, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, s.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", auth)
		resp, err := s.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	status, created := do("POST", "/api/v1/tokens", tokens[acmeAdmin], `{"namespace":"acme","scopes":["publish"],"description":"ci"}`)
	if status != 201 {
		t.Fatalf("create = %d %v", status, created)
	}
	secret := created["secret"].(string)
	id := created["token"].(map[string]any)["id"].(string)
	if !strings.HasPrefix(secret, "trove_") || len(secret) < 40 {
		t.Fatalf("secret %q does not look like a 256-bit token", secret)
	}
	stored, err := s.Index.TokenByHash(context.Background(), auth.HashToken(secret))
	if err != nil || stored.ID != id || stored.Hash == secret {
		t.Fatalf("stored token = %+v, %v; want it under its hash only", stored, err)
	}
	if status, _ := do("GET", "/api/v1/whoami", "Bearer "+secret, ""); status != 200 {
		t.Fatalf("new token refused: %d", status)
	}
	// The listing never carries secrets or hashes.
	status, list := do("GET", "/api/v1/tokens?namespace=acme", tokens[acmeAdmin], "")
	raw, _ := json.Marshal(list)
	if status != 200 || bytes.Contains(raw, []byte(secret)) || bytes.Contains(raw, []byte(stored.Hash)) {
		t.Fatalf("listing = %d %s", status, raw)
	}
	// Admins of other namespaces cannot see or revoke it.
	if status, _ := do("DELETE", "/api/v1/tokens/"+id, tokens[otherAdmin], ""); status != 404 {
		t.Fatalf("revoke by another namespace's admin = %d, want 404", status)
	}
	if status, _ := do("DELETE", "/api/v1/tokens/"+id, tokens[acmeAdmin], ""); status != 204 {
		t.Fatalf("revoke = %d", status)
	}
	status, body := do("GET", "/api/v1/whoami", "Bearer "+secret, "")
	if status != 401 || !strings.Contains(fmt.Sprint(body), "revoked") {
		t.Fatalf("revoked token = %d %v", status, body)
	}
	// Expiry in the past and unknown scopes are refused.
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	if status, _ := do("POST", "/api/v1/tokens", tokens[globalAdmin], `{"scopes":["read"],"expires_at":"`+past+`"}`); status != 400 {
		t.Fatalf("past expiry = %d, want 400", status)
	}
	if status, _ := do("POST", "/api/v1/tokens", tokens[globalAdmin], `{"scopes":["root"]}`); status != 400 {
		t.Fatalf("unknown scope = %d, want 400", status)
	}
	if status, _ := do("POST", "/api/v1/tokens", tokens[globalAdmin], `{"scopes":["read"],"extra":1}`); status != 400 {
		t.Fatalf("unknown field = %d, want 400", status)
	}
}

func TestNamespaceDeleteRefusedWhileNotEmpty(t *testing.T) {
	s, tokens := setup(t)
	ctx := context.Background()
	err := s.Index.CreateProviderVersion(ctx, registry.ProviderVersion{
		Namespace: "acme", Type: "example", Version: "1.0.0", Protocols: []string{"5.0"},
		SHASumsDigest: stored(t, s, "a"), SHASumsSignatureDigest: stored(t, s, "b"),
		SigningKey:  registry.SigningKey{Namespace: "acme", KeyID: "0123456789ABCDEF", Fingerprint: strings.Repeat("C", 40), ASCIIArmor: "x", CreatedAt: time.Now()},
		Platforms:   []registry.Platform{{OS: "linux", Arch: "amd64", Filename: "terraform-provider-example_1.0.0_linux_amd64.zip", SHA256: stored(t, s, "d"), Size: 1}},
		PublishedAt: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ns   string
		want int
	}{{"acme", 409}, {"other", 204}, {"other", 404}} {
		req, _ := http.NewRequest("DELETE", s.URL+"/api/v1/namespaces/"+tc.ns, nil)
		req.Header.Set("Authorization", tokens[globalAdmin])
		resp, err := s.HTTPClient().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Fatalf("DELETE %s = %d, want %d", tc.ns, resp.StatusCode, tc.want)
		}
	}
}
