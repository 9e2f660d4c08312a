package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"
)

// TestInstallFromTrove is the story of a provider author and a user: the
// author sets up a namespace, a key and a token, publishes two versions
// with `trove publish`, and terraform installs and runs the provider.
func TestInstallFromTrove(t *testing.T) {
	requireTerraform(t)
	srv := startTrove(t, filepath.Join(t.TempDir(), "data"))
	key, publishToken := setupNamespace(t, srv)

	releases := map[string]*dist{}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		releases[v] = packageRelease(t, key, releaseSpec{Version: v})
		out := publish(t, srv, publishToken, releases[v])
		if !strings.Contains(out, "Published") || !strings.Contains(out, v) {
			t.Errorf("trove publish %s printed %q, want it to report the published version", v, out)
		}
	}
	rel := releases["1.1.0"]

	forEachClient(t, func(t *testing.T, client string) {
		tf := newClient(t, client, srv, "") // public reads need no credentials
		dir := writeProject(t, srv, "1.1.0", "from-trove")
		res := tf.mustRun(t, dir, "init", "-input=false")
		want := tf.installedLine(fmt.Sprintf("%s/%s/%s", srv.Host, namespace, providerType), "1.1.0", key.KeyID)
		if !strings.Contains(res.Flat, want) {
			t.Errorf("terraform init output lacks %q:\n%s", want, res.Output)
		}

		lock := readLock(t, srv, dir)
		if lock.Version != "1.1.0" {
			t.Errorf("lock file version = %q, want 1.1.0", lock.Version)
		}
		h1, err := dirhash.HashZip(rel.path(rel.zipName(hostPlatform)), dirhash.Hash1)
		if err != nil {
			t.Fatal(err)
		}
		wantHashes := []string{h1}
		for line := range strings.Lines(string(rel.sums(t))) {
			digest, _, _ := strings.Cut(line, "  ")
			wantHashes = append(wantHashes, "zh:"+digest)
		}
		slices.Sort(wantHashes)
		if !slices.Equal(lock.Hashes, wantHashes) {
			t.Errorf("lock file hashes = %q\nwant the h1: of the %s package and a zh: for every line of SHA256SUMS: %q", lock.Hashes, hostPlatform, wantHashes)
		}

		applyAndCheck(t, tf, dir, "from-trove")
	})

	t.Run("constraint picks the newest matching version", func(t *testing.T) {
		// With credentials this time: terraform then sends a read token,
		// which the public endpoints must accept too.
		tf := newTerraform(t, srv, createToken(t, srv, "read"))
		dir := writeProject(t, srv, "~> 1.0", "newest")
		res := tf.mustRun(t, dir, "init", "-input=false")
		want := fmt.Sprintf("Installed %s/%s/%s v1.1.0", srv.Host, namespace, providerType)
		if !strings.Contains(res.Flat, want) {
			t.Errorf("terraform init output lacks %q:\n%s", want, res.Output)
		}
		if lock := readLock(t, srv, dir); lock.Version != "1.1.0" {
			t.Errorf("~> 1.0 locked version %q, want 1.1.0", lock.Version)
		}
	})

	t.Run("versions list both versions for both platforms", func(t *testing.T) {
		doc := getVersions(t, srv)
		platforms := []string{hostPlatform, otherPlatform}
		slices.Sort(platforms)
		want := map[string][]string{"1.0.0": platforms, "1.1.0": platforms}
		if got := doc.platforms(); !reflect.DeepEqual(got, want) {
			t.Errorf("versions document lists %v, want %v", got, want)
		}
		for _, v := range doc.Versions {
			if !slices.Equal(v.Protocols, []string{"5.0"}) {
				t.Errorf("version %s has protocols %q, want [5.0] from the manifest", v.Version, v.Protocols)
			}
		}
	})

	t.Run("identical re-publish changes nothing", func(t *testing.T) {
		versionsBefore := getVersions(t, srv)
		apiPath := fmt.Sprintf("/api/v1/namespaces/%s/providers/%s", namespace, providerType)
		apiBefore := apiJSON(t, srv, apiPath)
		out := publish(t, srv, publishToken, rel)
		if !strings.Contains(out, "already published") {
			t.Errorf("re-publishing identical 1.1.0 printed %q, want it to say it was already published", out)
		}
		if after := getVersions(t, srv); !reflect.DeepEqual(after, versionsBefore) {
			t.Errorf("versions document changed:\nbefore %+v\nafter  %+v", versionsBefore, after)
		}
		if after := apiJSON(t, srv, apiPath); !reflect.DeepEqual(after, apiBefore) {
			t.Errorf("provider in the API changed:\nbefore %v\nafter  %v", apiBefore, after)
		}
	})

	t.Run("download URLs", func(t *testing.T) {
		testDownloadURLs(t, srv, rel, key.KeyID)
	})
}

// testDownloadURLs checks the download document of rel's host platform and
// the signed URLs in it, fetched without any credentials as the clients do.
func testDownloadURLs(t *testing.T, srv *troveServer, rel *dist, keyID string) {
	goos, goarch, _ := strings.Cut(hostPlatform, "_")
	doc, docResp := getDownload(t, srv, rel.Version, hostPlatform)
	zipBytes := rel.read(t, rel.zipName(hostPlatform))
	if doc.OS != goos || doc.Arch != goarch || doc.Filename != rel.zipName(hostPlatform) || doc.SHASum != sha256Hex(zipBytes) {
		t.Errorf("download document: os %q arch %q filename %q shasum %q; want %q %q %q %q",
			doc.OS, doc.Arch, doc.Filename, doc.SHASum, goos, goarch, rel.zipName(hostPlatform), sha256Hex(zipBytes))
	}
	if keys := doc.SigningKeys.GPGPublicKeys; len(keys) != 1 || keys[0].KeyID != keyID {
		t.Errorf("download document signing keys = %+v, want the one key %s", keys, keyID)
	}

	files := []struct {
		name, url string
		want      []byte
	}{
		{"download_url", doc.DownloadURL, zipBytes},
		{"shasums_url", doc.SHASumsURL, rel.sums(t)},
		{"shasums_signature_url", doc.SHASumsSignatureURL, rel.read(t, rel.sigName())},
	}
	for _, f := range files {
		r := srv.get(t, docResp.resolve(t, f.url))
		if r.Status != http.StatusOK {
			t.Errorf("GET %s without credentials: status %d, want 200: %s", f.name, r.Status, r.Body)
			continue
		}
		if !bytes.Equal(r.Body, f.want) {
			t.Errorf("GET %s: %d bytes with SHA-256 %s, want %d bytes with %s", f.name, len(r.Body), sha256Hex(r.Body), len(f.want), sha256Hex(f.want))
		}
	}

	zipURL := docResp.resolve(t, doc.DownloadURL)
	head := srv.do(t, http.MethodHead, zipURL, nil)
	if head.Status != http.StatusOK || head.Header.Get("Content-Length") != strconv.Itoa(len(zipBytes)) {
		t.Errorf("HEAD download_url: status %d, Content-Length %q; want 200 and %d", head.Status, head.Header.Get("Content-Length"), len(zipBytes))
	}
	ranged := srv.do(t, http.MethodGet, zipURL, http.Header{"Range": {"bytes=100-199"}})
	if ranged.Status != http.StatusPartialContent || !bytes.Equal(ranged.Body, zipBytes[100:200]) {
		t.Errorf("GET download_url with Range bytes=100-199: status %d, %d bytes; want 206 and bytes 100-199 of the zip", ranged.Status, len(ranged.Body))
	}

	// Every part of a signed URL is bound by its signature.
	u, err := url.Parse(zipURL)
	if err != nil {
		t.Fatal(err)
	}
	sumsDigest := sha256Hex(rel.sums(t))
	tampered := map[string]func(u *url.URL){
		"signature changed": func(u *url.URL) {
			q := u.Query()
			sig := []byte(q.Get("signature"))
			if sig[0] == 'A' {
				sig[0] = 'B'
			} else {
				sig[0] = 'A'
			}
			q.Set("signature", string(sig))
			u.RawQuery = q.Encode()
		},
		"expiry extended": func(u *url.URL) {
			q := u.Query()
			exp, err := strconv.ParseInt(q.Get("expires"), 10, 64)
			if err != nil {
				t.Fatalf("download_url %s has no numeric expires parameter", zipURL)
			}
			q.Set("expires", strconv.FormatInt(exp+3600, 10))
			u.RawQuery = q.Encode()
		},
		"another digest": func(u *url.URL) {
			u.Path = strings.Replace(u.Path, doc.SHASum, sumsDigest, 1)
		},
		"another file name": func(u *url.URL) {
			u.Path = strings.Replace(u.Path, doc.Filename, rel.sumsName(), 1)
		},
	}
	for name, change := range tampered {
		v := *u
		change(&v)
		if v.String() == zipURL {
			t.Fatalf("%s: the URL did not change (%s)", name, zipURL)
		}
		if r := srv.get(t, v.String()); r.Status != http.StatusForbidden {
			t.Errorf("%s: GET %s: status %d, want 403", name, v.String(), r.Status)
		}
	}
}
