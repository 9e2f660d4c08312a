package s3blob_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"trove.dev/trove/internal/store/s3blob"
	"trove.dev/trove/internal/store/s3blob/s3test"
)

// TestAbortStaleUploads leaves multipart uploads as a replica killed in
// the middle of large Puts would (started, a part uploaded, never
// completed nor aborted) and checks that a store opened afterwards aborts
// those of its blobs once they are older than the bound, and only those:
// not a younger one (another replica's upload in flight), not one of
// another prefix or of a key that is not a blob's.
func TestAbortStaleUploads(t *testing.T) {
	opt := s3test.NewBucket(t)
	opt.Prefix = "registry"
	client := s3test.Client(opt)
	ctx := t.Context()
	blobKey := func(content string) string {
		d := digestOf([]byte(content))
		return "registry/sha256/" + d[:2] + "/" + d
	}
	leave := func(t *testing.T, key string) {
		t.Helper()
		up, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &opt.Bucket, Key: &key})
		if err != nil {
			t.Fatal(err)
		}
		part := bytes.Repeat([]byte("p"), 1<<10)
		if _, err := client.UploadPart(ctx, &s3.UploadPartInput{Bucket: &opt.Bucket, Key: &key, UploadId: up.UploadId,
			PartNumber: aws.Int32(1), Body: bytes.NewReader(part), ContentLength: aws.Int64(int64(len(part)))}); err != nil {
			t.Fatal(err)
		}
	}
	pending := func(t *testing.T) []string {
		t.Helper()
		out, err := client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &opt.Bucket})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, u := range out.Uploads {
			keys = append(keys, aws.ToString(u.Key))
		}
		slices.Sort(keys)
		return keys
	}

	crashed := []string{blobKey("first"), blobKey("second")}
	others := []string{
		"elsewhere/sha256/" + strings.TrimPrefix(blobKey("x"), "registry/sha256/"), // another registry's prefix
		"registry/sha256/notes.txt", // not a blob's key
	}
	for _, k := range append(slices.Clone(crashed), others...) {
		leave(t, k)
	}

	// Opened with the default bound, the uploads are too young to be a
	// crash's: they may be another replica's, in flight.
	s := open(t, opt)
	if got := pending(t); len(got) != 4 {
		t.Fatalf("after Open with the default bound (%s), pending uploads %q; want all 4 kept", s3blob.StaleUploadAge, got)
	}
	if n, err := s.AbortStaleUploads(ctx, time.Now().Add(-time.Hour)); err != nil || n != 0 {
		t.Fatalf("AbortStaleUploads(an hour ago) = %d, %v; want 0 aborted", n, err)
	}

	// A restart once they are older than the bound (here: a bound that
	// reaches past now) aborts the blobs' uploads and keeps the others.
	open(t, s3blob.WithStaleUploadAge(opt, -time.Minute))
	want := slices.Sorted(slices.Values(others))
	if got := pending(t); !slices.Equal(got, want) {
		t.Fatalf("after a restart, pending uploads %q; want only %q", got, want)
	}
	if n, err := s.AbortStaleUploads(ctx, time.Now().Add(time.Minute)); err != nil || n != 0 {
		t.Fatalf("AbortStaleUploads again = %d, %v; want nothing left to abort", n, err)
	}
}

// TestSweepStaleUploads: a replica that runs on reclaims the uploads a
// crash leaves once they are old enough, with no restart.
func TestSweepStaleUploads(t *testing.T) {
	opt := s3test.NewBucket(t)
	client := s3test.Client(opt)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	// Every upload counts as stale at once for this store.
	s := open(t, s3blob.WithStaleUploadAge(opt, -time.Minute))

	d := digestOf([]byte("left by a crash"))
	key := "sha256/" + d[:2] + "/" + d
	if _, err := client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &opt.Bucket, Key: &key}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		s.SweepStaleUploads(ctx, 20*time.Millisecond)
		close(done)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &opt.Bucket})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Uploads) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sweeper left %d uploads", len(out.Uploads))
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done // it stops with its context
}
