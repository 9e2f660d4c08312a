// Package dist builds Trove's release artifacts: static trove binaries for
// every released platform packed in .tar.gz archives, a CycloneDX SBOM of
// each binary made from the build information Go records in it, a
// SHA256SUMS file of them all, and an OCI image layout holding a
// multi-platform image of the linux binaries, built in Go with
// go-containerregistry (no container daemon) on a minimal base layer it
// makes itself (CA certificates, a non-root user, nothing else). `make
// release` runs it through cmd/trove-release; see docs/install.md.
package dist

import (
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Platform is one GOOS/GOARCH pair.
type Platform struct {
	OS   string
	Arch string
}

// String returns "os/arch".
func (p Platform) String() string { return p.OS + "/" + p.Arch }

// ParsePlatform parses "os/arch".
func ParsePlatform(s string) (Platform, error) {
	os, arch, ok := strings.Cut(s, "/")
	if !ok || os == "" || arch == "" || strings.Contains(arch, "/") {
		return Platform{}, fmt.Errorf("invalid platform %q: want os/arch, e.g. linux/amd64", s)
	}
	p := Platform{OS: os, Arch: arch}
	if !slices.Contains(Platforms, p) {
		return Platform{}, fmt.Errorf("platform %q is not released; choose among %s", s, joinPlatforms(Platforms))
	}
	return p, nil
}

// Platforms are the platforms a release is built for.
var Platforms = []Platform{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
}

func joinPlatforms(ps []Platform) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}

// Options configure Build.
type Options struct {
	// Root is the directory of Trove's go.mod.
	Root string
	// Version is the release version without a leading v, e.g. 1.4.0.
	Version string
	// Out is the directory the artifacts are written to; Build empties
	// it first.
	Out string
	// Platforms to build; nil means Platforms.
	Platforms []Platform
	// CABundle is the PEM file of CA certificates copied into the image
	// (default /etc/ssl/certs/ca-certificates.crt).
	CABundle string
	// NoImage skips the OCI image.
	NoImage bool
	// Go is the go command (default "go").
	Go string
	// Log, if not nil, receives a line per step.
	Log io.Writer
}

// Result lists what Build wrote, as paths relative to Options.Out.
type Result struct {
	Archives []string
	SBOMs    []string
	Sums     string // SHA256SUMS
	Image    string // the OCI image layout directory, "" with NoImage
}

// BinaryName is the name of the binary in the archives and the image.
const BinaryName = "trove"

// versionPattern is what a release version may look like: semantic
// versions, or dev-<something> for snapshots.
var versionPattern = regexp.MustCompile(`^([0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?|dev(-[0-9A-Za-z.-]+)?)$`)

// CheckVersion reports whether v can name a release.
func CheckVersion(v string) error {
	if strings.HasPrefix(v, "v") {
		return fmt.Errorf("invalid version %q: drop the leading v (%s)", v, strings.TrimPrefix(v, "v"))
	}
	if !versionPattern.MatchString(v) {
		return fmt.Errorf("invalid version %q: want a semantic version such as 1.4.0 or 1.5.0-rc.1, or dev-<suffix>", v)
	}
	return nil
}

// ArchiveName returns trove_<version>_<os>_<arch>.tar.gz.
func ArchiveName(version string, p Platform) string {
	return fmt.Sprintf("%s_%s_%s_%s.tar.gz", BinaryName, version, p.OS, p.Arch)
}

// SBOMName returns trove_<version>_<os>_<arch>.cdx.json.
func SBOMName(version string, p Platform) string {
	return fmt.Sprintf("%s_%s_%s_%s.cdx.json", BinaryName, version, p.OS, p.Arch)
}

// Build compiles trove for every platform and writes the release into
// opts.Out: an archive and an SBOM per platform, SHA256SUMS and, unless
// opts.NoImage, the OCI image layout "image" of the linux platforms.
func Build(ctx context.Context, opts Options) (Result, error) {
	if err := CheckVersion(opts.Version); err != nil {
		return Result{}, err
	}
	if opts.Root == "" || opts.Out == "" {
		return Result{}, errors.New("dist: Root and Out must be set")
	}
	if opts.Platforms == nil {
		opts.Platforms = Platforms
	}
	if opts.Go == "" {
		opts.Go = "go"
	}
	if opts.CABundle == "" {
		opts.CABundle = "/etc/ssl/certs/ca-certificates.crt"
	}
	logf := func(format string, args ...any) {
		if opts.Log != nil {
			fmt.Fprintf(opts.Log, format+"\n", args...)
		}
	}
	if err := os.RemoveAll(opts.Out); err != nil {
		return Result{}, err
	}
	bins := filepath.Join(opts.Out, ".bin")
	if err := os.MkdirAll(bins, 0o755); err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(bins)

	license, err := os.ReadFile(filepath.Join(opts.Root, "LICENSE"))
	if err != nil {
		return Result{}, fmt.Errorf("read the license: %w", err)
	}
	readme, err := os.ReadFile(filepath.Join(opts.Root, "README.md"))
	if err != nil {
		return Result{}, fmt.Errorf("read the README: %w", err)
	}

	var res Result
	linux := map[Platform]string{}
	var mtime time.Time
	for _, p := range opts.Platforms {
		logf("building %s %s", BinaryName, p)
		bin := filepath.Join(bins, p.OS+"_"+p.Arch, BinaryName)
		if err := goBuild(ctx, opts, p, bin); err != nil {
			return Result{}, err
		}
		bi, err := buildinfo.ReadFile(bin)
		if err != nil {
			return Result{}, fmt.Errorf("read the build information of %s: %w", bin, err)
		}
		if mtime.IsZero() {
			mtime = BuildTime(bi)
		}
		archive := ArchiveName(opts.Version, p)
		logf("writing %s", archive)
		if err := writeArchive(filepath.Join(opts.Out, archive), bin, license, readme, mtime); err != nil {
			return Result{}, err
		}
		sbom := SBOMName(opts.Version, p)
		if err := writeSBOM(filepath.Join(opts.Out, sbom), bi, opts.Version, p, mtime); err != nil {
			return Result{}, err
		}
		res.Archives = append(res.Archives, archive)
		res.SBOMs = append(res.SBOMs, sbom)
		if p.OS == "linux" {
			linux[p] = bin
		}
	}
	files := append(slices.Clone(res.Archives), res.SBOMs...)
	if err := writeSums(opts.Out, files); err != nil {
		return Result{}, err
	}
	res.Sums = SumsName
	if !opts.NoImage && len(linux) > 0 {
		logf("writing the OCI image layout image/")
		ca, err := os.ReadFile(opts.CABundle)
		if err != nil {
			return Result{}, fmt.Errorf("read the CA bundle for the image: %w (pass another with -ca-bundle)", err)
		}
		if err := writeImage(filepath.Join(opts.Out, "image"), ImageInput{
			Version: opts.Version, Binaries: linux, CABundle: ca, License: license, Created: mtime,
			Revision: revision(linux),
		}); err != nil {
			return Result{}, err
		}
		res.Image = "image"
	}
	return res, nil
}

// goBuild compiles a static trove for p into out.
func goBuild(ctx context.Context, opts Options, p Platform, out string) error {
	cmd := exec.CommandContext(ctx, opts.Go, "build", "-trimpath",
		"-ldflags", "-s -w -X main.version="+opts.Version,
		"-o", out, "./cmd/trove")
	cmd.Dir = opts.Root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Arch)
	if opts.Log != nil {
		cmd.Stdout, cmd.Stderr = opts.Log, opts.Log
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for %s: %w", p, err)
	}
	return nil
}

// BuildTime returns the time the artifacts of a build are stamped with:
// SOURCE_DATE_EPOCH when set, else the commit time Go recorded
// (vcs.time), else the Unix epoch, so that two builds of one commit give
// the same archives.
func BuildTime(bi *buildinfo.BuildInfo) time.Time {
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return time.Unix(n, 0).UTC()
		}
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.time" {
			if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
				return t.UTC()
			}
		}
	}
	return time.Unix(0, 0).UTC()
}

// setting returns the build setting key of bi, or "".
func setting(bi *buildinfo.BuildInfo, key string) string {
	for _, s := range bi.Settings {
		if s.Key == key {
			return s.Value
		}
	}
	return ""
}

// revision returns the commit the linux binaries were built from, or "".
func revision(bins map[Platform]string) string {
	for _, bin := range bins {
		if bi, err := buildinfo.ReadFile(bin); err == nil {
			return setting(bi, "vcs.revision")
		}
	}
	return ""
}

// SumsName is the name of the checksum file.
const SumsName = "SHA256SUMS"

// writeSums writes SHA256SUMS over names (relative to dir), in the
// format of sha256sum.
func writeSums(dir string, names []string) error {
	var b strings.Builder
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	for _, n := range sorted {
		f, err := os.Open(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s  %s\n", hex.EncodeToString(h.Sum(nil)), n)
	}
	return os.WriteFile(filepath.Join(dir, SumsName), []byte(b.String()), 0o644)
}
