package publish_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
)

// storeLegacy stores version of acme/example as a Trove before package
// hashes did: its blobs, and the version with no H1. Its darwin package's
// blob is left out when withoutDarwinBlob.
func (e *env) storeLegacy(t *testing.T, version string, withoutDarwinBlob bool) registry.ProviderVersion {
	t.Helper()
	ctx := t.Context()
	rel := build(t, e.key, version, version)
	v := registry.ProviderVersion{Namespace: "acme", Type: "example", Version: version, Protocols: []string{"5.0"},
		SigningKey:  registry.SigningKey{Namespace: "acme", KeyID: e.key.KeyID, ASCIIArmor: e.key.ArmoredPublic, CreatedAt: time.Now()},
		PublishedAt: time.Now()}
	for _, f := range rel.Files {
		if filepath.Ext(f.Name) != ".zip" {
			continue
		}
		if err := e.blobs.Put(ctx, sha(f.Data), int64(len(f.Data)), bytes.NewReader(f.Data)); err != nil {
			t.Fatal(err)
		}
		for _, osArch := range linuxDarwin {
			if f.Name == "terraform-provider-example_"+version+"_"+osArch+".zip" {
				goos, goarch, _ := strings.Cut(osArch, "_")
				v.Platforms = append(v.Platforms, registry.Platform{OS: goos, Arch: goarch, Filename: f.Name, SHA256: sha(f.Data), Size: int64(len(f.Data))})
			}
		}
	}
	v.SHASumsDigest, v.SHASumsSignatureDigest = sha(rel.Files[0].Data), sha(rel.Files[1].Data)
	if len(v.Platforms) != 2 {
		t.Fatalf("release %s has platforms %+v, want linux and darwin", version, v.Platforms)
	}
	if withoutDarwinBlob {
		p, _ := v.Platform("darwin", "arm64")
		if err := e.blobs.Delete(ctx, p.SHA256); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.idx.CreateProviderVersion(ctx, v); err != nil {
		t.Fatal(err)
	}
	return v
}

// packageHash returns release.PackageHash of the blob digest.
func (e *env) packageHash(t *testing.T, digest string) string {
	t.Helper()
	b, err := e.blobs.Open(t.Context(), digest)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	path := filepath.Join(t.TempDir(), "p.zip")
	data, err := io.ReadAll(b.Content)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	h1, err := release.PackageHash(path)
	if err != nil {
		t.Fatal(err)
	}
	return h1
}

func TestBackfillPackageHashes(t *testing.T) {
	e := newEnv(t, nil)
	ctx := t.Context()
	if _, err := e.publish(t, "1.0.0", build(t, e.key, "1.0.0", "").Files); err != nil {
		t.Fatal(err)
	}
	published, err := e.idx.GetProviderVersion(ctx, "acme", "example", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	legacy := e.storeLegacy(t, "0.9.0", false)
	damaged := e.storeLegacy(t, "0.8.0", true) // its darwin blob is gone
	missing, _ := damaged.Platform("darwin", "arm64")
	if without, err := e.idx.PackagesWithoutHash(ctx, 100); err != nil || len(without) != 4 {
		t.Fatalf("before the backfill, PackagesWithoutHash = %v, %v; want the 4 legacy packages", without, err)
	}

	if err := e.pub.BackfillPackageHashes(ctx, e.idx); err != nil {
		t.Fatalf("BackfillPackageHashes: %v", err)
	}
	for _, v := range []registry.ProviderVersion{legacy, damaged} {
		got, err := e.idx.GetProviderVersion(ctx, "acme", "example", v.Version)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range got.Platforms {
			switch {
			case p.SHA256 == missing.SHA256:
				if p.H1 != "" {
					t.Errorf("%s without a blob got H1 %q", p.Filename, p.H1)
				}
			case p.H1 == "" || p.H1 != e.packageHash(t, p.SHA256):
				t.Errorf("%s has H1 %q after the backfill, want its package's hash", p.Filename, p.H1)
			}
		}
	}
	again, err := e.idx.GetProviderVersion(ctx, "acme", "example", "1.0.0")
	if err != nil || !slices.Equal(again.Platforms, published.Platforms) {
		t.Errorf("the backfill changed a version published with hashes: %+v, %v", again.Platforms, err)
	}
	if without, err := e.idx.PackagesWithoutHash(ctx, 100); err != nil || !slices.Equal(without, []string{missing.SHA256}) {
		t.Errorf("after the backfill, PackagesWithoutHash = %v, %v; want only the package without a blob", without, err)
	}
	if tmp, _ := os.ReadDir(e.tmp); len(tmp) != 0 {
		t.Errorf("the backfill left staged files: %v", tmp)
	}
	// Run again, it only meets the package it cannot hash.
	if err := e.pub.BackfillPackageHashes(ctx, e.idx); err != nil {
		t.Errorf("second BackfillPackageHashes: %v", err)
	}
}

func TestBackfillPackageHashesStopsWithContext(t *testing.T) {
	e := newEnv(t, nil)
	e.storeLegacy(t, "0.9.0", false)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := e.pub.BackfillPackageHashes(ctx, e.idx); !errors.Is(err, context.Canceled) {
		t.Errorf("BackfillPackageHashes with an ended context = %v, want context.Canceled", err)
	}
	if without, err := e.idx.PackagesWithoutHash(t.Context(), 100); err != nil || len(without) != 2 {
		t.Errorf("after a cancelled backfill, PackagesWithoutHash = %v, %v; want both packages", without, err)
	}
}
