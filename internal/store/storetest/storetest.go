// Package storetest holds the conformance suites every storage backend
// runs: TestIndex for store.Index and TestBlobs for store.Blobs. A backend
// calls them in one line from its own tests, so that all backends are held
// to the same contract, sentence by sentence, as written in package store.
//
// Conventions the suites rely on:
//
//   - Times: a backend keeps times to at least microsecond precision (the
//     resolution of PostgreSQL's timestamptz). The suites only pass times
//     that are whole microseconds, some of them in a non-UTC location, and
//     expect the same instants back (in any location).
//   - Slices: a nil and an empty slice are the same. Platforms are compared
//     as a set (the contract does not order them).
//   - Provider.UpdatedAt is the newest PublishedAt among the provider's
//     versions.
//   - The factories return a new, empty store on every call and arrange
//     its cleanup with t.Cleanup; the suites never close a store. Empty
//     means holding only what the migrations store: the mirror's two
//     default upstreams.
package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
)

// t0 is the base time of the suites: whole microseconds, not whole seconds,
// so that a backend storing seconds fails.
var t0 = time.Date(2025, time.March, 14, 15, 9, 26, 535897000, time.UTC)

// east is a non-UTC location; times given in it must come back as the
// same instant.
var east = time.FixedZone("UTC+5:30", 5*3600+1800)

// at returns t0 shifted by d.
func at(d time.Duration) time.Time { return t0.Add(d) }

// digestOf returns the lower-case hex SHA-256 of s.
func digestOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// mustOK stops the test if err is not nil.
func mustOK(t *testing.T, err error, call string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: unexpected error: %v", call, err)
	}
}

// wantKind reports an error unless err is a *registry.Error of kind.
func wantKind(t *testing.T, err error, kind registry.Kind, call string) {
	t.Helper()
	if !registry.IsKind(err, kind) {
		t.Errorf("%s: error = %v (kind %q), want kind %q", call, err, registryKind(err), kind)
	}
}

// registryKind names err's kind, or "none" for a nil error.
func registryKind(err error) string {
	if err == nil {
		return "none"
	}
	return registry.KindOf(err).String()
}

// normTime makes equal instants compare equal with reflect.DeepEqual.
func normTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC().Round(0)
}

// normNamespace also reads an empty Visibility as private: a namespace
// created without one is stored private.
func normNamespace(n registry.Namespace) registry.Namespace {
	n.CreatedAt = normTime(n.CreatedAt)
	if n.Visibility == "" {
		n.Visibility = registry.VisibilityPrivate
	}
	return n
}

func normKey(k registry.SigningKey) registry.SigningKey {
	k.CreatedAt = normTime(k.CreatedAt)
	k.ExpiresAt = normTime(k.ExpiresAt)
	return k
}

func normToken(tk registry.Token) registry.Token {
	tk.CreatedAt = normTime(tk.CreatedAt)
	tk.ExpiresAt = normTime(tk.ExpiresAt)
	tk.RevokedAt = normTime(tk.RevokedAt)
	if len(tk.Scopes) == 0 {
		tk.Scopes = nil
	}
	if len(tk.Namespaces) == 0 {
		tk.Namespaces = nil
	}
	return tk
}

func normVersion(v registry.ProviderVersion) registry.ProviderVersion {
	v.SigningKey = normKey(v.SigningKey)
	v.PublishedAt = normTime(v.PublishedAt)
	if len(v.Protocols) == 0 {
		v.Protocols = nil
	}
	if len(v.Platforms) == 0 {
		v.Platforms = nil
	} else {
		v.Platforms = slices.Clone(v.Platforms)
		slices.SortFunc(v.Platforms, func(a, b registry.Platform) int {
			return strings.Compare(a.OS+"/"+a.Arch, b.OS+"/"+b.Arch)
		})
	}
	return v
}

func normProvider(p registry.Provider) registry.Provider {
	p.UpdatedAt = normTime(p.UpdatedAt)
	return p
}

// normAll applies norm to every element of a copy of s.
func normAll[T any](s []T, norm func(T) T) []T {
	out := make([]T, len(s))
	for i, v := range s {
		out[i] = norm(v)
	}
	return out
}

// checkEqual reports an error if got and want differ after norm.
func checkEqual[T any](t *testing.T, what string, got, want T, norm func(T) T) {
	t.Helper()
	g, w := norm(got), norm(want)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s:\n got  %+v\n want %+v", what, g, w)
	}
}

// checkList reports an error if got and want differ in length or in any
// element after norm; order matters.
func checkList[T any](t *testing.T, what string, got, want []T, norm func(T) T) {
	t.Helper()
	g, w := normAll(got, norm), normAll(want, norm)
	if len(g) != len(w) {
		t.Errorf("%s: got %d items, want %d:\n got  %+v\n want %+v", what, len(g), len(w), g, w)
		return
	}
	for i := range g {
		if !reflect.DeepEqual(g[i], w[i]) {
			t.Errorf("%s: item %d:\n got  %+v\n want %+v", what, i, g[i], w[i])
		}
	}
}

// testKey returns a signing key of namespace ns whose fields derive from n.
func testKey(ns string, n int) registry.SigningKey {
	id := fmt.Sprintf("%016X", 0xC0FFEE0000+n)
	return registry.SigningKey{
		Namespace:   ns,
		KeyID:       id,
		Fingerprint: fmt.Sprintf("%024X", 0xABCDEF+n) + id,
		ASCIIArmor: "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmDMEZ" + id +
			strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo", 20) + "\n=abcd\n-----END PGP PUBLIC KEY BLOCK-----\n",
		CreatedAt: at(time.Duration(n) * time.Minute).In(east),
		ExpiresAt: at(365 * 24 * time.Hour),
	}
}

// testVersion returns a provider version with three platforms.
func testVersion(ns, typ, version string, key registry.SigningKey, published time.Time) registry.ProviderVersion {
	v := registry.ProviderVersion{
		Namespace:   ns,
		Type:        typ,
		Version:     version,
		Protocols:   []string{"5.0", "6.0"},
		SigningKey:  key,
		PublishedAt: published,
	}
	v.SHASumsDigest = digestOf(v.SHASumsFilename())
	v.SHASumsSignatureDigest = digestOf(v.SHASumsSignatureFilename())
	for i, p := range [][2]string{{"linux", "amd64"}, {"darwin", "arm64"}, {"windows", "386"}} {
		name := "terraform-provider-" + typ + "_" + version + "_" + p[0] + "_" + p[1] + ".zip"
		v.Platforms = append(v.Platforms, registry.Platform{
			OS: p[0], Arch: p[1], Filename: name, SHA256: digestOf(ns + "/" + name), Size: int64(1<<20 + i),
		})
	}
	return v
}
