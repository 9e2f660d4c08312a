package operations_test

import (
	"archive/tar"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest/testarchive"
)

// stage writes files into a new staging directory under their digests
// and returns the bundle of them (without versions).
func stage(t *testing.T, files ...[]byte) operations.Bundle {
	t.Helper()
	b := operations.Bundle{Dir: t.TempDir(), Sizes: map[string]int64{}}
	for _, f := range files {
		d := releasetest.Digest(f)
		if err := os.WriteFile(filepath.Join(b.Dir, d), f, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, ok := b.Sizes[d]; !ok {
			b.Files = append(b.Files, d)
		}
		b.Sizes[d] = int64(len(f))
	}
	return b
}

// moduleBundle is a bundle of one module version of acme with archive.
func (e *publishEnv) moduleBundle(t *testing.T, archive []byte, edit func(*registry.ModuleVersion)) operations.Bundle {
	b := stage(t, archive)
	v := registry.ModuleVersion{Namespace: "acme", Name: "vpc", System: "aws", Version: "1.2.0",
		ArchiveDigest: releasetest.Digest(archive), ArchiveFormat: "tar.gz", ArchiveSize: int64(len(archive)), PublishedAt: e.now}
	if edit != nil {
		edit(&v)
	}
	b.Modules = []registry.ModuleVersion{v}
	return b
}

// providerBundle is a bundle of a mirrored provider version signed by
// key, and its staged files.
func (e *publishEnv) providerBundle(t *testing.T, key *signingtest.Key, bundleKey *signingtest.Key) operations.Bundle {
	rel := releasetest.Build(t, key, releasetest.Spec{Type: "thing", Version: "0.3.0", Platforms: []string{"linux_amd64"}})
	sums, sig, zip := rel.Files[0].Data, rel.Files[1].Data, rel.Files[2].Data
	b := stage(t, sums, sig, zip)
	h1, err := release.PackageHash(filepath.Join(b.Dir, releasetest.Digest(zip)))
	if err != nil {
		t.Fatal(err)
	}
	v := registry.MirroredVersion{Host: "registry.example.net", ProviderVersion: registry.ProviderVersion{
		Namespace: "vendor", Type: "thing", Version: "0.3.0", Protocols: []string{"5.0"},
		SHASumsDigest: releasetest.Digest(sums), SHASumsSignatureDigest: releasetest.Digest(sig),
		SigningKey: registry.SigningKey{Namespace: "vendor", KeyID: bundleKey.KeyID, ASCIIArmor: bundleKey.ArmoredPublic},
		Platforms: []registry.Platform{{OS: "linux", Arch: "amd64", Filename: rel.ZipName("linux_amd64"),
			SHA256: releasetest.Digest(zip), Size: int64(len(zip)), H1: h1}},
		PublishedAt: e.now,
	}}
	b.Providers, b.Sources = []registry.MirroredVersion{v}, []string{"registry.example.net/vendor/thing"}
	return b
}

// TestImportBundleRefused: a bundle import refused for rights or for any
// package or module a publish refuses stores nothing, blobs included.
func TestImportBundleRefused(t *testing.T) {
	e := newPublishEnv(t)
	root := e.user(t, "root")
	good := testarchive.TarGz(t, map[string]string{"main.tf": "variable \"x\" {}\n"})
	vendor := signingtest.NewKey(t, "vendor")
	tamperedZip := e.providerBundle(t, vendor, vendor)
	tamperedZip.Providers[0].Platforms[0].H1 = "h1:" + strings.Repeat("A", 43) + "="
	missing := e.moduleBundle(t, good, nil)
	missing.Sizes = map[string]int64{}
	for _, c := range []struct {
		name   string
		actor  operations.Actor
		bundle operations.Bundle
		want   registry.Kind
	}{
		{"namespace admin", e.user(t, "alice"), e.moduleBundle(t, good, nil), registry.Forbidden},
		{"publish token", e.service(t, registry.ScopePublish, "acme"), e.moduleBundle(t, good, nil), registry.Forbidden},
		{"dot-dot entry", root, e.moduleBundle(t, testarchive.TarGzOf(t, testarchive.Entry{Name: "main.tf", Body: "x"}, testarchive.Entry{Name: "../../evil.tf", Body: "x"}), nil), registry.Invalid},
		{"symlink to /etc/passwd", root, e.moduleBundle(t, testarchive.TarGzOf(t, testarchive.Entry{Name: "main.tf", Body: "x"}, testarchive.Entry{Name: "passwd", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}), nil), registry.Invalid},
		{"not an archive", root, e.moduleBundle(t, []byte("not an archive at all"), nil), registry.Invalid},
		{"metadata of the wrong shape", root, e.moduleBundle(t, good, func(v *registry.ModuleVersion) {
			v.Metadata = json.RawMessage(`{"inputs":"everything"}`)
		}), registry.Invalid},
		{"description with control characters", root, e.moduleBundle(t, good, func(v *registry.ModuleVersion) { v.Description = "a\x1b[2Jb" }), registry.Invalid},
		{"origin with a newline", root, e.moduleBundle(t, good, func(v *registry.ModuleVersion) { v.Origin = "https://x\nSet-Cookie: a" }), registry.Invalid},
		{"origin over its limit", root, e.moduleBundle(t, good, func(v *registry.ModuleVersion) { v.Origin = "https://x/" + strings.Repeat("a", 600) }), registry.Invalid},
		{"size differs from the manifest", root, e.moduleBundle(t, good, func(v *registry.ModuleVersion) { v.ArchiveSize++ }), registry.Invalid},
		{"file missing", root, missing, registry.Invalid},
		{"package with another h1", root, tamperedZip, registry.Invalid},
		{"signature of another key", root, e.providerBundle(t, vendor, signingtest.NewKey(t, "other")), registry.Invalid},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.refusedNoBlobs(t, c.want, func(ctx context.Context) error {
				_, err := e.ops.ImportBundle(ctx, c.actor, c.bundle)
				return err
			})
			if _, err := e.idx.GetModuleVersion(t.Context(), "acme", "vpc", "aws", "1.2.0"); !registry.IsKind(err, registry.NotFound) {
				t.Errorf("the module was imported: %v", err)
			}
		})
	}
}

// TestImportBundle imports a provider and a module: one transaction with
// the audit entry and the module's event; the module's metadata is the
// archive's, as a publish extracts it.
func TestImportBundle(t *testing.T) {
	e := newPublishEnv(t)
	vendor := signingtest.NewKey(t, "vendor")
	pb := e.providerBundle(t, vendor, vendor)
	mb := e.moduleBundle(t, testarchive.TarGz(t, map[string]string{"main.tf": "variable \"region\" {}\n", "README.md": "# VPC\n"}), nil)
	b := pb
	for _, d := range mb.Files {
		b.Files = append(b.Files, d)
		b.Sizes[d] = mb.Sizes[d]
		data, err := os.ReadFile(filepath.Join(mb.Dir, d))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(b.Dir, d), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	b.Modules = mb.Modules
	res, err := e.ops.ImportBundle(t.Context(), e.user(t, "root"), b)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Providers) != 1 || res.Providers[0] != 1 || len(res.Modules) != 1 || !res.Modules[0] {
		t.Fatalf("import = %+v", res)
	}
	m, err := e.idx.GetModuleVersion(t.Context(), "acme", "vpc", "aws", "1.2.0")
	if err != nil || len(m.Metadata) == 0 || !strings.Contains(string(m.Metadata), "region") {
		t.Errorf("imported module %+v, %v: want the archive's metadata", m, err)
	}
	if got := e.blobCount(t); got != len(b.Files) {
		t.Errorf("%d blobs; want %d", got, len(b.Files))
	}
	a := e.lastAudit(t)
	if a.Action != registry.AuditBundleImport || a.Actor != "user:root" || a.SourceAddr != "192.0.2.7" ||
		!strings.Contains(a.Target, "registry.example.net/vendor/thing") || !strings.Contains(a.Target, "acme/vpc/aws@1.2.0") {
		t.Errorf("audit entry %+v", a)
	}
	if d := e.deliveries(t); len(d) != 1 || d[0] != registry.EventModulePublished {
		t.Errorf("events %v", d)
	}
}
