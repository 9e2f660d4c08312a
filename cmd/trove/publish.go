package main

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"trove.dev/trove/client"
	"trove.dev/trove/internal/providerdocs"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/signing"
)

func publishCommand() *command {
	return &command{
		name: "publish", args: "--namespace NS [--manifest FILE] [--oidc-audience AUD] DIR", minArgs: 1, maxArgs: 1, client: true,
		summary: "Publish the provider release in a goreleaser dist directory (needs publish on the namespace).",
		examples: []string{
			"trove publish --namespace acme ./dist",
			"TROVE_ADDR=https://registry.internal TROVE_TOKEN=$PUBLISH_TOKEN trove publish dist --namespace acme",
			"trove publish dist --namespace acme   # in GitHub Actions or GitLab CI without a token: keyless, see docs/keyless.md",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			namespace := fs.String("namespace", "", "`namespace` to publish into")
			manifest := fs.String("manifest", "", "the provider's terraform-registry-manifest.json, when SHA256SUMS lists it but DIR lacks it "+
				"(default: the one in DIR's parent directory, goreleaser's project root)")
			cl.defineOIDCFlags(fs)
			return func(ctx context.Context, args []string) error {
				if *namespace == "" {
					return usagef("--namespace is required")
				}
				rel, err := findRelease(args[0], *manifest)
				if err != nil {
					return err
				}
				c, err := cl.publishClient(ctx, *namespace)
				if err != nil {
					return err
				}
				files := make([]client.PublishFile, 0, len(rel.files))
				var total int64
				var bar *progress
				for _, f := range rel.files {
					pf := client.FileFromPath(f.path)
					pf.Name = f.name
					open := pf.Open
					pf.Open = func() (io.ReadCloser, error) {
						rc, err := open()
						if err != nil {
							return nil, err
						}
						return readCloser{bar.fileReader(f.name, rc), rc}, nil
					}
					files = append(files, pf)
					if fi, err := os.Stat(f.path); err == nil {
						total += fi.Size()
					}
				}
				fmt.Fprintf(cl.stderr, "Uploading %s/%s %s to %s: %d files, %s\n", *namespace, rel.typ, rel.version, c.Addr(), len(files), size(total))
				bar = newProgress(cl, "Uploaded", total)
				res, err := c.PublishProvider(ctx, *namespace, rel.typ, rel.version, files)
				bar.finish()
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(res)
				}
				v := res.Version
				if !res.Created {
					fmt.Fprintf(cl.stdout, "%s/%s %s was already published with identical content; nothing changed\n", v.Namespace, v.Type, v.Version)
					return nil
				}
				fmt.Fprintf(cl.stdout, "Published %s/%s %s for %s\n", v.Namespace, v.Type, v.Version, strings.Join(platformNames(v.Platforms), ", "))
				return nil
			}
		},
	}
}

// distRelease is a provider release found in a dist directory.
type distRelease struct {
	typ, version string
	files        []distFile // SHA256SUMS, its .sig, the manifest and the documentation if any, then the zips
}

// distFile is a file of a release: the name it is uploaded under and
// where it is read from.
type distFile struct{ name, path string }

// projectManifest is the name of the manifest in a provider's repository
// (HashiCorp's provider template), which goreleaser renames to
// terraform-provider-<type>_<version>_manifest.json in SHA256SUMS.
const projectManifest = "terraform-registry-manifest.json"

const (
	namePrefix = "terraform-provider-"
	sumsSuffix = "_SHA256SUMS"
)

// findRelease scans dir (not recursively) for exactly one
// terraform-provider-<type>_<version>_SHA256SUMS and the files of that
// release, in upload order. A manifest that SHA256SUMS lists but dir
// lacks is taken from manifest, if given, else from the project's
// terraform-registry-manifest.json in dir's parent (see findManifest).
func findRelease(dir, manifest string) (distRelease, error) {
	if fi, err := os.Stat(dir); err != nil {
		return distRelease{}, err
	} else if !fi.IsDir() {
		return distRelease{}, fmt.Errorf("%s is not a directory: pass the goreleaser dist directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return distRelease{}, err
	}
	regular := make(map[string]bool)
	var names, sums []string // names is sorted: ReadDir sorts by name
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		fi, err := os.Stat(p) // follows symbolic links
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		regular[e.Name()] = true
		names = append(names, e.Name())
		if strings.HasPrefix(e.Name(), namePrefix) && strings.HasSuffix(e.Name(), sumsSuffix) {
			sums = append(sums, e.Name())
		}
	}
	switch len(sums) {
	case 0:
		return distRelease{}, fmt.Errorf("no %s*%s file in %s: point trove publish at the goreleaser dist directory of one release", namePrefix, sumsSuffix, dir)
	case 1:
	default:
		return distRelease{}, fmt.Errorf("found %d SHA256SUMS files in %s (%s): keep only the release to publish", len(sums), dir, strings.Join(sums, ", "))
	}
	sumsName := sums[0]
	typ, version, err := parseSumsName(sumsName)
	if err != nil {
		return distRelease{}, err
	}
	in := func(name string) distFile { return distFile{name: name, path: filepath.Join(dir, name)} }
	rel := distRelease{typ: typ, version: version, files: []distFile{in(sumsName)}}

	// Without a .sig the release goes up unsigned: the server signs it
	// with the namespace's managed key (trove key generate), or refuses
	// it with a message that names both ways to sign.
	if sig := sumsName + ".sig"; regular[sig] {
		if err := checkSignatureFile(filepath.Join(dir, sig)); err != nil {
			return distRelease{}, err
		}
		rel.files = append(rel.files, in(sig))
	}
	listed, err := readSums(filepath.Join(dir, sumsName))
	if err != nil {
		return distRelease{}, err
	}

	base := namePrefix + typ + "_" + version + "_"
	manifestName := base + "manifest.json"
	if !regular[manifestName] || manifest != "" {
		path, err := outsideManifest(dir, sumsName, manifestName, manifest)
		if err != nil {
			return distRelease{}, err
		}
		if path != "" {
			rel.files = append(rel.files, distFile{name: manifestName, path: path})
		}
	} else {
		rel.files = append(rel.files, in(manifestName))
	}
	docsNames := release.DocsNames(typ, version)
	for _, n := range docsNames {
		if regular[n] {
			rel.files = append(rel.files, in(n))
		}
	}
	zips := 0
	for _, n := range names {
		if strings.HasPrefix(n, base) && strings.HasSuffix(n, ".zip") && n != docsNames[1] {
			rel.files = append(rel.files, in(n))
			zips++
		}
	}
	if zips == 0 {
		return distRelease{}, fmt.Errorf("no %s*.zip packages in %s", base, dir)
	}
	if err := checkListed(dir, sumsName, base, listed, rel.files); err != nil {
		return distRelease{}, err
	}
	return rel, nil
}

// readSums reads and parses SHA256SUMS with the server's rules.
func readSums(path string) ([]release.Sum, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sums, err := release.ParseSHA256SUMS(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %s (goreleaser's checksum step writes it right: sha256sum, without -b, inside the dist directory)", path, registry.Message(err))
	}
	return sums, nil
}

// checkSignatureFile checks that the .sig at path is a binary detached
// signature, as the server requires, before anything is uploaded.
func checkSignatureFile(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Size() > signing.MaxSignatureBytes {
		return fmt.Errorf("%s is %s, not a detached signature of a few hundred bytes: sign SHA256SUMS with gpg --detach-sign", path, size(fi.Size()))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := signing.CheckSignatureShape(data); err != nil {
		return fmt.Errorf("%s: %s", path, registry.Message(err))
	}
	return nil
}

// checkListed checks the release's zips and its manifest against
// SHA256SUMS before any byte is sent, as the server would: every zip of
// the release that SHA256SUMS lists must be in the upload, every zip and
// the manifest in the upload must be listed with the digest of their
// bytes, and a zip's name must be a valid package name of this type and
// version.
func checkListed(dir, sumsName, base string, sums []release.Sum, files []distFile) error {
	listed := make(map[string]string, len(sums))
	for _, s := range sums {
		listed[s.Filename] = s.Digest
	}
	manifestName := base + "manifest.json"
	uploading := make(map[string]bool, len(files))
	for _, f := range files {
		uploading[f.name] = true
		isManifest := f.name == manifestName
		isDocs := release.IsDocsName(f.name)
		if !strings.HasSuffix(f.name, ".zip") && !isManifest && !isDocs {
			continue
		}
		if !isManifest && !isDocs {
			if _, err := release.ParsePackageFilename(f.name); err != nil {
				return fmt.Errorf("%s: %s", filepath.Join(dir, f.name), registry.Message(err))
			}
		}
		want, ok := listed[f.name]
		switch {
		case !ok && isManifest:
			return fmt.Errorf("%s is not listed in %s, and the server accepts only a manifest that SHA256SUMS covers: "+
				"rebuild the release so that the checksum step includes it, or remove it from %s to publish without a manifest",
				f.path, sumsName, dir)
		case !ok && isDocs:
			return fmt.Errorf("%s is not listed in %s, and the server accepts only documentation that SHA256SUMS covers: "+
				"rebuild the release with it (trove provider package --docs DIR), or remove it from %s and upload it after the publish with trove provider docs upload",
				f.path, sumsName, dir)
		case !ok:
			return fmt.Errorf("%s is not listed in %s: it is not part of this build; remove it or rebuild the release", f.name, sumsName)
		}
		got, err := fileSHA256(f.path)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("%s has checksum %s, but %s lists %s: the file changed after SHA256SUMS was written; rebuild the release (and sign it again)", f.path, got, sumsName, want)
		}
		if isDocs {
			if err := checkDocsFile(f.path); err != nil {
				return err
			}
		}
	}
	for _, s := range sums {
		if release.IsDocsName(s.Filename) && strings.HasPrefix(s.Filename, base) && !uploading[s.Filename] {
			return fmt.Errorf("%s lists %s, which is missing from %s: copy it there, or rebuild the release", sumsName, s.Filename, dir)
		}
		if strings.HasPrefix(s.Filename, base) && strings.HasSuffix(s.Filename, ".zip") && !release.IsDocsName(s.Filename) && !uploading[s.Filename] {
			return fmt.Errorf("%s lists %s, which is missing from %s: copy it there, or rebuild the release", sumsName, s.Filename, dir)
		}
	}
	return nil
}

// fileSHA256 returns the hex SHA-256 of the file at path.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return fmt.Sprintf("%x", h.Sum(nil)), nil
}

// parseSumsName reads type and version from
// terraform-provider-<type>_<version>_SHA256SUMS. Neither may contain "_".
func parseSumsName(name string) (typ, version string, err error) {
	middle := strings.TrimSuffix(strings.TrimPrefix(name, namePrefix), sumsSuffix)
	typ, version, ok := strings.Cut(middle, "_")
	if !ok || typ == "" || version == "" || strings.Contains(version, "_") {
		return "", "", fmt.Errorf("cannot read the provider type and version from %s: want %s<type>_<version>%s", name, namePrefix, sumsSuffix)
	}
	if _, err := registry.ParseProviderType(typ); err != nil {
		return "", "", fmt.Errorf("%s: %w", name, err)
	}
	if _, err := registry.ParseVersion(version); err != nil {
		return "", "", fmt.Errorf("%s: %w", name, err)
	}
	return typ, version, nil
}

// outsideManifest returns the file to upload as manifestName from outside
// dir: the one --manifest names (explicit), else, when SHA256SUMS lists
// manifestName but dir lacks it, the project's terraform-registry-manifest.json
// in dir's parent: goreleaser, configured as HashiCorp's provider template
// is, lists that file in SHA256SUMS under manifestName without copying it
// into dist/. It returns "" when neither applies (an unreadable SHA256SUMS
// included: the server then says what is wrong with it), and an error
// when the file is missing or its SHA-256 is not the listed one.
func outsideManifest(dir, sumsName, manifestName, explicit string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, sumsName))
	if err != nil {
		return "", err
	}
	var want string
	if sums, err := release.ParseSHA256SUMS(data); err == nil {
		if i := slices.IndexFunc(sums, func(s release.Sum) bool { return s.Filename == manifestName }); i >= 0 {
			want = sums[i].Digest
		}
	}
	path := explicit
	switch {
	case explicit != "" && want == "":
		return "", fmt.Errorf("%s does not list %s: a manifest can only be published when SHA256SUMS covers it", sumsName, manifestName)
	case want == "":
		return "", nil
	case explicit == "":
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", err
		}
		path = filepath.Join(filepath.Dir(abs), projectManifest)
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("%s lists %s, which is not in %s, and there is no %s in %s: "+
				"copy the provider's %s into %s under that name, or pass --manifest FILE",
				sumsName, manifestName, dir, projectManifest, filepath.Dir(abs), projectManifest, dir)
		}
	}
	content, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	if got := fmt.Sprintf("%x", sha256.Sum256(content)); got != want {
		return "", fmt.Errorf("%s has checksum %s, but %s lists %s for %s: it is not the manifest this release was built with",
			path, got, sumsName, want, manifestName)
	}
	return path, nil
}

// checkDocsFile checks a release's documentation archive with the
// server's rules (providerdocs.Parse) before anything is uploaded.
func checkDocsFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if _, err := providerdocs.Parse(f, fi.Size()); err != nil {
		return fmt.Errorf("%s: %s", path, registry.Message(err))
	}
	return nil
}
