package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// The public registries migration 0007 stores as the mirror's upstreams.
const (
	terraformRegistry = "registry.terraform.io"
	opentofuRegistry  = "registry.opentofu.org"
)

// testH1 returns an "h1:" hash derived from s.
func testH1(s string) string { return "h1:" + digestOf("h1 " + s)[:43] + "=" }

// mirroredVersion returns a mirrored version of host with three platforms,
// not held, verified by key n of the upstream namespace.
func mirroredVersion(host, ns, typ, version string, n int, fetched time.Time) registry.MirroredVersion {
	v := registry.MirroredVersion{Host: host, ProviderVersion: testVersion(ns, typ, version, testKey(ns, n), fetched)}
	v.SHASumsDigest = digestOf(host + "/" + v.SHASumsFilename())
	v.SHASumsSignatureDigest = digestOf(host + "/" + v.SHASumsSignatureFilename())
	for i := range v.Platforms {
		v.Platforms[i].SHA256 = digestOf(host + "/" + ns + "/" + v.Platforms[i].Filename)
		v.Platforms[i].Size = 0
	}
	return v
}

func normMirrored(v registry.MirroredVersion) registry.MirroredVersion {
	v.ProviderVersion = normVersion(v.ProviderVersion)
	return v
}

func normUpstream(u registry.MirrorUpstream) registry.MirrorUpstream {
	u.CreatedAt = normTime(u.CreatedAt)
	u.UpdatedAt = normTime(u.UpdatedAt)
	if len(u.Allow) == 0 {
		u.Allow = nil
	}
	return u
}

// sortMirrored orders versions by host, namespace, type and version.
func sortMirrored(vs []registry.MirroredVersion) []registry.MirroredVersion {
	vs = slices.Clone(vs)
	slices.SortFunc(vs, func(a, b registry.MirroredVersion) int {
		return strings.Compare(a.Host+" "+a.Namespace+" "+a.Type+" "+a.Version, b.Host+" "+b.Namespace+" "+b.Type+" "+b.Version)
	})
	return vs
}

// testPackageHashes checks the sentences of store.PackageHashes and that
// provider versions keep their platforms' H1.
func testPackageHashes(t *testing.T, newIndex func(*testing.T) store.Index) {
	t.Run("H1RoundTrip", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme")
		v := testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), t0)
		v.Platforms[0].H1 = testH1("a")
		v.Platforms[2].H1 = testH1("c") // Platforms[1] has none yet
		mustOK(t, x.CreateProviderVersion(ctx, v), "CreateProviderVersion")
		got, err := x.GetProviderVersion(ctx, "acme", "cloud", "1.0.0")
		mustOK(t, err, "GetProviderVersion")
		checkEqual(t, "GetProviderVersion", got, v, normVersion)
		list, err := x.ListProviderVersions(ctx, "acme", "cloud")
		mustOK(t, err, "ListProviderVersions")
		checkList(t, "ListProviderVersions", list, []registry.ProviderVersion{v}, normVersion)
	})
	t.Run("SetPackageHash", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		createNamespaces(t, x, "acme", "other")
		// One package published three times: twice without a hash, once
		// with another one, which SetPackageHash keeps.
		shared := digestOf("shared package")
		a := testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), t0)
		b := testVersion("other", "dns", "2.0.0", testKey("other", 2), t0)
		c := testVersion("acme", "cloud", "1.1.0", testKey("acme", 1), t0)
		a.Platforms[0].SHA256, b.Platforms[1].SHA256, c.Platforms[2].SHA256 = shared, shared, shared
		c.Platforms[2].H1 = testH1("kept")
		for _, v := range []registry.ProviderVersion{a, b, c} {
			mustOK(t, x.CreateProviderVersion(ctx, v), "CreateProviderVersion "+v.Version)
		}
		mustOK(t, x.SetPackageHash(ctx, shared, testH1("shared")), "SetPackageHash")
		mustOK(t, x.SetPackageHash(ctx, shared, testH1("shared")), "SetPackageHash again")
		mustOK(t, x.SetPackageHash(ctx, digestOf("no such package"), testH1("none")), "SetPackageHash of a digest nothing has")
		a.Platforms[0].H1, b.Platforms[1].H1 = testH1("shared"), testH1("shared")
		for _, v := range []registry.ProviderVersion{a, b, c} {
			got, err := x.GetProviderVersion(ctx, v.Namespace, v.Type, v.Version)
			mustOK(t, err, "GetProviderVersion")
			checkEqual(t, "version "+v.Namespace+"/"+v.Type+" "+v.Version+" after SetPackageHash", got, v, normVersion)
		}
		// A second hash for the same digest changes nothing.
		mustOK(t, x.SetPackageHash(ctx, shared, testH1("other")), "SetPackageHash with another hash")
		got, err := x.GetProviderVersion(ctx, "acme", "cloud", "1.0.0")
		mustOK(t, err, "GetProviderVersion")
		checkEqual(t, "version after a second SetPackageHash", got, a, normVersion)
	})
	t.Run("PackagesWithoutHash", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		got, err := x.PackagesWithoutHash(ctx, 10)
		mustOK(t, err, "PackagesWithoutHash of an empty index")
		if len(got) != 0 {
			t.Errorf("PackagesWithoutHash of an empty index = %v, want none", got)
		}
		createNamespaces(t, x, "acme", "other")
		// Two versions of other share acme's packages (a republished
		// release): 6 distinct digests, one of them with a hash.
		a := testVersion("acme", "cloud", "1.0.0", testKey("acme", 1), t0)
		b := testVersion("acme", "cloud", "1.1.0", testKey("acme", 1), t0)
		c := testVersion("other", "cloud", "1.0.0", testKey("other", 1), t0)
		c.Platforms = slices.Clone(a.Platforms)
		b.Platforms[0].H1 = testH1("b0")
		for _, v := range []registry.ProviderVersion{a, b, c} {
			mustOK(t, x.CreateProviderVersion(ctx, v), "CreateProviderVersion "+v.Namespace+" "+v.Version)
		}
		var want []string
		for _, p := range append(slices.Clone(a.Platforms), b.Platforms[1:]...) {
			want = append(want, p.SHA256)
		}
		slices.Sort(want)
		all, err := x.PackagesWithoutHash(ctx, 100)
		mustOK(t, err, "PackagesWithoutHash")
		slices.Sort(all)
		if !slices.Equal(all, want) {
			t.Errorf("PackagesWithoutHash(100) = %v, want each of %v once", all, want)
		}
		some, err := x.PackagesWithoutHash(ctx, 2)
		mustOK(t, err, "PackagesWithoutHash(2)")
		if len(some) != 2 || some[0] == some[1] || !slices.Contains(want, some[0]) || !slices.Contains(want, some[1]) {
			t.Errorf("PackagesWithoutHash(2) = %v, want 2 distinct digests of %v", some, want)
		}
		for _, d := range want {
			mustOK(t, x.SetPackageHash(ctx, d, testH1(d)), "SetPackageHash")
		}
		rest, err := x.PackagesWithoutHash(ctx, 100)
		mustOK(t, err, "PackagesWithoutHash after hashing all")
		if len(rest) != 0 {
			t.Errorf("PackagesWithoutHash after hashing every package = %v, want none", rest)
		}
	})
}

// testMirror checks the sentences of store.Mirror.
func testMirror(t *testing.T, newIndex func(*testing.T) store.Index) {
	const host = "upstream.example"
	t.Run("PutAndGet", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		v := mirroredVersion(host, "hashicorp", "aws", "5.1.0", 1, t0.In(east))
		v.SigningKey.CreatedAt, v.SigningKey.ExpiresAt = time.Time{}, time.Time{} // upstreams do not tell
		stored, err := x.PutMirroredVersion(ctx, v)
		mustOK(t, err, "PutMirroredVersion")
		checkEqual(t, "PutMirroredVersion's result", stored, v, normMirrored)
		got, err := x.GetMirroredVersion(ctx, host, "hashicorp", "aws", "5.1.0")
		mustOK(t, err, "GetMirroredVersion")
		checkEqual(t, "GetMirroredVersion", got, v, normMirrored)
		for i, p := range got.Platforms {
			if p.Held() {
				t.Errorf("platform %d is held before SetMirroredPackage: %+v", i, p)
			}
		}
	})
	t.Run("PutKeepsNoSizeOrHash", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		v := mirroredVersion(host, "hashicorp", "aws", "5.1.0", 1, t0)
		in := v
		in.Platforms = slices.Clone(v.Platforms)
		in.Platforms[0].Size, in.Platforms[0].H1 = 1234, testH1("x")
		stored, err := x.PutMirroredVersion(ctx, in)
		mustOK(t, err, "PutMirroredVersion")
		checkEqual(t, "a version put with a size and hash", stored, v, normMirrored)
	})
	t.Run("PutReturnsTheStoredOne", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		first := mirroredVersion(host, "hashicorp", "aws", "5.1.0", 1, t0)
		_, err := x.PutMirroredVersion(ctx, first)
		mustOK(t, err, "PutMirroredVersion")
		again, err := x.PutMirroredVersion(ctx, first)
		mustOK(t, err, "PutMirroredVersion again")
		checkEqual(t, "second put of the same version", again, first, normMirrored)

		second := mirroredVersion(host, "hashicorp", "aws", "5.1.0", 2, at(time.Hour))
		second.SHASumsDigest, second.Protocols = digestOf("other sums"), []string{"6.0"}
		second.Platforms = second.Platforms[:1]
		got, err := x.PutMirroredVersion(ctx, second)
		mustOK(t, err, "PutMirroredVersion of other content")
		checkEqual(t, "a put of other content", got, first, normMirrored)
		got, err = x.GetMirroredVersion(ctx, host, "hashicorp", "aws", "5.1.0")
		mustOK(t, err, "GetMirroredVersion")
		checkEqual(t, "GetMirroredVersion after a put of other content", got, first, normMirrored)
	})
	t.Run("ConcurrentPutsGetOneVersion", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		const n = 8
		results, errs := make([]registry.MirroredVersion, n), make([]error, n)
		runTogether(n, func(i int) {
			v := mirroredVersion(host, "hashicorp", "aws", "5.1.0", i, at(time.Duration(i)*time.Second))
			v.SHASumsDigest = digestOf(fmt.Sprint("sums ", i))
			results[i], errs[i] = x.PutMirroredVersion(ctx, v)
		})
		stored, err := x.GetMirroredVersion(ctx, host, "hashicorp", "aws", "5.1.0")
		mustOK(t, err, "GetMirroredVersion")
		for i := range n {
			if errs[i] != nil {
				t.Errorf("concurrent put %d: %v", i, errs[i])
				continue
			}
			checkEqual(t, fmt.Sprintf("result of concurrent put %d", i), results[i], stored, normMirrored)
		}
		list, err := x.ListMirroredVersions(ctx, host, "hashicorp", "aws")
		mustOK(t, err, "ListMirroredVersions")
		checkList(t, "ListMirroredVersions after concurrent puts", list, []registry.MirroredVersion{stored}, normMirrored)
	})
	t.Run("PutWithoutPlatformsIsInvalid", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		v := mirroredVersion(host, "hashicorp", "aws", "5.1.0", 1, t0)
		v.Platforms = nil
		_, err := x.PutMirroredVersion(ctx, v)
		wantKind(t, err, registry.Invalid, "PutMirroredVersion without platforms")
		_, err = x.GetMirroredVersion(ctx, host, "hashicorp", "aws", "5.1.0")
		wantKind(t, err, registry.NotFound, "GetMirroredVersion after a refused put")
	})
	t.Run("ListAndNotFound", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		_, err := x.GetMirroredVersion(ctx, host, "hashicorp", "aws", "5.1.0")
		wantKind(t, err, registry.NotFound, "GetMirroredVersion of an empty mirror")
		_, err = x.ListMirroredVersions(ctx, host, "hashicorp", "aws")
		wantKind(t, err, registry.NotFound, "ListMirroredVersions of an empty mirror")
		all, err := x.ListAllMirroredVersions(ctx)
		mustOK(t, err, "ListAllMirroredVersions of an empty mirror")
		if len(all) != 0 {
			t.Errorf("ListAllMirroredVersions of an empty mirror = %+v, want none", all)
		}

		// Versions of one provider, signed by one key, and neighbours
		// that differ in one part of the address each.
		want := []registry.MirroredVersion{
			mirroredVersion(host, "hashicorp", "aws", "5.1.0", 1, t0),
			mirroredVersion(host, "hashicorp", "aws", "4.0.0", 1, at(time.Minute)),
			mirroredVersion(host, "hashicorp", "aws", "5.2.0-beta.1", 1, at(2*time.Minute)),
		}
		others := []registry.MirroredVersion{
			mirroredVersion("other.example", "hashicorp", "aws", "5.1.0", 2, t0),
			mirroredVersion(host, "hashicorp", "azurerm", "5.1.0", 1, t0),
			mirroredVersion(host, "acme", "aws", "5.1.0", 3, t0),
		}
		for _, v := range append(slices.Clone(want), others...) {
			_, err := x.PutMirroredVersion(ctx, v)
			mustOK(t, err, "PutMirroredVersion "+v.Host+"/"+v.Namespace+"/"+v.Type+" "+v.Version)
		}
		list, err := x.ListMirroredVersions(ctx, host, "hashicorp", "aws")
		mustOK(t, err, "ListMirroredVersions")
		checkList(t, "ListMirroredVersions", sortMirrored(list), sortMirrored(want), normMirrored)
		_, err = x.GetMirroredVersion(ctx, host, "hashicorp", "aws", "9.9.9")
		wantKind(t, err, registry.NotFound, "GetMirroredVersion of a missing version")
		_, err = x.ListMirroredVersions(ctx, "third.example", "hashicorp", "aws")
		wantKind(t, err, registry.NotFound, "ListMirroredVersions of another host")

		all, err = x.ListAllMirroredVersions(ctx)
		mustOK(t, err, "ListAllMirroredVersions")
		checkList(t, "ListAllMirroredVersions", all, sortMirrored(append(want, others...)), normMirrored)
	})
	t.Run("FindMirroredPackage", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		_, _, err := x.FindMirroredPackage(ctx, digestOf("nothing"))
		wantKind(t, err, registry.NotFound, "FindMirroredPackage in an empty mirror")

		// The same package under two hosts: the first by host is found.
		a := mirroredVersion(host, "hashicorp", "aws", "5.1.0", 1, t0)
		b := mirroredVersion("mirror.example", "hashicorp", "aws", "5.1.0", 1, t0)
		shared := digestOf("shared")
		a.Platforms[1].SHA256, b.Platforms[2].SHA256 = shared, shared
		for _, v := range []registry.MirroredVersion{a, b} {
			_, err := x.PutMirroredVersion(ctx, v)
			mustOK(t, err, "PutMirroredVersion")
		}
		v, p, err := x.FindMirroredPackage(ctx, a.Platforms[0].SHA256)
		mustOK(t, err, "FindMirroredPackage")
		checkEqual(t, "FindMirroredPackage's version", v, a, normMirrored)
		if p != a.Platforms[0] {
			t.Errorf("FindMirroredPackage's platform = %+v, want %+v", p, a.Platforms[0])
		}
		v, p, err = x.FindMirroredPackage(ctx, shared)
		mustOK(t, err, "FindMirroredPackage of a shared package")
		checkEqual(t, "FindMirroredPackage's version of a shared package", v, b, normMirrored)
		if p != b.Platforms[2] {
			t.Errorf("FindMirroredPackage's platform of a shared package = %+v, want %+v", p, b.Platforms[2])
		}
		_, _, err = x.FindMirroredPackage(ctx, digestOf("nothing"))
		wantKind(t, err, registry.NotFound, "FindMirroredPackage of an unknown digest")
	})
	t.Run("SetMirroredPackage", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		v := mirroredVersion(host, "hashicorp", "aws", "5.1.0", 1, t0)
		_, err := x.PutMirroredVersion(ctx, v)
		mustOK(t, err, "PutMirroredVersion")
		p := v.Platforms[1]
		set := func(version, os, arch string, size int64, h1 string) error {
			return x.SetMirroredPackage(ctx, host, "hashicorp", "aws", version, os, arch, size, h1)
		}
		wantKind(t, set("9.9.9", p.OS, p.Arch, 100, testH1("p")), registry.NotFound, "SetMirroredPackage of a missing version")
		wantKind(t, set("5.1.0", "plan9", p.Arch, 100, testH1("p")), registry.NotFound, "SetMirroredPackage of a missing platform")
		wantKind(t, set("5.1.0", p.OS, p.Arch, 0, testH1("p")), registry.Invalid, "SetMirroredPackage without a size")
		wantKind(t, set("5.1.0", p.OS, p.Arch, 100, ""), registry.Invalid, "SetMirroredPackage without a hash")

		mustOK(t, set("5.1.0", p.OS, p.Arch, 100, testH1("p")), "SetMirroredPackage")
		mustOK(t, set("5.1.0", p.OS, p.Arch, 100, testH1("p")), "SetMirroredPackage with the same values")
		wantKind(t, set("5.1.0", p.OS, p.Arch, 101, testH1("p")), registry.Conflict, "SetMirroredPackage with another size")
		wantKind(t, set("5.1.0", p.OS, p.Arch, 100, testH1("q")), registry.Conflict, "SetMirroredPackage with another hash")

		v.Platforms[1].Size, v.Platforms[1].H1 = 100, testH1("p")
		got, err := x.GetMirroredVersion(ctx, host, "hashicorp", "aws", "5.1.0")
		mustOK(t, err, "GetMirroredVersion")
		checkEqual(t, "GetMirroredVersion after SetMirroredPackage", got, v, normMirrored)
		for _, gp := range got.Platforms {
			if held := gp.OS == p.OS && gp.Arch == p.Arch; gp.Held() != held {
				t.Errorf("platform %s_%s: Held() = %v, want %v", gp.OS, gp.Arch, gp.Held(), held)
			}
		}
		_, fp, err := x.FindMirroredPackage(ctx, p.SHA256)
		mustOK(t, err, "FindMirroredPackage")
		if !fp.Held() || fp.Size != 100 || fp.H1 != testH1("p") {
			t.Errorf("FindMirroredPackage's platform after SetMirroredPackage = %+v, want it held with size 100", fp)
		}
		// A put of the version again keeps what is held.
		again, err := x.PutMirroredVersion(ctx, mirroredVersion(host, "hashicorp", "aws", "5.1.0", 1, t0))
		mustOK(t, err, "PutMirroredVersion again")
		checkEqual(t, "PutMirroredVersion of a version with a held package", again, v, normMirrored)
	})
	t.Run("SetMirroredPackageHoldsEveryCopy", func(t *testing.T) {
		// The same package published to two registries is one package:
		// holding it under one holds it under the other.
		x, ctx := newIndex(t), t.Context()
		a := mirroredVersion(host, "hashicorp", "aws", "5.1.0", 1, t0)
		b := mirroredVersion("mirror.example", "hashicorp", "aws", "5.1.0", 1, t0)
		shared := digestOf("shared")
		a.Platforms[1].SHA256, b.Platforms[2].SHA256 = shared, shared
		for _, v := range []registry.MirroredVersion{a, b} {
			_, err := x.PutMirroredVersion(ctx, v)
			mustOK(t, err, "PutMirroredVersion")
		}
		p := a.Platforms[1]
		mustOK(t, x.SetMirroredPackage(ctx, host, "hashicorp", "aws", "5.1.0", p.OS, p.Arch, 100, testH1("shared")), "SetMirroredPackage")
		got, err := x.GetMirroredVersion(ctx, "mirror.example", "hashicorp", "aws", "5.1.0")
		mustOK(t, err, "GetMirroredVersion of the other host")
		for _, gp := range got.Platforms {
			if held := gp.SHA256 == shared; gp.Held() != held || held && (gp.Size != 100 || gp.H1 != testH1("shared")) {
				t.Errorf("the other host's platform %s_%s: %+v, want held=%v", gp.OS, gp.Arch, gp, held)
			}
		}
	})
}

// testMirrorUpstreams checks the sentences of store.MirrorUpstreams.
func testMirrorUpstreams(t *testing.T, newIndex func(*testing.T) store.Index) {
	t.Run("Defaults", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		list, err := x.ListMirrorUpstreams(ctx)
		mustOK(t, err, "ListMirrorUpstreams")
		var hosts []string
		for _, u := range list {
			hosts = append(hosts, u.Host)
			if u.ServiceURL != "" || u.CACertificates != "" || u.Description == "" || u.CreatedAt.IsZero() ||
				!slices.Equal(u.Allow, []registry.MirrorRule{{Provider: "*/*"}}) {
				t.Errorf("default upstream %+v: want no service URL or CA, a description, a creation time, and every provider allowed", u)
			}
		}
		if want := []string{opentofuRegistry, terraformRegistry}; !slices.Equal(hosts, want) {
			t.Errorf("ListMirrorUpstreams of a new index lists %v, want %v", hosts, want)
		}
		u, err := x.GetMirrorUpstream(ctx, terraformRegistry)
		mustOK(t, err, "GetMirrorUpstream of a default")
		checkEqual(t, "GetMirrorUpstream of a default", u, list[1], normUpstream)
	})
	t.Run("PutGetListDelete", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		_, err := x.GetMirrorUpstream(ctx, "private.example:8443")
		wantKind(t, err, registry.NotFound, "GetMirrorUpstream of a missing upstream")
		u := registry.MirrorUpstream{
			Host:           "private.example:8443",
			ServiceURL:     "https://private.example:8443/v1/providers/",
			CACertificates: "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
			Allow: []registry.MirrorRule{
				{Provider: "hashicorp/*", Versions: "~> 5.0"},
				{Provider: "acme/cloud", Versions: ""},
				{Provider: `we"ird/ünï`, Versions: ">= 1.0, < 2.0"},
			},
			Description: "the private one",
			CreatedAt:   t0.In(east),
			UpdatedAt:   t0,
		}
		mustOK(t, x.PutMirrorUpstream(ctx, u), "PutMirrorUpstream")
		got, err := x.GetMirrorUpstream(ctx, u.Host)
		mustOK(t, err, "GetMirrorUpstream")
		checkEqual(t, "GetMirrorUpstream", got, u, normUpstream)

		// Put replaces every field but CreatedAt.
		changed := registry.MirrorUpstream{Host: u.Host, Description: "changed", CreatedAt: at(time.Hour), UpdatedAt: at(2 * time.Hour)}
		mustOK(t, x.PutMirrorUpstream(ctx, changed), "PutMirrorUpstream replacing")
		changed.CreatedAt = u.CreatedAt
		got, err = x.GetMirrorUpstream(ctx, u.Host)
		mustOK(t, err, "GetMirrorUpstream after replacing")
		checkEqual(t, "GetMirrorUpstream after replacing", got, changed, normUpstream)

		list, err := x.ListMirrorUpstreams(ctx)
		mustOK(t, err, "ListMirrorUpstreams")
		var hosts []string
		for _, l := range list {
			hosts = append(hosts, l.Host)
		}
		if want := []string{u.Host, opentofuRegistry, terraformRegistry}; !slices.Equal(hosts, want) {
			t.Errorf("ListMirrorUpstreams lists %v, want %v (by host)", hosts, want)
		}

		mustOK(t, x.DeleteMirrorUpstream(ctx, u.Host), "DeleteMirrorUpstream")
		_, err = x.GetMirrorUpstream(ctx, u.Host)
		wantKind(t, err, registry.NotFound, "GetMirrorUpstream after delete")
		wantKind(t, x.DeleteMirrorUpstream(ctx, u.Host), registry.NotFound, "second DeleteMirrorUpstream")
		mustOK(t, x.DeleteMirrorUpstream(ctx, terraformRegistry), "DeleteMirrorUpstream of a default")
		list, err = x.ListMirrorUpstreams(ctx)
		mustOK(t, err, "ListMirrorUpstreams after deletes")
		if len(list) != 1 || list[0].Host != opentofuRegistry {
			t.Errorf("ListMirrorUpstreams after deletes = %+v, want only %s", list, opentofuRegistry)
		}
	})
	t.Run("DeleteKeepsMirroredVersions", func(t *testing.T) {
		x, ctx := newIndex(t), t.Context()
		v := mirroredVersion(terraformRegistry, "hashicorp", "aws", "5.1.0", 1, t0)
		_, err := x.PutMirroredVersion(ctx, v)
		mustOK(t, err, "PutMirroredVersion")
		mustOK(t, x.DeleteMirrorUpstream(ctx, terraformRegistry), "DeleteMirrorUpstream")
		got, err := x.GetMirroredVersion(ctx, terraformRegistry, "hashicorp", "aws", "5.1.0")
		mustOK(t, err, "GetMirroredVersion after deleting its upstream")
		checkEqual(t, "GetMirroredVersion after deleting its upstream", got, v, normMirrored)
	})
}
