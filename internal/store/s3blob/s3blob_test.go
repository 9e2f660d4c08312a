package s3blob_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/s3blob"
	"trove.dev/trove/internal/store/s3blob/s3test"
	"trove.dev/trove/internal/store/storetest"
)

func open(t testing.TB, opt s3blob.Options) *s3blob.Store {
	t.Helper()
	s, err := s3blob.Open(t.Context(), opt)
	if err != nil {
		t.Fatalf("Open(%+v): %v", opt, err)
	}
	return s
}

func digestOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// randomBytes returns n incompressible bytes determined by seed.
func randomBytes(n int, seed uint64) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	b := make([]byte, n)
	rand.NewChaCha8(key).Read(b)
	return b
}

func TestConformance(t *testing.T) {
	storetest.TestBlobs(t, func(t *testing.T) store.Blobs {
		return open(t, s3test.NewBucket(t))
	})
}

// TestConformanceUnderPrefix runs the suite on a store under a key prefix
// in a bucket that holds other objects, some named like blobs: the suite's
// Walk checks fail if any of them leaks in, or if the store touches them.
func TestConformanceUnderPrefix(t *testing.T) {
	stray := map[string]string{}
	d := digestOf([]byte("someone else's"))
	for _, k := range []string{
		"sha256/" + d[:2] + "/" + d,              // a registry at the bucket's root
		"registry/two/sha256/" + d[:2] + "/" + d, // a sibling prefix
		"registry/one-more/sha256/" + d[:2] + "/" + d,
		"registry/one/README",
	} {
		stray[k] = "stray"
	}
	storetest.TestBlobs(t, func(t *testing.T) store.Blobs {
		opt := s3test.NewBucket(t)
		putRaw(t, opt, stray)
		opt.Prefix = "/registry/one/"
		t.Cleanup(func() {
			keys := s3test.Keys(t, opt)
			for k := range stray {
				if !slices.Contains(keys, k) {
					t.Errorf("object %s outside the store's prefix is gone", k)
				}
			}
		})
		return open(t, opt)
	})
}

// putRaw writes objects behind the store's back.
func putRaw(t *testing.T, opt s3blob.Options, objects map[string]string) {
	t.Helper()
	client := s3test.Client(opt)
	for k, v := range objects {
		if _, err := client.PutObject(t.Context(), &s3.PutObjectInput{Bucket: &opt.Bucket, Key: aws.String(k), Body: strings.NewReader(v)}); err != nil {
			t.Fatalf("putting %s: %v", k, err)
		}
	}
}

func TestLayoutAndStrayObjects(t *testing.T) {
	opt := s3test.NewBucket(t)
	opt.Prefix = "trove"
	s := open(t, opt)
	data := []byte("provider zip bytes")
	d := digestOf(data)
	if err := s.Put(t.Context(), d, int64(len(data)), bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	if keys := s3test.Keys(t, opt); !slices.Equal(keys, []string{"trove/sha256/" + d[:2] + "/" + d}) {
		t.Fatalf("bucket holds %q, want only trove/sha256/%s/%s", keys, d[:2], d)
	}
	other := digestOf([]byte("misplaced"))
	if other[:2] == d[:2] {
		t.Fatal("test digests share a shard; pick other content")
	}
	putRaw(t, opt, map[string]string{
		"trove/sha256/README":                    "not a shard",
		"trove/sha256/" + d[:2] + "/notes.txt":   "not a digest",
		"trove/sha256/" + d[:2] + "/" + other:    "digest not matching its shard",
		"trove/sha256/zz/" + other:               "wrong shard",
		"trove/sha256/" + d[:2] + "/" + d + ".x": "not a digest",
		"trove/tmp/" + other:                     "not under sha256/",
	})
	var got []string
	if err := s.Walk(t.Context(), func(digest string, size int64) error {
		got = append(got, digest)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{d}) {
		t.Errorf("Walk reported %v, want only %s", got, d)
	}
}

func TestWalkPaginates(t *testing.T) {
	// More blobs than one ListObjectsV2 page (1000 keys) would take too
	// long to upload one by one; a listing with fewer keys per page is
	// what the paginator sees anyway, so check many blobs across shards.
	s := open(t, s3test.NewBucket(t))
	want := map[string]bool{}
	for i := range 40 {
		data := []byte{byte(i), byte(i >> 8)}
		want[digestOf(data)] = true
		if err := s.Put(t.Context(), digestOf(data), 2, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	if err := s.Walk(t.Context(), func(d string, size int64) error {
		if size != 2 {
			t.Errorf("Walk reported size %d of %s, want 2", size, d)
		}
		got[d] = true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("Walk reported %d blobs, want %d", len(got), len(want))
	}
}

func TestMultipart(t *testing.T) {
	opt := s3test.NewBucket(t)
	s := open(t, opt)
	// S3 wants parts of at least 5 MiB (except the last).
	s3blob.SetMultipart(s, 6<<20, 5<<20)
	data := randomBytes(13<<20+7, 1) // three parts
	d := digestOf(data)
	bad := bytes.Clone(data)
	bad[len(bad)-1] ^= 1

	tests := map[string]struct {
		size int64
		body io.Reader
	}{
		"last byte differs":        {int64(len(data)), bytes.NewReader(bad)},
		"one byte short":           {int64(len(data)), bytes.NewReader(data[:len(data)-1])},
		"one byte too many":        {int64(len(data)) - 1, bytes.NewReader(data)},
		"reader fails in part two": {int64(len(data)), io.MultiReader(bytes.NewReader(data[:7<<20]), failingReader{})},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := s.Put(t.Context(), d, tc.size, tc.body)
			if err == nil {
				t.Fatal("Put succeeded")
			}
			if _, err := s.Stat(t.Context(), d); !registry.IsKind(err, registry.NotFound) {
				t.Errorf("Stat after the failed Put = %v, want not found", err)
			}
			uploads, err := s3test.Client(opt).ListMultipartUploads(t.Context(), &s3.ListMultipartUploadsInput{Bucket: &opt.Bucket})
			if err != nil {
				t.Fatal(err)
			}
			if len(uploads.Uploads) != 0 {
				t.Errorf("%d multipart uploads left after the failed Put, want them aborted", len(uploads.Uploads))
			}
		})
	}

	if err := s.Put(t.Context(), d, int64(len(data)), bytes.NewReader(data)); err != nil {
		t.Fatalf("multipart Put: %v", err)
	}
	b, err := s.Open(t.Context(), d)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got, err := io.ReadAll(b.Content)
	if err != nil || !bytes.Equal(got, data) || b.Size != int64(len(data)) {
		t.Fatalf("multipart blob reads back %d bytes (Size %d, error %v), want the %d put", len(got), b.Size, err, len(data))
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("connection reset by peer") }

// withPayloadHash makes a raw client sign a request with hash as its
// payload hash, as the store does.
func withPayloadHash(hash string) func(*s3.Options) {
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("TestPayloadHash",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					return next.HandleFinalize(v4.SetPayloadHash(ctx, hash), in)
				}), "ComputePayloadHash", middleware.Before)
		})
	}
}

func unsignedPayload(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware)
}

// TestServerChecksAlone checks, on the server at hand, each server-side
// check the package comment relies on, without the others: a passing
// conformance suite alone could hide that one of them does not work (the
// other would catch the mismatch). Each refuses wrong content and a body
// cut short, and accepts the right content.
func TestServerChecksAlone(t *testing.T) {
	opt := s3test.NewBucket(t)
	client := s3test.Client(opt)
	data := randomBytes(200_000, 2)
	d := digestOf(data)
	bad := bytes.Clone(data)
	bad[len(bad)/2] ^= 1
	sum, _ := hex.DecodeString(d)
	checksum := base64.StdEncoding.EncodeToString(sum)

	checks := map[string]struct {
		checksum *string
		opt      func(*s3.Options)
	}{
		"signed payload hash":   {nil, withPayloadHash(d)},
		"x-amz-checksum-sha256": {&checksum, unsignedPayload},
	}
	bodies := map[string]struct {
		body func() io.Reader
		ok   bool
	}{
		"wrong content":  {func() io.Reader { return bytes.NewReader(bad) }, false},
		"body cut short": {func() io.Reader { return io.MultiReader(bytes.NewReader(data[:100_000]), failingReader{}) }, false},
		"right content":  {func() io.Reader { return bytes.NewReader(data) }, true},
	}
	for check, c := range checks {
		for body, b := range bodies {
			t.Run(check+"/"+body, func(t *testing.T) {
				key := check + "/" + body
				_, err := client.PutObject(t.Context(), &s3.PutObjectInput{
					Bucket: &opt.Bucket, Key: &key, Body: b.body(), ContentLength: aws.Int64(int64(len(data))),
					ChecksumSHA256: c.checksum,
				}, c.opt, func(o *s3.Options) { o.RetryMaxAttempts = 1 })
				_, headErr := client.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: &opt.Bucket, Key: &key})
				if !b.ok && (err == nil || headErr == nil) {
					t.Errorf("PutObject = %v, then HeadObject = %v; want both to fail", err, headErr)
				}
				if b.ok && (err != nil || headErr != nil) {
					t.Errorf("PutObject = %v, then HeadObject = %v; want both to succeed", err, headErr)
				}
			})
		}
	}
}

// TestVerifyingReaderWithholdsLastBytes checks the client-side layer: the
// reader yields all bytes of the right content, and fewer than the
// declared size, then an error, of wrong content.
func TestVerifyingReaderWithholdsLastBytes(t *testing.T) {
	data := randomBytes(100_000, 5)
	d := digestOf(data)
	last := bytes.Clone(data)
	last[len(last)-1] ^= 1
	first := bytes.Clone(data)
	first[0] ^= 1
	boom := errors.New("disk on fire")
	tests := map[string]struct {
		r    io.Reader
		size int64
		kind registry.Kind // of the error; -1: none
	}{
		"right content":           {bytes.NewReader(data), 100_000, -1},
		"last byte differs":       {bytes.NewReader(last), 100_000, registry.Invalid},
		"first byte differs":      {bytes.NewReader(first), 100_000, registry.Invalid},
		"one byte short":          {bytes.NewReader(data[:99_999]), 100_000, registry.Invalid},
		"one byte too many":       {bytes.NewReader(append(bytes.Clone(data), 0)), 100_000, registry.Invalid},
		"reader fails":            {io.MultiReader(bytes.NewReader(data[:50_000]), errReader{boom}), 100_000, registry.Internal},
		"reader fails at the end": {io.MultiReader(bytes.NewReader(data), errReader{boom}), 100_000, registry.Internal},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			vr := s3blob.NewVerifyingReader(&chunky{tc.r}, d, tc.size)
			got, err := io.ReadAll(vr)
			closeErr := vr.Close()
			if tc.kind < 0 {
				if err != nil || closeErr != nil || !bytes.Equal(got, data) {
					t.Fatalf("read %d bytes, error %v, Close %v; want all %d bytes", len(got), err, closeErr, len(data))
				}
				return
			}
			if int64(len(got)) >= tc.size {
				t.Errorf("the reader passed on %d bytes, want fewer than the declared %d", len(got), tc.size)
			}
			if err == nil || registry.KindOf(err) != tc.kind || registry.KindOf(closeErr) != tc.kind {
				t.Errorf("error %v, Close %v; want kind %v from both", err, closeErr, tc.kind)
			}
			if tc.kind == registry.Internal && !errors.Is(err, boom) {
				t.Errorf("error %v does not wrap the reader's", err)
			}
		})
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// chunky reads at most 4096 bytes at a time, as a network body does.
type chunky struct{ r io.Reader }

func (c *chunky) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), 4096)]) }

func TestPresignGet(t *testing.T) {
	s := open(t, s3test.NewBucket(t))
	ctx := t.Context()
	data := randomBytes(50_000, 3)
	d := digestOf(data)
	if err := s.Put(ctx, d, int64(len(data)), bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	const filename = "terraform-provider-example_1.0.0_linux_amd64.zip"
	u, err := s.PresignGet(ctx, d, filename, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || err != nil || !bytes.Equal(got, data) {
		t.Fatalf("GET of the presigned URL: %s, %d bytes (%v), want 200 with the blob's %d bytes", resp.Status, len(got), err, len(data))
	}
	if _, params, err := mime.ParseMediaType(resp.Header.Get("Content-Disposition")); err != nil || params["filename"] != filename {
		t.Errorf("Content-Disposition = %q, want attachment with filename %s", resp.Header.Get("Content-Disposition"), filename)
	}

	tampered := func(u string) string {
		parsed, _ := url.Parse(u)
		q := parsed.Query()
		q.Set("response-content-disposition", "attachment; filename=evil.exe")
		parsed.RawQuery = q.Encode()
		return parsed.String()
	}
	absent, err := s.PresignGet(ctx, digestOf([]byte("never stored")), "x.zip", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	short, err := s.PresignGet(ctx, d, filename, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond) // let the one-second URL expire
	for name, tc := range map[string]struct {
		url    string
		status int
	}{
		"absent blob":    {absent, http.StatusNotFound},
		"tampered query": {tampered(u), http.StatusForbidden},
		"expired":        {short, http.StatusForbidden},
		"still valid":    {u, http.StatusOK},
	} {
		t.Run(name, func(t *testing.T) {
			resp, err := http.Get(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("GET = %s, want %d", resp.Status, tc.status)
			}
		})
	}
	if _, err := s.PresignGet(ctx, "../"+d[3:], filename, time.Minute); !registry.IsKind(err, registry.Invalid) {
		t.Errorf("PresignGet of a malformed digest = %v, want kind invalid", err)
	}
}

func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestOpenErrors(t *testing.T) {
	good := s3test.NewBucket(t)
	with := func(f func(*s3blob.Options)) s3blob.Options {
		o := good
		f(&o)
		return o
	}
	tests := map[string]struct {
		opt  s3blob.Options
		kind registry.Kind
		want string
	}{
		"missing bucket":       {with(func(o *s3blob.Options) { o.Bucket += "-absent" }), registry.Unavailable, "does not exist"},
		"wrong secret key":     {with(func(o *s3blob.Options) { o.SecretKey += "x" }), registry.Unavailable, "refused access"},
		"unknown access key":   {with(func(o *s3blob.Options) { o.AccessKey = "nobody" }), registry.Unavailable, "refused access"},
		"unreachable endpoint": {with(func(o *s3blob.Options) { o.Endpoint = "http://" + closedPort(t) }), registry.Unavailable, "cannot reach"},
		"no bucket":            {with(func(o *s3blob.Options) { o.Bucket = "" }), registry.Invalid, "--s3-bucket"},
		"bucket with a slash":  {with(func(o *s3blob.Options) { o.Bucket = "a/b" }), registry.Invalid, "slashes"},
		"ftp endpoint":         {with(func(o *s3blob.Options) { o.Endpoint = "ftp://127.0.0.1" }), registry.Invalid, "https://"},
		"endpoint with query":  {with(func(o *s3blob.Options) { o.Endpoint += "/?x=1" }), registry.Invalid, "query"},
		"key without secret":   {with(func(o *s3blob.Options) { o.SecretKey = "" }), registry.Invalid, "go together"},
		"dot-dot prefix":       {with(func(o *s3blob.Options) { o.Prefix = "a/../b" }), registry.Invalid, "segments"},
		"empty segment prefix": {with(func(o *s3blob.Options) { o.Prefix = "a//b" }), registry.Invalid, "segments"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := s3blob.Open(t.Context(), tc.opt)
			if err == nil {
				t.Fatalf("Open succeeded: %v", s)
			}
			if registry.KindOf(err) != tc.kind || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open = %v (kind %v), want kind %v mentioning %q", err, registry.KindOf(err), tc.kind, tc.want)
			}
		})
	}
}

// TestUnreachableAndRecovery cuts the connection to S3: every operation
// fails with Unavailable, and works again once S3 is back, without
// reopening the store.
func TestUnreachableAndRecovery(t *testing.T) {
	opt := s3test.NewBucket(t)
	proxy := s3test.NewProxy(t, opt)
	opt.Endpoint = proxy.Endpoint
	s := open(t, opt)
	ctx := t.Context()
	// Larger than what socket buffers hold, so that the cut catches the
	// open blob's GET mid-way.
	data := randomBytes(32<<20, 4)
	d := digestOf(data)
	if err := s.Put(ctx, d, int64(len(data)), bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	reading, err := s.Open(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	defer reading.Close()
	if _, err := io.ReadFull(reading.Content, make([]byte, 1000)); err != nil {
		t.Fatal(err)
	}

	proxy.Cut()
	if _, err := io.ReadAll(reading.Content); !registry.IsKind(err, registry.Unavailable) {
		t.Errorf("reading an open blob after the cut = %v, want kind unavailable", err)
	}
	other := []byte("published during the outage")
	for name, op := range map[string]func() error{
		"Stat":   func() error { _, err := s.Stat(ctx, d); return err },
		"Open":   func() error { _, err := s.Open(ctx, d); return err },
		"Put":    func() error { return s.Put(ctx, digestOf(other), int64(len(other)), bytes.NewReader(other)) },
		"Delete": func() error { return s.Delete(ctx, d) },
		"Walk":   func() error { return s.Walk(ctx, func(string, int64) error { return nil }) },
		"Ping":   func() error { return s.Ping(ctx) },
	} {
		if err := op(); !registry.IsKind(err, registry.Unavailable) || !strings.Contains(err.Error(), "cannot reach") {
			t.Errorf("%s while S3 is unreachable = %v, want kind unavailable saying it cannot reach S3", name, err)
		}
	}

	proxy.Restore()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping after S3 came back: %v", err)
	}
	if err := s.Put(ctx, digestOf(other), int64(len(other)), bytes.NewReader(other)); err != nil {
		t.Fatalf("Put after S3 came back: %v", err)
	}
	b, err := s.Open(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got, err := io.ReadAll(b.Content); err != nil || !bytes.Equal(got, data) {
		t.Errorf("blob after S3 came back: %d bytes, %v", len(got), err)
	}
}

// TestOpenWithoutRegionOrCredentials needs no server: both problems are
// found before the first request.
func TestOpenWithoutRegionOrCredentials(t *testing.T) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_REGION": "", "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "", "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
		"AWS_SESSION_TOKEN": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_S3": "",
		"AWS_CONFIG_FILE": filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED": "true",
	} {
		t.Setenv(k, v)
	}
	tests := map[string]struct {
		opt  s3blob.Options
		kind registry.Kind
		want string
	}{
		"no region for AWS": {s3blob.Options{Bucket: "b", AccessKey: "a", SecretKey: "s"}, registry.Invalid, "--s3-region"},
		"no credentials":    {s3blob.Options{Bucket: "b", Endpoint: "http://" + closedPort(t)}, registry.Unavailable, "no S3 credentials"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := s3blob.Open(t.Context(), tc.opt)
			if registry.KindOf(err) != tc.kind || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open = %v, want kind %v mentioning %q", err, tc.kind, tc.want)
			}
		})
	}
}
