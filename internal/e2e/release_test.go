package e2e

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/internal/signing/signingtest"
)

// providerType is the type of the example provider.
const providerType = "example"

// manifestJSON is the manifest goreleaser writes for a protocol 5 provider.
const manifestJSON = `{"version":1,"metadata":{"protocol_versions":["5.0"]}}` + "\n"

// zipEntry is one file of a provider zip.
type zipEntry struct {
	Name   string
	Mode   fs.FileMode // default 0644
	File   string      // content: this file, or
	Data   []byte      // these bytes, or
	Random int64       // this many incompressible bytes, stored uncompressed
}

// releaseSpec describes a goreleaser-style release of the example provider.
type releaseSpec struct {
	Version   string
	Platforms []string // default hostPlatform and otherPlatform
	// Executable is the executable's path inside each zip; default
	// terraform-provider-example_v<version> at the root; "-" leaves it out.
	Executable string
	Extra      []zipEntry // more entries in every zip
	Modified   time.Time  // time stamp of the zip entries; default a fixed date
}

// dist is a release written to a folder as goreleaser's dist/ holds it.
type dist struct {
	Dir       string
	Version   string
	Platforms []string
}

// fixedZipTime makes repeated packagings of one spec byte-identical.
var fixedZipTime = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// packageRelease writes the release spec describes into a new folder: one
// zip per platform, the manifest, SHA256SUMS (listing both, as goreleaser
// does) and its binary detached signature by key.
func packageRelease(t *testing.T, key *signingtest.Key, spec releaseSpec) *dist {
	t.Helper()
	if spec.Platforms == nil {
		spec.Platforms = []string{hostPlatform, otherPlatform}
	}
	if spec.Modified.IsZero() {
		spec.Modified = fixedZipTime
	}
	d := &dist{Dir: t.TempDir(), Version: spec.Version, Platforms: spec.Platforms}
	for _, p := range spec.Platforms {
		exe, ok := providerBins[p]
		if !ok {
			t.Fatalf("no example provider built for %s", p)
		}
		var entries []zipEntry
		switch spec.Executable {
		case "-":
		case "":
			entries = append(entries, zipEntry{Name: "terraform-provider-" + providerType + "_v" + spec.Version, Mode: 0o755, File: exe})
		default:
			entries = append(entries, zipEntry{Name: spec.Executable, Mode: 0o755, File: exe})
		}
		entries = append(entries, spec.Extra...)
		writeZip(t, d.path(d.zipName(p)), spec.Modified, entries)
	}
	writeFile(t, d.Dir, d.manifestName(), []byte(manifestJSON))
	d.writeSums(t, d.computeSums(t))
	d.sign(t, key.Sign)
	return d
}

func (d *dist) base() string { return "terraform-provider-" + providerType + "_" + d.Version }

func (d *dist) zipName(platform string) string { return d.base() + "_" + platform + ".zip" }
func (d *dist) manifestName() string           { return d.base() + "_manifest.json" }
func (d *dist) sumsName() string               { return d.base() + "_SHA256SUMS" }
func (d *dist) sigName() string                { return d.sumsName() + ".sig" }
func (d *dist) path(name string) string        { return filepath.Join(d.Dir, name) }

// read returns the content of one file of the release.
func (d *dist) read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(d.path(name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sums returns the release's SHA256SUMS.
func (d *dist) sums(t *testing.T) []byte {
	t.Helper()
	return d.read(t, d.sumsName())
}

// computeSums returns SHA256SUMS of the zips and the manifest in the
// folder, in `sha256sum` text format sorted by name, as goreleaser writes.
func (d *dist) computeSums(t *testing.T) []byte {
	t.Helper()
	names := []string{d.manifestName()}
	for _, p := range d.Platforms {
		names = append(names, d.zipName(p))
	}
	slices.Sort(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s  %s\n", sha256File(t, d.path(n)), n)
	}
	return []byte(b.String())
}

// writeSums replaces SHA256SUMS (its signature is left as it is).
func (d *dist) writeSums(t *testing.T, sums []byte) {
	t.Helper()
	writeFile(t, d.Dir, d.sumsName(), sums)
}

// sign writes the signature that signFn makes of SHA256SUMS.
func (d *dist) sign(t *testing.T, signFn func([]byte) []byte) {
	t.Helper()
	writeFile(t, d.Dir, d.sigName(), signFn(d.sums(t)))
}

// zipDigest returns the lower-case hex SHA-256 of a platform's zip.
func (d *dist) zipDigest(t *testing.T, platform string) string {
	t.Helper()
	return sha256File(t, d.path(d.zipName(platform)))
}

// writeZip writes a zip holding entries, deflated (Random entries stored),
// all stamped with modified.
func writeZip(t *testing.T, path string, modified time.Time, entries []zipEntry) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zw := zip.NewWriter(f)
	for _, e := range entries {
		hdr := &zip.FileHeader{Name: e.Name, Method: zip.Deflate, Modified: modified}
		mode := e.Mode
		if mode == 0 {
			mode = 0o644
		}
		hdr.SetMode(mode)
		var src io.Reader
		switch {
		case e.File != "":
			// Compressed once per file and copied raw into every zip.
			// CreateRaw ignores Modified: set the MS-DOS time stamp.
			c := compressed(t, e.File)
			hdr.CRC32, hdr.CompressedSize64, hdr.UncompressedSize64 = c.crc32, uint64(len(c.data)), c.size
			m := modified.UTC()
			hdr.ModifiedDate = uint16(m.Day() + int(m.Month())<<5 + (m.Year()-1980)<<9)
			hdr.ModifiedTime = uint16(m.Second()/2 + m.Minute()<<5 + m.Hour()<<11)
			w, err := zw.CreateRaw(hdr)
			if err != nil {
				t.Fatalf("zip %s: %v", path, err)
			}
			if _, err := w.Write(c.data); err != nil {
				t.Fatalf("zip %s: %v", path, err)
			}
			continue
		case e.Random > 0:
			hdr.Method = zip.Store
			var seed [32]byte
			copy(seed[:], e.Name)
			src = io.LimitReader(rand.NewChaCha8(seed), e.Random)
		default:
			src = strings.NewReader(string(e.Data))
		}
		w, err := zw.CreateHeader(hdr)
		if err != nil {
			t.Fatalf("zip %s: %v", path, err)
		}
		if _, err := io.Copy(w, src); err != nil {
			t.Fatalf("zip %s: %v", path, err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatalf("zip %s: %v", path, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// deflated is a file's content compressed for a zip entry.
type deflated struct {
	data  []byte
	crc32 uint32
	size  uint64
}

var (
	deflatedMu    sync.Mutex
	deflatedFiles = map[string]*deflated{}
)

// compressed returns path's content deflated, compressing each file once
// per test binary: the executables are large and tests package them many
// times.
func compressed(t *testing.T, path string) *deflated {
	t.Helper()
	deflatedMu.Lock()
	defer deflatedMu.Unlock()
	if c, ok := deflatedFiles[path]; ok {
		return c
	}
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	fw, err := flate.NewWriter(&buf, flate.BestSpeed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	c := &deflated{data: buf.Bytes(), crc32: crc32.ChecksumIEEE(content), size: uint64(len(content))}
	deflatedFiles[path] = c
	return c
}

// sha256File returns the lower-case hex SHA-256 of a file.
func sha256File(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
