package operations_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/audit"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/sqlite"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
	"trove.dev/trove/internal/webhook"
)

// env is a real SQLite index with the operations on it: namespaces acme
// (private, with a provider and a module version), open (public) and
// other (private); users alice (admin of acme), pat (publisher of acme),
// bob (reader of acme), eve (no membership) and root (global admin).
type env struct {
	st    *sqlitetest.Store // the embedded store idx is the index of
	idx   *sqlite.Index
	ops   *operations.Operations
	authn *auth.Authenticator
	now   time.Time
	// changed counts the provider and module cache drops.
	changed []string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := t.Context()
	st := sqlitetest.New(t)
	idx := st.Index
	e := &env{st: st, idx: idx, now: time.Now().UTC().Truncate(time.Second)}
	e.authn = auth.NewAuthenticator(idx)
	access := auth.NewAccess(e.authn, idx)
	e.ops = operations.New(operations.Options{
		Index: idx, Access: access, Audit: audit.New(idx, nil), SignInTokenTTL: 30 * 24 * time.Hour,
		Events: webhook.NewEmitter(webhook.EmitterOptions{Store: idx}),
		Now:    func() time.Time { return e.now },
	})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for ns, vis := range map[string]registry.Visibility{"acme": registry.VisibilityPrivate, "open": registry.VisibilityPublic, "other": registry.VisibilityPrivate} {
		must(idx.CreateNamespace(ctx, registry.Namespace{Name: ns, Visibility: vis, CreatedAt: e.now}))
	}
	// A webhook that wants every event, so that events are enqueued.
	must(idx.CreateWebhook(ctx, registry.Webhook{ID: "wh_test", URL: "https://hooks.example.com/trove", Secret: "s3cret",
		Active: true, CreatedAt: e.now, CreatedBy: "test"}))
	for _, u := range []registry.User{{Name: "alice"}, {Name: "pat"}, {Name: "bob"}, {Name: "eve"}, {Name: "root", Admin: true}} {
		u.CreatedAt = e.now
		must(idx.CreateUser(ctx, u))
	}
	for user, role := range map[string]registry.Role{"alice": registry.RoleAdmin, "pat": registry.RolePublisher, "bob": registry.RoleReader} {
		must(idx.SetMembership(ctx, registry.Membership{User: user, Namespace: "acme", Role: role, CreatedAt: e.now}))
	}
	digest := func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }
	must(idx.CreateProviderVersion(ctx, registry.ProviderVersion{
		Namespace: "acme", Type: "widget", Version: "1.0.0", Protocols: []string{"5.0"},
		SHASumsDigest: digest("sums"), SHASumsSignatureDigest: digest("sig"),
		SigningKey: registry.SigningKey{Namespace: "acme", KeyID: "0123456789ABCDEF", Fingerprint: strings.Repeat("C", 40),
			ASCIIArmor: "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nx\n-----END PGP PUBLIC KEY BLOCK-----\n", CreatedAt: e.now},
		Platforms: []registry.Platform{{OS: "linux", Arch: "amd64", Filename: "terraform-provider-widget_1.0.0_linux_amd64.zip",
			SHA256: digest("zip"), Size: 3}},
		PublishedAt: e.now,
	}))
	must(idx.CreateModuleVersion(ctx, registry.ModuleVersion{
		Namespace: "acme", Name: "net", System: "aws", Version: "1.0.0",
		ArchiveDigest: digest("tgz"), ArchiveFormat: "tar.gz", ArchiveSize: 3, PublishedAt: e.now,
	}))
	// The caches of this process learn of a change through the index's
	// commit hook (store.ChangeHook), as server.New registers it.
	stop := idx.OnCommit(func(c store.Change) {
		access.ApplyChange(c) // as the server's change channel does
		switch c.Kind {
		case store.ChangeProvider:
			e.changed = append(e.changed, "provider "+c.Namespace+"/"+c.Name)
		case store.ChangeModule:
			e.changed = append(e.changed, "module "+c.Namespace+"/"+c.Name+"/"+c.System)
		}
	})
	t.Cleanup(stop)
	return e
}

// actor stores token tk (the token policy is not the question here)
// and returns the principal the real authenticator makes of its secret,
// coming from 192.0.2.7.
func (e *env) actor(t *testing.T, tk registry.Token) operations.Actor {
	t.Helper()
	secret, hash, err := auth.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	if tk.ID, err = auth.NewID(); err != nil {
		t.Fatal(err)
	}
	tk.Hash, tk.CreatedAt = hash, e.now
	if tk.ExpiresAt.IsZero() {
		tk.ExpiresAt = e.now.Add(24 * time.Hour)
	}
	if err := e.idx.CreateToken(t.Context(), tk); err != nil {
		t.Fatal(err)
	}
	r, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://trove.test/", nil)
	r.Header.Set("Authorization", "Bearer "+secret)
	p, err := e.authn.Authenticate(r)
	if err != nil {
		t.Fatal(err)
	}
	return operations.Actor{Principal: p, Addr: "192.0.2.7:40000"}
}

// user returns an actor with an admin-scoped personal token of name
// (whose rights are then the user's).
func (e *env) user(t *testing.T, name string) operations.Actor {
	return e.actor(t, registry.Token{User: name, Scopes: []registry.Scope{registry.ScopeAdmin}, Description: "test"})
}

// service returns an actor with a service token of scope bound to
// namespaces.
func (e *env) service(t *testing.T, scope registry.Scope, namespaces ...string) operations.Actor {
	return e.actor(t, registry.Token{Scopes: []registry.Scope{scope}, Namespaces: namespaces, Description: "test"})
}

// state is everything an operation may write: every namespace, token,
// membership, signing key, audit entry (but failed password checks) and
// version lifecycle.
type state struct {
	Tokens     []registry.Token
	Members    [][]registry.Membership
	Keys       [][]registry.SigningKey
	Namespaces []registry.Namespace
	Audit      []registry.AuditEvent
	Provider   registry.ProviderVersion
	Module     registry.ModuleVersion
	CacheDrops int
}

func (e *env) state(t *testing.T) state {
	t.Helper()
	ctx := t.Context()
	var s state
	var err error
	if s.Tokens, err = e.idx.ListTokens(ctx, ""); err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"acme", "open", "other"} {
		ms, err := e.idx.ListMemberships(ctx, "", ns)
		if err != nil {
			t.Fatal(err)
		}
		s.Members = append(s.Members, ms)
		keys, err := e.idx.ListSigningKeys(ctx, ns)
		if err != nil {
			t.Fatal(err)
		}
		s.Keys = append(s.Keys, keys)
	}
	if s.Namespaces, err = e.idx.ListNamespaces(ctx); err != nil {
		t.Fatal(err)
	}
	audit, err := e.idx.ListAudit(ctx, registry.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range audit {
		// A failed password check is recorded as a security event on
		// its own (TestUsersRefused checks it): it is no change.
		if a.Action != registry.AuditLoginFailure {
			s.Audit = append(s.Audit, a)
		}
	}
	if s.Provider, err = e.idx.GetProviderVersion(ctx, "acme", "widget", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	if s.Module, err = e.idx.GetModuleVersion(ctx, "acme", "net", "aws", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	s.CacheDrops = len(e.changed)
	return s
}

// refused runs op, which must fail with an error of kind want, and
// checks that it stored nothing.
func (e *env) refused(t *testing.T, want registry.Kind, op func(ctx context.Context) error) {
	t.Helper()
	before := e.state(t)
	err := op(t.Context())
	if err == nil {
		t.Fatalf("the operation succeeded; want a %v error", want)
	}
	if got := registry.KindOf(err); got != want {
		t.Errorf("error %q is %v; want %v", err, got, want)
	}
	if msg := registry.Message(err); msg == "" || strings.ContainsAny(msg, "\x00\x1b") {
		t.Errorf("message %q is empty or carries control characters", msg)
	}
	if after := e.state(t); !reflect.DeepEqual(before, after) {
		t.Errorf("a refused operation changed the index:\nbefore %+v\nafter  %+v", before, after)
	}
}

// deliveries claims the webhook deliveries due now and returns their
// event types.
func (e *env) deliveries(t *testing.T) []string {
	t.Helper()
	ds, err := e.idx.ClaimDeliveries(t.Context(), "test", e.now.Add(time.Hour), time.Hour, 100)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, d := range ds {
		types = append(types, d.EventType)
	}
	return types
}

// lastAudit returns the newest audit entry.
func (e *env) lastAudit(t *testing.T) registry.AuditEvent {
	t.Helper()
	events, err := e.idx.ListAudit(t.Context(), registry.AuditFilter{})
	if err != nil || len(events) == 0 {
		t.Fatalf("audit log: %v, %d events", err, len(events))
	}
	newest := events[0]
	for _, ev := range events {
		if ev.ID > newest.ID {
			newest = ev
		}
	}
	return newest
}
