package dist

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// What the image holds and how it runs.
const (
	// ImageBinary is the path of trove in the image.
	ImageBinary = "/usr/local/bin/trove"
	// ImageUID and ImageGID are the non-root user and group trove runs
	// as, named trove in the image's /etc/passwd and /etc/group.
	ImageUID = 65532
	ImageGID = 65532
	// ImageDataDir is the data directory (TROVE_DATA_DIR), owned by the
	// trove user and declared a volume.
	ImageDataDir = "/var/lib/trove"
	// ImagePort is the port trove listens on in the image (TROVE_LISTEN).
	ImagePort = "8443"
	// ImageCABundle is where the CA certificates are (SSL_CERT_FILE).
	ImageCABundle = "/etc/ssl/certs/ca-certificates.crt"
	// RefNameAnnotation tags the index in the layout's index.json with
	// the version, so that tools can name it (oci:dist/image:<version>).
	RefNameAnnotation = "org.opencontainers.image.ref.name"
)

// ImageInput is what an image is made of.
type ImageInput struct {
	Version  string
	Binaries map[Platform]string // linux platforms to their static trove
	CABundle []byte              // PEM CA certificates
	License  []byte
	Created  time.Time
	Revision string // commit, for the revision label; may be empty
}

// ImageLabels returns the OCI labels of the image of version.
func ImageLabels(version, revision string, created time.Time) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "Trove",
		"org.opencontainers.image.description": "A self-hosted registry for Terraform and OpenTofu providers and modules",
		"org.opencontainers.image.version":     version,
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.created":     created.UTC().Format(time.RFC3339),
	}
	if revision != "" {
		l["org.opencontainers.image.revision"] = revision
	}
	return l
}

// BaseLayer returns the uncompressed tar of the base layer: /etc/passwd
// and /etc/group naming root and the trove user, /etc/nsswitch.conf, the
// CA certificates, /tmp and the data directory owned by trove. It has no
// shell and no package manager.
func BaseLayer(ca []byte, mtime time.Time) ([]byte, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\ntrove:x:%d:%d:Trove:%s:/sbin/nologin\n", ImageUID, ImageGID, ImageDataDir)
	group := fmt.Sprintf("root:x:0:\ntrove:x:%d:\n", ImageGID)
	return tarOf(mtime, []tarFile{
		{Name: "etc", Mode: 0o755, Dir: true},
		{Name: "etc/passwd", Mode: 0o644, Data: []byte(passwd)},
		{Name: "etc/group", Mode: 0o644, Data: []byte(group)},
		{Name: "etc/nsswitch.conf", Mode: 0o644, Data: []byte("hosts: files dns\n")},
		{Name: "etc/ssl", Mode: 0o755, Dir: true},
		{Name: "etc/ssl/certs", Mode: 0o755, Dir: true},
		{Name: ImageCABundle[1:], Mode: 0o644, Data: ca},
		{Name: "root", Mode: 0o700, Dir: true},
		{Name: "tmp", Mode: 0o1777, Dir: true},
		{Name: "var", Mode: 0o755, Dir: true},
		{Name: "var/lib", Mode: 0o755, Dir: true},
		{Name: ImageDataDir[1:], Mode: 0o700, Dir: true, UID: ImageUID, GID: ImageGID},
	})
}

// AppLayer returns the uncompressed tar of the layer with trove and its
// license.
func AppLayer(exe, license []byte, mtime time.Time) ([]byte, error) {
	return tarOf(mtime, []tarFile{
		{Name: "usr", Mode: 0o755, Dir: true},
		{Name: "usr/local", Mode: 0o755, Dir: true},
		{Name: "usr/local/bin", Mode: 0o755, Dir: true},
		{Name: ImageBinary[1:], Mode: 0o755, Data: exe},
		{Name: "usr/share", Mode: 0o755, Dir: true},
		{Name: "usr/share/doc", Mode: 0o755, Dir: true},
		{Name: "usr/share/doc/trove", Mode: 0o755, Dir: true},
		{Name: "usr/share/doc/trove/LICENSE", Mode: 0o644, Data: license},
	})
}

func tarOf(mtime time.Time, files []tarFile) ([]byte, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, f := range files {
		if err := f.write(tw, mtime); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Image returns the image of one linux platform.
func Image(in ImageInput, p Platform, exe []byte) (v1.Image, error) {
	base, err := BaseLayer(in.CABundle, in.Created)
	if err != nil {
		return nil, err
	}
	app, err := AppLayer(exe, in.License, in.Created)
	if err != nil {
		return nil, err
	}
	cfg := &v1.ConfigFile{
		Architecture: p.Arch,
		OS:           p.OS,
		Created:      v1.Time{Time: in.Created},
		RootFS:       v1.RootFS{Type: "layers"},
		Config: v1.Config{
			Entrypoint: []string{ImageBinary},
			Cmd:        []string{"serve"},
			Env: []string{
				"PATH=/usr/local/bin",
				"HOME=" + ImageDataDir,
				"SSL_CERT_FILE=" + ImageCABundle,
				"TROVE_DATA_DIR=" + ImageDataDir,
				"TROVE_LISTEN=:" + ImagePort,
			},
			User:         fmt.Sprintf("%d:%d", ImageUID, ImageGID),
			WorkingDir:   ImageDataDir,
			ExposedPorts: map[string]struct{}{ImagePort + "/tcp": {}},
			Volumes:      map[string]struct{}{ImageDataDir: {}},
			Labels:       ImageLabels(in.Version, in.Revision, in.Created),
			StopSignal:   "SIGTERM",
		},
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, err
	}
	var adds []mutate.Addendum
	for _, l := range []struct {
		data []byte
		by   string
	}{{base, "trove-release: base (CA certificates, user trove)"}, {app, "trove-release: " + ImageBinary}} {
		data := l.data
		layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(data)), nil
		}, tarball.WithMediaType(types.OCILayer))
		if err != nil {
			return nil, err
		}
		adds = append(adds, mutate.Addendum{Layer: layer, History: v1.History{
			Created: v1.Time{Time: in.Created}, CreatedBy: l.by,
		}})
	}
	return mutate.Append(img, adds...)
}

// writeImage writes an OCI image layout at dir holding one multi-platform
// image index, tagged with the version, of an image per linux binary.
func writeImage(dir string, in ImageInput) error {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	platforms := slices.SortedFunc(maps.Keys(in.Binaries), func(a, b Platform) int {
		return strings.Compare(a.String(), b.String())
	})
	for _, p := range platforms {
		exe, err := os.ReadFile(in.Binaries[p])
		if err != nil {
			return err
		}
		img, err := Image(in, p, exe)
		if err != nil {
			return fmt.Errorf("image for %s: %w", p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add: img,
			Descriptor: v1.Descriptor{
				MediaType: types.OCIManifestSchema1,
				Platform:  &v1.Platform{OS: p.OS, Architecture: p.Arch},
			},
		})
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{RefNameAnnotation: in.Version}))
}
