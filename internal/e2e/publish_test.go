package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/internal/signing/signingtest"
)

// TestPublishRejects publishes one bad release per subtest with the real
// CLI. Each must be refused with exit code 1 and a message naming the
// problem, and must leave no trace: the versions endpoint and the API's
// provider listing stay as they were, no staged upload remains, and none of
// its zips, SHA256SUMS or signature is in the blob store.
func TestPublishRejects(t *testing.T) {
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	key, publishToken := setupNamespace(t, srv)
	readToken := createToken(t, srv, "read")
	stranger := signingtest.NewKey(t, "stranger")

	published := packageRelease(t, key, releaseSpec{Version: "1.0.0"})
	publish(t, srv, publishToken, published)
	publishedShasum := published.zipDigest(t, hostPlatform)
	listingPath := "/api/v1/namespaces/" + namespace + "/providers"
	listingBefore := apiJSON(t, srv, listingPath)
	versionsBefore := getVersions(t, srv)

	edit := func(d *dist, t *testing.T, f func(sums string) string) {
		d.writeSums(t, []byte(f(string(d.sums(t)))))
		d.sign(t, key.Sign)
	}
	tests := []struct {
		name    string
		version string
		make    func(t *testing.T, spec releaseSpec) *dist
		token   string // default publishToken; "-" for none
		want    string // in the CLI's message
		status  int    // if set, what the server answers a direct POST of SHA256SUMS and .sig
	}{
		{
			name: "zip changed after SHA256SUMS", version: "2.0.1", want: "checksum",
			make: func(t *testing.T, spec releaseSpec) *dist {
				d := packageRelease(t, key, spec)
				p := d.path(d.zipName(hostPlatform))
				b, err := os.ReadFile(p)
				if err != nil {
					t.Fatal(err)
				}
				b[len(b)/2] ^= 0xff
				writeFile(t, d.Dir, filepath.Base(p), b)
				return d
			},
		},
		{
			name: "signed by a key not registered for the namespace", version: "2.0.2", want: "not registered",
			make: func(t *testing.T, spec releaseSpec) *dist {
				d := packageRelease(t, key, spec)
				d.sign(t, stranger.Sign)
				return d
			},
		},
		{
			name: "armored signature", version: "2.0.3", want: "armored",
			make: func(t *testing.T, spec releaseSpec) *dist {
				d := packageRelease(t, key, spec)
				d.sign(t, key.SignArmored)
				return d
			},
		},
		{
			name: "SHA256SUMS with the binary marker", version: "2.0.4", want: `"*"`,
			make: func(t *testing.T, spec releaseSpec) *dist {
				d := packageRelease(t, key, spec)
				edit(d, t, func(s string) string { return strings.ReplaceAll(s, "  ", " *") })
				return d
			},
		},
		{
			name: "SHA256SUMS with a blank line", version: "2.0.5", want: "blank line",
			make: func(t *testing.T, spec releaseSpec) *dist {
				d := packageRelease(t, key, spec)
				edit(d, t, func(s string) string { return strings.Replace(s, "\n", "\n\n", 1) })
				return d
			},
		},
		{
			name: "version with a v prefix", version: "v2.0.6", want: `leading "v"`, status: http.StatusBadRequest,
			make: func(t *testing.T, spec releaseSpec) *dist { return packageRelease(t, key, spec) },
		},
		{
			name: "zip without the provider executable", version: "2.0.7", want: "no provider executable",
			make: func(t *testing.T, spec releaseSpec) *dist {
				spec.Executable = "-"
				spec.Extra = []zipEntry{{Name: "README.md", Data: []byte("no executable here\n")}}
				return packageRelease(t, key, spec)
			},
		},
		{
			name: "executable inside a folder", version: "2.0.8", want: "inside a folder",
			make: func(t *testing.T, spec releaseSpec) *dist {
				spec.Executable = "terraform-provider-example_2.0.8/terraform-provider-example_v2.0.8"
				return packageRelease(t, key, spec)
			},
		},
		{
			name: "zip entry escaping with ../", version: "2.0.9", want: `".."`,
			make: func(t *testing.T, spec releaseSpec) *dist {
				spec.Extra = []zipEntry{{Name: "../escaped.txt", Data: []byte("outside\n")}}
				return packageRelease(t, key, spec)
			},
		},
		{
			// trove publish finds it before uploading; the server's own
			// refusal ("not uploaded") answers the direct POST.
			name: "zip listed in SHA256SUMS missing from the folder", version: "2.0.10", want: "which is missing from", status: http.StatusBadRequest,
			make: func(t *testing.T, spec releaseSpec) *dist {
				d := packageRelease(t, key, spec)
				if err := os.Remove(d.path(d.zipName(otherPlatform))); err != nil {
					t.Fatal(err)
				}
				return d
			},
		},
		{
			// trove publish finds both manifest cases before uploading
			// (its own message); TestOnlySignedFilesAreServed checks
			// the server's refusal.
			name: "manifest in the folder not listed in SHA256SUMS", version: "2.0.13",
			want: "_manifest.json is not listed in terraform-provider-example_2.0.13_SHA256SUMS, and the server accepts only a manifest that SHA256SUMS covers",
			make: func(t *testing.T, spec releaseSpec) *dist {
				d := packageRelease(t, key, spec)
				edit(d, t, func(s string) string {
					var kept []string
					for line := range strings.Lines(s) {
						if !strings.HasSuffix(strings.TrimSuffix(line, "\n"), "  "+d.manifestName()) {
							kept = append(kept, line)
						}
					}
					return strings.Join(kept, "")
				})
				return d
			},
		},
		{
			name: "manifest changed after SHA256SUMS", version: "2.0.14", want: "_manifest.json has checksum",
			make: func(t *testing.T, spec releaseSpec) *dist {
				d := packageRelease(t, key, spec)
				writeFile(t, d.Dir, d.manifestName(), []byte(`{"version":1,"metadata":{"protocol_versions":["6.0","5.0"]}}`))
				return d
			},
		},
		{
			name: "other bytes for a published version", version: "1.0.0", want: "already published with different content", status: http.StatusConflict,
			make: func(t *testing.T, spec releaseSpec) *dist {
				spec.Modified = fixedZipTime.Add(time.Hour)
				return packageRelease(t, key, spec)
			},
		},
		{
			name: "token with read scope only", version: "2.0.11", token: readToken, want: "does not grant", status: http.StatusForbidden,
			make: func(t *testing.T, spec releaseSpec) *dist { return packageRelease(t, key, spec) },
		},
		{
			name: "no token", version: "2.0.12", token: "-", want: "needs a token", status: http.StatusUnauthorized,
			make: func(t *testing.T, spec releaseSpec) *dist { return packageRelease(t, key, spec) },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := tt.make(t, releaseSpec{Version: tt.version})
			token := tt.token
			switch token {
			case "":
				token = publishToken
			case "-":
				token = ""
			}
			res := srv.cli(t, token, "publish", "--namespace", namespace, d.Dir)
			if res.Code != 1 || !strings.Contains(res.Stderr, "trove: ") || !strings.Contains(res.Stderr, tt.want) {
				t.Errorf("trove publish: exit %d, stderr %q\nwant exit 1 and a \"trove: \" message containing %q (stdout %q)", res.Code, res.Stderr, tt.want, res.Stdout)
			}
			if tt.status != 0 {
				status, body := rawPublish(t, srv, token, tt.version, d, d.sumsName(), d.sigName())
				if status != tt.status {
					t.Errorf("POST of SHA256SUMS and .sig: status %d, want %d: %s", status, tt.status, body)
				}
			}

			if got := getVersions(t, srv); !reflect.DeepEqual(got, versionsBefore) {
				t.Errorf("versions document changed:\nbefore %v\nafter  %v", versionsBefore.platforms(), got.platforms())
			}
			if tt.version == published.Version {
				if doc, _ := getDownload(t, srv, tt.version, hostPlatform); doc.SHASum != publishedShasum {
					t.Errorf("%s is now served with shasum %s, want the first publish's %s", tt.version, doc.SHASum, publishedShasum)
				}
			} else if r := srv.get(t, downloadURL(t, srv, strings.TrimPrefix(tt.version, "v"), hostPlatform)); r.Status != http.StatusNotFound {
				t.Errorf("download document of the refused %s: status %d, want 404: %s", tt.version, r.Status, r.Body)
			}
			if got := apiJSON(t, srv, listingPath); !reflect.DeepEqual(got, listingBefore) {
				t.Errorf("API provider listing changed:\nbefore %v\nafter  %v", listingBefore, got)
			}
			if left := stagedFiles(t, srv.DataDir); len(left) > 0 {
				t.Errorf("the refused publish left staged files behind: %q", left)
			}
			for name, digest := range releaseFileDigests(t, d) {
				if p := findBlob(t, srv.DataDir, digest); p != "" {
					t.Errorf("the refused publish stored %s as a blob: %s", name, p)
				}
			}
		})
	}
}

// releaseFileDigests maps the zips, SHA256SUMS and signature that d's
// folder holds to their SHA-256 digests: what a publish would store as
// blobs. (The manifest is left out: it is the same in every release.)
func releaseFileDigests(t *testing.T, d *dist) map[string]string {
	t.Helper()
	m := map[string]string{}
	names := []string{d.sumsName(), d.sigName()}
	for _, p := range d.Platforms {
		names = append(names, d.zipName(p))
	}
	for _, name := range names {
		if _, err := os.Stat(d.path(name)); err == nil {
			m[name] = sha256File(t, d.path(name))
		}
	}
	return m
}

// stagedFiles lists the files left in the data directory's staging area.
func stagedFiles(t *testing.T, dataDir string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dataDir, "tmp"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestConcurrentPublish races two `trove publish` processes that publish
// the same version with different bytes. Exactly one must win, the other
// must get a conflict, and what is served must be the winner's release.
func TestConcurrentPublish(t *testing.T) {
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	key, publishToken := setupNamespace(t, srv)

	for round := range 3 {
		version := fmt.Sprintf("3.0.%d", round)
		t.Run(version, func(t *testing.T) {
			rivals := []*dist{
				packageRelease(t, key, releaseSpec{Version: version, Platforms: []string{hostPlatform}}),
				packageRelease(t, key, releaseSpec{Version: version, Platforms: []string{hostPlatform}, Modified: fixedZipTime.Add(time.Hour)}),
			}
			if bytes.Equal(rivals[0].sums(t), rivals[1].sums(t)) {
				t.Fatal("the two releases have the same SHA256SUMS; the race would be an idempotent retry")
			}
			results := make([]cliResult, len(rivals))
			errs := make([]error, len(rivals))
			start := make(chan struct{})
			var wg sync.WaitGroup
			for i, d := range rivals {
				home := t.TempDir()
				wg.Go(func() {
					<-start
					results[i], errs[i] = srv.runCLI(t.Context(), home, publishToken, "publish", "--namespace", namespace, d.Dir)
				})
			}
			close(start)
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}

			winner := -1
			for i, r := range results {
				switch {
				case r.Code == 0 && winner == -1:
					winner = i
				case r.Code == 0:
					t.Fatalf("both publishes of %s with different bytes succeeded:\n%+v\n%+v", version, results[0], results[1])
				case r.Code != 1 || !strings.Contains(r.Stderr, "already published with different content"):
					t.Errorf("losing publish: exit %d, stderr %q; want exit 1 and a conflict", r.Code, r.Stderr)
				}
			}
			if winner == -1 {
				t.Fatalf("neither publish of %s succeeded:\n%+v\n%+v", version, results[0], results[1])
			}
			won := rivals[winner]

			doc, resp := getDownload(t, srv, version, hostPlatform)
			if want := won.zipDigest(t, hostPlatform); doc.SHASum != want {
				t.Errorf("served shasum %s, want the winner's %s", doc.SHASum, want)
			}
			if r := srv.get(t, resp.resolve(t, doc.DownloadURL)); r.Status != http.StatusOK || sha256Hex(r.Body) != doc.SHASum {
				t.Errorf("download_url: status %d, SHA-256 %s; want 200 and %s", r.Status, sha256Hex(r.Body), doc.SHASum)
			}
			if r := srv.get(t, resp.resolve(t, doc.SHASumsURL)); r.Status != http.StatusOK || !bytes.Equal(r.Body, won.sums(t)) {
				t.Errorf("shasums_url: status %d, body %q; want 200 and the winner's SHA256SUMS %q", r.Status, r.Body, won.sums(t))
			}
		})
	}
}
