package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"trove.dev/trove/internal/client"
	"trove.dev/trove/internal/registry"
)

func publishCommand() *command {
	return &command{
		name: "publish", args: "--namespace NS DIR", minArgs: 1, maxArgs: 1, client: true,
		summary: "Publish the provider release in a goreleaser dist directory (needs publish on the namespace).",
		examples: []string{
			"trove publish --namespace acme ./dist",
			"TROVE_ADDR=https://registry.internal TROVE_TOKEN=$PUBLISH_TOKEN trove publish dist --namespace acme",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			namespace := fs.String("namespace", "", "`namespace` to publish into")
			return func(ctx context.Context, args []string) error {
				if *namespace == "" {
					return usagef("--namespace is required")
				}
				rel, err := findRelease(args[0])
				if err != nil {
					return err
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				files := make([]client.PublishFile, 0, len(rel.paths))
				var total int64
				for _, p := range rel.paths {
					files = append(files, client.FileFromPath(p))
					if fi, err := os.Stat(p); err == nil {
						total += fi.Size()
					}
				}
				fmt.Fprintf(cl.stderr, "Uploading %s/%s %s to %s: %d files, %s\n", *namespace, rel.typ, rel.version, c.Addr(), len(files), size(total))
				res, err := c.PublishProvider(ctx, *namespace, rel.typ, rel.version, files)
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
	paths        []string // SHA256SUMS, its .sig, the manifest if any, then the zips
}

const (
	namePrefix = "terraform-provider-"
	sumsSuffix = "_SHA256SUMS"
)

// findRelease scans dir (not recursively) for exactly one
// terraform-provider-<type>_<version>_SHA256SUMS and the files of that
// release, in upload order.
func findRelease(dir string) (distRelease, error) {
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
	rel := distRelease{typ: typ, version: version, paths: []string{filepath.Join(dir, sumsName)}}

	sig := sumsName + ".sig"
	if !regular[sig] {
		return distRelease{}, fmt.Errorf("missing %s in %s: sign SHA256SUMS with gpg --detach-sign (gpg --local-user KEY_ID --detach-sign %s)", sig, dir, sumsName)
	}
	rel.paths = append(rel.paths, filepath.Join(dir, sig))

	base := namePrefix + typ + "_" + version + "_"
	if manifest := base + "manifest.json"; regular[manifest] {
		rel.paths = append(rel.paths, filepath.Join(dir, manifest))
	}
	zips := 0
	for _, n := range names {
		if strings.HasPrefix(n, base) && strings.HasSuffix(n, ".zip") {
			rel.paths = append(rel.paths, filepath.Join(dir, n))
			zips++
		}
	}
	if zips == 0 {
		return distRelease{}, fmt.Errorf("no %s*.zip packages in %s", base, dir)
	}
	return rel, nil
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
