package loadtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	version "github.com/hashicorp/go-version"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

func TestVersionAtIsIncreasingSemver(t *testing.T) {
	var prev *version.Version
	for i := range 2500 {
		s := VersionAt(i)
		v, err := registry.ParseVersion(s)
		if err != nil {
			t.Fatalf("VersionAt(%d) = %q: %v", i, s, err)
		}
		if prev != nil && !v.GreaterThan(prev) {
			t.Fatalf("VersionAt(%d) = %s is not greater than %s", i, s, prev)
		}
		prev = v
	}
	for n, want := range map[int]string{1: "0.0.0", 30: "0.2.9", 50: "0.4.8", 2000: "19.9.8"} {
		if got := VersionAt(newestIndex(n)); got != want {
			t.Errorf("newest of %d versions = %s, want %s", n, got, want)
		}
	}
}

func TestSpecPlan(t *testing.T) {
	base := func() Spec {
		s := DefaultSpec()
		s.ArchiveBytes = 1
		return s
	}
	provs, err := base().plan()
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, p := range provs {
		total += p.Versions
	}
	if total != 100_000 || provs[0].Type != "small" || provs[1].Type != "large" {
		t.Errorf("default plan: %d versions, first providers %v %v", total, provs[0], provs[1])
	}
	if last := provs[len(provs)-1]; last.Versions != (100_000-2030)%200 {
		t.Errorf("last filler provider has %d versions, want the remainder %d", last.Versions, (100_000-2030)%200)
	}

	bad := map[string]func(*Spec){
		"bad namespace":        func(s *Spec) { s.Namespace = "-x" },
		"no platforms":         func(s *Spec) { s.Platforms = nil },
		"bad platform":         func(s *Spec) { s.Platforms = []OSArch{{"Linux", "amd64"}} },
		"archive not provided": func(s *Spec) { s.ArchiveType = "nope" },
		"zero versions":        func(s *Spec) { s.Providers[0].Versions = 0 },
		"terraform- type":      func(s *Spec) { s.Providers[0].Type = "terraform-x" },
		"no filler size":       func(s *Spec) { s.FillerVersions = 0 },
		"huge index":           func(s *Spec) { s.TotalVersions = 2_000_000 },
		"empty archive":        func(s *Spec) { s.ArchiveBytes = 0 },
		"mirror in namespace":  func(s *Spec) { s.ModuleMirror.Namespace = "acme" },
		"bad mirror namespace": func(s *Spec) { s.ModuleMirror.Namespace = "-m" },
		"mirror of no modules": func(s *Spec) { s.Modules = nil },
	}
	for name, mutate := range bad {
		s := base()
		mutate(&s)
		if _, err := s.plan(); err == nil {
			t.Errorf("%s: plan accepted the spec", name)
		}
	}
}

func TestSeedSmallIndex(t *testing.T) {
	ctx := context.Background()
	st := sqlitetest.New(t)
	dir, idx, blobs := st.Dir, st.Index, st.Blobs
	spec := DefaultSpec()
	spec.Providers = []ProviderSpec{{Type: "small", Versions: 3}, {Type: "large", Versions: 7}}
	spec.TotalVersions = 20
	spec.FillerVersions = 4
	spec.Platforms = spec.Platforms[:2]
	spec.ArchiveBytes = 10_000
	if len(spec.Modules) != 1+DefaultFillerModules || spec.Modules[1] != (ModuleSpec{Name: "m001", System: "aws", Versions: 10}) {
		t.Fatalf("DefaultSpec modules: %d, second %+v", len(spec.Modules), spec.Modules[1])
	}
	spec.Modules = spec.Modules[:2]
	archiveFile := filepath.Join(dir, "archive.zip")

	// A module mirror without its upstream is refused before anything is
	// written.
	if _, err := Seed(ctx, idx, blobs, spec, archiveFile); !registry.IsKind(err, registry.Invalid) {
		t.Fatalf("Seed without the mirror's upstream: err %v, want Invalid", err)
	}
	if _, err := idx.GetNamespace(ctx, "acme"); !registry.IsKind(err, registry.NotFound) {
		t.Fatalf("the refused Seed wrote the namespace (err %v)", err)
	}
	spec.ModuleMirror.Host, spec.ModuleMirror.ServiceURL = "127.0.0.1:9", "http://127.0.0.1:9/v1/providers/"

	got, err := Seed(ctx, idx, blobs, spec, archiveFile)
	if err != nil {
		t.Fatal(err)
	}
	if got.Versions != 20 || got.Packages != 40 || got.Providers != 5 {
		t.Errorf("seeded %d versions, %d packages, %d providers; want 20, 40, 5", got.Versions, got.Packages, got.Providers)
	}

	provs, err := idx.ListProviders(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, p := range provs {
		counts[p.Type] = p.VersionCount
	}
	want := map[string]int{"small": 3, "large": 7, "p00001": 4, "p00002": 4, "p00003": 2}
	for typ, n := range want {
		if counts[typ] != n {
			t.Errorf("provider %s has %d versions, want %d (all: %v)", typ, counts[typ], n, counts)
		}
	}
	if len(counts) != len(want) {
		t.Errorf("providers %v, want %v", counts, want)
	}

	a := got.Archive
	if a.Type != "small" || a.Version != "0.0.2" || a.OS != "linux" || a.Arch != "amd64" ||
		a.Filename != "terraform-provider-small_0.0.2_linux_amd64.zip" || a.Size != 10_000 {
		t.Errorf("archive %+v", a)
	}
	content, err := os.ReadFile(archiveFile)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(content)
	if hex.EncodeToString(sum[:]) != a.SHA256 || len(content) != 10_000 {
		t.Errorf("archive file has %d bytes with digest %x, want 10000 with %s", len(content), sum, a.SHA256)
	}
	if size, err := blobs.Stat(ctx, a.SHA256); err != nil || size != 10_000 {
		t.Errorf("archive blob: size %d, err %v", size, err)
	}
	v, err := idx.GetProviderVersion(ctx, "acme", "small", a.Version)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := v.Platform("linux", "amd64")
	if !ok || p.SHA256 != a.SHA256 || p.Size != a.Size || p.Filename != a.Filename {
		t.Errorf("archive platform %+v, want digest %s size %d", p, a.SHA256, a.Size)
	}
	if v.SigningKey.KeyID == "" || v.SigningKey.ASCIIArmor == "" {
		t.Errorf("version has no signing key snapshot: %+v", v.SigningKey)
	}
	keys, err := idx.ListSigningKeys(ctx, "acme")
	if err != nil || len(keys) != 1 || keys[0].KeyID != v.SigningKey.KeyID {
		t.Errorf("namespace keys %v (err %v), want the one key %s", keys, err, v.SigningKey.KeyID)
	}

	if got.ModuleVersions != 40 {
		t.Errorf("seeded %d module versions, want 40", got.ModuleVersions)
	}
	if mvs, err := idx.ListModuleVersions(ctx, "acme", "m001", "aws"); err != nil || len(mvs) != 10 {
		t.Errorf("module acme/m001/aws has %d versions (%v), want 10", len(mvs), err)
	}
	mvs, err := idx.ListModuleVersions(ctx, "acme", "network", "aws")
	if err != nil || len(mvs) != 30 {
		t.Errorf("module acme/network/aws has %d versions (%v), want 30", len(mvs), err)
	}
	mv, err := idx.GetModuleVersion(ctx, "acme", "m001", "aws", "0.0.3")
	if err != nil {
		t.Fatal(err)
	}
	if string(mv.Metadata) != string(moduleMetadata("acme", spec.Modules[1], 1)) || mv.Description != moduleDescription(1) {
		t.Errorf("module acme/m001/aws 0.0.3: description %q, metadata %.100s", mv.Description, mv.Metadata)
	}

	// The OCI API reads real blobs: the module archive (a tar.gz) and
	// the SHA256SUMS and signature of every provider version.
	if mv.ArchiveDigest == fakeDigest("module", "m001", "aws", "0.0.3") {
		t.Errorf("module version has a made-up archive digest")
	}
	if size, err := blobs.Stat(ctx, mv.ArchiveDigest); err != nil || size != mv.ArchiveSize {
		t.Errorf("module archive blob: size %d (version says %d), err %v", size, mv.ArchiveSize, err)
	}
	for _, d := range []string{v.SHASumsDigest, v.SHASumsSignatureDigest} {
		if _, err := blobs.Stat(ctx, d); err != nil {
			t.Errorf("SHA256SUMS blob %s: %v", d, err)
		}
	}

	// The module mirror's namespace holds the same versions, as mirrored,
	// and its upstream allows the upstream namespace's modules.
	if got.MirroredModuleVersions != 40 {
		t.Errorf("seeded %d mirrored module versions, want 40", got.MirroredModuleVersions)
	}
	mirrored, err := idx.GetModuleVersion(ctx, DefaultMirrorNamespace, "m001", "aws", "0.0.3")
	if err != nil {
		t.Fatal(err)
	}
	if mirrored.ArchiveDigest != mv.ArchiveDigest || !strings.HasPrefix(mirrored.Origin, "mirrored from 127.0.0.1:9/acme/m001/aws 0.0.3, archive sha256 ") {
		t.Errorf("mirrored version: digest %s (want %s), origin %q", mirrored.ArchiveDigest, mv.ArchiveDigest, mirrored.Origin)
	}
	if ns, err := idx.GetNamespace(ctx, DefaultMirrorNamespace); err != nil || ns.Visibility != registry.VisibilityPublic {
		t.Errorf("mirror namespace %+v, err %v", ns, err)
	}
	up, err := idx.GetMirrorUpstream(ctx, "127.0.0.1:9")
	if err != nil || up.ServiceURL != "http://127.0.0.1:9/v1/providers/" || len(up.Allow) != 1 || up.Allow[0].Provider != "acme/*" {
		t.Errorf("mirror upstream %+v, err %v", up, err)
	}

	// The index is not empty any more: seeding again must fail, not mix.
	if _, err := Seed(ctx, idx, blobs, spec, archiveFile); !registry.IsKind(err, registry.Conflict) {
		t.Errorf("second Seed: err %v, want a Conflict", err)
	}
}
