package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// TestIndex runs the store.Index conformance suite. newIndex must return a
// new, empty Index on every call and close it with t.Cleanup.
func TestIndex(t *testing.T, newIndex func(t *testing.T) store.Index) {
	t.Run("Ping", func(t *testing.T) {
		mustOK(t, newIndex(t).Ping(t.Context()), "Ping")
	})
	t.Run("Namespaces", func(t *testing.T) { testNamespaces(t, newIndex) })
	t.Run("SigningKeys", func(t *testing.T) { testSigningKeys(t, newIndex) })
	t.Run("ManagedSigningKeys", func(t *testing.T) { testManagedSigningKeys(t, newIndex) })
	t.Run("Tokens", func(t *testing.T) { testTokens(t, newIndex) })
	t.Run("Providers", func(t *testing.T) { testProviders(t, newIndex) })
	t.Run("ProviderDocs", func(t *testing.T) { testProviderDocs(t, newIndex) })
	t.Run("Provenance", func(t *testing.T) { testProvenance(t, newIndex) })
	t.Run("ModuleProvenance", func(t *testing.T) { testModuleProvenance(t, newIndex) })
	t.Run("Modules", func(t *testing.T) { testModules(t, newIndex) })
	t.Run("Lifecycle", func(t *testing.T) { testLifecycle(t, newIndex) })
	t.Run("Deletions", func(t *testing.T) { testDeletions(t, newIndex) })
	t.Run("GarbageCollection", func(t *testing.T) { testGarbageCollection(t, newIndex) })
	t.Run("RetentionRules", func(t *testing.T) { testRetentionRules(t, newIndex) })
	t.Run("Downloads", func(t *testing.T) { testDownloads(t, newIndex) })
	t.Run("Consumers", func(t *testing.T) { testConsumers(t, newIndex) })
	t.Run("ProvenancePolicies", func(t *testing.T) { testProvenancePolicies(t, newIndex) })
	t.Run("Secrets", func(t *testing.T) { testSecrets(t, newIndex) })
	t.Run("Access", func(t *testing.T) { testAccess(t, newIndex) })
	t.Run("PackageHashes", func(t *testing.T) { testPackageHashes(t, newIndex) })
	t.Run("Mirror", func(t *testing.T) { testMirror(t, newIndex) })
	t.Run("MirrorUpstreams", func(t *testing.T) { testMirrorUpstreams(t, newIndex) })
	t.Run("MirrorHolds", func(t *testing.T) { testMirrorHolds(t, newIndex) })
	t.Run("Bundles", func(t *testing.T) { testBundles(t, newIndex) })
	t.Run("SSO", func(t *testing.T) { testSSO(t, newIndex) })
	t.Run("TrustPolicies", func(t *testing.T) { testTrustPolicies(t, newIndex) })
	t.Run("GitSources", func(t *testing.T) { testGitSources(t, newIndex) })
	t.Run("ReplayGuard", func(t *testing.T) { testReplayGuard(t, newIndex) })
	t.Run("Webhooks", func(t *testing.T) { testWebhooks(t, newIndex) })
	t.Run("Effects", func(t *testing.T) { testEffects(t, newIndex) })
}

// createNamespaces creates a namespace for each name.
func createNamespaces(t *testing.T, x store.Index, names ...string) {
	t.Helper()
	for i, name := range names {
		ns := registry.Namespace{Name: name, Description: "team " + name, CreatedAt: at(time.Duration(i) * time.Second)}
		mustOK(t, x.CreateNamespace(t.Context(), ns), "CreateNamespace "+name)
	}
}

func testNamespaces(t *testing.T, newIndex func(*testing.T) store.Index) {
	t.Run("CreateAndGet", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		ns := registry.Namespace{Name: "acme", Description: "Acme Corp: ünïcode & \"quotes\"", CreatedAt: t0.In(east)}
		mustOK(t, x.CreateNamespace(ctx, ns), "CreateNamespace")
		got, err := x.GetNamespace(ctx, "acme")
		mustOK(t, err, "GetNamespace")
		checkEqual(t, "GetNamespace", got, ns, normNamespace)
	})
	t.Run("CreateDuplicateConflicts", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		first := registry.Namespace{Name: "acme", Description: "first", CreatedAt: t0}
		mustOK(t, x.CreateNamespace(ctx, first), "CreateNamespace")
		err := x.CreateNamespace(ctx, registry.Namespace{Name: "acme", Description: "second", CreatedAt: at(time.Hour)})
		wantKind(t, err, registry.Conflict, "second CreateNamespace")
		got, err := x.GetNamespace(ctx, "acme")
		mustOK(t, err, "GetNamespace")
		checkEqual(t, "namespace after the refused create", got, first, normNamespace)
	})
	t.Run("GetMissing", func(t *testing.T) {
		_, err := newIndex(t).GetNamespace(t.Context(), "nope")
		wantKind(t, err, registry.NotFound, "GetNamespace of a missing namespace")
	})
	t.Run("ListOrderedByName", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		got, err := x.ListNamespaces(ctx)
		mustOK(t, err, "ListNamespaces of an empty index")
		if len(got) != 0 {
			t.Errorf("ListNamespaces of an empty index = %+v, want none", got)
		}
		want := []registry.Namespace{
			{Name: "alpha", Description: "a", CreatedAt: at(2 * time.Hour)},
			{Name: "mid-team", Description: "", CreatedAt: at(time.Hour).In(east)},
			{Name: "zeta", Description: "z", CreatedAt: t0},
		}
		for _, i := range []int{2, 0, 1} {
			mustOK(t, x.CreateNamespace(ctx, want[i]), "CreateNamespace "+want[i].Name)
		}
		got, err = x.ListNamespaces(ctx)
		mustOK(t, err, "ListNamespaces")
		checkList(t, "ListNamespaces", got, want, normNamespace)
	})
	t.Run("Update", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		mustOK(t, x.CreateNamespace(ctx, registry.Namespace{Name: "acme", Description: "old", CreatedAt: t0}), "CreateNamespace")
		mustOK(t, x.UpdateNamespace(ctx, registry.Namespace{Name: "acme", Description: "new", CreatedAt: at(time.Hour)}), "UpdateNamespace")
		got, err := x.GetNamespace(ctx, "acme")
		mustOK(t, err, "GetNamespace")
		checkEqual(t, "namespace after update (CreatedAt is not mutable)", got,
			registry.Namespace{Name: "acme", Description: "new", CreatedAt: t0}, normNamespace)

		err = x.UpdateNamespace(ctx, registry.Namespace{Name: "nope", Description: "x", CreatedAt: t0})
		wantKind(t, err, registry.NotFound, "UpdateNamespace of a missing namespace")
		_, err = x.GetNamespace(ctx, "nope")
		wantKind(t, err, registry.NotFound, "GetNamespace after updating a missing namespace")
	})
	t.Run("DeleteMissing", func(t *testing.T) {
		wantKind(t, newIndex(t).DeleteNamespace(t.Context(), "nope"), registry.NotFound, "DeleteNamespace of a missing namespace")
	})
	t.Run("DeleteAndRecreate", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "other")
		mustOK(t, x.DeleteNamespace(ctx, "acme"), "DeleteNamespace")
		_, err := x.GetNamespace(ctx, "acme")
		wantKind(t, err, registry.NotFound, "GetNamespace after delete")
		list, err := x.ListNamespaces(ctx)
		mustOK(t, err, "ListNamespaces")
		if len(list) != 1 || list[0].Name != "other" {
			t.Errorf("ListNamespaces after delete = %+v, want only other", list)
		}
		wantKind(t, x.DeleteNamespace(ctx, "acme"), registry.NotFound, "second DeleteNamespace")
		mustOK(t, x.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: t0}), "CreateNamespace after delete")
	})
	t.Run("DeleteCascadesKeysAndTokens", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "other")
		for i, ns := range []string{"acme", "acme", "other"} {
			mustOK(t, x.AddSigningKey(ctx, testKey(ns, i)), "AddSigningKey")
		}
		createNamespaces(t, x, "zeta")
		// tok5 and tok7 are bound to acme among others: deleting acme
		// deletes them too rather than leave them bound to the rest (or
		// to nothing, which would make them global).
		tokens := []registry.Token{
			testToken("tok1", "acme", t0), testToken("tok2", "acme", t0),
			testToken("tok3", "other", t0), testToken("tok4", "", t0),
			boundToken("tok5", t0, "acme", "other"), boundToken("tok6", t0, "other", "zeta"),
			boundToken("tok7", t0, "acme", "zeta"),
		}
		for _, tk := range tokens {
			mustOK(t, x.CreateToken(ctx, tk), "CreateToken "+tk.ID)
		}
		mustOK(t, x.DeleteNamespace(ctx, "acme"), "DeleteNamespace")

		for _, tk := range tokens {
			got, err := x.TokenByHash(ctx, tk.Hash)
			if slices.Contains(tk.Namespaces, "acme") {
				wantKind(t, err, registry.NotFound, "TokenByHash of token "+tk.ID+" bound to the deleted namespace")
			} else if err != nil {
				t.Errorf("TokenByHash of token %s (namespaces %q): %v", tk.ID, tk.Namespaces, err)
			} else {
				checkEqual(t, "token "+tk.ID+" not bound to the deleted namespace", got, tk, normToken)
			}
		}
		if n, err := x.CountTokens(ctx); err != nil || n != 3 {
			t.Errorf("CountTokens = %d, %v; want 3", n, err)
		}
		_, err := x.ListSigningKeys(ctx, "acme")
		wantKind(t, err, registry.NotFound, "ListSigningKeys of the deleted namespace")
		keys, err := x.ListSigningKeys(ctx, "other")
		mustOK(t, err, "ListSigningKeys other")
		checkList(t, "keys of the other namespace", keys, []registry.SigningKey{testKey("other", 2)}, normKey)

		// A namespace of the same name starts empty.
		mustOK(t, x.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: t0}), "CreateNamespace again")
		keys, err = x.ListSigningKeys(ctx, "acme")
		mustOK(t, err, "ListSigningKeys of the recreated namespace")
		if len(keys) != 0 {
			t.Errorf("recreated namespace has keys %+v, want none", keys)
		}
		toks, err := x.ListTokens(ctx, "acme")
		mustOK(t, err, "ListTokens of the recreated namespace")
		if len(toks) != 0 {
			t.Errorf("recreated namespace has tokens %+v, want none", toks)
		}

		// Deleting a namespace that is not the first of a set works the same.
		mustOK(t, x.DeleteNamespace(ctx, "zeta"), "DeleteNamespace zeta")
		_, err = x.TokenByHash(ctx, tokens[5].Hash)
		wantKind(t, err, registry.NotFound, "TokenByHash of token tok6 after deleting zeta, the second of its namespaces")
		toks, err = x.ListTokens(ctx, "other")
		mustOK(t, err, "ListTokens other")
		checkList(t, "tokens of other after deleting zeta", toks, []registry.Token{tokens[2]}, normToken)
	})
	t.Run("DeleteWithVersionsConflicts", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		key := testKey("acme", 1)
		mustOK(t, x.AddSigningKey(ctx, key), "AddSigningKey")
		tok := testToken("tok1", "acme", t0)
		mustOK(t, x.CreateToken(ctx, tok), "CreateToken")
		v := testVersion("acme", "cloud", "1.0.0", key, t0)
		mustOK(t, x.CreateProviderVersion(ctx, v), "CreateProviderVersion")

		wantKind(t, x.DeleteNamespace(ctx, "acme"), registry.Conflict, "DeleteNamespace with provider versions")

		_, err := x.GetNamespace(ctx, "acme")
		mustOK(t, err, "GetNamespace after the refused delete")
		keys, err := x.ListSigningKeys(ctx, "acme")
		mustOK(t, err, "ListSigningKeys after the refused delete")
		checkList(t, "keys after the refused delete", keys, []registry.SigningKey{key}, normKey)
		_, err = x.TokenByHash(ctx, tok.Hash)
		mustOK(t, err, "TokenByHash after the refused delete")
		got, err := x.GetProviderVersion(ctx, "acme", "cloud", "1.0.0")
		mustOK(t, err, "GetProviderVersion after the refused delete")
		checkEqual(t, "version after the refused delete", got, v, normVersion)
	})
}

func testSigningKeys(t *testing.T, newIndex func(*testing.T) store.Index) {
	t.Run("AddAndListOrderedByKeyID", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "other")
		noExpiry := testKey("acme", 1)
		noExpiry.ExpiresAt = time.Time{}
		want := []registry.SigningKey{noExpiry, testKey("acme", 2), testKey("acme", 3)}
		for _, i := range []int{2, 0, 1} {
			mustOK(t, x.AddSigningKey(ctx, want[i]), "AddSigningKey "+want[i].KeyID)
		}
		mustOK(t, x.AddSigningKey(ctx, testKey("other", 9)), "AddSigningKey other")
		got, err := x.ListSigningKeys(ctx, "acme")
		mustOK(t, err, "ListSigningKeys")
		checkList(t, "ListSigningKeys", got, want, normKey)
	})
	t.Run("ListEmptyAndMissing", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		got, err := x.ListSigningKeys(ctx, "acme")
		mustOK(t, err, "ListSigningKeys of a namespace without keys")
		if len(got) != 0 {
			t.Errorf("ListSigningKeys = %+v, want none", got)
		}
		_, err = x.ListSigningKeys(ctx, "nope")
		wantKind(t, err, registry.NotFound, "ListSigningKeys of a missing namespace")
	})
	t.Run("AddToMissingNamespace", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		wantKind(t, x.AddSigningKey(ctx, testKey("nope", 1)), registry.NotFound, "AddSigningKey to a missing namespace")
		createNamespaces(t, x, "nope")
		keys, err := x.ListSigningKeys(ctx, "nope")
		mustOK(t, err, "ListSigningKeys")
		if len(keys) != 0 {
			t.Errorf("a refused key was stored: %+v", keys)
		}
	})
	t.Run("DuplicateKeyIDConflicts", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "other")
		key := testKey("acme", 1)
		mustOK(t, x.AddSigningKey(ctx, key), "AddSigningKey")
		dup := key
		dup.ASCIIArmor = "another armor"
		wantKind(t, x.AddSigningKey(ctx, dup), registry.Conflict, "AddSigningKey with a taken KeyID")
		got, err := x.ListSigningKeys(ctx, "acme")
		mustOK(t, err, "ListSigningKeys")
		checkList(t, "keys after the refused add", got, []registry.SigningKey{key}, normKey)

		elsewhere := key
		elsewhere.Namespace = "other"
		mustOK(t, x.AddSigningKey(ctx, elsewhere), "AddSigningKey of the same KeyID to another namespace")
	})
	t.Run("Delete", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "other")
		k1, k2 := testKey("acme", 1), testKey("acme", 2)
		mustOK(t, x.AddSigningKey(ctx, k1), "AddSigningKey")
		mustOK(t, x.AddSigningKey(ctx, k2), "AddSigningKey")
		mustOK(t, x.DeleteSigningKey(ctx, "acme", k1.KeyID), "DeleteSigningKey")
		got, err := x.ListSigningKeys(ctx, "acme")
		mustOK(t, err, "ListSigningKeys")
		checkList(t, "keys after delete", got, []registry.SigningKey{k2}, normKey)

		wantKind(t, x.DeleteSigningKey(ctx, "acme", k1.KeyID), registry.NotFound, "second DeleteSigningKey")
		wantKind(t, x.DeleteSigningKey(ctx, "other", k2.KeyID), registry.NotFound, "DeleteSigningKey of another namespace's key")
		wantKind(t, x.DeleteSigningKey(ctx, "nope", k2.KeyID), registry.NotFound, "DeleteSigningKey in a missing namespace")
		got, err = x.ListSigningKeys(ctx, "acme")
		mustOK(t, err, "ListSigningKeys")
		checkList(t, "keys after refused deletes", got, []registry.SigningKey{k2}, normKey)
	})
}

// testToken returns a token with the given ID, namespace ("" for a
// global token) and creation time.
func testToken(id, ns string, created time.Time) registry.Token {
	if ns == "" {
		return boundToken(id, created)
	}
	return boundToken(id, created, ns)
}

// boundToken returns a token with the given ID and creation time, bound
// to the namespaces (given sorted).
func boundToken(id string, created time.Time, namespaces ...string) registry.Token {
	return registry.Token{
		ID:          id,
		Hash:        digestOf("secret of " + id),
		Namespaces:  namespaces,
		Scopes:      []registry.Scope{registry.ScopePublish, registry.ScopeRead},
		Description: "token " + id + " for CI",
		CreatedAt:   created,
	}
}

func testTokens(t *testing.T, newIndex func(*testing.T) store.Index) {
	t.Run("CreateFirstTokenOnceAcrossConcurrentCallers", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		const callers = 8
		results := make(chan error, callers)
		var won atomic.Int32
		for i := range callers {
			go func() {
				tk := testToken(fmt.Sprintf("first%d", i), "", t0)
				tk.Scopes = []registry.Scope{registry.ScopeAdmin}
				created, err := x.CreateFirstToken(ctx, tk)
				if created {
					won.Add(1)
				}
				results <- err
			}()
		}
		for range callers {
			mustOK(t, <-results, "CreateFirstToken")
		}
		if n, err := x.CountTokens(ctx); won.Load() != 1 || err != nil || n != 1 {
			t.Errorf("%d callers reported creating the first token and %d tokens (%v) exist; want 1 and 1", won.Load(), n, err)
		}
		created, err := x.CreateFirstToken(ctx, testToken("late", "", t0))
		if created || err != nil {
			t.Errorf("CreateFirstToken with a token stored = %v, %v; want false, nil", created, err)
		}
		_, err = x.TokenByHash(ctx, testToken("late", "", t0).Hash)
		wantKind(t, err, registry.NotFound, "TokenByHash of the refused first token")
	})
	t.Run("CreateAndGetByHash", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		global := registry.Token{
			ID: "tokglobal", Hash: digestOf("g"), Scopes: []registry.Scope{registry.ScopeAdmin},
			Description: "first admin", CreatedAt: t0.In(east),
		}
		bound := testToken("tokbound", "acme", t0)
		bound.ExpiresAt = at(720 * time.Hour)
		createNamespaces(t, x, "beta", "gamma")
		multi := boundToken("tokmulti", t0, "acme", "beta", "gamma")
		for _, tk := range []registry.Token{global, bound, multi} {
			mustOK(t, x.CreateToken(ctx, tk), "CreateToken "+tk.ID)
		}
		for _, tk := range []registry.Token{global, bound, multi} {
			got, err := x.TokenByHash(ctx, tk.Hash)
			mustOK(t, err, "TokenByHash "+tk.ID)
			checkEqual(t, "TokenByHash "+tk.ID, got, tk, normToken)
		}
		_, err := x.TokenByHash(ctx, digestOf("unknown"))
		wantKind(t, err, registry.NotFound, "TokenByHash of an unknown hash")
	})
	t.Run("DuplicateIDOrHashConflicts", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		tk := testToken("tok1", "", t0)
		mustOK(t, x.CreateToken(ctx, tk), "CreateToken")
		sameID := testToken("tok1", "", t0)
		sameID.Hash = digestOf("other secret")
		wantKind(t, x.CreateToken(ctx, sameID), registry.Conflict, "CreateToken with a taken ID")
		sameHash := testToken("tok2", "", t0)
		sameHash.Hash = tk.Hash
		wantKind(t, x.CreateToken(ctx, sameHash), registry.Conflict, "CreateToken with a taken hash")
		if n, err := x.CountTokens(ctx); err != nil || n != 1 {
			t.Errorf("CountTokens = %d, %v; want 1", n, err)
		}
		got, err := x.TokenByHash(ctx, tk.Hash)
		mustOK(t, err, "TokenByHash")
		checkEqual(t, "token after refused creates", got, tk, normToken)
	})
	t.Run("UnknownScopeInvalid", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		tk := testToken("tok1", "", t0)
		tk.Scopes = []registry.Scope{registry.ScopeRead, "root"}
		wantKind(t, x.CreateToken(ctx, tk), registry.Invalid, "CreateToken with an unknown scope")
		_, err := x.TokenByHash(ctx, tk.Hash)
		wantKind(t, err, registry.NotFound, "TokenByHash of the refused token")
	})
	t.Run("MissingNamespace", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		for _, tk := range []registry.Token{
			testToken("tok1", "nope", t0), boundToken("tok2", t0, "acme", "nope"), boundToken("tok3", t0, "aaa", "acme"),
		} {
			wantKind(t, x.CreateToken(ctx, tk), registry.NotFound, "CreateToken of "+tk.ID+" bound to a missing namespace")
			_, err := x.TokenByHash(ctx, tk.Hash)
			wantKind(t, err, registry.NotFound, "TokenByHash of the refused token "+tk.ID)
		}
		toks, err := x.ListTokens(ctx, "acme")
		mustOK(t, err, "ListTokens acme")
		checkList(t, "tokens of acme after refused creates", toks, nil, normToken)
	})
	t.Run("RevokedAndExpiredAreReturned", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		expired := testToken("tokexpired", "", t0)
		expired.ExpiresAt = at(time.Hour)
		revoked := testToken("tokrevoked", "", t0)
		for _, tk := range []registry.Token{expired, revoked} {
			mustOK(t, x.CreateToken(ctx, tk), "CreateToken "+tk.ID)
		}
		mustOK(t, x.RevokeToken(ctx, revoked.ID, at(time.Minute)), "RevokeToken")
		revoked.RevokedAt = at(time.Minute)
		for _, tk := range []registry.Token{expired, revoked} {
			got, err := x.TokenByHash(ctx, tk.Hash)
			mustOK(t, err, "TokenByHash "+tk.ID)
			checkEqual(t, "TokenByHash "+tk.ID, got, tk, normToken)
		}
	})
	t.Run("RevokeKeepsFirstTime", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		tk := testToken("tok1", "", t0)
		other := testToken("tok2", "", t0)
		mustOK(t, x.CreateToken(ctx, tk), "CreateToken")
		mustOK(t, x.CreateToken(ctx, other), "CreateToken")
		mustOK(t, x.RevokeToken(ctx, tk.ID, at(time.Hour).In(east)), "RevokeToken")
		mustOK(t, x.RevokeToken(ctx, tk.ID, at(2*time.Hour)), "second RevokeToken")
		got, err := x.TokenByHash(ctx, tk.Hash)
		mustOK(t, err, "TokenByHash")
		tk.RevokedAt = at(time.Hour)
		checkEqual(t, "token revoked twice", got, tk, normToken)
		got, err = x.TokenByHash(ctx, other.Hash)
		mustOK(t, err, "TokenByHash of the other token")
		checkEqual(t, "token that was not revoked", got, other, normToken)

		wantKind(t, x.RevokeToken(ctx, "toknope", t0), registry.NotFound, "RevokeToken of an unknown ID")
	})
	t.Run("Count", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		n, err := x.CountTokens(ctx)
		if err != nil || n != 0 {
			t.Fatalf("CountTokens of an empty index = %d, %v; want 0", n, err)
		}
		createNamespaces(t, x, "acme")
		for _, tk := range []registry.Token{testToken("tok1", "", t0), testToken("tok2", "acme", t0), testToken("tok3", "", t0)} {
			mustOK(t, x.CreateToken(ctx, tk), "CreateToken")
		}
		mustOK(t, x.RevokeToken(ctx, "tok3", t0), "RevokeToken")
		if n, err := x.CountTokens(ctx); err != nil || n != 3 {
			t.Errorf("CountTokens = %d, %v; want 3 (revoked ones included)", n, err)
		}
	})
	t.Run("ListFilteredAndOrdered", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "other", "empty")
		// Ordered by CreatedAt, then ID; created in another order.
		all := []registry.Token{
			testToken("tok5", "acme", t0),
			testToken("tok9", "", at(time.Second)),
			testToken("tok2", "acme", at(time.Minute)),
			testToken("tok3", "acme", at(time.Minute)),
			testToken("tok1", "other", at(time.Hour)),
			testToken("tok4", "", at(time.Hour+time.Microsecond)),
			boundToken("tok6", at(2*time.Hour), "acme", "other"),
		}
		all[3].ExpiresAt = at(48 * time.Hour)
		for _, i := range []int{4, 3, 6, 0, 5, 2, 1} {
			mustOK(t, x.CreateToken(ctx, all[i]), "CreateToken "+all[i].ID)
		}
		mustOK(t, x.RevokeToken(ctx, "tok5", at(2*time.Hour)), "RevokeToken")
		all[0].RevokedAt = at(2 * time.Hour)

		tests := map[string][]registry.Token{
			"":        all,
			"acme":    {all[0], all[2], all[3], all[6]},
			"other":   {all[4], all[6]},
			"empty":   nil,
			"missing": nil,
		}
		for ns, want := range tests {
			got, err := x.ListTokens(ctx, ns)
			mustOK(t, err, fmt.Sprintf("ListTokens(%q)", ns))
			checkList(t, fmt.Sprintf("ListTokens(%q)", ns), got, want, normToken)
		}
	})
}

func testProviders(t *testing.T, newIndex func(*testing.T) store.Index) {
	t.Run("RoundTrip", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		key := testKey("acme", 1)
		mustOK(t, x.AddSigningKey(ctx, key), "AddSigningKey")
		v := testVersion("acme", "cloud", "1.2.3-beta.1+build.7", key, t0.In(east))
		v.Protocols = []string{"6.0", "5.1"}
		mustOK(t, x.CreateProviderVersion(ctx, v), "CreateProviderVersion")
		got, err := x.GetProviderVersion(ctx, "acme", "cloud", v.Version)
		mustOK(t, err, "GetProviderVersion")
		checkEqual(t, "GetProviderVersion", got, v, normVersion)
		if len(got.Protocols) == 2 && got.Protocols[0] != "6.0" {
			t.Errorf("Protocols = %v, want the stored order %v", got.Protocols, v.Protocols)
		}
		list, err := x.ListProviderVersions(ctx, "acme", "cloud")
		mustOK(t, err, "ListProviderVersions")
		checkList(t, "ListProviderVersions", list, []registry.ProviderVersion{v}, normVersion)
	})
	t.Run("KeyWithoutExpiryAndNoPlatforms", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		key := testKey("acme", 1)
		key.ExpiresAt = time.Time{}
		v := testVersion("acme", "cloud", "0.1.0", key, t0)
		v.Platforms = nil
		mustOK(t, x.CreateProviderVersion(ctx, v), "CreateProviderVersion")
		got, err := x.GetProviderVersion(ctx, "acme", "cloud", "0.1.0")
		mustOK(t, err, "GetProviderVersion")
		checkEqual(t, "GetProviderVersion", got, v, normVersion)
		// The list reads versions and platforms apart: versions without
		// platforms among others keep none, the others keep their own.
		want := []registry.ProviderVersion{v}
		for i, ver := range []string{"0.2.0", "0.3.0", "0.4.0"} {
			w := testVersion("acme", "cloud", ver, testKey("acme", 2), at(time.Duration(i+1)*time.Second))
			if ver == "0.3.0" {
				w.Platforms = nil
			}
			mustOK(t, x.CreateProviderVersion(ctx, w), "CreateProviderVersion "+ver)
			want = append(want, w)
		}
		list, err := x.ListProviderVersions(ctx, "acme", "cloud")
		mustOK(t, err, "ListProviderVersions")
		slices.SortFunc(list, func(a, b registry.ProviderVersion) int { return strings.Compare(a.Version, b.Version) })
		checkList(t, "ListProviderVersions", list, want, normVersion)
	})
	t.Run("ManyPlatforms", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		v := testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), t0)
		v.Platforms = nil
		for i := range 7000 { // more parameters than SQLite binds in one statement
			os := fmt.Sprintf("os%04d", i)
			v.Platforms = append(v.Platforms, registry.Platform{OS: os, Arch: "amd64", Filename: os + ".zip",
				SHA256: digestOf(os), Size: int64(i)})
		}
		mustOK(t, x.CreateProviderVersion(ctx, v), "CreateProviderVersion")
		got, err := x.GetProviderVersion(ctx, "acme", "cloud", "1.0.0")
		mustOK(t, err, "GetProviderVersion")
		checkEqual(t, "GetProviderVersion", got, v, normVersion)
		list, err := x.ListProviderVersions(ctx, "acme", "cloud")
		mustOK(t, err, "ListProviderVersions")
		checkList(t, "ListProviderVersions", list, []registry.ProviderVersion{v}, normVersion)
	})
	t.Run("DuplicateConflicts", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		v := testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), t0)
		mustOK(t, x.CreateProviderVersion(ctx, v), "CreateProviderVersion")
		for name, dup := range map[string]registry.ProviderVersion{
			"same content":  v,
			"other content": testVersion("acme", "cloud", "1.0.0", testKey("acme", 2), at(time.Hour)),
		} {
			wantKind(t, x.CreateProviderVersion(ctx, dup), registry.Conflict, "CreateProviderVersion again with "+name)
		}
		got, err := x.GetProviderVersion(ctx, "acme", "cloud", "1.0.0")
		mustOK(t, err, "GetProviderVersion")
		checkEqual(t, "version after refused creates", got, v, normVersion)
		ps, err := x.ListProviders(ctx, "acme")
		mustOK(t, err, "ListProviders")
		if len(ps) != 1 || ps[0].VersionCount != 1 {
			t.Errorf("ListProviders after refused creates = %+v, want one provider with one version", ps)
		}
	})
	t.Run("SamePrecedenceConflicts", func(t *testing.T) {
		// Versions equal but for build metadata have one precedence for
		// the clients: only the first of them may be stored.
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		key := testKey("acme", 1)
		for _, ver := range []string{"1.0.0+build.1", "1.0.0-rc.1", "1.0.0-rc.10", "1.0.1"} {
			mustOK(t, x.CreateProviderVersion(ctx, testVersion("acme", "cloud", ver, key, t0)), "CreateProviderVersion "+ver)
		}
		for _, ver := range []string{"1.0.0", "1.0.0+build.2", "1.0.0-rc.1+x", "1.0.1+build.1"} {
			wantKind(t, x.CreateProviderVersion(ctx, testVersion("acme", "cloud", ver, key, t0)), registry.Conflict,
				"CreateProviderVersion "+ver)
		}
		// Versions that share a prefix with a stored one but not its
		// precedence are not taken.
		for _, ver := range []string{"10.0.0", "1.0.0-rc", "1.0.10", "1.0.0-rc.1.1"} {
			mustOK(t, x.CreateProviderVersion(ctx, testVersion("acme", "cloud", ver, key, t0)), "CreateProviderVersion "+ver)
		}
		list, err := x.ListProviderVersions(ctx, "acme", "cloud")
		mustOK(t, err, "ListProviderVersions")
		if len(list) != 8 {
			t.Errorf("ListProviderVersions after refused creates = %d versions, want 8", len(list))
		}
	})
	t.Run("SameVersionElsewhere", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "other")
		vs := []registry.ProviderVersion{
			testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), t0),
			testVersion("acme", "dns", "1.0.0", testKey("acme", 1), at(time.Second)),
			testVersion("other", "cloud", "1.0.0", testKey("other", 2), at(time.Minute)),
		}
		for _, v := range vs {
			mustOK(t, x.CreateProviderVersion(ctx, v), "CreateProviderVersion "+v.Namespace+"/"+v.Type)
		}
		for _, v := range vs {
			got, err := x.GetProviderVersion(ctx, v.Namespace, v.Type, v.Version)
			mustOK(t, err, "GetProviderVersion")
			checkEqual(t, "GetProviderVersion "+v.Namespace+"/"+v.Type, got, v, normVersion)
		}
	})
	t.Run("MissingNamespace", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		v := testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), t0)
		wantKind(t, x.CreateProviderVersion(ctx, v), registry.NotFound, "CreateProviderVersion in a missing namespace")
		createNamespaces(t, x, "acme")
		_, err := x.GetProviderVersion(ctx, "acme", "cloud", "1.0.0")
		wantKind(t, err, registry.NotFound, "GetProviderVersion of the refused version")
		ps, err := x.ListProviders(ctx, "acme")
		mustOK(t, err, "ListProviders")
		if len(ps) != 0 {
			t.Errorf("ListProviders = %+v, want none", ps)
		}
		mustOK(t, x.CreateProviderVersion(ctx, v), "CreateProviderVersion once the namespace exists")
	})
	t.Run("GetMissing", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "empty")
		mustOK(t, x.CreateProviderVersion(ctx, testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), t0)), "CreateProviderVersion")
		for _, c := range [][3]string{
			{"nope", "cloud", "1.0.0"}, {"empty", "cloud", "1.0.0"}, {"acme", "dns", "1.0.0"},
			{"acme", "cloud", "1.0.1"}, {"acme", "cloud", "1.0.0-beta"}, {"acme", "cloud", "1.0.0+build"},
		} {
			_, err := x.GetProviderVersion(ctx, c[0], c[1], c[2])
			wantKind(t, err, registry.NotFound, "GetProviderVersion "+strings.Join(c[:], " "))
		}
	})
	t.Run("ListProviderVersions", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "other", "empty")
		k1, k2 := testKey("acme", 1), testKey("acme", 2)
		want := []registry.ProviderVersion{
			testVersion("acme", "cloud", "1.0.0", k1, t0),
			testVersion("acme", "cloud", "1.10.0", k2, at(time.Hour)),
			testVersion("acme", "cloud", "2.0.0-beta.1", k1, at(2*time.Hour).In(east)),
		}
		want[1].Protocols = []string{"6.0"}
		want[2].Platforms = want[2].Platforms[:1]
		others := []registry.ProviderVersion{
			testVersion("acme", "dns", "1.0.0", k1, t0),
			testVersion("other", "cloud", "9.9.9", testKey("other", 3), t0),
		}
		for _, v := range append(slices.Clone(want), others...) {
			mustOK(t, x.CreateProviderVersion(ctx, v), "CreateProviderVersion "+v.Type+" "+v.Version)
		}
		got, err := x.ListProviderVersions(ctx, "acme", "cloud")
		mustOK(t, err, "ListProviderVersions")
		byVersion := func(a, b registry.ProviderVersion) int { return strings.Compare(a.Version, b.Version) }
		slices.SortFunc(got, byVersion)
		checkList(t, "ListProviderVersions (sorted by version string)", got, want, normVersion)

		for _, c := range [][2]string{{"acme", "nope"}, {"empty", "cloud"}, {"nope", "cloud"}} {
			_, err := x.ListProviderVersions(ctx, c[0], c[1])
			wantKind(t, err, registry.NotFound, "ListProviderVersions "+c[0]+"/"+c[1])
		}
	})
	t.Run("ListProviders", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "other", "empty")
		key := testKey("acme", 1)
		for _, c := range []struct {
			ns, typ, version string
			published        time.Time
		}{
			{"acme", "zeta", "1.0.0", at(time.Hour)},
			{"acme", "zeta", "2.0.0-beta", t0}, // a pre-release still ranks above 1.0.0
			{"acme", "alpha", "1.9.0", at(3 * time.Hour).In(east)},
			{"acme", "alpha", "1.10.0", at(time.Hour)}, // 1.10.0 > 1.9.0: not a string comparison
			{"acme", "alpha", "1.10.0-rc.1", at(2 * time.Hour)},
			{"acme", "alpha", "0.1.0", t0},
			{"acme", "mid", "0.0.1", at(time.Minute)},
			{"other", "alpha", "5.0.0", at(5 * time.Hour)},
		} {
			v := testVersion(c.ns, c.typ, c.version, key, c.published)
			mustOK(t, x.CreateProviderVersion(ctx, v), "CreateProviderVersion "+c.typ+" "+c.version)
		}
		want := []registry.Provider{
			{Namespace: "acme", Type: "alpha", VersionCount: 4, LatestVersion: "1.10.0", UpdatedAt: at(3 * time.Hour)},
			{Namespace: "acme", Type: "mid", VersionCount: 1, LatestVersion: "0.0.1", UpdatedAt: at(time.Minute)},
			{Namespace: "acme", Type: "zeta", VersionCount: 2, LatestVersion: "2.0.0-beta", UpdatedAt: at(time.Hour)},
		}
		got, err := x.ListProviders(ctx, "acme")
		mustOK(t, err, "ListProviders")
		checkList(t, "ListProviders", got, want, normProvider)

		got, err = x.ListProviders(ctx, "empty")
		mustOK(t, err, "ListProviders of a namespace without providers")
		if len(got) != 0 {
			t.Errorf("ListProviders(empty) = %+v, want none", got)
		}
		_, err = x.ListProviders(ctx, "nope")
		wantKind(t, err, registry.NotFound, "ListProviders of a missing namespace")
	})
	t.Run("KeySnapshotOutlivesKey", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		key := testKey("acme", 1)
		mustOK(t, x.AddSigningKey(ctx, key), "AddSigningKey")
		v := testVersion("acme", "cloud", "1.0.0", key, t0)
		mustOK(t, x.CreateProviderVersion(ctx, v), "CreateProviderVersion")
		mustOK(t, x.DeleteSigningKey(ctx, "acme", key.KeyID), "DeleteSigningKey")
		replacement := key
		replacement.ASCIIArmor = "a different armor under the same key ID"
		mustOK(t, x.AddSigningKey(ctx, replacement), "AddSigningKey with the same key ID")

		got, err := x.GetProviderVersion(ctx, "acme", "cloud", "1.0.0")
		mustOK(t, err, "GetProviderVersion")
		checkEqual(t, "version after its key was replaced", got, v, normVersion)
		list, err := x.ListProviderVersions(ctx, "acme", "cloud")
		mustOK(t, err, "ListProviderVersions")
		checkList(t, "ListProviderVersions after the key was replaced", list, []registry.ProviderVersion{v}, normVersion)
	})
	t.Run("ConcurrentCreateOfOneVersion", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		const n = 8
		vs := make([]registry.ProviderVersion, n)
		errs := make([]error, n)
		for i := range vs {
			vs[i] = testVersion("acme", "cloud", "1.0.0", testKey("acme", i), at(time.Duration(i)*time.Second))
		}
		runTogether(n, func(i int) { errs[i] = x.CreateProviderVersion(ctx, vs[i]) })
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("creates %d and %d both succeeded", winner, i)
			case err == nil:
				winner = i
			default:
				wantKind(t, err, registry.Conflict, fmt.Sprintf("concurrent create %d", i))
			}
		}
		if winner < 0 {
			t.Fatal("no concurrent create succeeded")
		}
		got, err := x.GetProviderVersion(ctx, "acme", "cloud", "1.0.0")
		mustOK(t, err, "GetProviderVersion")
		checkEqual(t, "the stored version is the winner's", got, vs[winner], normVersion)
	})
	t.Run("ConcurrentCreateOfManyVersions", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		const n = 8
		errs := make([]error, n)
		runTogether(n, func(i int) {
			errs[i] = x.CreateProviderVersion(ctx, testVersion("acme", "cloud", fmt.Sprintf("1.%d.0", i), testKey("acme", i), at(time.Duration(i)*time.Second)))
		})
		for i, err := range errs {
			if err != nil {
				t.Errorf("concurrent create of version 1.%d.0: %v", i, err)
			}
		}
		list, err := x.ListProviderVersions(ctx, "acme", "cloud")
		mustOK(t, err, "ListProviderVersions")
		if len(list) != n {
			t.Errorf("ListProviderVersions returned %d versions, want %d", len(list), n)
		}
		ps, err := x.ListProviders(ctx, "acme")
		mustOK(t, err, "ListProviders")
		want := []registry.Provider{{Namespace: "acme", Type: "cloud", VersionCount: n, LatestVersion: "1.7.0", UpdatedAt: at(7 * time.Second)}}
		checkList(t, "ListProviders", ps, want, normProvider)
	})
	t.Run("ReadersSeeWholeVersions", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		const versions = 20
		done := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		var problems []string
		report := func(format string, args ...any) {
			mu.Lock()
			defer mu.Unlock()
			if len(problems) < 10 {
				problems = append(problems, fmt.Sprintf(format, args...))
			}
		}
		for range 2 {
			wg.Go(func() {
				for {
					select {
					case <-done:
						return
					default:
					}
					list, err := x.ListProviderVersions(ctx, "acme", "cloud")
					if err != nil && !registry.IsKind(err, registry.NotFound) {
						report("ListProviderVersions: %v", err)
						return
					}
					for _, v := range list {
						if len(v.Platforms) != 3 || v.SigningKey.KeyID == "" {
							report("version %s seen with %d platforms and key %q", v.Version, len(v.Platforms), v.SigningKey.KeyID)
						}
					}
				}
			})
		}
		for i := range versions {
			v := testVersion("acme", "cloud", fmt.Sprintf("0.%d.0", i), testKey("acme", i%3), t0)
			if err := x.CreateProviderVersion(ctx, v); err != nil {
				report("CreateProviderVersion %s: %v", v.Version, err)
			}
		}
		close(done)
		wg.Wait()
		for _, p := range problems {
			t.Error(p)
		}
	})
}

// runTogether calls fn(0..n-1) in n goroutines released at the same moment
// and waits for all of them.
func runTogether(n int, fn func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			fn(i)
		})
	}
	close(start)
	wg.Wait()
}

func testSecrets(t *testing.T, newIndex func(*testing.T) store.Index) {
	t.Run("GeneratedOnce", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		calls := 0
		gen := func(v string) func() ([]byte, error) {
			return func() ([]byte, error) { calls++; return []byte(v), nil }
		}
		got, err := x.Secret(ctx, "url-signing", gen("\x00first\xff"))
		mustOK(t, err, "Secret")
		if string(got) != "\x00first\xff" || calls != 1 {
			t.Errorf("first Secret = %q after %d generate calls, want %q after 1", got, calls, "\x00first\xff")
		}
		got, err = x.Secret(ctx, "url-signing", gen("second"))
		mustOK(t, err, "Secret")
		if string(got) != "\x00first\xff" || calls != 1 {
			t.Errorf("second Secret = %q after %d generate calls, want the stored %q without generating", got, calls, "\x00first\xff")
		}
		got, err = x.Secret(ctx, "other", gen("other value"))
		mustOK(t, err, "Secret other")
		if string(got) != "other value" {
			t.Errorf("Secret(other) = %q, want %q: names are independent", got, "other value")
		}
	})
	t.Run("GenerateErrorStoresNothing", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		boom := errors.New("entropy exhausted")
		_, err := x.Secret(ctx, "k", func() ([]byte, error) { return nil, boom })
		if !errors.Is(err, boom) {
			t.Errorf("Secret with a failing generate: error = %v, want one wrapping %v", err, boom)
		}
		got, err := x.Secret(ctx, "k", func() ([]byte, error) { return []byte("v"), nil })
		mustOK(t, err, "Secret after a failed generate")
		if string(got) != "v" {
			t.Errorf("Secret = %q, want %q", got, "v")
		}
	})
	t.Run("ConcurrentFirstUse", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		const n = 8
		got := make([][]byte, n)
		errs := make([]error, n)
		runTogether(n, func(i int) {
			got[i], errs[i] = x.Secret(ctx, "url-signing", func() ([]byte, error) {
				return fmt.Appendf(nil, "candidate %d", i), nil
			})
		})
		for i := range n {
			mustOK(t, errs[i], fmt.Sprintf("Secret in goroutine %d", i))
		}
		stored, err := x.Secret(ctx, "url-signing", func() ([]byte, error) {
			return nil, errors.New("generate called although a secret is stored")
		})
		mustOK(t, err, "Secret after the race")
		for i, g := range got {
			if string(g) != string(stored) {
				t.Errorf("goroutine %d got %q, the stored secret is %q", i, g, stored)
			}
		}
	})
}
