// Package releasetest builds signed provider releases in memory for tests:
// the files goreleaser leaves in dist/ (one zip per platform holding
// terraform-provider-<type>_v<version>, SHA256SUMS in sha256sum format, its
// binary detached signature, and optionally the manifest), so that no test
// needs goreleaser, gpg or a real provider binary.
package releasetest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/trovetest/testarchive"
)

// Spec describes a release to build.
type Spec struct {
	Type    string // provider type, e.g. "example"
	Version string // without a leading "v", e.g. "1.0.0"
	// Platforms are the "<os>_<arch>" pairs to package, in upload order.
	Platforms []string
	// Protocols, when set, adds a _manifest.json declaring these plugin
	// protocol versions (e.g. "5.0", "6.0"); nil builds no manifest.
	Protocols []string
	// Payload is appended to every executable, so that two builds of the
	// same type, version and platforms differ in their bytes.
	Payload string
	// Docs, when set, adds a _docs.tar.gz with these bytes (a
	// documentation archive, see package providerdocs), listed in
	// SHA256SUMS after the manifest.
	Docs []byte
}

// File is one file of a release.
type File struct {
	Name string
	Data []byte
}

// Open returns a reader of the file's bytes, in the shape of
// client.PublishFile's Open.
func (f File) Open() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(f.Data)), nil
}

// Release is a built release.
type Release struct {
	Spec Spec
	// Files are in upload order: SHA256SUMS, its .sig, the manifest (when
	// Spec.Protocols is set), the documentation (when Spec.Docs is set),
	// then one zip per platform in Spec order.
	Files []File
}

// Prefix returns "terraform-provider-<type>_<version>", the start of every
// file name of the release.
func (r Release) Prefix() string {
	return "terraform-provider-" + r.Spec.Type + "_" + r.Spec.Version
}

// ZipName returns the file name of the zip for platform ("linux_amd64").
func (r Release) ZipName(platform string) string {
	return r.Prefix() + "_" + platform + ".zip"
}

// ByName returns the bytes of the named file, or nil when the release has
// no such file.
func (r Release) ByName(name string) []byte {
	for _, f := range r.Files {
		if f.Name == name {
			return f.Data
		}
	}
	return nil
}

// SHA256 returns the lower-case hex SHA-256 of the named file, as
// SHA256SUMS lists it, or "" when the release has no such file.
func (r Release) SHA256(name string) string {
	data := r.ByName(name)
	if data == nil {
		return ""
	}
	return Digest(data)
}

// Source returns a fresh reader of the files in upload order, for
// publish.Publisher.PublishProvider.
func (r Release) Source() *Source { return NewSource(r.Files) }

// WriteDir writes every file of the release into dir, as goreleaser leaves
// them in dist/. It fails the test on an error.
func (r Release) WriteDir(t testing.TB, dir string) {
	t.Helper()
	for _, f := range r.Files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o600); err != nil {
			t.Fatalf("releasetest: %v", err)
		}
	}
}

// Source yields files in order; it satisfies publish.FileSource.
type Source struct{ files []File }

// NewSource returns a Source of files, which may be any files in any order
// (tests of refused releases pass broken ones).
func NewSource(files []File) *Source { return &Source{files: files} }

// Next returns the next file, or io.EOF after the last one.
func (s *Source) Next() (string, io.Reader, error) {
	if len(s.files) == 0 {
		return "", nil, io.EOF
	}
	f := s.files[0]
	s.files = s.files[1:]
	return f.Name, bytes.NewReader(f.Data), nil
}

// Build returns the release described by spec, with SHA256SUMS signed by
// key (a binary detached signature, as gpg --detach-sign writes it).
// SHA256SUMS lists the manifest and every zip. The bytes depend only on
// spec and key: building the same spec twice yields the same zips and
// SHA256SUMS. It fails the test on an error.
func Build(t testing.TB, key *signingtest.Key, spec Spec) Release {
	t.Helper()
	r := Release{Spec: spec}
	var signed []File
	if spec.Protocols != nil {
		doc, err := json.Marshal(map[string]any{
			"version":  1,
			"metadata": map[string]any{"protocol_versions": spec.Protocols},
		})
		if err != nil {
			t.Fatalf("releasetest: manifest: %v", err)
		}
		signed = append(signed, File{r.Prefix() + "_manifest.json", doc})
	}
	if spec.Docs != nil {
		signed = append(signed, File{r.Prefix() + "_docs.tar.gz", spec.Docs})
	}
	exe := "terraform-provider-" + spec.Type + "_v" + spec.Version
	for _, p := range spec.Platforms {
		body := fmt.Sprintf("#!/bin/sh\necho %s %s\n", exe, p) + spec.Payload
		signed = append(signed, File{r.ZipName(p), Zip(t, map[string]string{exe: body})})
	}
	var sums bytes.Buffer
	for _, f := range signed {
		fmt.Fprintf(&sums, "%s  %s\n", Digest(f.Data), f.Name)
	}
	r.Files = append([]File{
		{r.Prefix() + "_SHA256SUMS", sums.Bytes()},
		{r.Prefix() + "_SHA256SUMS.sig", key.Sign(sums.Bytes())},
	}, signed...)
	return r
}

// Zip returns a zip archive of entries (name -> content), deflated, in name
// order, each a regular file with mode 0755 and a fixed time stamp
// (testarchive.ModTime), so that builds are reproducible.
func Zip(t testing.TB, entries map[string]string) []byte {
	t.Helper()
	files := make([]testarchive.Entry, 0, len(entries))
	for _, n := range slices.Sorted(maps.Keys(entries)) {
		files = append(files, testarchive.Entry{Name: n, Body: entries[n], Mode: 0o755})
	}
	return testarchive.ZipOf(t, files...)
}

// Digest returns the lower-case hex SHA-256 of data.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}
