package dist

import (
	"crypto/sha256"
	"debug/buildinfo"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// ModulePath is the path of Trove's Go module.
const ModulePath = "trove.dev/trove"

// PackageURL returns the purl of a Go module version,
// pkg:golang/<path>@<version>.
func PackageURL(path, version string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	purl := "pkg:golang/" + strings.Join(segs, "/")
	if version != "" {
		purl += "@" + url.PathEscape(version)
	}
	return purl
}

// SBOM returns the CycloneDX bill of materials of one trove binary from
// the build information Go recorded in it: trove itself as the described
// component, then every module linked into the binary (replacements
// resolved) and the Go standard library as libraries, each with its purl
// and, for modules, the go.sum hash as a property.
func SBOM(bi *buildinfo.BuildInfo, version string, p Platform, created time.Time) *cdx.BOM {
	bom := cdx.NewBOM()
	self := PackageURL(ModulePath, "v"+version)
	bom.SerialNumber = serial(self + " " + p.String())
	props := []cdx.Property{
		{Name: "go:goos", Value: p.OS},
		{Name: "go:goarch", Value: p.Arch},
		{Name: "go:toolchain", Value: bi.GoVersion},
	}
	if r := setting(bi, "vcs.revision"); r != "" {
		props = append(props, cdx.Property{Name: "go:vcs.revision", Value: r})
	}
	bom.Metadata = &cdx.Metadata{
		Timestamp: created.UTC().Format(time.RFC3339),
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{
			Type: cdx.ComponentTypeApplication, Name: "trove-release", Version: version,
		}}},
		Component: &cdx.Component{
			BOMRef: self, Type: cdx.ComponentTypeApplication,
			Name: BinaryName, Version: version, PackageURL: self,
			Licenses:   &cdx.Licenses{{License: &cdx.License{ID: "Apache-2.0"}}},
			Properties: &props,
		},
	}
	var comps []cdx.Component
	var refs []string
	std := PackageURL("stdlib", bi.GoVersion)
	comps = append(comps, cdx.Component{
		BOMRef: std, Type: cdx.ComponentTypeLibrary, Name: "stdlib", Version: bi.GoVersion, PackageURL: std,
	})
	refs = append(refs, std)
	for _, d := range bi.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		purl := PackageURL(m.Path, m.Version)
		c := cdx.Component{
			BOMRef: purl, Type: cdx.ComponentTypeLibrary,
			Name: m.Path, Version: m.Version, PackageURL: purl,
		}
		if m.Sum != "" {
			c.Properties = &[]cdx.Property{{Name: "go:module:sum", Value: m.Sum}}
		}
		comps = append(comps, c)
		refs = append(refs, purl)
	}
	bom.Components = &comps
	bom.Dependencies = &[]cdx.Dependency{{Ref: self, Dependencies: &refs}}
	return bom
}

// serial returns a urn:uuid serial number derived from s (a name-based,
// version 5 style UUID), so that the same build gives the same SBOM.
func serial(s string) string {
	h := sha256.Sum256([]byte(s))
	h[6] = (h[6] & 0x0f) | 0x50
	h[8] = (h[8] & 0x3f) | 0x80
	return fmt.Sprintf("urn:uuid:%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// writeSBOM writes the SBOM of a binary as CycloneDX JSON.
func writeSBOM(path string, bi *buildinfo.BuildInfo, version string, p Platform, created time.Time) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	enc := cdx.NewBOMEncoder(f, cdx.BOMFileFormatJSON)
	enc.SetPretty(true)
	if err := enc.Encode(SBOM(bi, version, p, created)); err != nil {
		return fmt.Errorf("write the SBOM %s: %w", path, err)
	}
	return f.Close()
}
