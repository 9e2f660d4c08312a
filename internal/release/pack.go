package release

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
)

// The layout Pack writes is the one goreleaser writes with the
// configuration of HashiCorp's provider template, which the checks of this
// package accept and `trove publish` uploads:
//
//	terraform-provider-<type>_<version>_<os>_<arch>.zip  one per platform, holding
//	    terraform-provider-<type>_v<version>              at its root, mode 0755
//	    (terraform-provider-<type>_v<version>.exe on Windows, as goreleaser names it)
//	terraform-provider-<type>_<version>_manifest.json    the plugin protocol versions
//	terraform-provider-<type>_<version>_docs.tar.gz      the documentation, if given (package providerdocs)
//	terraform-provider-<type>_<version>_SHA256SUMS       sha256sum text of the zips, the manifest and the documentation
//	terraform-provider-<type>_<version>_SHA256SUMS.sig   its binary detached OpenPGP signature

// ZipName returns the file name of a provider package:
// terraform-provider-<type>_<version>_<os>_<arch>.zip.
func ZipName(typ, version, os, arch string) string {
	return "terraform-provider-" + typ + "_" + version + "_" + os + "_" + arch + ".zip"
}

// ManifestName returns terraform-provider-<type>_<version>_manifest.json.
func ManifestName(typ, version string) string {
	return "terraform-provider-" + typ + "_" + version + "_manifest.json"
}

// DocsName returns terraform-provider-<type>_<version>_docs.tar.gz, the
// documentation archive of a release (package providerdocs); a release
// may carry terraform-provider-<type>_<version>_docs.zip instead
// (DocsNames).
func DocsName(typ, version string) string {
	return "terraform-provider-" + typ + "_" + version + "_docs.tar.gz"
}

// DocsNames returns the two names the documentation archive of a
// release may have: DocsName and its .zip form.
func DocsNames(typ, version string) [2]string {
	return [2]string{DocsName(typ, version), "terraform-provider-" + typ + "_" + version + "_docs.zip"}
}

// IsDocsName reports whether name has the shape of a documentation
// archive of some release: terraform-provider-*_docs.tar.gz or .zip.
// Whether it is the one of a given release is DocsNames' to say.
func IsDocsName(name string) bool {
	return strings.HasPrefix(name, "terraform-provider-") &&
		(strings.HasSuffix(name, "_docs.tar.gz") || strings.HasSuffix(name, "_docs.zip"))
}

// SumsName returns terraform-provider-<type>_<version>_SHA256SUMS; its
// signature is SumsName + ".sig".
func SumsName(typ, version string) string {
	return "terraform-provider-" + typ + "_" + version + "_SHA256SUMS"
}

// ExecutableName returns the name of the provider executable inside the
// package for os: terraform-provider-<type>_v<version>, with ".exe" on
// Windows, where Terraform and OpenTofu only run files so named.
func ExecutableName(typ, version, os string) string {
	name := "terraform-provider-" + typ + "_v" + version
	if os == "windows" {
		name += ".exe"
	}
	return name
}

// ManifestJSON returns the manifest document declaring protocols, in the
// form goreleaser's template copies from terraform-registry-manifest.json:
// {"version":1,"metadata":{"protocol_versions":["5.0"]}} and a newline.
func ManifestJSON(protocols []string) []byte {
	if protocols == nil {
		protocols = []string{}
	}
	type metadata struct {
		ProtocolVersions []string `json:"protocol_versions"`
	}
	doc, _ := json.Marshal(struct {
		Version  int      `json:"version"`
		Metadata metadata `json:"metadata"`
	}{1, metadata{protocols}})
	return append(doc, '\n')
}

// PackTime is the modification time of every zip entry Pack writes: fixed,
// so that packing the same executables twice yields the same bytes (and
// the same SHA256SUMS, so a retried release job re-publishes nothing new).
var PackTime = time.Date(2020, time.January, 1, 0, 0, 0, 0, time.UTC)

// Executable is a provider executable to package, as go build wrote it.
type Executable struct {
	OS, Arch string // a pair CheckPlatform accepts
	Path     string // the file on disk
}

// PackSpec describes a release for Pack.
type PackSpec struct {
	Type    string // provider type, lower case
	Version string // canonical semantic version, without "v"
	// Executables holds one executable per platform, in any order.
	Executables []Executable
	// Manifest is the manifest document, written as is once ParseManifest
	// accepts it (so a project's terraform-registry-manifest.json keeps
	// its bytes and its goreleaser checksum); nil writes ManifestJSON of
	// ["5.0"].
	Manifest []byte
	// Sign returns a binary detached signature of SHA256SUMS; nil writes
	// no .sig (a release for a namespace whose releases Trove signs).
	Sign func(sums []byte) ([]byte, error)
	// Docs is the documentation archive (providerdocs.Pack) written as
	// DocsName and listed in SHA256SUMS, so that the signature covers
	// it; nil writes none.
	Docs []byte
}

// PackedFile is a file Pack wrote.
type PackedFile struct {
	Name   string
	Size   int64
	SHA256 string // lower-case hex
}

// Packed is what Pack wrote.
type Packed struct {
	// Files in the order zips (sorted by platform), manifest, the
	// documentation when given, SHA256SUMS, then its signature when
	// signed.
	Files     []PackedFile
	Protocols []string // from the manifest
}

// Pack writes the release spec describes into dir, which must not exist
// or be empty; Pack creates it. Every input is checked before the first
// file is written: the type and version (as the registry validates them),
// the manifest, one executable per known platform, each a regular file
// whose header CheckExecutable accepts. What Pack writes passes
// ParseSHA256SUMS, ParsePackageFilename, CheckZip and ParseManifest, and
// it checks that before returning. On an error it removes what it wrote
// (and dir, if it created it).
func Pack(dir string, spec PackSpec) (_ Packed, err error) {
	protocols, err := checkPackSpec(&spec)
	if err != nil {
		return Packed{}, err
	}
	created, err := prepareDir(dir)
	if err != nil {
		return Packed{}, err
	}
	var written []string
	defer func() {
		if err == nil {
			return
		}
		for _, p := range written {
			_ = os.Remove(p)
		}
		if created {
			_ = os.Remove(dir)
		}
	}()
	write := func(name string, fill func(io.Writer) error) (PackedFile, error) {
		p := filepath.Join(dir, name)
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return PackedFile{}, err
		}
		written = append(written, p)
		h := sha256.New()
		cw := &countingWriter{w: io.MultiWriter(f, h)}
		err = fill(cw)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return PackedFile{}, fmt.Errorf("writing %s: %w", p, err)
		}
		return PackedFile{Name: name, Size: cw.n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
	}

	var out Packed
	out.Protocols = protocols
	for _, e := range spec.Executables {
		exe := ExecutableName(spec.Type, spec.Version, e.OS)
		pf, err := write(ZipName(spec.Type, spec.Version, e.OS, e.Arch), func(w io.Writer) error {
			return writeZip(w, exe, e.Path)
		})
		if err != nil {
			return Packed{}, err
		}
		out.Files = append(out.Files, pf)
	}
	pf, err := write(ManifestName(spec.Type, spec.Version), func(w io.Writer) error {
		_, err := w.Write(spec.Manifest)
		return err
	})
	if err != nil {
		return Packed{}, err
	}
	out.Files = append(out.Files, pf)
	if spec.Docs != nil {
		pf, err := write(DocsName(spec.Type, spec.Version), func(w io.Writer) error {
			_, err := w.Write(spec.Docs)
			return err
		})
		if err != nil {
			return Packed{}, err
		}
		out.Files = append(out.Files, pf)
	}

	sums := Sums(out.Files)
	sumsName := SumsName(spec.Type, spec.Version)
	pf, err = write(sumsName, func(w io.Writer) error {
		_, err := w.Write(sums)
		return err
	})
	if err != nil {
		return Packed{}, err
	}
	out.Files = append(out.Files, pf)
	if spec.Sign != nil {
		sig, err := spec.Sign(sums)
		if err != nil {
			return Packed{}, err
		}
		if len(sig) == 0 {
			return Packed{}, errors.New("signing SHA256SUMS produced an empty signature")
		}
		pf, err := write(sumsName+".sig", func(w io.Writer) error {
			_, err := w.Write(sig)
			return err
		})
		if err != nil {
			return Packed{}, err
		}
		out.Files = append(out.Files, pf)
	}
	if err := checkPacked(dir, spec, sums); err != nil {
		return Packed{}, err
	}
	return out, nil
}

// Sums returns the SHA256SUMS document of files as sha256sum and
// goreleaser write it: "<digest>  <name>\n" per file, sorted by name.
func Sums(files []PackedFile) []byte {
	sorted := slices.Clone(files)
	slices.SortFunc(sorted, func(a, b PackedFile) int { return strings.Compare(a.Name, b.Name) })
	var b bytes.Buffer
	for _, f := range sorted {
		fmt.Fprintf(&b, "%s  %s\n", f.SHA256, f.Name)
	}
	return b.Bytes()
}

// checkPackSpec checks spec, sorts its executables by platform, fills in
// the default manifest and returns the manifest's protocols.
func checkPackSpec(spec *PackSpec) ([]string, error) {
	typ, err := registry.ParseProviderType(spec.Type)
	if err != nil {
		return nil, err
	}
	if typ != spec.Type {
		return nil, registry.Errorf(registry.Invalid, "write the provider type in lower case: %s", typ)
	}
	if _, err := registry.ParseVersion(spec.Version); err != nil {
		return nil, err
	}
	if spec.Manifest == nil {
		spec.Manifest = ManifestJSON([]string{"5.0"})
	}
	protocols, err := ParseManifest(spec.Manifest)
	if err != nil {
		return nil, err
	}
	if len(spec.Executables) == 0 {
		return nil, registry.Errorf(registry.Invalid, "no executables to package; build one per platform with go build")
	}
	spec.Executables = slices.Clone(spec.Executables)
	slices.SortFunc(spec.Executables, func(a, b Executable) int {
		return strings.Compare(a.OS+"_"+a.Arch, b.OS+"_"+b.Arch)
	})
	for i, e := range spec.Executables {
		platform := e.OS + "_" + e.Arch
		if err := CheckPlatform(e.OS, e.Arch); err != nil {
			return nil, err
		}
		if i > 0 && spec.Executables[i-1].OS+"_"+spec.Executables[i-1].Arch == platform {
			return nil, registry.Errorf(registry.Invalid, "platform %s is given twice (%s and %s); package one executable per platform",
				platform, spec.Executables[i-1].Path, e.Path)
		}
		if err := checkExecutableFile(e); err != nil {
			return nil, err
		}
	}
	return protocols, nil
}

func checkExecutableFile(e Executable) error {
	f, err := os.Open(e.Path)
	if err != nil {
		return registry.Errorf(registry.Invalid, "executable for %s_%s: %v", e.OS, e.Arch, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return registry.Errorf(registry.Invalid, "executable for %s_%s: %s is not a regular file", e.OS, e.Arch, e.Path)
	}
	if err := CheckExecutable(f, e.OS, e.Arch); err != nil {
		return registry.Errorf(registry.KindOf(err), "%s (given for %s_%s) %s", e.Path, e.OS, e.Arch, registry.Message(err))
	}
	return nil
}

// prepareDir creates dir, or checks that it is an empty directory, and
// reports whether it created it.
func prepareDir(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return false, err
		}
		return true, nil
	case err != nil:
		return false, err
	case len(entries) > 0:
		return false, registry.Errorf(registry.Conflict, "%s is not empty; empty it, or pick another output directory", dir)
	}
	return false, nil
}

// writeZip writes to w a zip holding the file at path as name: deflated,
// mode 0755, stamped PackTime.
func writeZip(w io.Writer, name, path string) error {
	src, err := os.Open(path)
	if err != nil {
		return err
	}
	defer src.Close()
	zw := zip.NewWriter(w)
	h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: PackTime}
	h.SetMode(0o755)
	entry, err := zw.CreateHeader(h)
	if err != nil {
		return err
	}
	if _, err := io.Copy(entry, src); err != nil {
		return err
	}
	return zw.Close()
}

// checkPacked reads back what Pack wrote with the checks a registry
// applies on publish.
func checkPacked(dir string, spec PackSpec, sums []byte) error {
	listed, err := ParseSHA256SUMS(sums)
	if err != nil {
		return fmt.Errorf("the SHA256SUMS written does not parse: %w", err)
	}
	want := len(spec.Executables) + 1
	if spec.Docs != nil {
		want++
	}
	if len(listed) != want {
		return fmt.Errorf("the SHA256SUMS written lists %d files, want %d", len(listed), want)
	}
	for _, e := range spec.Executables {
		name := ZipName(spec.Type, spec.Version, e.OS, e.Arch)
		if _, err := ParsePackageFilename(name); err != nil {
			return fmt.Errorf("the package written is misnamed: %w", err)
		}
		if err := checkZipFile(filepath.Join(dir, name), spec.Type, e.OS); err != nil {
			return fmt.Errorf("the package written for %s_%s does not pass the registry's checks: %w", e.OS, e.Arch, err)
		}
	}
	return nil
}

func checkZipFile(path, typ, goos string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return CheckZip(f, fi.Size(), typ, goos, DefaultLimits)
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
