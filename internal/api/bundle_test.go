package api_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/client"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest"
	"trove.dev/trove/internal/trovetest/testarchive"
)

// bundleEntry is one file of a bundle.
type bundleEntry struct {
	name string
	data []byte
}

// readBundle returns the manifest and the other entries of a bundle.
func readBundle(t *testing.T, b []byte) (apispec.BundleManifest, []bundleEntry) {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(b))
	var m apispec.BundleManifest
	var entries []bundleEntry
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return m, entries
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Name == apispec.BundleManifestName {
			if len(entries) > 0 || m.Format != "" {
				t.Fatalf("the manifest is not the bundle's first file")
			}
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			continue
		}
		entries = append(entries, bundleEntry{hdr.Name, data})
	}
}

// writeBundle builds a bundle from a manifest and entries.
func writeBundle(t *testing.T, m apispec.BundleManifest, entries []bundleEntry) []byte {
	t.Helper()
	manifest, _ := json.Marshal(m)
	files := []testarchive.Entry{{Name: apispec.BundleManifestName, Body: string(manifest)}}
	for _, e := range entries {
		files = append(files, testarchive.Entry{Name: e.name, Body: string(e.data)})
	}
	return testarchive.TarOf(t, files...)
}

func adminClient(t *testing.T, s *trovetest.Server) *client.Client {
	t.Helper()
	c, err := client.New(s.URL, s.AdminToken, client.WithCAFile(s.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// bundleSource is a Trove holding a provider of two platforms and a
// module, with the bundle of both exported from it.
type bundleSource struct {
	s      *trovetest.Server
	rel    releasetest.Release
	source string // host/acme/widget
	bundle []byte
}

func newBundleSource(t *testing.T) bundleSource {
	t.Helper()
	ctx := context.Background()
	s := trovetest.Start(t)
	c := adminClient(t, s)
	if _, err := c.CreateNamespace(ctx, apispec.CreateNamespaceRequest{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	key := signingtest.NewKey(t, "acme")
	if _, err := c.AddSigningKey(ctx, "acme", apispec.AddSigningKeyRequest{ASCIIArmor: key.ArmoredPublic}); err != nil {
		t.Fatal(err)
	}
	rel := releasetest.Build(t, key, releasetest.Spec{Type: "widget", Version: "1.0.0", Platforms: []string{"linux_amd64", "darwin_arm64"}, Protocols: []string{"5.0"}})
	var files []client.PublishFile
	for _, f := range rel.Files {
		files = append(files, client.PublishFile{Name: f.Name, Open: f.Open})
	}
	if _, err := c.PublishProvider(ctx, "acme", "widget", "1.0.0", files); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PublishModule(ctx, client.ModuleUpload{Namespace: "acme", Name: "network", System: "aws", Version: "1.0.0",
		Archive: bytes.NewReader(moduleArchive(t, networkModule))}); err != nil {
		t.Fatal(err)
	}
	b := bundleSource{s: s, rel: rel, source: s.Host + "/acme/widget"}
	var buf bytes.Buffer
	if _, err := c.ExportBundle(ctx, client.BundleRequest{Providers: []string{b.source + "@1.0.0"}, Modules: []string{"acme/network/aws@1.0.0"}}, &buf); err != nil {
		t.Fatal(err)
	}
	b.bundle = buf.Bytes()
	return b
}

// newImporter starts an empty Trove with the namespace acme.
func newImporter(t *testing.T) (*trovetest.Server, *client.Client) {
	t.Helper()
	s := trovetest.Start(t)
	c := adminClient(t, s)
	if _, err := c.CreateNamespace(context.Background(), apispec.CreateNamespaceRequest{Name: "acme"}); err != nil {
		t.Fatal(err)
	}
	return s, c
}

// checkNothingImported fails if s holds anything of the source's bundle,
// or a staged file of an import.
func checkNothingImported(t *testing.T, s *trovetest.Server, src bundleSource) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Index.GetMirroredVersion(ctx, src.s.Host, "acme", "widget", "1.0.0"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("GetMirroredVersion after a refused import: %v, want NotFound", err)
	}
	if _, err := s.Index.GetModuleVersion(ctx, "acme", "network", "aws", "1.0.0"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("GetModuleVersion after a refused import: %v, want NotFound", err)
	}
	staged, _ := filepath.Glob(filepath.Join(s.DataDir, "tmp", "publish-bundle-*"))
	if len(staged) > 0 {
		t.Errorf("an import left staged files: %v", staged)
	}
}

// TestBundleExportImport exports a provider of Trove's own and a module
// from one Trove and imports them into another: the provider into its
// mirror under the first one's host, with every package held, the module
// into its namespace of the same name. A second import changes nothing.
func TestBundleExportImport(t *testing.T) {
	ctx := context.Background()
	src := newBundleSource(t)
	m, entries := readBundle(t, src.bundle)
	if m.Format != apispec.BundleFormat || len(m.Providers) != 1 || len(m.Modules) != 1 {
		t.Fatalf("manifest = %+v", m)
	}
	p := m.Providers[0]
	sums := src.rel.ByName(src.rel.Prefix() + "_SHA256SUMS")
	if p.Source != src.source || p.SHASums != releasetest.Digest(sums) || len(p.Platforms) != 2 || p.Key.ASCIIArmor == "" {
		t.Errorf("provider of the manifest = %+v", p)
	}
	if want := 2 + 2 + 1; len(entries) != want {
		t.Errorf("the bundle has %d files besides its manifest, want %d (SHA256SUMS, signature, 2 packages, 1 module archive)", len(entries), want)
	}
	for _, e := range entries {
		if e.name != apispec.BundleBlobPrefix+releasetest.Digest(e.data) {
			t.Errorf("bundle file %s holds content of digest %s", e.name, releasetest.Digest(e.data))
		}
	}

	dst, c := newImporter(t)
	// A global webhook hears of the module version imported (once).
	hook := registry.Webhook{ID: "wh_00000000000000b1", URL: "https://hooks.example/trove", Secret: "0123456789abcdef", Active: true, CreatedAt: time.Now()}
	if err := dst.Index.CreateWebhook(ctx, hook); err != nil {
		t.Fatal(err)
	}
	res, err := c.ImportBundle(ctx, bytes.NewReader(src.bundle), int64(len(src.bundle)))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Providers) != 1 || res.Providers[0].Packages != 2 || len(res.Modules) != 1 || !res.Modules[0].Created {
		t.Errorf("import = %+v, want 2 packages and a module created", res)
	}
	mv, err := dst.Index.GetMirroredVersion(ctx, src.s.Host, "acme", "widget", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if mv.SHASumsDigest != p.SHASums || len(mv.Platforms) != 2 || !slices.ContainsFunc(mv.Platforms, func(pl registry.Platform) bool {
		return pl.OS == "linux" && pl.Held() && pl.SHA256 == src.rel.SHA256(src.rel.ZipName("linux_amd64"))
	}) {
		t.Errorf("imported version = %+v", mv)
	}
	for _, pl := range mv.Platforms {
		if _, err := dst.Blobs.Stat(ctx, pl.SHA256); err != nil {
			t.Errorf("the package %s is not stored: %v", pl.Filename, err)
		}
	}
	mod, err := c.GetModuleVersion(ctx, "acme", "network", "aws", "1.0.0")
	if err != nil || mod.Description == "" {
		t.Errorf("imported module: %+v, %v", mod, err)
	}

	again, err := c.ImportBundle(ctx, bytes.NewReader(src.bundle), -1)
	if err != nil || again.Providers[0].Packages != 0 || again.Modules[0].Created {
		t.Errorf("second import = %+v, %v; want nothing new", again, err)
	}
	if ds, err := dst.Index.ListWebhookDeliveries(ctx, hook.ID, 10); err != nil || len(ds) != 1 || ds[0].EventType != registry.EventModulePublished {
		t.Errorf("webhook deliveries after two imports = %+v, %v; want one module.published", ds, err)
	}

	if ev := auditEvents(t, dst, registry.AuditBundleImport); len(ev) != 2 || !strings.Contains(ev[0].Target, src.source) {
		t.Errorf("audit of the two imports: %+v", ev)
	}
	if ev := auditEvents(t, src.s, registry.AuditBundleExport); len(ev) != 1 || !strings.Contains(ev[0].Target, src.source) {
		t.Errorf("audit of the export: %+v", ev)
	}

	// Platforms select the packages.
	var one bytes.Buffer
	if _, err := adminClient(t, src.s).ExportBundle(ctx, client.BundleRequest{Providers: []string{src.source + "@1.0.0"}, Platforms: []string{"darwin_arm64"}}, &one); err != nil {
		t.Fatal(err)
	}
	if m, entries := readBundle(t, one.Bytes()); len(m.Providers[0].Platforms) != 1 || m.Providers[0].Platforms[0].Arch != "arm64" || len(entries) != 3 {
		t.Errorf("export for darwin_arm64: %+v, %d files", m.Providers[0].Platforms, len(entries))
	}
}

// TestBundleImportRefusesTampering: a bundle that fails any check is
// refused with 400 naming what failed, and nothing of it is imported.
func TestBundleImportRefusesTampering(t *testing.T) {
	ctx := context.Background()
	src := newBundleSource(t)
	dst, c := newImporter(t)
	other := signingtest.NewKey(t, "other")
	otherRel := releasetest.Build(t, other, releasetest.Spec{Type: "widget", Version: "1.0.0", Platforms: []string{"linux_amd64"}, Protocols: []string{"5.0"}, Payload: "other"})
	zip := src.rel.ZipName("linux_amd64")
	digest := src.rel.SHA256(zip)

	type tamper func(m *apispec.BundleManifest, entries []bundleEntry) []bundleEntry
	platform := func(m *apispec.BundleManifest) *apispec.BundlePlatform {
		i := slices.IndexFunc(m.Providers[0].Platforms, func(p apispec.BundlePlatform) bool { return p.SHA256 == digest })
		return &m.Providers[0].Platforms[i]
	}
	for _, c2 := range []struct {
		name, want string
		tamper     tamper
	}{
		{"bad signature", "does not verify", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			m.Providers[0].Key.ASCIIArmor, m.Providers[0].Key.KeyID = other.ArmoredPublic, other.KeyID
			return e
		}},
		{"zip not in SHA256SUMS", "does not list", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			data := otherRel.ByName(otherRel.ZipName("linux_amd64"))
			pl := platform(m)
			for i := range e {
				if e[i].name == apispec.BundleBlobPrefix+pl.SHA256 {
					e[i] = bundleEntry{apispec.BundleBlobPrefix + releasetest.Digest(data), data}
				}
			}
			pl.SHA256, pl.Size = releasetest.Digest(data), int64(len(data))
			return e
		}},
		{"wrong h1", "h1 hash", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			platform(m).H1 = "h1:" + strings.Repeat("A", 43) + "="
			return e
		}},
		{"blob not its digest", "holds content of digest", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			for i := range e {
				if e[i].name == apispec.BundleBlobPrefix+digest {
					e[i].data = append(slices.Clone(e[i].data), 0)
				}
			}
			return e
		}},
		{"missing blob", "lacks the file", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			return slices.DeleteFunc(e, func(x bundleEntry) bool { return x.name == apispec.BundleBlobPrefix+digest })
		}},
		{"unknown format", "format", func(m *apispec.BundleManifest, e []bundleEntry) []bundleEntry {
			m.Format = "trove-bundle/99"
			return e
		}},
	} {
		t.Run(c2.name, func(t *testing.T) {
			m, entries := readBundle(t, src.bundle)
			entries = c2.tamper(&m, entries)
			b := writeBundle(t, m, entries)
			_, err := c.ImportBundle(ctx, bytes.NewReader(b), int64(len(b)))
			if client.StatusCode(err) != http.StatusBadRequest || !strings.Contains(err.Error(), c2.want) {
				t.Errorf("import = %v (status %d), want 400 saying %q", err, client.StatusCode(err), c2.want)
			}
			checkNothingImported(t, dst, src)
		})
	}

	// A manifest the API would refuse as a JSON body is refused here too,
	// and a body that is no tar says what a bundle is.
	m, entries := readBundle(t, src.bundle)
	manifest, _ := json.Marshal(m)
	for name, c2 := range map[string]struct{ manifest, want string }{
		"data after the manifest":    {string(manifest) + "GARBAGE", "unexpected data after the object"},
		"a member given twice":       {`{"format":"x",` + string(manifest[1:]), `names the member "format" more than once`},
		"a member twice, other case": {`{"FORMAT":"x",` + string(manifest[1:]), "more than once"},
	} {
		t.Run(name, func(t *testing.T) {
			files := []testarchive.Entry{{Name: apispec.BundleManifestName, Body: c2.manifest}}
			for _, e := range entries {
				files = append(files, testarchive.Entry{Name: e.name, Body: string(e.data)})
			}
			b := testarchive.TarOf(t, files...)
			_, err := c.ImportBundle(ctx, bytes.NewReader(b), int64(len(b)))
			if client.StatusCode(err) != http.StatusBadRequest || !strings.Contains(err.Error(), c2.want) {
				t.Errorf("import = %v (status %d), want 400 saying %q", err, client.StatusCode(err), c2.want)
			}
			checkNothingImported(t, dst, src)
		})
	}
	for name, body := range map[string][]byte{"empty": nil, "not a tar": []byte(strings.Repeat("not a tar ", 100))} {
		_, err := c.ImportBundle(ctx, bytes.NewReader(body), int64(len(body)))
		if client.StatusCode(err) != http.StatusBadRequest || !strings.Contains(err.Error(), "not a Trove bundle") {
			t.Errorf("import of an %s body = %v, want 400 saying it is not a Trove bundle", name, err)
		}
	}

	// A module goes into the namespace of its name, which must exist.
	empty := trovetest.Start(t)
	_, err := adminClient(t, empty).ImportBundle(ctx, bytes.NewReader(src.bundle), -1)
	if client.StatusCode(err) != http.StatusNotFound || !strings.Contains(err.Error(), `namespace "acme"`) {
		t.Errorf("import without the module's namespace = %v, want 404 naming it", err)
	}
	checkNothingImported(t, empty, src)

	// Only global admins import and export.
	admin := adminClient(t, dst)
	tok, err := admin.CreateToken(ctx, apispec.CreateTokenRequest{Description: "acme admin", Namespaces: []string{"acme"}, Scopes: []string{"admin"}})
	if err != nil {
		t.Fatal(err)
	}
	nsAdmin, err := client.New(dst.URL, tok.Secret, client.WithCAFile(dst.CAFile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nsAdmin.ImportBundle(ctx, bytes.NewReader(src.bundle), -1); client.StatusCode(err) != http.StatusForbidden {
		t.Errorf("import by a namespace admin = %v, want 403", err)
	}
	if _, err := nsAdmin.ExportBundle(ctx, client.BundleRequest{Modules: []string{"acme/network/aws@1.0.0"}}, io.Discard); client.StatusCode(err) != http.StatusForbidden {
		t.Errorf("export by a namespace admin = %v, want 403", err)
	}
	checkNothingImported(t, dst, src)
	if entries, _ := os.ReadDir(filepath.Join(dst.DataDir, "tmp")); len(entries) > 0 {
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "publish-bundle-") {
				t.Errorf("staged import left: %s", e.Name())
			}
		}
	}
}
