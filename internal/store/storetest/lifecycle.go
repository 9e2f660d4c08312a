package storetest

import (
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// testLifecycle checks store.Lifecycle: the deprecation and revocation of
// provider and module versions, set, replaced and cleared, as both reads
// of each kind return them.
func testLifecycle(t *testing.T, newIndex func(*testing.T) store.Index) {
	dep := &registry.Deprecation{Reason: "use 2.x: 1.x leaks credentials", Link: "https://example.com/upgrade", At: at(time.Hour).In(east), By: "alice"}
	rev := &registry.Revocation{Reason: "broken packages", At: at(2 * time.Hour), By: "token tok_123"}
	// provider returns 1.0.0 from both reads, checking they agree.
	provider := func(t *testing.T, x store.Index) registry.ProviderVersion {
		t.Helper()
		got, err := x.GetProviderVersion(t.Context(), "acme", "cloud", "1.0.0")
		mustOK(t, err, "GetProviderVersion")
		list, err := x.ListProviderVersions(t.Context(), "acme", "cloud")
		mustOK(t, err, "ListProviderVersions")
		checkSummaries(t, x, "acme", "cloud")
		for _, v := range list {
			if v.Version == "1.0.0" {
				checkEqual(t, "ListProviderVersions and GetProviderVersion", v, got, normVersion)
			} else if v.Deprecation != nil || v.Revocation != nil {
				t.Errorf("version %s has lifecycle %+v %+v; only 1.0.0 was changed", v.Version, v.Deprecation, v.Revocation)
			}
		}
		return got
	}
	module := func(t *testing.T, x store.Index) registry.ModuleVersion {
		t.Helper()
		got, err := x.GetModuleVersion(t.Context(), "acme", "network", "aws", "1.0.0")
		mustOK(t, err, "GetModuleVersion")
		list, err := x.ListModuleVersions(t.Context(), "acme", "network", "aws")
		mustOK(t, err, "ListModuleVersions")
		for _, v := range list {
			if v.Version == "1.0.0" {
				checkEqual(t, "ListModuleVersions and GetModuleVersion", v, withoutMetadata(got), normModuleVersion)
			} else if v.Deprecation != nil || v.Revocation != nil {
				t.Errorf("module version %s has lifecycle %+v %+v; only 1.0.0 was changed", v.Version, v.Deprecation, v.Revocation)
			}
		}
		return got
	}
	setup := func(t *testing.T) store.Index {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		for i, v := range []string{"1.0.0", "1.1.0"} {
			mustOK(t, x.CreateProviderVersion(ctx, testVersion("acme", "cloud", v, testKey("acme", 1), at(time.Duration(i)*time.Minute))), "CreateProviderVersion "+v)
			mustOK(t, x.CreateModuleVersion(ctx, testModuleVersion("acme", "network", "aws", v, at(time.Duration(i)*time.Minute))), "CreateModuleVersion "+v)
		}
		return x
	}

	t.Run("NoneByDefault", func(t *testing.T) {
		x := setup(t)
		if v := provider(t, x); v.Deprecation != nil || v.Revocation != nil {
			t.Errorf("a new provider version has lifecycle %+v %+v", v.Deprecation, v.Revocation)
		}
		if v := module(t, x); v.Deprecation != nil || v.Revocation != nil {
			t.Errorf("a new module version has lifecycle %+v %+v", v.Deprecation, v.Revocation)
		}
	})
	t.Run("ProviderSetReplaceClear", func(t *testing.T) {
		x, ctx := setup(t), t.Context()
		mustOK(t, x.SetProviderDeprecation(ctx, "acme", "cloud", "1.0.0", dep), "SetProviderDeprecation")
		mustOK(t, x.SetProviderRevocation(ctx, "acme", "cloud", "1.0.0", rev), "SetProviderRevocation")
		got := provider(t, x)
		checkEqual(t, "deprecation", *got.Deprecation, *dep, normDeprecation)
		checkEqual(t, "revocation", *got.Revocation, *rev, normRevocation)
		other := &registry.Deprecation{Reason: "another reason", At: at(3 * time.Hour)}
		mustOK(t, x.SetProviderDeprecation(ctx, "acme", "cloud", "1.0.0", other), "SetProviderDeprecation again")
		got = provider(t, x)
		checkEqual(t, "replaced deprecation", *got.Deprecation, *other, normDeprecation)
		mustOK(t, x.SetProviderDeprecation(ctx, "acme", "cloud", "1.0.0", nil), "SetProviderDeprecation nil")
		mustOK(t, x.SetProviderRevocation(ctx, "acme", "cloud", "1.0.0", nil), "SetProviderRevocation nil")
		mustOK(t, x.SetProviderRevocation(ctx, "acme", "cloud", "1.0.0", nil), "SetProviderRevocation nil again")
		if got := provider(t, x); got.Deprecation != nil || got.Revocation != nil {
			t.Errorf("after clearing: %+v %+v", got.Deprecation, got.Revocation)
		}
	})
	t.Run("ModuleSetReplaceClear", func(t *testing.T) {
		x, ctx := setup(t), t.Context()
		mustOK(t, x.SetModuleDeprecation(ctx, "acme", "network", "aws", "1.0.0", dep), "SetModuleDeprecation")
		mustOK(t, x.SetModuleRevocation(ctx, "acme", "network", "aws", "1.0.0", rev), "SetModuleRevocation")
		got := module(t, x)
		checkEqual(t, "deprecation", *got.Deprecation, *dep, normDeprecation)
		checkEqual(t, "revocation", *got.Revocation, *rev, normRevocation)
		if len(got.Metadata) == 0 {
			t.Error("GetModuleVersion lost the metadata of a deprecated version")
		}
		mustOK(t, x.SetModuleDeprecation(ctx, "acme", "network", "aws", "1.0.0", nil), "SetModuleDeprecation nil")
		mustOK(t, x.SetModuleRevocation(ctx, "acme", "network", "aws", "1.0.0", nil), "SetModuleRevocation nil")
		if got := module(t, x); got.Deprecation != nil || got.Revocation != nil {
			t.Errorf("after clearing: %+v %+v", got.Deprecation, got.Revocation)
		}
	})
	t.Run("RevokedLatestLeftOutOfSummaries", func(t *testing.T) {
		x, ctx := setup(t), t.Context()
		latest := func(t *testing.T) (provider, module string) {
			t.Helper()
			ps, err := x.ListProviders(ctx, "acme")
			mustOK(t, err, "ListProviders")
			ms, _, err := x.ListModules(ctx, registry.ModuleFilter{Namespace: "acme", Limit: 10})
			mustOK(t, err, "ListModules")
			if len(ps) != 1 || len(ms) != 1 {
				t.Fatalf("%d providers and %d modules listed, want 1 and 1", len(ps), len(ms))
			}
			if ps[0].VersionCount != 2 || ms[0].VersionCount != 2 {
				t.Errorf("version counts %d and %d, want 2 (revoked versions still count)", ps[0].VersionCount, ms[0].VersionCount)
			}
			return ps[0].LatestVersion, ms[0].LatestVersion
		}
		check := func(t *testing.T, step, want string) {
			t.Helper()
			if p, m := latest(t); p != want || m != want {
				t.Errorf("%s: latest versions %q (provider) and %q (module), want %q", step, p, m, want)
			}
		}
		check(t, "before", "1.1.0")
		mustOK(t, x.SetProviderRevocation(ctx, "acme", "cloud", "1.1.0", rev), "SetProviderRevocation 1.1.0")
		mustOK(t, x.SetModuleRevocation(ctx, "acme", "network", "aws", "1.1.0", rev), "SetModuleRevocation 1.1.0")
		check(t, "newest revoked", "1.0.0")
		mustOK(t, x.SetProviderRevocation(ctx, "acme", "cloud", "1.0.0", rev), "SetProviderRevocation 1.0.0")
		mustOK(t, x.SetModuleRevocation(ctx, "acme", "network", "aws", "1.0.0", rev), "SetModuleRevocation 1.0.0")
		check(t, "every version revoked", "1.1.0")
		mustOK(t, x.SetProviderRevocation(ctx, "acme", "cloud", "1.1.0", nil), "SetProviderRevocation nil")
		mustOK(t, x.SetModuleRevocation(ctx, "acme", "network", "aws", "1.1.0", nil), "SetModuleRevocation nil")
		check(t, "newest restored", "1.1.0")
	})
	t.Run("MissingVersions", func(t *testing.T) {
		x, ctx := setup(t), t.Context()
		wantKind(t, x.SetProviderDeprecation(ctx, "acme", "cloud", "9.9.9", dep), registry.NotFound, "SetProviderDeprecation of a missing version")
		wantKind(t, x.SetProviderRevocation(ctx, "acme", "nope", "1.0.0", nil), registry.NotFound, "SetProviderRevocation of a missing provider")
		wantKind(t, x.SetModuleDeprecation(ctx, "acme", "network", "aws", "9.9.9", nil), registry.NotFound, "SetModuleDeprecation of a missing version")
		wantKind(t, x.SetModuleRevocation(ctx, "other", "network", "aws", "1.0.0", rev), registry.NotFound, "SetModuleRevocation in a missing namespace")
	})
	t.Run("InvalidRefused", func(t *testing.T) {
		x, ctx := setup(t), t.Context()
		for name, d := range map[string]registry.Deprecation{
			"empty reason":     {Reason: " ", At: t0},
			"two lines":        {Reason: "a\nb", At: t0},
			"long reason":      {Reason: strings.Repeat("é", registry.MaxLifecycleReason+1), At: t0},
			"http link":        {Reason: "r", Link: "http://example.com", At: t0},
			"relative link":    {Reason: "r", Link: "/upgrade", At: t0},
			"link with user":   {Reason: "r", Link: "https://u:p@example.com/", At: t0},
			"javascript link":  {Reason: "r", Link: "javascript:alert(1)", At: t0},
			"zero time":        {Reason: "r"},
			"link with spaces": {Reason: "r", Link: "https://example.com/a b", At: t0},
		} {
			wantKind(t, x.SetProviderDeprecation(ctx, "acme", "cloud", "1.0.0", &d), registry.Invalid, "SetProviderDeprecation with "+name)
			wantKind(t, x.SetModuleDeprecation(ctx, "acme", "network", "aws", "1.0.0", &d), registry.Invalid, "SetModuleDeprecation with "+name)
		}
		wantKind(t, x.SetProviderRevocation(ctx, "acme", "cloud", "1.0.0", &registry.Revocation{At: t0}), registry.Invalid, "SetProviderRevocation without a reason")
		wantKind(t, x.SetModuleRevocation(ctx, "acme", "network", "aws", "1.0.0", &registry.Revocation{Reason: "x\x1b[31m", At: t0}), registry.Invalid, "SetModuleRevocation with an escape sequence")
		ok := registry.Deprecation{Reason: strings.Repeat("é", registry.MaxLifecycleReason), At: t0}
		mustOK(t, x.SetProviderDeprecation(ctx, "acme", "cloud", "1.0.0", &ok), "SetProviderDeprecation with the longest reason")
		if got := provider(t, x); got.Revocation != nil || got.Deprecation == nil || got.Deprecation.Reason != ok.Reason {
			t.Errorf("after refused and accepted changes: %+v %+v", got.Deprecation, got.Revocation)
		}
	})
}

func normDeprecation(d registry.Deprecation) registry.Deprecation {
	d.At = normTime(d.At)
	return d
}

func normRevocation(r registry.Revocation) registry.Revocation {
	r.At = normTime(r.At)
	return r
}
