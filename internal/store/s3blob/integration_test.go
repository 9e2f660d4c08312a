package s3blob_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/files"
	"trove.dev/trove/internal/publish"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/store/s3blob/s3test"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

// TestDownloads serves a blob through Trove's signed-URL handler in both
// download modes: redirect answers 302 to a presigned URL that a plain
// client follows to the bytes; proxy streams them with Range support. In
// both, a request without a valid Trove signature gets no blob and no
// redirect.
func TestDownloads(t *testing.T) {
	s := open(t, s3test.NewBucket(t))
	data := randomBytes(300_000, 7)
	d := digestOf(data)
	if err := s.Put(t.Context(), d, int64(len(data)), bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	const filename = "terraform-provider-example_1.0.0_linux_amd64.zip"
	signer := signedurl.New([]byte("0123456789abcdef0123456789abcdef"), 15*time.Minute)

	for _, redirect := range []bool{true, false} {
		mode := map[bool]string{true: "redirect", false: "proxy"}[redirect]
		t.Run(mode, func(t *testing.T) {
			mux := http.NewServeMux()
			files.New(files.Options{Blobs: s, Signer: signer, RedirectDownloads: redirect}).Register(mux)
			srv := httptest.NewServer(mux)
			defer srv.Close()
			signed := srv.URL + signer.Path(d, filename)

			var hops []int
			client := &http.Client{CheckRedirect: func(req *http.Request, via []*http.Request) error {
				hops = append(hops, req.Response.StatusCode)
				return nil
			}}
			resp, err := client.Get(signed)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || err != nil || !bytes.Equal(got, data) {
				t.Fatalf("GET %s: %s, %d bytes (%v), want 200 with the blob", signed, resp.Status, len(got), err)
			}
			wantHops := map[bool]int{true: 1, false: 0}[redirect]
			if len(hops) != wantHops || (redirect && (hops[0] != http.StatusFound || !strings.HasPrefix(resp.Request.URL.String(), s3test.Server(t).Endpoint))) {
				t.Errorf("redirects %v ending at %s; want %d (a 302 to the S3 endpoint in redirect mode)", hops, resp.Request.URL, wantHops)
			}

			if !redirect {
				req, _ := http.NewRequest(http.MethodGet, signed, nil)
				req.Header.Set("Range", "bytes=1000-1999")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				part, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(part, data[1000:2000]) {
					t.Errorf("Range GET: %s with %d bytes, want 206 with bytes 1000-1999", resp.Status, len(part))
				}
			}
			// Terraform sends a HEAD first; a presigned GET URL would
			// refuse it, so it is answered without a redirect.
			hops = nil
			head, err := client.Head(signed)
			if err != nil {
				t.Fatal(err)
			}
			head.Body.Close()
			if head.StatusCode != http.StatusOK || head.ContentLength != int64(len(data)) || len(hops) != 0 {
				t.Errorf("HEAD: %s, Content-Length %d, redirects %v; want 200 and %d without redirect", head.Status, head.ContentLength, hops, len(data))
			}

			u, _ := url.Parse(signed)
			q := u.Query()
			q.Set("signature", strings.Repeat("0", len(q.Get("signature"))))
			u.RawQuery = q.Encode()
			noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			for name, target := range map[string]string{
				"bad signature": u.String(),
				"other file":    strings.Replace(signed, filename, "other.zip", 1),
				"unsigned":      srv.URL + signedurl.PathPrefix + d + "/" + filename,
			} {
				resp, err := noRedirect.Get(target)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode < 400 || resp.Header.Get("Location") != "" || bytes.Contains(body, data[:100]) {
					t.Errorf("%s: %s (Location %q), want a refusal without redirect", name, resp.Status, resp.Header.Get("Location"))
				}
			}
		})
	}
}

// TestPublishWhenS3BecomesUnreachable cuts the connection to S3 in the
// middle of a publish (while the second of three archives uploads): the
// publish fails cleanly, no version is visible, no partial blob exists, and
// a retry once S3 is back succeeds.
func TestPublishWhenS3BecomesUnreachable(t *testing.T) {
	ctx := t.Context()
	opt := s3test.NewBucket(t)
	proxy := s3test.NewProxy(t, opt)
	opt.Endpoint = proxy.Endpoint
	blobs := open(t, opt)
	dir := t.TempDir()
	idx := sqlitetest.NewIndex(t)
	key := signingtest.NewKey(t, "acme")
	if err := idx.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	pub, err := signing.ParsePublicKey(key.ArmoredPublic)
	if err != nil {
		t.Fatal(err)
	}
	pub.Namespace = "acme"
	if err := idx.AddSigningKey(ctx, pub); err != nil {
		t.Fatal(err)
	}
	publisher := publish.New(publish.Options{Index: idx, Blobs: blobs, TempDir: filepath.Join(dir, "tmp")})
	const zipSize = 400_000
	// Incompressible executables make zips of about zipSize bytes, so
	// that a cut of the connection can land in the middle of one.
	rel := releasetest.Build(t, key, releasetest.Spec{
		Type: "example", Version: "1.0.0", Platforms: []string{"linux_amd64", "darwin_arm64", "windows_amd64"},
		Payload: string(randomBytes(zipSize, 100)),
	})

	// Blobs go up in order: SHA256SUMS, signature, then the zips. Cut
	// half-way through the second zip.
	proxy.CutAfter(int64(len(rel.Files[0].Data)+len(rel.Files[1].Data)) + zipSize*3/2)
	_, err = publisher.PublishProvider(ctx, "acme", "example", "1.0.0", rel.Source())
	if !registry.IsKind(err, registry.Unavailable) {
		t.Fatalf("publish while S3 became unreachable = %v, want kind unavailable", err)
	}
	if _, err := idx.GetProviderVersion(ctx, "acme", "example", "1.0.0"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("version visible after the failed publish: %v", err)
	}
	proxy.Restore()
	// Whatever reached the bucket is complete and correct: blobs of a
	// failed publish may stay (unreferenced), partial ones may not.
	var stored []string
	if err := blobs.Walk(ctx, func(digest string, size int64) error {
		b, err := blobs.Open(ctx, digest)
		if err != nil {
			return err
		}
		defer b.Close()
		content, err := io.ReadAll(b.Content)
		if err != nil {
			return err
		}
		if digestOf(content) != digest || int64(len(content)) != size {
			t.Errorf("blob %s holds %d bytes of another digest after the cut", digest, len(content))
		}
		stored = append(stored, digest)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i, f := range rel.Files {
		// The cut came after the first zip, so that this test covers a
		// publish failing half-way, and during the second.
		if want := i < 3; slices.Contains(stored, digestOf(f.Data)) != want {
			t.Errorf("%s stored: %v, want %v", f.Name, !want, want)
		}
	}

	res, err := publisher.PublishProvider(ctx, "acme", "example", "1.0.0", rel.Source())
	if err != nil || !res.Created {
		t.Fatalf("retry after S3 came back = %+v, %v; want the version created", res, err)
	}
	v, err := idx.GetProviderVersion(ctx, "acme", "example", "1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	for _, pl := range v.Platforms {
		b, err := blobs.Open(ctx, pl.SHA256)
		if err != nil {
			t.Fatalf("blob of %s: %v", pl.Filename, err)
		}
		content, err := io.ReadAll(b.Content)
		b.Close()
		if err != nil || digestOf(content) != pl.SHA256 {
			t.Errorf("blob of %s reads back wrong: %v", pl.Filename, err)
		}
	}
}

// TestPutIsNotRetriedAfterItsReaderFails checks that a Put whose content
// reader fails returns that failure, not an SDK message about rewinding.
func TestPutIsNotRetriedAfterItsReaderFails(t *testing.T) {
	s := open(t, s3test.NewBucket(t))
	data := randomBytes(100_000, 8)
	boom := errors.New("disk on fire")
	err := s.Put(context.Background(), digestOf(data), int64(len(data)), io.MultiReader(bytes.NewReader(data[:50_000]), errReader{boom}))
	if !errors.Is(err, boom) {
		t.Errorf("Put = %v, want the reader's error", err)
	}
}
