package client

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// The provider network mirror protocol, which Terraform and OpenTofu speak
// to Trove's mirror: one document of versions and one of packages per
// version, for providers of any host (Trove's own and those its mirror
// fetches from upstream registries). The server's route is
// providers.RouteMirror (internal/protocol/providers); a test checks that
// they agree.
const (
	mirrorIndexRoute   = "/v1/mirror/{host}/{namespace}/{type}/index.json"
	mirrorVersionRoute = "/v1/mirror/{host}/{namespace}/{type}/{version}.json"
)

// MirrorArchive is one package of a provider version, as the network
// mirror lists it.
type MirrorArchive struct {
	Platform string   // "os_arch", such as "linux_amd64"
	URL      string   // absolute, signed: it needs no token
	Hashes   []string // "zh:" (the zip's SHA-256) and, once the server holds the package, "h1:"
}

// Held reports whether the server holds the package: it lists the
// package's h1 hash only then (it computes it from the stored package).
func (a MirrorArchive) Held() bool {
	return slices.ContainsFunc(a.Hashes, func(h string) bool { return strings.HasPrefix(h, "h1:") })
}

// MirrorVersions returns the versions of the provider host/namespace/type
// that the server's network mirror lists (its index.json), in no
// particular order. With its upstream down, the mirror lists only the
// versions it holds a package of.
func (c *Client) MirrorVersions(ctx context.Context, host, namespace, typ string) ([]string, error) {
	var doc struct {
		Versions map[string]struct{} `json:"versions"`
	}
	if err := c.do(ctx, http.MethodGet, mirrorIndexRoute, params("host", host, "namespace", namespace, "type", typ), nil, nil, &doc); err != nil {
		return nil, err
	}
	versions := make([]string, 0, len(doc.Versions))
	for v := range doc.Versions {
		versions = append(versions, v)
	}
	return versions, nil
}

// MirrorArchives returns the packages of one version of a provider, as
// the server's network mirror lists them (its <version>.json), ordered by
// platform, with their URLs made absolute. For a mirrored provider this
// is when the server fetches and verifies the version's SHA256SUMS.
func (c *Client) MirrorArchives(ctx context.Context, host, namespace, typ, version string) ([]MirrorArchive, error) {
	var doc struct {
		Archives map[string]struct {
			URL    string   `json:"url"`
			Hashes []string `json:"hashes"`
		} `json:"archives"`
	}
	nameValues := params("host", host, "namespace", namespace, "type", typ, "version", version)
	if err := c.do(ctx, http.MethodGet, mirrorVersionRoute, nameValues, nil, nil, &doc); err != nil {
		return nil, err
	}
	docURL, err := c.apiURL(mirrorVersionRoute, nameValues, nil)
	if err != nil {
		return nil, err
	}
	base, err := url.Parse(docURL)
	if err != nil {
		return nil, err
	}
	archives := make([]MirrorArchive, 0, len(doc.Archives))
	for platform, a := range doc.Archives {
		// The protocol allows URLs relative to the version document.
		u, err := base.Parse(a.URL)
		if err != nil || u.Scheme != "https" && u.Scheme != "http" {
			return nil, fmt.Errorf("the mirror lists %q as the URL of the %s package of %s/%s/%s %s: not an HTTP URL", a.URL, platform, host, namespace, typ, version)
		}
		archives = append(archives, MirrorArchive{Platform: platform, URL: u.String(), Hashes: a.Hashes})
	}
	slices.SortFunc(archives, func(a, b MirrorArchive) int { return strings.Compare(a.Platform, b.Platform) })
	return archives, nil
}

// FetchMirrorPackage makes the server hold the package a: it downloads
// it through its URL, which makes the server fetch a mirrored package it
// does not hold yet from its upstream (the bytes stream through while the
// server checks them against the verified SHA256SUMS and stores them),
// and checks the bytes against a's zh: hash itself. The bytes are thrown
// away. The URL is signed, so no token is sent.
func (c *Client) FetchMirrorPackage(ctx context.Context, a MirrorArchive) error {
	return c.CopyMirrorPackage(ctx, a, io.Discard)
}

// CopyMirrorPackage is FetchMirrorPackage that also writes the package's
// bytes to w as they arrive (to count them, say); w sees a package that
// fails the check too, so it must not trust them.
func (c *Client) CopyMirrorPackage(ctx context.Context, a MirrorArchive, w io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.URL, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", c.userAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		err := decodeError(resp)
		if e, ok := err.(*Error); ok && len(e.Messages) > 0 {
			e.Messages[0] = "downloading the " + a.Platform + " package: " + e.Messages[0]
		}
		return err
	}
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(h, w), resp.Body); err != nil {
		return fmt.Errorf("downloading the %s package: %w (the server breaks a download off when the package does not match SHA256SUMS: its log says why)", a.Platform, err)
	}
	got := "zh:" + hex.EncodeToString(h.Sum(nil))
	if !slices.Contains(a.Hashes, got) {
		return fmt.Errorf("the %s package the server sent has checksum %s, which is not among the hashes the mirror lists (%s)", a.Platform, got, strings.Join(a.Hashes, ", "))
	}
	return nil
}
