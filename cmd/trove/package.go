package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"trove.dev/trove/internal/providerdocs"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/signing"
)

// passphraseEnv holds the passphrase of the key --key-file names.
const passphraseEnv = "TROVE_SIGNING_PASSPHRASE"

// maxSigningKeyFileBytes bounds what is read of --key-file.
const maxSigningKeyFileBytes = signing.MaxPrivateKeyBytes

func providerPackage() *command {
	return &command{
		name: "provider package",
		args: "--version VERSION (--binary OS_ARCH=FILE ... | --binaries DIR) (--key-file FILE | --gpg-key ID | --unsigned) [--type TYPE] [--protocols VERSIONS | --manifest FILE] [--docs DIR] [--out DIR] [--clean]",
		summary: "Package go build's provider executables as a signed release in goreleaser's layout, " +
			"ready for trove publish (no goreleaser needed).",
		examples: []string{
			"GOOS=linux GOARCH=amd64 go build -o build/linux_amd64/ . && GOOS=darwin GOARCH=arm64 go build -o build/darwin_arm64/ .",
			"trove provider package --version 1.2.3 --binaries build --key-file release-key.asc",
			"trove provider package --version 1.2.3 --binary linux_amd64=./build/linux_amd64/terraform-provider-example --gpg-key releases@acme.example",
			"trove provider package --version 2.0.0-rc.1 --binaries build --protocols 6.0 --unsigned --out dist --clean",
			"trove provider package --version 1.2.3 --binaries build --key-file release-key.asc --docs .   # with the docs/ that tfplugindocs generated",
			"trove publish --namespace acme dist",
		},
		maxArgs: 0,
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			var binaries binaryFlags
			version := fs.String("version", "", "release `version`, canonical semver without \"v\" (1.2.3, 1.2.3-rc.1)")
			typ := fs.String("type", "", "provider `type` (default: from the executables' names, terraform-provider-<type>)")
			fs.Var(&binaries, "binary", "the executable go build wrote for one platform, as `OS_ARCH=FILE` (linux_amd64=build/terraform-provider-example); repeat per platform")
			dir := new(string)
			fs.Func("binaries", "`directory` with one folder per platform named <os>_<arch>, each holding the executable (go build -o DIR/<os>_<arch>/ .)", func(v string) error {
				*dir = v
				return checkDir(v)
			})
			protocols := fs.String("protocols", "", "plugin protocol `versions`, comma-separated, e.g. 6.0 "+
				"(default: those of ./"+projectManifest+" when it exists, else 5.0)")
			manifest := fs.String("manifest", "", "the provider's "+projectManifest+" `file` (default: ./"+projectManifest+" when it exists)")
			docsDir := fs.String("docs", "", "add the documentation in `directory` (the provider's repository with docs/ or website/docs/, or the docs directory) "+
				"as terraform-provider-<type>_<version>_docs.tar.gz, listed in SHA256SUMS and so covered by the signature")
			out := fs.String("out", "dist", "output `directory`; it must not exist or be empty")
			clean := fs.Bool("clean", false, "first remove the terraform-provider-* files of an earlier release from the output directory (which must hold nothing else)")
			gpgKey := fs.String("gpg-key", "", "sign with gpg's secret `key` (ID, fingerprint or user ID): gpg --batch --local-user KEY --detach-sign")
			keyFile := fs.String("key-file", "", "sign in Go with the ASCII-armored private key in `file` (gpg --armor --export-secret-keys KEY); "+
				"a protected key's passphrase comes from $"+passphraseEnv+", else from a prompt on the terminal")
			unsigned := fs.Bool("unsigned", false, "write no .sig: for a namespace whose releases Trove signs with its own key")
			return func(ctx context.Context, _ []string) error {
				if *version == "" {
					return usagef("--version is required")
				}
				if n := countSet(*gpgKey != "", *keyFile != "", *unsigned); n != 1 {
					return usagef("choose exactly one of --key-file FILE, --gpg-key ID and --unsigned")
				}
				if (*dir == "") == (len(binaries) == 0) {
					return usagef("give the executables either with --binary OS_ARCH=FILE (repeated) or with --binaries DIR, not both and not neither")
				}
				if *protocols != "" && *manifest != "" {
					return usagef("give --protocols or --manifest, not both")
				}
				if _, err := registry.ParseVersion(*version); err != nil {
					return usagef("%s", registry.Message(err))
				}
				exes := []release.Executable(binaries)
				if *dir != "" {
					var err error
					if exes, err = scanBinaries(*dir); err != nil {
						return err
					}
				}
				providerType, err := packageType(*typ, exes)
				if err != nil {
					return err
				}
				manifestData, source, err := packageManifest(*protocols, *manifest)
				if err != nil {
					return err
				}
				var docs []byte
				if *docsDir != "" {
					if docs, err = packageDocs(*docsDir); err != nil {
						return err
					}
				}
				if *clean {
					if err := cleanOut(*out, exes); err != nil {
						return err
					}
				} else if entries, err := os.ReadDir(*out); err == nil && len(entries) > 0 {
					return usagef("%s is not empty: pass --clean to empty it first, or pick another --out", *out)
				}

				spec := release.PackSpec{Type: providerType, Version: *version, Executables: exes, Manifest: manifestData, Docs: docs}
				var signer interface {
					SignDetached([]byte) ([]byte, error)
					PublicKey() registry.SigningKey
				}
				switch {
				case *keyFile != "":
					if signer, err = readSigningKey(*keyFile, cl); err != nil {
						return err
					}
				case *gpgKey != "":
					if signer, err = signing.NewGPGSigner(ctx, *gpgKey); err != nil {
						return err
					}
				}
				if signer != nil {
					spec.Sign = signer.SignDetached
				}
				packed, err := release.Pack(*out, spec)
				if err != nil {
					return err
				}
				printPacked(cl.stdout, *out, spec, packed, source, signer)
				return nil
			}
		},
	}
}

// binaryFlags collects repeated --binary OS_ARCH=FILE flags.
type binaryFlags []release.Executable

func (b *binaryFlags) String() string { return "" }

func (b *binaryFlags) Set(s string) error {
	platform, path, ok := strings.Cut(s, "=")
	goos, goarch, ok2 := strings.Cut(platform, "_")
	if !ok || !ok2 || path == "" || goos == "" || goarch == "" {
		return fmt.Errorf("want OS_ARCH=FILE, e.g. linux_amd64=build/terraform-provider-example, got %q", s)
	}
	for _, e := range *b {
		if e.OS == goos && e.Arch == goarch {
			return fmt.Errorf("%s is given twice (%s and %s): give one executable per platform", platform, e.Path, path)
		}
	}
	*b = append(*b, release.Executable{OS: goos, Arch: goarch, Path: path})
	return nil
}

func countSet(bs ...bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// scanBinaries reads the --binaries layout: one folder per platform named
// <os>_<arch>, each holding one terraform-provider-* file (or one file of
// any name). Entries whose names start with "." are skipped.
func scanBinaries(dir string) ([]release.Executable, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var exes []release.Executable
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		goos, goarch, ok := strings.Cut(e.Name(), "_")
		if !e.IsDir() || !ok {
			return nil, fmt.Errorf("%s is not a folder named <os>_<arch>: --binaries wants one folder per platform (go build -o %s/linux_amd64/ .)", sub, dir)
		}
		if err := release.CheckPlatform(goos, goarch); err != nil {
			return nil, fmt.Errorf("folder %s: %s", sub, registry.Message(err))
		}
		files, err := os.ReadDir(sub)
		if err != nil {
			return nil, err
		}
		var all, named []string
		for _, f := range files {
			if strings.HasPrefix(f.Name(), ".") || f.IsDir() {
				continue
			}
			all = append(all, f.Name())
			if strings.HasPrefix(f.Name(), namePrefix) {
				named = append(named, f.Name())
			}
		}
		pick := named
		if len(named) == 0 {
			pick = all
		}
		if len(pick) != 1 {
			return nil, fmt.Errorf("folder %s holds %d candidate executables (%s); keep only the provider built for %s", sub, len(pick), strings.Join(pick, ", "), e.Name())
		}
		exes = append(exes, release.Executable{OS: goos, Arch: goarch, Path: filepath.Join(sub, pick[0])})
	}
	if len(exes) == 0 {
		return nil, fmt.Errorf("%s holds no <os>_<arch> folders: build into it with GOOS=linux GOARCH=amd64 go build -o %s/linux_amd64/ .", dir, dir)
	}
	return exes, nil
}

// packageType returns the provider type: typ when given, else the one
// every executable's name shows (terraform-provider-<type>, optionally
// followed by "_..." and ".exe"). A name that shows another type than typ
// is an error: the wrong provider was likely built.
func packageType(typ string, exes []release.Executable) (string, error) {
	if typ != "" {
		norm, err := registry.ParseProviderType(typ)
		if err != nil {
			return "", usagef("--type: %s", registry.Message(err))
		}
		if norm != typ {
			return "", usagef("--type: write the provider type in lower case: %s", norm)
		}
	}
	found := typ
	for _, e := range exes {
		base := strings.TrimSuffix(filepath.Base(e.Path), ".exe")
		named, ok := strings.CutPrefix(base, namePrefix)
		named, _, _ = strings.Cut(named, "_")
		if !ok || named == "" {
			if typ == "" {
				return "", usagef("cannot tell the provider type from %s: name the executable terraform-provider-<type> (go build -o), or pass --type", e.Path)
			}
			continue
		}
		if found == "" {
			found = named
		}
		if named != found {
			if typ != "" {
				return "", usagef("%s is named for provider %q, but --type is %q: is it the right executable?", e.Path, named, typ)
			}
			return "", usagef("the executables are named for different providers (%q and %q); package one provider at a time, or pass --type", found, named)
		}
	}
	if _, err := registry.ParseProviderType(found); err != nil {
		return "", usagef("%s; pass --type", registry.Message(err))
	}
	return found, nil
}

// packageManifest returns the manifest document to write and says where
// its protocols came from: --manifest, --protocols, ./terraform-registry-manifest.json
// or the default 5.0. --protocols that contradict the project's manifest
// are an error: SHA256SUMS would list one thing and the repository say another.
func packageManifest(protocols, manifestFile string) ([]byte, string, error) {
	readManifest := func(path string) ([]byte, error) {
		data, err := readLimited(path, release.MaxManifestBytes)
		if err != nil {
			return nil, err
		}
		if _, err := release.ParseManifest(data); err != nil {
			return nil, fmt.Errorf("%s: %s", path, registry.Message(err))
		}
		return data, nil
	}
	if manifestFile != "" {
		data, err := readManifest(manifestFile)
		return data, manifestFile, err
	}
	project, err := readManifest(projectManifest)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		project = nil
	case err != nil:
		return nil, "", err
	}
	if protocols == "" {
		if project != nil {
			return project, projectManifest, nil
		}
		return release.ManifestJSON([]string{"5.0"}), "the default", nil
	}
	list := strings.Split(protocols, ",")
	for i := range list {
		list[i] = strings.TrimSpace(list[i])
	}
	data := release.ManifestJSON(list)
	if _, err := release.ParseManifest(data); err != nil {
		return nil, "", usagef("--protocols: %s", strings.TrimPrefix(registry.Message(err), "manifest "))
	}
	if project != nil {
		have, _ := release.ParseManifest(project)
		if !slices.Equal(have, list) {
			return nil, "", usagef("--protocols %s contradicts ./%s, which declares %s: edit the file, or drop --protocols",
				strings.Join(list, ","), projectManifest, strings.Join(have, ","))
		}
	}
	return data, "--protocols", nil
}

// readLimited reads path, refusing a file larger than limit bytes.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d KiB", path, limit>>10)
	}
	return data, nil
}

// cleanOut empties the output directory for --clean. It only ever removes
// files named terraform-provider-* directly in it (what a previous run
// wrote), and removes nothing when the directory holds anything else, is
// the current directory or one above it, or holds an executable to
// package: a mistyped --out must not cost a project its files.
func cleanOut(out string, exes []release.Executable) error {
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	if within(wd, abs) {
		return usagef("--clean would empty %s, which holds the current directory; pick a dedicated --out such as dist", out)
	}
	for _, e := range exes {
		if p, err := filepath.Abs(e.Path); err == nil && within(p, abs) {
			return usagef("--clean would delete %s, which is to be packaged; build into another folder than --out", e.Path)
		}
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), namePrefix) {
			return usagef("--clean only removes the %s* files of an earlier release, but %s also holds %s: empty it yourself, or pick another --out", namePrefix, out, e.Name())
		}
	}
	for _, e := range entries {
		if err := os.Remove(filepath.Join(abs, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// within reports whether path is dir or inside it (both absolute and clean).
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// readSigningKey reads --key-file; a protected key's passphrase comes from
// TROVE_SIGNING_PASSPHRASE, else from a prompt on the terminal.
func readSigningKey(path string, cl *cli) (*signing.KeyFileSigner, error) {
	data, err := readLimited(path, maxSigningKeyFileBytes)
	if err != nil {
		return nil, err
	}
	return signing.ReadKeyFile(data, func() ([]byte, error) {
		if pass := cl.getenv(passphraseEnv); pass != "" {
			return []byte(pass), nil
		}
		if cl.secret == nil {
			return nil, fmt.Errorf("the key in %s is protected by a passphrase: set %s (standard input is not a terminal to ask on)", path, passphraseEnv)
		}
		pass, err := cl.secret("Passphrase of the signing key in " + path + ": ")
		return []byte(pass), err
	})
}

// printPacked reports what was written and what to do next.
func printPacked(w io.Writer, out string, spec release.PackSpec, packed release.Packed, source string, signer interface {
	PublicKey() registry.SigningKey
}) {
	platforms := make([]string, 0, len(spec.Executables))
	for _, e := range spec.Executables {
		platforms = append(platforms, e.OS+"_"+e.Arch)
	}
	slices.Sort(platforms)
	fmt.Fprintf(w, "Packaged %s%s %s for %s into %s (protocols %s, from %s):\n",
		namePrefix, spec.Type, spec.Version, strings.Join(platforms, ", "), out, strings.Join(packed.Protocols, ", "), source)
	rows := make([]string, 0, len(packed.Files))
	for _, f := range packed.Files {
		rows = append(rows, "  "+f.Name+"\t"+size(f.Size))
	}
	_ = table(w, "  FILE\tSIZE", rows)
	if signer != nil {
		key := signer.PublicKey()
		fmt.Fprintf(w, "Signed by key %s (fingerprint %s); the namespace must have it: trove key add NAMESPACE --file <its public key>\n", key.KeyID, key.Fingerprint)
	} else {
		fmt.Fprintln(w, "Not signed (--unsigned): only a namespace whose releases Trove signs with its own key takes it")
	}
	fmt.Fprintf(w, "Publish it with: trove publish --namespace NAMESPACE %s\n", out)
}

// packageDocs packs the documentation of dir (providerdocs.Pack) and
// checks it with the registry's rules, so that a release never carries
// documentation the registry would refuse.
func packageDocs(dir string) ([]byte, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, usagef("--docs wants a directory (the provider's repository or its docs directory), not the file %s", dir)
	}
	var buf bytes.Buffer
	if err := providerdocs.Pack(dir, &buf); err != nil {
		return nil, err
	}
	if _, err := providerdocs.Parse(bytes.NewReader(buf.Bytes()), int64(buf.Len())); err != nil {
		return nil, fmt.Errorf("--docs %s: %s", dir, registry.Message(err))
	}
	return buf.Bytes(), nil
}
