package operations_test

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/ciissuer"
	"trove.dev/trove/internal/ciissuer/ciissuertest"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
)

// TestExchangeIDToken exchanges a real issuer's ID tokens: a matching
// one gets a namespace token whose audit entry committed with it; every
// hostile or refused one stores no token and only its failure entry,
// which never carries the ID token.
func TestExchangeIDToken(t *testing.T) {
	e := newEnv(t)
	iss := ciissuertest.Start(t)
	const aud = "https://registry.example"
	p := registry.TrustPolicy{ID: "tp_00000000000000a1", Namespace: "acme", Issuer: iss.URL, Audience: aud,
		Conditions: map[string]string{"repository": "acme/infra"}, Scope: registry.ScopePublish,
		TokenTTL: 10 * time.Minute, CreatedAt: e.now}
	if err := e.idx.CreateTrustPolicy(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	mint := func(kv ...string) string {
		q := url.Values{ciissuer.ParamAudience: {aud}}
		for i := 0; i+1 < len(kv); i += 2 {
			q.Set(kv[i], kv[i+1])
		}
		return iss.Mint(t, q)
	}
	anon := operations.Actor{Addr: "192.0.2.9:5000"}
	// e.now is the index's clock; the issuer's tokens live in real time.
	e.now = time.Now().UTC()

	used := mint("repository", "acme/infra")
	for _, c := range []struct {
		name, ns, token string
		want            registry.Kind
	}{
		{"garbage", "acme", "not-a-jwt", registry.Unauthenticated},
		{"empty", "acme", "", registry.Unauthenticated},
		{"control characters", "acme", "a.b.c\x00\x1b[31m", registry.Unauthenticated},
		{"too large", "acme", strings.Repeat("a", 64<<10), registry.TooLarge},
		{"unsigned", "acme", "eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0.", registry.Unauthenticated},
		{"other repository", "acme", mint("repository", "evil/infra"), registry.Unauthenticated},
		{"wrong audience", "acme", iss.Mint(t, url.Values{ciissuer.ParamAudience: {"https://elsewhere"}, "repository": {"acme/infra"}}), registry.Unauthenticated},
		{"namespace without policy", "other", mint("repository", "acme/infra"), registry.Unauthenticated},
		{"unknown namespace", "nosuch", mint("repository", "acme/infra"), registry.Unauthenticated},
		{"invalid namespace", "../acme", used, registry.Invalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := e.state(t)
			_, err := e.ops.ExchangeIDToken(t.Context(), anon, c.ns, c.token)
			if got := registry.KindOf(err); err == nil || got != c.want {
				t.Fatalf("error %v (%v); want %v", err, got, c.want)
			}
			after := e.state(t)
			if !reflect.DeepEqual(before.Tokens, after.Tokens) {
				t.Errorf("a refused exchange stored a token: %+v", after.Tokens)
			}
			seen := map[int64]bool{}
			for _, a := range before.Audit {
				seen[a.ID] = true
			}
			var added []registry.AuditEvent
			for _, a := range after.Audit {
				if !seen[a.ID] {
					added = append(added, a)
				}
			}
			if c.want == registry.Invalid {
				if len(added) != 0 {
					t.Errorf("an invalid namespace was audited: %+v", added)
				}
				return
			}
			if len(added) != 1 || added[0].Action != registry.AuditTokenExchangeFails || added[0].SourceAddr != "192.0.2.9" {
				t.Fatalf("audit entries %+v; want one %s from 192.0.2.9", added, registry.AuditTokenExchangeFails)
			}
			if c.token != "" && strings.Contains(added[0].Details, c.token) {
				t.Errorf("the failure entry carries the ID token: %q", added[0].Details)
			}
			if d := e.deliveries(t); len(d) != 0 {
				t.Errorf("a refused exchange enqueued events %v", d)
			}
		})
	}

	res, err := e.ops.ExchangeIDToken(t.Context(), anon, "acme", used)
	if err != nil {
		t.Fatal(err)
	}
	if res.Secret == "" || res.Token.ID == "" || !reflect.DeepEqual(res.Token.Namespaces, []string{"acme"}) ||
		!reflect.DeepEqual(res.Token.Scopes, []registry.Scope{registry.ScopePublish}) {
		t.Fatalf("issued %+v", res.Token)
	}
	a := e.lastAudit(t)
	if a.Action != registry.AuditTokenExchange || a.Target != res.Token.ID || !strings.HasPrefix(a.Actor, "oidc:") ||
		a.Namespace != "acme" || a.SourceAddr != "192.0.2.9" || !strings.Contains(a.Details, "repository acme/infra") {
		t.Errorf("audit entry %+v", a)
	}
	// Replayed: refused, no second token.
	before := e.state(t)
	if _, err := e.ops.ExchangeIDToken(t.Context(), anon, "acme", used); !registry.IsKind(err, registry.Unauthenticated) {
		t.Fatalf("replay: %v", err)
	}
	if after := e.state(t); !reflect.DeepEqual(before.Tokens, after.Tokens) {
		t.Error("a replayed ID token got a second token")
	}
}
