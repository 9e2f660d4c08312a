package dist

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/pem"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	"golang.org/x/mod/modfile"
)

func TestCheckVersion(t *testing.T) {
	for _, v := range []string{"1.4.0", "0.1.0-rc.1", "2.0.0+build.5", "dev", "dev-0123456789ab-modified"} {
		if err := CheckVersion(v); err != nil {
			t.Errorf("CheckVersion(%q) = %v, want nil", v, err)
		}
	}
	for v, want := range map[string]string{
		"":                "want a semantic version",
		"v1.4.0":          "drop the leading v",
		"1.4":             "want a semantic version",
		"1.4.0/../../x":   "want a semantic version",
		"1.4.0 ":          "want a semantic version",
		"1.4.0\n":         "want a semantic version",
		"1.4.0;rm -rf /":  "want a semantic version",
		"../1.4.0":        "want a semantic version",
		"latest":          "want a semantic version",
		"1.4.0-":          "want a semantic version",
		"dev/../../etc":   "want a semantic version",
		"1.4.0-rc.1 -X a": "want a semantic version",
	} {
		err := CheckVersion(v)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckVersion(%q) = %v, want an error containing %q", v, err, want)
		}
	}
}

func TestParsePlatform(t *testing.T) {
	if p, err := ParsePlatform("darwin/arm64"); err != nil || p != (Platform{"darwin", "arm64"}) {
		t.Errorf("ParsePlatform(darwin/arm64) = %v, %v", p, err)
	}
	for _, s := range []string{"", "linux", "linux/", "/amd64", "linux/amd64/v2", "windows/amd64", "linux/386", "LINUX/AMD64"} {
		if _, err := ParsePlatform(s); err == nil {
			t.Errorf("ParsePlatform(%q) succeeded", s)
		}
	}
}

func TestPackageURL(t *testing.T) {
	for _, c := range [][3]string{
		{"github.com/jackc/pgx/v5", "v5.12.0", "pkg:golang/github.com/jackc/pgx/v5@v5.12.0"},
		{"stdlib", "go1.26.8", "pkg:golang/stdlib@go1.26.8"},
		{"example.com/a b", "v1.0.0+incompatible", "pkg:golang/example.com/a%20b@v1.0.0+incompatible"},
	} {
		if got := PackageURL(c[0], c[1]); got != c[2] {
			t.Errorf("PackageURL(%q, %q) = %q, want %q", c[0], c[1], got, c[2])
		}
	}
}

// TestBuild builds a real release of trove for the two linux platforms
// of the image (darwin takes the same code path; building it too would
// add a cold cross-compile to every fresh CI run) and reads every
// artifact back: the archives and
// their binaries, SHA256SUMS, the SBOMs and the OCI image layout, whose
// binary for this machine's architecture is extracted from its layer and
// run.
func TestBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds trove for two platforms")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ca := testCABundle(t)
	out := filepath.Join(t.TempDir(), "dist")
	const version = "1.2.3-rc.1"
	platforms := []Platform{{"linux", "amd64"}, {"linux", "arm64"}}
	// The release is built by the command, out of this test's process:
	// compressing two binaries under the race detector would take
	// minutes.
	tool := filepath.Join(t.TempDir(), "trove-release")
	build := exec.Command("go", "build", "-o", tool, "./cmd/trove-release")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/trove-release: %v\n%s", err, out)
	}
	cmd := exec.Command(tool, "-version", version, "-out", out,
		"-platforms", "linux/amd64,linux/arm64", "-ca-bundle", writeTemp(t, "ca.pem", ca))
	cmd.Dir = root
	if log, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("trove-release: %v\n%s", err, log)
	}
	var res Result
	for _, p := range platforms {
		res.Archives = append(res.Archives, ArchiveName(version, p))
		res.SBOMs = append(res.SBOMs, SBOMName(version, p))
	}
	res.Image = "image"
	wantArchives := []string{
		"trove_1.2.3-rc.1_linux_amd64.tar.gz", "trove_1.2.3-rc.1_linux_arm64.tar.gz",
	}
	if !slices.Equal(res.Archives, wantArchives) {
		t.Errorf("archives %v, want %v", res.Archives, wantArchives)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := append(append(slices.Clone(wantArchives), res.SBOMs...), SumsName, "image")
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("dist/ holds %v, want %v (no build leftovers)", names, want)
	}

	t.Run("checksums", func(t *testing.T) { checkSums(t, out, append(slices.Clone(res.Archives), res.SBOMs...)) })

	var hostBinary string
	for i, p := range platforms {
		files := readArchive(t, filepath.Join(out, res.Archives[i]))
		if got := sortedKeys(files); !slices.Equal(got, []string{"LICENSE", "README.md", "trove"}) {
			t.Errorf("%s holds %v, want LICENSE, README.md, trove", res.Archives[i], got)
		}
		exe := files["trove"]
		if exe.mode != 0o755 {
			t.Errorf("%s: trove has mode %o, want 755", res.Archives[i], exe.mode)
		}
		bi, err := buildinfo.Read(bytes.NewReader(exe.data))
		if err != nil {
			t.Fatalf("%s: the binary has no Go build information: %v", res.Archives[i], err)
		}
		for k, v := range map[string]string{"GOOS": p.OS, "GOARCH": p.Arch, "CGO_ENABLED": "0", "-trimpath": "true"} {
			if got := setting(bi, k); got != v {
				t.Errorf("%s: build setting %s = %q, want %q", res.Archives[i], k, got, v)
			}
		}
		if bi.Path != ModulePath+"/cmd/trove" {
			t.Errorf("%s: the binary is %s", res.Archives[i], bi.Path)
		}
		checkSBOM(t, root, filepath.Join(out, res.SBOMs[i]), version, p)
		if p == (Platform{"linux", "amd64"}) && runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
			hostBinary = writeTemp(t, "trove", exe.data)
		}
	}
	if hostBinary != "" {
		runVersion(t, hostBinary, version)
	}

	t.Run("image", func(t *testing.T) { checkImage(t, filepath.Join(out, res.Image), version, ca) })
}

type archived struct {
	mode int64
	data []byte
}

func readArchive(t *testing.T, path string) map[string]archived {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	files := map[string]archived{}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if h.Typeflag != tar.TypeReg || h.Uid != 0 || h.Gid != 0 {
			t.Errorf("%s: %s is type %c owned by %d:%d, want a regular file of root", path, h.Name, h.Typeflag, h.Uid, h.Gid)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = archived{mode: h.Mode, data: data}
	}
	return files
}

func sortedKeys[V any](m map[string]V) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	slices.Sort(k)
	return k
}

// checkSums reads SHA256SUMS as sha256sum -c would and checks it names
// exactly the files given, each with its digest.
func checkSums(t *testing.T, dir string, files []string) {
	data, err := os.ReadFile(filepath.Join(dir, SumsName))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok || len(sum) != 64 {
			t.Fatalf("malformed SHA256SUMS line %q", sc.Text())
		}
		content, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("SHA256SUMS names %s: %v", name, err)
		}
		got := sha256.Sum256(content)
		if hex.EncodeToString(got[:]) != sum {
			t.Errorf("SHA256SUMS: %s does not match", name)
		}
		listed = append(listed, name)
	}
	slices.Sort(files)
	if !slices.Equal(listed, files) {
		t.Errorf("SHA256SUMS lists %v, want %v", listed, files)
	}
	// The real tool agrees, where it is installed.
	if _, err := exec.LookPath("sha256sum"); err == nil {
		cmd := exec.Command("sha256sum", "--check", "--strict", SumsName)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("sha256sum --check: %v\n%s", err, out)
		}
	}
}

// checkSBOM decodes an SBOM with the CycloneDX library and checks it
// describes trove of version for p and lists the modules linked into it,
// each one a requirement of go.mod.
func checkSBOM(t *testing.T, root, path, version string, p Platform) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(f, cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		t.Fatalf("%s does not parse as CycloneDX JSON: %v", path, err)
	}
	if bom.BOMFormat != "CycloneDX" || bom.SpecVersion == 0 || !strings.HasPrefix(bom.SerialNumber, "urn:uuid:") {
		t.Errorf("%s: format %q, spec %v, serial %q", path, bom.BOMFormat, bom.SpecVersion, bom.SerialNumber)
	}
	if bom.Metadata == nil || bom.Metadata.Component == nil {
		t.Fatalf("%s describes no component", path)
	}
	c := bom.Metadata.Component
	if c.Name != "trove" || c.Version != version || c.PackageURL != "pkg:golang/trove.dev/trove@v"+version {
		t.Errorf("%s describes %s %s (%s)", path, c.Name, c.Version, c.PackageURL)
	}
	props := map[string]string{}
	for _, pr := range *c.Properties {
		props[pr.Name] = pr.Value
	}
	if props["go:goos"] != p.OS || props["go:goarch"] != p.Arch {
		t.Errorf("%s: properties %v, want %s", path, props, p)
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.Parse("go.mod", gomod, nil)
	if err != nil {
		t.Fatal(err)
	}
	required := map[string]string{}
	for _, r := range mf.Require {
		required[r.Mod.Path] = r.Mod.Version
	}
	listed := map[string]bool{}
	for _, comp := range *bom.Components {
		if comp.Name == "stdlib" {
			if comp.Version != runtime.Version() {
				t.Errorf("%s: stdlib %s, want %s", path, comp.Version, runtime.Version())
			}
			continue
		}
		listed[comp.Name] = true
		if v, ok := required[comp.Name]; !ok || v != comp.Version {
			t.Errorf("%s lists %s %s; go.mod requires %q", path, comp.Name, comp.Version, v)
		}
		if comp.PackageURL != PackageURL(comp.Name, comp.Version) || comp.Properties == nil {
			t.Errorf("%s: %s has purl %q and no go.sum hash", path, comp.Name, comp.PackageURL)
		}
	}
	// Modules trove links on every platform.
	for _, m := range []string{"github.com/jackc/pgx/v5", "github.com/ProtonMail/go-crypto", "modernc.org/sqlite", "github.com/aws/aws-sdk-go-v2/service/s3", "golang.org/x/crypto",
		"github.com/google/go-containerregistry"} {
		if !listed[m] {
			t.Errorf("%s does not list %s", path, m)
		}
	}
	// Modules only tests or the Terraform provider use must not be there
	// (go-containerregistry is: trove oci push and pull link it).
	for _, m := range []string{"github.com/chromedp/chromedp", "github.com/hashicorp/terraform-plugin-sdk/v2"} {
		if listed[m] {
			t.Errorf("%s lists %s, which trove does not link", path, m)
		}
	}
	if bom.Dependencies == nil || len(*bom.Dependencies) != 1 || len(*(*bom.Dependencies)[0].Dependencies) != len(*bom.Components) {
		t.Errorf("%s: the dependency graph does not link trove to its components", path)
	}
}

func runVersion(t *testing.T, bin, version string) {
	t.Helper()
	if err := os.Chmod(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", bin, err, out)
	}
	if got, want := strings.TrimSpace(string(out)), "trove "+version; got != want {
		t.Errorf("%s version printed %q, want %q", bin, got, want)
	}
}

// checkImage reads the OCI image layout back with go-containerregistry.
func checkImage(t *testing.T, dir, version string, ca []byte) {
	lp, err := layout.FromPath(dir)
	if err != nil {
		t.Fatalf("not an OCI image layout: %v", err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].MediaType != types.OCIImageIndex ||
		im.Manifests[0].Annotations[RefNameAnnotation] != version {
		t.Fatalf("index.json holds %+v, want one image index tagged %s", im.Manifests, version)
	}
	idx, err := top.ImageIndex(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	// Every digest and size in the index, its manifests, configs and
	// layers checks out.
	if err := validate.Index(idx); err != nil {
		t.Fatalf("the image index does not validate: %v", err)
	}
	mm, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var plats []string
	for _, d := range mm.Manifests {
		if d.Platform == nil || d.MediaType != types.OCIManifestSchema1 {
			t.Fatalf("manifest %s has platform %v, media type %s", d.Digest, d.Platform, d.MediaType)
		}
		p := d.Platform.OS + "/" + d.Platform.Architecture
		plats = append(plats, p)
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(p, func(t *testing.T) {
			checkImageConfig(t, img, version, d.Platform)
			files := imageFiles(t, img)
			checkImageFiles(t, files, ca)
			if d.Platform.OS == runtime.GOOS && d.Platform.Architecture == runtime.GOARCH {
				runVersion(t, writeTemp(t, "trove-from-image", files["usr/local/bin/trove"].data), version)
			}
		})
	}
	if !slices.Equal(plats, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("the image index has platforms %v, want linux/amd64 and linux/arm64", plats)
	}
}

func checkImageConfig(t *testing.T, img v1.Image, version string, p *v1.Platform) {
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != p.OS || cf.Architecture != p.Architecture {
		t.Errorf("config platform %s/%s, manifest %s/%s", cf.OS, cf.Architecture, p.OS, p.Architecture)
	}
	c := cf.Config
	if !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/trove"}) || !slices.Equal(c.Cmd, []string{"serve"}) {
		t.Errorf("entrypoint %q, cmd %q", c.Entrypoint, c.Cmd)
	}
	if c.User != "65532:65532" {
		t.Errorf("user %q, want the non-root 65532:65532", c.User)
	}
	if _, ok := c.ExposedPorts["8443/tcp"]; !ok || len(c.ExposedPorts) != 1 {
		t.Errorf("exposed ports %v, want 8443/tcp", c.ExposedPorts)
	}
	if _, ok := c.Volumes["/var/lib/trove"]; !ok {
		t.Errorf("volumes %v, want /var/lib/trove", c.Volumes)
	}
	for _, e := range []string{"TROVE_LISTEN=:8443", "TROVE_DATA_DIR=/var/lib/trove", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"} {
		if !slices.Contains(c.Env, e) {
			t.Errorf("env %q lacks %s", c.Env, e)
		}
	}
	for k, v := range map[string]string{
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.title":    "Trove",
		"org.opencontainers.image.licenses": "Apache-2.0",
	} {
		if c.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
		}
	}
	if _, err := time.Parse(time.RFC3339, c.Labels["org.opencontainers.image.created"]); err != nil {
		t.Errorf("label created: %v", err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 2 || len(cf.RootFS.DiffIDs) != 2 || len(cf.History) != 2 {
		t.Fatalf("%d layers, %d diff ids, %d history entries, want 2 each", len(layers), len(cf.RootFS.DiffIDs), len(cf.History))
	}
	for _, l := range layers {
		if mt, err := l.MediaType(); err != nil || mt != types.OCILayer {
			t.Errorf("layer media type %s (%v), want %s", mt, err, types.OCILayer)
		}
	}
}

type imageFile struct {
	hdr  tar.Header
	data []byte
}

// imageFiles returns the image's flattened filesystem.
func imageFiles(t *testing.T, img v1.Image) map[string]imageFile {
	rc := mutate.Extract(img)
	defer rc.Close()
	files := map[string]imageFile{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimSuffix(h.Name, "/")] = imageFile{hdr: *h, data: data}
	}
	return files
}

func checkImageFiles(t *testing.T, files map[string]imageFile, ca []byte) {
	if got := sortedKeys(files); !slices.Equal(got, []string{
		"etc", "etc/group", "etc/nsswitch.conf", "etc/passwd", "etc/ssl", "etc/ssl/certs", "etc/ssl/certs/ca-certificates.crt",
		"root", "tmp", "usr", "usr/local", "usr/local/bin", "usr/local/bin/trove",
		"usr/share", "usr/share/doc", "usr/share/doc/trove", "usr/share/doc/trove/LICENSE",
		"var", "var/lib", "var/lib/trove",
	}) {
		t.Errorf("the image holds %v: no shell, nothing else expected", got)
	}
	if !strings.Contains(string(files["etc/passwd"].data), "\ntrove:x:65532:65532:") {
		t.Errorf("/etc/passwd lacks the trove user:\n%s", files["etc/passwd"].data)
	}
	if !bytes.Equal(files["etc/ssl/certs/ca-certificates.crt"].data, ca) {
		t.Error("the image's CA bundle is not the one given")
	}
	if pool := x509.NewCertPool(); !pool.AppendCertsFromPEM(files["etc/ssl/certs/ca-certificates.crt"].data) {
		t.Error("the image's CA bundle holds no certificate")
	}
	exe := files["usr/local/bin/trove"].hdr
	if exe.Mode != 0o755 || exe.Uid != 0 {
		t.Errorf("trove has mode %o owned by %d", exe.Mode, exe.Uid)
	}
	data := files["var/lib/trove"].hdr
	if data.Typeflag != tar.TypeDir || data.Uid != ImageUID || data.Gid != ImageGID || data.Mode != 0o700 {
		t.Errorf("/var/lib/trove is type %c mode %o owned by %d:%d, want a directory of 700 owned by the trove user", data.Typeflag, data.Mode, data.Uid, data.Gid)
	}
	if tmp := files["tmp"].hdr; tmp.Mode != 0o1777 {
		t.Errorf("/tmp has mode %o, want 1777", tmp.Mode)
	}
}

// testCABundle returns a PEM bundle of a throwaway CA certificate.
func testCABundle(t *testing.T) []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "Trove test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}
