// Command trove-release builds Trove's release artifacts into a directory
// (default dist/): trove_<version>_<os>_<arch>.tar.gz and a CycloneDX SBOM
// per platform, SHA256SUMS, and the OCI image layout image/ of the linux
// platforms, built without a container daemon. `make release` runs it;
// internal/dist does the work (see docs/install.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"trove.dev/trove/internal/dist"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("trove-release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.String("version", "", "release `version` without a leading v, e.g. 1.4.0 (required)")
	out := fs.String("out", "dist", "`directory` to write the release to (emptied first)")
	platforms := fs.String("platforms", "", "comma-separated os/arch `list` to build (default all: linux/amd64,linux/arm64,darwin/amd64,darwin/arm64)")
	ca := fs.String("ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "PEM `file` of the CA certificates put into the image")
	noImage := fs.Bool("no-image", false, "do not build the OCI image")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *version == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: trove-release -version 1.4.0 [-out dist] [-platforms linux/amd64,...] [-no-image]")
		return 2
	}
	opts := dist.Options{Root: ".", Version: *version, Out: *out, CABundle: *ca, NoImage: *noImage, Log: stderr}
	if *platforms != "" {
		for _, s := range strings.Split(*platforms, ",") {
			p, err := dist.ParsePlatform(strings.TrimSpace(s))
			if err != nil {
				fmt.Fprintln(stderr, "trove-release:", err)
				return 2
			}
			opts.Platforms = append(opts.Platforms, p)
		}
	}
	res, err := dist.Build(ctx, opts)
	if err != nil {
		fmt.Fprintln(stderr, "trove-release:", err)
		return 1
	}
	for _, f := range append(append(res.Archives, res.SBOMs...), res.Sums) {
		fmt.Fprintf(stdout, "%s/%s\n", *out, f)
	}
	if res.Image != "" {
		fmt.Fprintf(stdout, "%s/%s (OCI image layout, tag %s)\n", *out, res.Image, *version)
	}
	return 0
}
