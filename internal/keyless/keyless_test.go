package keyless_test

import (
	"encoding/base64"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"net/http"

	"trove.dev/trove/internal/ciissuer"
	"trove.dev/trove/internal/ciissuer/ciissuertest"
	"trove.dev/trove/internal/keyless"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/sqlite"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

const audience = "https://registry.example"

// countingTransport counts the requests an Exchanger makes.
type countingTransport struct{ n atomic.Int32 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

type env struct {
	iss   *ciissuertest.Process
	idx   *sqlite.Index
	x     *keyless.Exchanger
	calls *countingTransport
}

// newEnv starts the issuer process and an index with the namespaces acme
// (one policy: repository acme/infra, tags v*) and labs (none).
func newEnv(t *testing.T) *env {
	t.Helper()
	iss := ciissuertest.Start(t)
	idx := sqlitetest.NewIndex(t)
	for _, ns := range []string{"acme", "labs"} {
		if err := idx.CreateNamespace(t.Context(), registry.Namespace{Name: ns, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	p := registry.TrustPolicy{
		ID: "tp_00000000000000a1", Namespace: "acme", Issuer: iss.URL, Audience: audience,
		Conditions: map[string]string{"repository": "acme/infra", "ref": "refs/tags/v*"},
		Scope:      registry.ScopePublish, TokenTTL: 10 * time.Minute, CreatedAt: time.Now(),
	}
	if err := registry.CheckTrustPolicy(p); err != nil {
		t.Fatal(err)
	}
	if err := idx.CreateTrustPolicy(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	calls := &countingTransport{}
	x := keyless.New(keyless.Options{Index: idx, HTTPClient: &http.Client{Transport: calls, Timeout: 10 * time.Second}})
	return &env{iss: iss, idx: idx, x: x, calls: calls}
}

func (e *env) mint(t *testing.T, kv ...string) string {
	q := url.Values{ciissuer.ParamAudience: {audience}}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	return e.iss.Mint(t, q)
}

func TestExchangeIssuesANamespaceToken(t *testing.T) {
	e := newEnv(t)
	before := time.Now()
	// A CI variable may end with a line break.
	res, err := e.x.Exchange(t.Context(), "acme", e.mint(t, ciissuer.ParamJTI, "run-1")+"\n")
	if err != nil {
		t.Fatal(err)
	}
	tok := res.Token
	if !strings.HasPrefix(res.Secret, "trove_") || tok.User != "" || len(tok.Namespaces) != 1 || tok.Namespaces[0] != "acme" ||
		len(tok.Scopes) != 1 || tok.Scopes[0] != registry.ScopePublish {
		t.Errorf("issued %+v", tok)
	}
	if ttl := tok.ExpiresAt.Sub(before); ttl < 9*time.Minute || ttl > 11*time.Minute {
		t.Errorf("token lives %s, want the policy's 10m", ttl)
	}
	if !tok.Allows(registry.ScopePublish, "acme", time.Now()) || tok.Allows(registry.ScopePublish, "labs", time.Now()) ||
		tok.Allows(registry.ScopeAdmin, "acme", time.Now()) || tok.Allows(registry.ScopePublish, "acme", tok.ExpiresAt) {
		t.Error("the token's rights are not publish on acme alone, until it expires")
	}
	if !strings.Contains(tok.Description, "tp_00000000000000a1") || !strings.Contains(tok.Description, "repository acme/infra") {
		t.Errorf("description %q names neither the policy nor the repository", tok.Description)
	}
	if res.Policy.ID != "tp_00000000000000a1" || res.JTI != "run-1" || res.Claim("ref") != "refs/tags/v1.0.0" || res.Issuer != e.iss.URL {
		t.Errorf("result %+v", res)
	}
	stored, err := e.idx.TokenByHash(t.Context(), tok.Hash)
	if err != nil || stored.ID != tok.ID {
		t.Errorf("the token is not stored: %v", err)
	}
}

func TestExchangeRefuses(t *testing.T) {
	e := newEnv(t)
	hs := e.mint(t, ciissuer.ParamMode, ciissuer.ModeHS256)
	parts := strings.Split(e.mint(t), ".")
	for _, tc := range []struct {
		name, namespace, token, want string
		kind                         registry.Kind
	}{
		{"wrong audience", "acme", e.iss.Mint(t, url.Values{ciissuer.ParamAudience: {"https://other.example"}}),
			"the ID token's audience (aud) is https://other.example, but the trust policies of namespace acme for its issuer want https://registry.example", registry.Unauthenticated},
		{"wrong repository", "acme", e.mint(t, ciissuer.ParamRepository, "acme/other"),
			"no trust policy of namespace acme matches the ID token: claim repository=acme/other is not allowed", registry.Unauthenticated},
		{"wrong ref", "acme", e.mint(t, ciissuer.ParamRef, "refs/heads/main"), "claim ref=refs/heads/main is not allowed", registry.Unauthenticated},
		{"expired", "acme", e.mint(t, ciissuer.ParamExp, "-120"), "the ID token expired at", registry.Unauthenticated},
		{"not yet valid", "acme", e.mint(t, ciissuer.ParamNbf, "600", ciissuer.ParamExp, "900"), "the ID token is not valid before", registry.Unauthenticated},
		{"foreign issuer", "acme", e.mint(t, ciissuer.ParamMode, ciissuer.ModeForeignIssuer),
			"no trust policy of namespace acme trusts ID tokens of issuer " + ciissuer.ForeignIssuer, registry.Unauthenticated},
		{"alg none", "acme", e.mint(t, ciissuer.ParamMode, ciissuer.ModeNone), "ID tokens signed with none are refused", registry.Unauthenticated},
		{"key confusion", "acme", hs, "ID tokens signed with HS256 are refused", registry.Unauthenticated},
		{"unknown signing key", "acme", e.mint(t, ciissuer.ParamMode, ciissuer.ModeForeignKey), "signature or issuer does not verify", registry.Unauthenticated},
		{"tampered claims", "acme", parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"iss":"`+e.iss.URL+`","aud":"`+audience+`","repository":"acme/infra"}`)) + "." + parts[2],
			"signature or issuer does not verify", registry.Unauthenticated},
		{"missing jti", "acme", e.mint(t, ciissuer.ParamJTI, "-"), "the ID token has no ID (jti claim)", registry.Unauthenticated},
		{"too large", "acme", strings.Repeat("a", keyless.MaxTokenBytes+1), "more than the 16384 an ID token may have", registry.TooLarge},
		{"malformed", "acme", "not.a-jwt", "the ID token is not a JWT", registry.Unauthenticated},
		{"malformed header", "acme", "e30." + parts[1] + "." + parts[2], "signed with no algorithm are refused", registry.Unauthenticated},
		{"namespace without policies", "labs", e.mint(t), "no trust policy of namespace labs trusts ID tokens of issuer", registry.Unauthenticated},
		{"namespace that does not exist", "nowhere", e.mint(t), "no trust policy of namespace nowhere trusts ID tokens of issuer", registry.Unauthenticated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := e.x.Exchange(t.Context(), tc.namespace, tc.token)
			if err == nil || registry.KindOf(err) != tc.kind || !strings.Contains(registry.Message(err), tc.want) {
				t.Errorf("Exchange = %v (%s), want %s with %q", err, registry.KindOf(err), tc.kind, tc.want)
			}
			if res.Secret != "" {
				t.Error("a token was issued")
			}
		})
	}
	if n, err := e.idx.CountTokens(t.Context()); err != nil || n != 0 {
		t.Errorf("%d tokens stored (%v), want none", n, err)
	}
}

func TestExchangeRefusesAReplay(t *testing.T) {
	e := newEnv(t)
	jwt := e.mint(t)
	if _, err := e.x.Exchange(t.Context(), "acme", jwt); err != nil {
		t.Fatal(err)
	}
	_, err := e.x.Exchange(t.Context(), "acme", jwt)
	if !registry.IsKind(err, registry.Unauthenticated) || !strings.Contains(registry.Message(err), "was exchanged already") {
		t.Errorf("replay: %v", err)
	}
	// Another Exchanger on the same index (another replica) refuses it too.
	other := keyless.New(keyless.Options{Index: e.idx})
	if _, err := other.Exchange(t.Context(), "acme", jwt); !registry.IsKind(err, registry.Unauthenticated) {
		t.Errorf("replay through another replica: %v", err)
	}
}

// TestUnknownIssuerIsNeverContacted: a token naming an issuer no policy
// of the namespace trusts is refused before any request; a trusted
// issuer's discovery is fetched once and cached.
func TestUnknownIssuerIsNeverContacted(t *testing.T) {
	e := newEnv(t)
	for _, mode := range []string{ciissuer.ModeForeignIssuer} {
		if _, err := e.x.Exchange(t.Context(), "acme", e.mint(t, ciissuer.ParamMode, mode)); err == nil {
			t.Fatal("accepted")
		}
	}
	if _, err := e.x.Exchange(t.Context(), "labs", e.mint(t)); err == nil {
		t.Fatal("accepted for a namespace without policies")
	}
	if n := e.calls.n.Load(); n != 0 {
		t.Errorf("%d requests before any trusted issuer was used, want 0", n)
	}
	for range 2 {
		if _, err := e.x.Exchange(t.Context(), "acme", e.mint(t)); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.calls.n.Load(); n != 2 {
		t.Errorf("%d requests for two exchanges, want 2 (discovery and keys, once)", n)
	}
}
