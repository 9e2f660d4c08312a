package api_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest"
	"trove.dev/trove/internal/trovetest/testarchive"
)

// Limits of the importing Trove of TestBundleImportRefusesWhatPublishesRefuse,
// small enough for a test to exceed them.
const (
	hostileMaxZipBytes      = 256 << 10
	hostileMaxUnpackedBytes = 1 << 20
)

// mainTF is the root configuration file every hostile module archive has,
// so that nothing but its hostile entry is wrong.
var mainTF = testarchive.Entry{Name: "main.tf", Body: networkModule["main.tf"]}

// bundleTamper changes a bundle's manifest and files.
type bundleTamper func(m *apispec.BundleManifest, entries []bundleEntry) []bundleEntry

// withModuleArchive makes data, of format, the archive of the bundle's
// (first) module.
func withModuleArchive(format string, data []byte) bundleTamper {
	return func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
		old := apispec.BundleBlobPrefix + m.Modules[0].Archive
		d := releasetest.Digest(data)
		m.Modules[0].Archive, m.Modules[0].Size, m.Modules[0].Format = d, int64(len(data)), format
		e = slices.DeleteFunc(e, func(x bundleEntry) bool { return x.name == old })
		return append(e, bundleEntry{apispec.BundleBlobPrefix + d, data})
	}
}

// withModule changes the manifest's (first) module.
func withModule(change func(bm *apispec.BundleModule)) bundleTamper {
	return func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
		change(&m.Modules[0])
		return e
	}
}

// withProvider adds a provider version of type gadget of host to the
// bundle: one linux_amd64 package holding pkg, listed in a SHA256SUMS
// signed by key, so that only what change alters (or pkg itself) is
// wrong.
func withProvider(t *testing.T, key *signingtest.Key, host string, pkg []byte, change func(p *apispec.BundleProvider, sums *string)) bundleTamper {
	filename := "terraform-provider-gadget_1.0.0_linux_amd64.zip"
	return func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
		path := filepath.Join(t.TempDir(), filename)
		if err := os.WriteFile(path, pkg, 0o600); err != nil {
			t.Fatal(err)
		}
		h1, err := release.PackageHash(path)
		if err != nil {
			h1 = "h1:" + strings.Repeat("A", 43) + "=" // not a zip: checked before its h1
		}
		p := apispec.BundleProvider{Source: host + "/acme/gadget", Version: "1.0.0", Protocols: []string{"5.0"},
			Key: apispec.BundleKey{KeyID: key.KeyID, ASCIIArmor: key.ArmoredPublic},
			Platforms: []apispec.BundlePlatform{{OS: "linux", Arch: "amd64", Filename: filename,
				SHA256: releasetest.Digest(pkg), H1: h1, Size: int64(len(pkg))}}}
		sums := releasetest.Digest(pkg) + "  " + filename + "\n"
		if change != nil {
			change(&p, &sums)
		}
		sig := key.Sign([]byte(sums))
		p.SHASums, p.Signature = releasetest.Digest([]byte(sums)), releasetest.Digest(sig)
		m.Providers = append(m.Providers, p)
		for _, data := range [][]byte{[]byte(sums), sig, pkg} {
			e = append(e, bundleEntry{apispec.BundleBlobPrefix + releasetest.Digest(data), data})
		}
		return e
	}
}

// storedState is what an index and blob store hold that an import could
// change.
type storedState struct {
	blobs    []string
	mirrored []string
	modules  []string
}

func stateOf(t *testing.T, s *trovetest.Server) storedState {
	t.Helper()
	ctx := context.Background()
	var st storedState
	if err := s.Blobs.Walk(ctx, func(digest string, _ int64) error {
		st.blobs = append(st.blobs, digest)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	mvs, err := s.Index.ListAllMirroredVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range mvs {
		st.mirrored = append(st.mirrored, v.Host+"/"+v.Namespace+"/"+v.Type+" "+v.Version)
	}
	mods, _, err := s.Index.ListModules(ctx, registry.ModuleFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mods {
		st.modules = append(st.modules, m.Namespace+"/"+m.Name+"/"+m.System)
	}
	slices.Sort(st.blobs)
	slices.Sort(st.mirrored)
	return st
}

// TestBundleImportRefusesWhatPublishesRefuse: a bundle holding anything a
// publish refuses (module archives with hostile entries or that are no
// archive, metadata of another shape, free text the API refuses, provider
// packages that fail the provider publish's checks, a bad signature, a
// duplicate) is refused through POST /api/v1/bundle with a 4xx and a JSON
// message saying what failed, and nothing is stored: no version, no blob.
func TestBundleImportRefusesWhatPublishesRefuse(t *testing.T) {
	src := newBundleSource(t)
	dst := trovetest.Start(t, trovetest.Options{MaxZipBytes: hostileMaxZipBytes, MaxUnpackedBytes: hostileMaxUnpackedBytes})
	if _, err := adminClient(t, dst).CreateNamespace(context.Background(), apispec.CreateNamespaceRequest{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	host := src.s.Host
	incompressible := make([]byte, hostileMaxZipBytes)
	rand.Read(incompressible)
	other := signingtest.NewKey(t, "other")
	gadgetKey := signingtest.NewKey(t, "acme")
	goodPackage := releasetest.Zip(t, map[string]string{"terraform-provider-gadget_v1.0.0": "#!/bin/sh\n"})

	cases := []struct {
		name   string
		status int
		want   string
		tamper bundleTamper
	}{
		// Module archives, judged by modules.CheckArchive.
		{"module entry with ..", 400, `escapes the archive with ".."`,
			withModuleArchive("tar.gz", testarchive.TarGzOf(t, mainTF, testarchive.Entry{Name: "../evil.tf", Body: "x"}))},
		{"module entry with an absolute path", 400, "is an absolute path",
			withModuleArchive("tar.gz", testarchive.TarGzOf(t, mainTF, testarchive.Entry{Name: "/etc/evil.tf", Body: "x"}))},
		{"module symlink to /etc/passwd", 400, `symbolic link to "/etc/passwd"`,
			withModuleArchive("tar.gz", testarchive.TarGzOf(t, mainTF, testarchive.Entry{Name: "passwd", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}))},
		{"module symlink out of the archive", 400, "points outside the module",
			withModuleArchive("tar.gz", testarchive.TarGzOf(t, mainTF, testarchive.Entry{Name: "up", Typeflag: tar.TypeSymlink, Linkname: "../../etc/passwd"}))},
		{"module hard link", 400, "is a hard link",
			withModuleArchive("tar.gz", testarchive.TarGzOf(t, mainTF, testarchive.Entry{Name: "copy.tf", Typeflag: tar.TypeLink, Linkname: "main.tf"}))},
		{"module zip entry with ..", 400, `escapes the archive with ".."`,
			withModuleArchive("zip", testarchive.ZipOf(t, testarchive.Entry{Name: "main.tf", Body: "# x\n", Mode: 0o755}, testarchive.Entry{Name: "../evil.tf", Body: "x", Mode: 0o755}))},
		{"module zip symlink to /etc/passwd", 400, `symbolic link to "/etc/passwd"`,
			withModuleArchive("zip", testarchive.ZipOf(t, testarchive.Entry{Name: "main.tf", Body: "# x\n", Mode: 0o755}, testarchive.Entry{Name: "passwd", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}))},
		{"module archive is not an archive", 400, "neither a .tar.gz nor a .zip",
			withModuleArchive("tar.gz", []byte("#!/bin/sh\necho this is no archive\n"))},
		{"module archive without configuration", 400, "no Terraform configuration file",
			withModuleArchive("tar.gz", testarchive.TarGzOf(t, testarchive.Entry{Name: "README.md", Body: "# nothing\n"}))},
		{"module archive of another format than the manifest's", 400, "not zip as the manifest says",
			withModuleArchive("zip", moduleArchive(t, networkModule))},
		{"module archive unpacking beyond the limit", 413, "unpacks to more than",
			withModuleArchive("tar.gz", testarchive.TarGzOf(t, mainTF, testarchive.Entry{Name: "zeros.bin", Body: strings.Repeat("\x00", 2*hostileMaxUnpackedBytes)}))},
		{"module archive larger than the limit", 413, "larger than",
			withModuleArchive("tar.gz", testarchive.TarGzOf(t, mainTF, testarchive.Entry{Name: "noise.bin", Body: string(incompressible)}))},

		// Metadata, judged by modules.ParseMetadata.
		{"metadata of another type", 400, "metadata is not module metadata", withModule(func(bm *apispec.BundleModule) {
			bm.Metadata = json.RawMessage(`{"root":"a string"}`)
		})},
		{"metadata with a list of the wrong type", 400, "metadata is not module metadata", withModule(func(bm *apispec.BundleModule) {
			bm.Metadata = json.RawMessage(`{"root":{"inputs":{"name":"cidr"}}}`)
		})},
		{"metadata that is an array", 400, "metadata is not module metadata", withModule(func(bm *apispec.BundleModule) {
			bm.Metadata = json.RawMessage(`[1,2,3]`)
		})},
		{"metadata with unknown fields", 400, "unknown field", withModule(func(bm *apispec.BundleModule) {
			bm.Metadata = json.RawMessage(`{"root":{},"script":"<script>alert(1)</script>"}`)
		})},

		// Free text, judged by the API's validators (registry.CheckText).
		{"origin with a newline", 400, "origin contains the control character U+000A", withModule(func(bm *apispec.BundleModule) {
			bm.Origin = "git tag v1.0.0\nforged: line"
		})},
		{"origin with an escape sequence", 400, "origin contains the control character U+001B", withModule(func(bm *apispec.BundleModule) {
			bm.Origin = "git tag \x1b[2Jv1.0.0"
		})},
		{"origin over 512 bytes", 400, "origin is too long: 513 bytes, the limit is 512", withModule(func(bm *apispec.BundleModule) {
			bm.Origin = strings.Repeat("o", 513)
		})},
		{"description with a newline", 400, "description contains the control character U+000A", withModule(func(bm *apispec.BundleModule) {
			bm.Description = "Builds a network.\nAnd lies."
		})},
		{"description with a C1 control", 400, "description contains the control character U+009B", withModule(func(bm *apispec.BundleModule) {
			bm.Description = "Builds \u009b31m a network."
		})},
		{"module address the clients refuse", 400, "invalid module name", withModule(func(bm *apispec.BundleModule) {
			bm.Name = "net/../work"
		})},
		{"provider key ID with a newline", 400, "invalid key ID", withProvider(t, gadgetKey, host, goodPackage, func(p *apispec.BundleProvider, _ *string) {
			p.Key.KeyID = "ABCD\nEF"
		})},
		{"provider key that is a private key", 400, "is a private key", withProvider(t, gadgetKey, host, goodPackage, func(p *apispec.BundleProvider, _ *string) {
			p.Key.ASCIIArmor = gadgetKey.ArmoredPrivate
		})},
		{"provider key listed under another key's ID", 400, "is listed as " + other.KeyID + " but is the key " + gadgetKey.KeyID, withProvider(t, gadgetKey, host, goodPackage, func(p *apispec.BundleProvider, _ *string) {
			p.Key.KeyID = other.KeyID
		})},
		{"provider key that does not parse", 400, "does not read as an OpenPGP public key", withProvider(t, gadgetKey, host, goodPackage, func(p *apispec.BundleProvider, _ *string) {
			p.Key.ASCIIArmor = "garbage"
		})},
		{"provider protocols the clients refuse", 400, "neither 5.x nor 6.x", withProvider(t, gadgetKey, host, goodPackage, func(p *apispec.BundleProvider, _ *string) {
			p.Protocols = []string{"4.0"}
		})},

		// Provider packages, SHA256SUMS and signatures, judged as a
		// provider publish judges them.
		{"provider package without its executable", 400, "no provider executable",
			withProvider(t, gadgetKey, host, releasetest.Zip(t, map[string]string{"README.md": "x"}), nil)},
		{"provider package with ..", 400, `escapes the archive with ".."`,
			withProvider(t, gadgetKey, host, testarchive.ZipOf(t, testarchive.Entry{Name: "terraform-provider-gadget_v1.0.0", Body: "x", Mode: 0o755}, testarchive.Entry{Name: "../evil", Body: "x", Mode: 0o755}), nil)},
		{"provider package with a symlink", 400, "is a symbolic link",
			withProvider(t, gadgetKey, host, testarchive.ZipOf(t, testarchive.Entry{Name: "terraform-provider-gadget_v1.0.0", Body: "x", Mode: 0o755}, testarchive.Entry{Name: "passwd", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}), nil)},
		{"provider package that is not a zip", 400, "not a valid zip file",
			withProvider(t, gadgetKey, host, []byte("MZ not a zip at all"), nil)},
		{"provider package of another provider", 400, "is not a package of gadget 1.0.0",
			withProvider(t, gadgetKey, host, goodPackage, func(p *apispec.BundleProvider, sums *string) {
				name := "terraform-provider-other_1.0.0_linux_amd64.zip"
				*sums = strings.Replace(*sums, p.Platforms[0].Filename, name, 1)
				p.Platforms[0].Filename = name
			})},
		{"provider SHA256SUMS listing another version", 400, "which is not a package of gadget 1.0.0",
			withProvider(t, gadgetKey, host, goodPackage, func(_ *apispec.BundleProvider, sums *string) {
				*sums += strings.Repeat("0", 64) + "  terraform-provider-gadget_2.0.0_linux_amd64.zip\n"
			})},
		{"provider SHA256SUMS with CR LF", 400, "CR LF", withProvider(t, gadgetKey, host, goodPackage, func(_ *apispec.BundleProvider, sums *string) {
			*sums = strings.Replace(*sums, "\n", "\r\n", 1)
		})},
		{"provider package tampered after SHA256SUMS", 400, "does not list", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			data := append(slices.Clone(goodPackage), 0)
			pl := &m.Providers[0].Platforms[0]
			e = slices.DeleteFunc(e, func(x bundleEntry) bool { return x.name == apispec.BundleBlobPrefix+pl.SHA256 })
			pl.SHA256, pl.Size = releasetest.Digest(data), int64(len(data))
			return append(e, bundleEntry{apispec.BundleBlobPrefix + pl.SHA256, data})
		}},
		{"provider signature by another key", 400, "does not verify", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			p := &m.Providers[0]
			var sums []byte
			for _, x := range e {
				if x.name == apispec.BundleBlobPrefix+p.SHASums {
					sums = x.data
				}
			}
			sig := other.Sign(sums)
			e = slices.DeleteFunc(e, func(x bundleEntry) bool { return x.name == apispec.BundleBlobPrefix+p.Signature })
			p.Signature = releasetest.Digest(sig)
			return append(e, bundleEntry{apispec.BundleBlobPrefix + p.Signature, sig})
		}},

		// Duplicates.
		{"a file twice", 400, "twice", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			return append(e, e[0])
		}},
		{"a module version twice", 400, "names module acme/network/aws 1.0.0 twice", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			m.Modules = append(m.Modules, m.Modules[0])
			return e
		}},
		{"a provider version twice", 400, "names provider " + host + "/acme/widget 1.0.0 twice", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			m.Providers = append(m.Providers, m.Providers[0])
			return e
		}},
	}
	before := stateOf(t, dst)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, entries := readBundle(t, src.bundle)
			entries = c.tamper(&m, entries)
			b := writeBundle(t, m, entries)
			status, raw := apiDo(t, dst, "POST", apispec.RouteBundle, "Bearer "+dst.AdminToken, apispec.BundleContentType, bytes.NewReader(b))
			var doc struct {
				Errors []string `json:"errors"`
			}
			if err := json.Unmarshal(raw, &doc); err != nil || len(doc.Errors) != 1 {
				t.Fatalf("import answered %d %s, want a JSON {\"errors\": [...]} document", status, raw)
			}
			if status != c.status || !strings.Contains(doc.Errors[0], c.want) {
				t.Errorf("import answered %d %q, want %d saying %q", status, doc.Errors[0], c.status, c.want)
			}
			checkNothingImported(t, dst, src)
			if after := stateOf(t, dst); !slices.Equal(after.blobs, before.blobs) || !slices.Equal(after.mirrored, before.mirrored) || !slices.Equal(after.modules, before.modules) {
				t.Errorf("a refused import changed what is stored: %+v, was %+v", after, before)
			}
		})
	}

	// Nothing of it shows: the module has no versions to list, no page.
	status, _ := apiDo(t, dst, "GET", "/v1/modules/acme/network/aws/versions", "Bearer "+dst.AdminToken, "", nil)
	if status != http.StatusNotFound {
		t.Errorf("versions of the module after refused imports: %d, want 404", status)
	}

	// The untouched bundle imports into the same Trove.
	res, err := adminClient(t, dst).ImportBundle(context.Background(), bytes.NewReader(src.bundle), int64(len(src.bundle)))
	if err != nil || len(res.Modules) != 1 || !res.Modules[0].Created || res.Providers[0].Packages != 2 {
		t.Errorf("import of the untouched bundle = %+v, %v", res, err)
	}
}

// TestBundleImportExtractsModuleMetadata: an imported module version's
// metadata and description are those this Trove extracts from its
// archive, as a publish stores them, not the manifest's (which need only
// be well-formed).
func TestBundleImportExtractsModuleMetadata(t *testing.T) {
	ctx := context.Background()
	src := newBundleSource(t)
	dst, c := newImporter(t)
	m, entries := readBundle(t, src.bundle)
	m.Modules[0].Metadata = json.RawMessage(`{"root":{"path":"","name":"","readme":"# Forged\n\nNot in the archive.","empty":false,"inputs":[],"outputs":[],"required_core":[],"provider_dependencies":[],"dependencies":[],"resources":[]},"submodules":[],"examples":[]}`)
	m.Modules[0].Description = "Not in the archive."
	b := writeBundle(t, m, entries)
	if _, err := c.ImportBundle(ctx, bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatal(err)
	}
	got, err := dst.Index.GetModuleVersion(ctx, "acme", "network", "aws", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	want, err := src.s.Index.GetModuleVersion(ctx, "acme", "network", "aws", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if got.Description != want.Description || !bytes.Equal(got.Metadata, want.Metadata) || strings.Contains(string(got.Metadata), "Forged") {
		t.Errorf("imported description %q, metadata %s; want the published %q, %s", got.Description, got.Metadata, want.Description, want.Metadata)
	}
	if got.ArchiveFormat != "tar.gz" || got.PublishedAt.IsZero() {
		t.Errorf("imported version = %+v", got)
	}
}
