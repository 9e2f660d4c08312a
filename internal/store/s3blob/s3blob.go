// Package s3blob is Trove's scale-out blob store: content-addressed objects
// in a bucket of any S3-compatible object store (AWS S3, MinIO, Ceph,
// versitygw, ...). It implements store.Blobs and store.Presigner, and Ping
// for the readiness check. Several Trove replicas may share one bucket.
//
// Layout under the configured key prefix:
//
//	<prefix>sha256/<first two hex digits>/<64 hex digits>   one object per blob
//
// Objects outside <prefix>sha256/ are never read, listed or deleted, so a
// bucket can hold other data, or several registries under different
// prefixes.
//
// # Atomicity and verification
//
// S3 makes an object visible only once its upload is complete: after a
// PutObject whose whole body arrived, or, for blobs above
// DefaultMultipartThreshold, after CompleteMultipartUpload. Put never
// uploads to a temporary key to copy it afterwards (that would double every
// write, and a copy above 5 GiB needs a multipart copy); instead every
// upload request carries the SHA-256 of its body, so that the server
// itself refuses wrong or incomplete content, atomically:
//
//  1. A single-request upload is signed with the digest as its payload
//     hash (x-amz-content-sha256) and carries it as x-amz-checksum-sha256
//     too. S3 recomputes them over the bytes it received and stores
//     nothing on a mismatch, whether the bytes were wrong, corrupted in
//     transit, or cut short by a broken connection.
//  2. Put also hashes the content while streaming it and withholds the
//     last bytes unless the SHA-256 and the size match, so that wrong
//     content is never sent whole and Put reports it as Invalid. This
//     alone is not enough on every server (versitygw 1.8.0 stores a body
//     its client cut short if the payload is unsigned), which is why
//     Put never sends an unsigned payload.
//  3. A multipart upload buffers one part at a time (memory stays at
//     PartSize per upload), signs each part with its own SHA-256 and calls
//     CompleteMultipartUpload only after layer 2 has checked the whole
//     content; any failure aborts the upload, so none of it becomes
//     visible. Parts of an upload interrupted by a crash are not visible
//     either, but they take space (and cost) until the upload is aborted:
//     Open aborts the multipart uploads of blobs under the prefix that
//     were started more than StaleUploadAge ago (see AbortStaleUploads),
//     and a bucket lifecycle rule (AbortIncompleteMultipartUpload)
//     reclaims those of a replica that never starts again.
//
// The tests check each server-side check alone against a real S3-compatible
// server.
package s3blob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// Tuning of uploads and connections.
const (
	// DefaultMultipartThreshold is the blob size above which Put uploads in
	// parts rather than in one request.
	DefaultMultipartThreshold = 256 << 20
	// DefaultPartSize is the size of one part of a multipart upload, and so
	// the memory one large Put holds.
	DefaultPartSize = 32 << 20
	// MaxPresignTTL is the longest lifetime of a presigned URL (a limit of
	// AWS Signature Version 4).
	MaxPresignTTL = 7 * 24 * time.Hour
	// StaleUploadAge is how long ago a multipart upload must have been
	// started before Open aborts it as the leftover of a crash. Replicas
	// share the bucket and Trove cannot tell whether the replica that
	// started an upload still lives, so the bound must exceed the longest
	// upload of a live one: an upload reads a file already staged on the
	// replica's disk, so even 10 GiB at 3 MiB/s ends within the hour.
	StaleUploadAge = time.Hour

	maxParts = 10_000 // S3's limit per multipart upload
	// dialTimeout bounds connecting to S3. A blackholed endpoint (packets
	// dropped, no refusal) costs each attempt this long, so it is short:
	// S3 endpoints answer a connection within milliseconds when they work.
	dialTimeout  = 3 * time.Second
	maxAttempts  = 3           // attempts of one request, while the retry quota lasts
	readTimeout  = time.Minute // longest silence on an open connection
	maxBackoff   = time.Second // longest pause between two attempts of a request
	abortTimeout = 30 * time.Second
	// unreachableTimeout bounds how long a request to an endpoint that
	// does not answer connections at all takes to fail: every attempt's
	// connection times out, with the longest pauses between attempts.
	unreachableTimeout = maxAttempts*dialTimeout + (maxAttempts-1)*maxBackoff
	emptySHA256        = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	defaultRegion      = "us-east-1" // for custom endpoints that ignore the region
	blobsDirectory     = "sha256/"
)

// Options configures a Store.
type Options struct {
	// Endpoint is the base URL of the S3 API, e.g. https://s3.example.com
	// or http://127.0.0.1:7070. Empty means AWS S3 in Region (or the
	// endpoint from the AWS configuration, e.g. AWS_ENDPOINT_URL_S3).
	Endpoint string
	// Region is the bucket's region. Empty means the one of the AWS
	// configuration (AWS_REGION, ~/.aws/config), else us-east-1 when
	// Endpoint is set.
	Region string
	// Bucket is the bucket holding the blobs. It must exist.
	Bucket string
	// Prefix is prepended to every key, as a folder: "trove" and "trove/"
	// both store blobs under trove/sha256/. Empty means the bucket's root.
	Prefix string
	// PathStyle addresses the bucket as <endpoint>/<bucket>/<key> rather
	// than <bucket>.<endpoint host>/<key>; most self-hosted S3 servers need
	// it.
	PathStyle bool
	// AccessKey and SecretKey are static credentials. Both empty means the
	// standard AWS credential chain (environment, shared files, web
	// identity, container and instance roles).
	AccessKey string
	SecretKey string
	// Logger receives what Open does besides opening: the multipart
	// uploads of crashed processes it aborts. Nil discards it.
	Logger *slog.Logger

	staleUploadAge time.Duration // zero: StaleUploadAge; tests change it
}

// Store is a blob store in an S3 bucket. Its methods are safe for
// concurrent use, also by several Stores (or processes) on one bucket.
type Store struct {
	client   *s3.Client
	presign  *s3.PresignClient
	bucket   string
	prefix   string // "" or ending in "/"
	endpoint string // for messages: the configured endpoint or "AWS S3 (<region>)"

	// multipartThreshold and partSize tune Put (see the package comment);
	// tests lower them.
	multipartThreshold int64
	partSize           int64

	log            *slog.Logger
	staleUploadAge time.Duration // StaleUploadAge unless a test changes it
}

var (
	_ store.Blobs     = (*Store)(nil)
	_ store.Presigner = (*Store)(nil)
)

// Open returns the store of opt after checking that the bucket is there
// and the credentials are accepted, with an error that names the problem:
// a malformed option (Invalid), no credentials, an unreachable endpoint, a
// missing bucket, or refused credentials (Unavailable).
func Open(ctx context.Context, opt Options) (*Store, error) {
	prefix, err := checkOptions(&opt)
	if err != nil {
		return nil, err
	}
	httpClient := awshttp.NewBuildableClient().
		WithDialerOptions(func(d *net.Dialer) { d.Timeout = dialTimeout }).
		WithTransportOptions(func(t *http.Transport) { t.MaxIdleConnsPerHost = 64 }).
		WithReadTimeout(readTimeout)
	load := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithHTTPClient(httpClient),
		// Three attempts with a short random pause between them, so that
		// a refused connection fails a request within about a second and
		// a blackholed endpoint within unreachableTimeout; the retry quota
		// stops retrying altogether during a long outage.
		awsconfig.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = maxAttempts
				o.Backoff = retry.BackoffDelayerFunc(backoff)
			})
		}),
		// Trove sends its own SHA-256 checksums; the SDK's default CRC32
		// trailers are not understood by every S3-compatible server.
		awsconfig.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		awsconfig.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if opt.Region != "" {
		load = append(load, awsconfig.WithRegion(opt.Region))
	}
	if opt.AccessKey != "" {
		load = append(load, awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(opt.AccessKey, opt.SecretKey, "")))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, registry.Wrap(registry.Invalid, err, "loading the AWS configuration for the S3 blob store")
	}
	if cfg.Region == "" {
		if opt.Endpoint == "" {
			return nil, registry.Errorf(registry.Invalid, "the S3 region is not set: pass --s3-region (TROVE_S3_REGION) or set AWS_REGION")
		}
		cfg.Region = defaultRegion
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		return nil, registry.Wrap(registry.Unavailable, err, "no S3 credentials: pass --s3-access-key and --s3-secret-key (TROVE_S3_ACCESS_KEY, TROVE_S3_SECRET_KEY), or configure the AWS credential chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, ~/.aws, a web identity or an instance role)")
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if opt.Endpoint != "" {
			o.BaseEndpoint = aws.String(opt.Endpoint)
		}
		o.UsePathStyle = opt.PathStyle
	})
	s := &Store{
		client:             client,
		presign:            s3.NewPresignClient(client),
		bucket:             opt.Bucket,
		prefix:             prefix,
		endpoint:           opt.Endpoint,
		log:                opt.logger(),
		multipartThreshold: DefaultMultipartThreshold,
		partSize:           DefaultPartSize,
	}
	if s.endpoint == "" {
		s.endpoint = "AWS S3 (" + cfg.Region + ")"
	}
	if err := s.checkBucket(ctx); err != nil {
		return nil, err
	}
	// Best effort: a server without the listing, or credentials without
	// s3:ListBucketMultipartUploads, leave the leftovers to the bucket's
	// lifecycle rule, as before.
	staleAge := StaleUploadAge
	if opt.staleUploadAge != 0 {
		staleAge = opt.staleUploadAge
	}
	s.staleUploadAge = staleAge
	if n, err := s.AbortStaleUploads(ctx, time.Now().Add(-staleAge)); err != nil {
		opt.logger().Warn("could not abort the multipart uploads that crashed Trove processes left in the S3 bucket; a lifecycle rule (AbortIncompleteMultipartUpload) reclaims them",
			"bucket", s.bucket, "prefix", s.prefix, "error", err.Error())
	} else if n > 0 {
		opt.logger().Info("aborted multipart uploads left by crashed Trove processes", "bucket", s.bucket, "prefix", s.prefix, "uploads", n, "older_than", staleAge.String())
	}
	return s, nil
}

func (opt Options) logger() *slog.Logger {
	if opt.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return opt.Logger
}

// AbortStaleUploads aborts the multipart uploads of blobs under the
// store's prefix that were started before cutoff, and returns how many it
// aborted. Uploads of other keys are left alone. It is safe while other
// replicas upload, as long as cutoff lies further back than the longest
// upload takes (Open uses StaleUploadAge); an upload it aborts fails, and
// nothing of it is ever visible. It needs s3:ListBucketMultipartUploads on
// the bucket and s3:AbortMultipartUpload on the prefix.
func (s *Store) AbortStaleUploads(ctx context.Context, cutoff time.Time) (int, error) {
	dir := s.prefix + blobsDirectory
	in := &s3.ListMultipartUploadsInput{Bucket: &s.bucket, Prefix: &dir}
	aborted := 0
	for range 10_000 { // pages of up to 1,000 uploads; a bound, not a limit in practice
		page, err := s.client.ListMultipartUploads(ctx, in)
		if err != nil {
			return aborted, s.fail(err, "listing unfinished multipart uploads")
		}
		for _, u := range page.Uploads {
			shard, digest, ok := strings.Cut(strings.TrimPrefix(aws.ToString(u.Key), dir), "/")
			if !ok || registry.CheckDigest(digest) != nil || shard != digest[:2] || u.Initiated == nil || !u.Initiated.Before(cutoff) {
				continue
			}
			_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: u.Key, UploadId: u.UploadId})
			if err != nil && !registry.IsKind(s.fail(err, ""), registry.NotFound) { // NoSuchUpload: finished or aborted meanwhile
				return aborted, s.fail(err, "aborting the multipart upload of "+aws.ToString(u.Key))
			}
			aborted++
		}
		if !aws.ToBool(page.IsTruncated) || (aws.ToString(page.NextKeyMarker) == "" && aws.ToString(page.NextUploadIdMarker) == "") {
			return aborted, nil
		}
		in.KeyMarker, in.UploadIdMarker = page.NextKeyMarker, page.NextUploadIdMarker
	}
	return aborted, nil
}

// StaleUploadSweepInterval is how often SweepStaleUploads looks for
// multipart uploads older than StaleUploadAge.
const StaleUploadSweepInterval = 15 * time.Minute

// SweepStaleUploads runs AbortStaleUploads every interval (at most
// StaleUploadSweepInterval if interval is not positive) with the cutoff
// StaleUploadAge ago, until ctx is done, so that the uploads a crashed
// replica left are reclaimed within StaleUploadAge plus one interval even
// when no replica restarts. Failures are logged and retried at the next
// interval.
func (s *Store) SweepStaleUploads(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = StaleUploadSweepInterval
	}
	staleAge := s.staleUploadAge
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := s.AbortStaleUploads(ctx, time.Now().Add(-staleAge))
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Warn("could not abort stale multipart uploads in the S3 bucket; retrying later",
				"bucket", s.bucket, "prefix", s.prefix, "error", err.Error())
		case n > 0:
			s.log.Info("aborted stale multipart uploads", "bucket", s.bucket, "prefix", s.prefix, "uploads", n, "older_than", staleAge.String())
		}
	}
}

// backoff is the pause before retry attempt (1, 2, ...): full jitter
// below 250 ms times 2^attempt, at most maxBackoff.
func backoff(attempt int, _ error) (time.Duration, error) {
	limit := min(maxBackoff, 250*time.Millisecond<<min(attempt, 8))
	return rand.N(limit), nil
}

// checkOptions validates opt, trims its endpoint, and returns the key
// prefix in its normal form ("" or ending in one "/").
func checkOptions(opt *Options) (string, error) {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, registry.Errorf(registry.Invalid, format, args...))
	}
	opt.Endpoint = strings.TrimRight(strings.TrimSpace(opt.Endpoint), "/")
	if opt.Endpoint != "" {
		u, err := url.Parse(opt.Endpoint)
		switch {
		case err != nil:
			bad("invalid S3 endpoint %q: %s", opt.Endpoint, err)
		case u.Scheme != "https" && u.Scheme != "http":
			bad("invalid S3 endpoint %q: it must start with https:// or http://", opt.Endpoint)
		case u.Host == "":
			bad("invalid S3 endpoint %q: it has no host", opt.Endpoint)
		case u.User != nil || u.RawQuery != "" || u.Fragment != "":
			bad("invalid S3 endpoint %q: it must not hold user information, a query or a fragment", opt.Endpoint)
		}
	}
	switch {
	case opt.Bucket == "":
		bad("the S3 bucket is not set: pass --s3-bucket (TROVE_S3_BUCKET)")
	case strings.ContainsFunc(opt.Bucket, func(r rune) bool {
		return r == '/' || r > unicode.MaxASCII || unicode.IsSpace(r) || unicode.IsControl(r)
	}):
		bad("invalid S3 bucket name %q: it must not contain slashes, spaces or non-ASCII characters", opt.Bucket)
	}
	if (opt.AccessKey == "") != (opt.SecretKey == "") {
		bad("--s3-access-key and --s3-secret-key go together: pass both, or neither to use the AWS credential chain")
	}
	prefix := strings.Trim(opt.Prefix, "/")
	if prefix != "" {
		for seg := range strings.SplitSeq(prefix, "/") {
			if seg == "" || seg == "." || seg == ".." {
				bad("invalid S3 key prefix %q: it must not contain empty, . or .. segments", opt.Prefix)
				break
			}
		}
		if strings.ContainsFunc(prefix, unicode.IsControl) {
			bad("invalid S3 key prefix %q: it must not contain control characters", opt.Prefix)
		}
		prefix += "/"
	}
	return prefix, errors.Join(errs...)
}

// checkBucket checks that the bucket exists and the credentials may use
// it, explaining a failure. A HEAD response has no body to say what is
// wrong, so after a refused HeadBucket a one-key listing asks again for
// the server's error code.
func (s *Store) checkBucket(ctx context.Context) error {
	_, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &s.bucket})
	if err == nil {
		return nil
	}
	var re *smithyhttp.ResponseError
	if !errors.As(err, &re) || re.HTTPStatusCode() < 300 || re.HTTPStatusCode() >= 500 {
		return s.fail(err, "checking the S3 bucket "+s.bucket)
	}
	if r := re.Response.Header.Get("X-Amz-Bucket-Region"); r != "" && (re.HTTPStatusCode() == http.StatusMovedPermanently || re.HTTPStatusCode() == http.StatusBadRequest) {
		return registry.Errorf(registry.Unavailable, "the S3 bucket %q is in region %s, not the configured one: pass --s3-region %s", s.bucket, r, r)
	}
	code := ""
	var ae smithy.APIError
	if _, lerr := s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &s.prefix, MaxKeys: aws.Int32(1)}); errors.As(lerr, &ae) {
		code = ae.ErrorCode()
	}
	refused := func(why string) error {
		return registry.Errorf(registry.Unavailable, "%s refused access to the S3 bucket %q (%s): %s", s.endpoint, s.bucket, code, why)
	}
	const keys = "check --s3-access-key and --s3-secret-key (TROVE_S3_ACCESS_KEY, TROVE_S3_SECRET_KEY) or the AWS credential chain"
	switch code {
	case "NoSuchBucket":
		return registry.Errorf(registry.Unavailable, "the S3 bucket %q does not exist at %s: create it, or fix --s3-bucket", s.bucket, s.endpoint)
	case "InvalidAccessKeyId", "XAdminUserNotFound":
		return refused("the access key is unknown to the server; " + keys)
	case "SignatureDoesNotMatch":
		return refused("the secret key does not belong to the access key; " + keys)
	case "ExpiredToken", "TokenRefreshRequired":
		return refused("the credentials have expired; " + keys)
	case "InvalidToken":
		return refused("the session token is invalid; " + keys)
	case "AccessDenied", "AllAccessDisabled":
		return refused("the credentials may not use this bucket: grant them s3:ListBucket, s3:GetObject, s3:PutObject and s3:DeleteObject on it")
	case "AuthorizationHeaderMalformed", "PermanentRedirect", "IllegalLocationConstraintException":
		return refused("the bucket is probably in another region: fix --s3-region")
	}
	switch status := re.HTTPStatusCode(); status {
	case http.StatusNotFound:
		return registry.Errorf(registry.Unavailable, "the S3 bucket %q does not exist at %s: create it, or fix --s3-bucket", s.bucket, s.endpoint)
	case http.StatusForbidden, http.StatusUnauthorized:
		return registry.Errorf(registry.Unavailable, "%s refused access to the S3 bucket %q (HTTP %d): %s, and that they may read, write and list the bucket", s.endpoint, s.bucket, status, keys)
	}
	return s.fail(err, "checking the S3 bucket "+s.bucket)
}

// Ping reports whether the bucket answers to Trove's credentials.
func (s *Store) Ping(ctx context.Context) error {
	return s.checkBucket(ctx)
}

// String describes the store for logs: s3://<bucket>/<prefix> at <endpoint>.
func (s *Store) String() string {
	return "s3://" + s.bucket + "/" + s.prefix + " at " + s.endpoint
}

// key returns the object key of a checked digest.
func (s *Store) key(digest string) string {
	return s.prefix + blobsDirectory + digest[:2] + "/" + digest
}

// Put stores the size bytes read from r under digest, after checking both
// (see the package comment). If the blob exists already, Put uploads it
// again (the same verified bytes), which renews its modification time. Put does not read r after it returns.
func (s *Store) Put(ctx context.Context, digest string, size int64, r io.Reader) error {
	if err := registry.CheckDigest(digest); err != nil {
		return err
	}
	if size < 0 {
		return registry.Errorf(registry.Invalid, "invalid size %d of blob %s", size, digest)
	}
	if err := ctx.Err(); err != nil {
		return registry.Wrap(registry.Unavailable, err, "storing blob "+digest)
	}
	switch have, err := s.Stat(ctx, digest); {
	case err == nil && have == size:
		// Stored already: upload it again all the same, which renews its
		// LastModified (the garbage collector's grace period counts from
		// it, see store.Blobs). A copy of the object onto itself would not
		// read the content again, but S3-compatible servers (versitygw)
		// keep LastModified on such a copy.
	case err == nil:
		return registry.Errorf(registry.Invalid, "blob %s is stored with %d bytes, not the declared %d", digest, have, size)
	case !registry.IsKind(err, registry.NotFound):
		return err
	}
	vr := newVerifyingReader(r, digest, size)
	var err error
	switch {
	case size == 0:
		// Verify before sending: an HTTP client probes a body declared
		// empty, which would defeat withholding the last byte.
		if err = vr.verifyEnd(); err == nil {
			err = s.putObject(ctx, digest, 0, bytes.NewReader(nil))
		}
	case size <= s.multipartThreshold:
		err = s.putObject(ctx, digest, size, vr)
	default:
		err = s.putMultipart(ctx, digest, size, vr)
	}
	if verr := vr.Close(); verr != nil {
		return verr // the content was wrong or its reader failed
	}
	if err != nil {
		return s.fail(err, "storing blob "+digest)
	}
	return nil
}

// putObject uploads body in one request, signed with digest as its payload
// hash and carrying it as x-amz-checksum-sha256.
func (s *Store) putObject(ctx context.Context, digest string, size int64, body io.Reader) error {
	sum, _ := hex.DecodeString(digest)
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:         &s.bucket,
		Key:            aws.String(s.key(digest)),
		Body:           body,
		ContentLength:  aws.Int64(size),
		ContentType:    aws.String("application/octet-stream"),
		ChecksumSHA256: aws.String(base64.StdEncoding.EncodeToString(sum)),
	}, withPayloadHash(digest), noRetries)
	return err
}

// noRetries sends a request once: a streamed body cannot be replayed, and
// the SDK would report its failure to rewind rather than the cause.
func noRetries(o *s3.Options) { o.RetryMaxAttempts = 1 }

// putMultipart uploads the content of vr in parts of s.partSize (more for
// blobs above maxParts parts) and completes the upload only after vr has
// verified the whole content; on any failure it aborts the upload.
func (s *Store) putMultipart(ctx context.Context, digest string, size int64, vr *verifyingReader) (err error) {
	key := s.key(digest)
	created, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{
		Bucket: &s.bucket, Key: &key, ContentType: aws.String("application/octet-stream"),
	})
	if err != nil {
		return err
	}
	defer func() {
		if err == nil {
			return
		}
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
		defer cancel()
		// A failed abort leaves invisible parts for the lifecycle rule.
		s.client.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{ //nolint:errcheck
			Bucket: &s.bucket, Key: &key, UploadId: created.UploadId,
		})
	}()
	partSize := max(s.partSize, (size+maxParts-1)/maxParts)
	buf := make([]byte, min(partSize, size))
	var parts []types.CompletedPart
	for n, off := int32(1), int64(0); off < size; n++ {
		chunk := buf[:min(partSize, size-off)]
		if _, err := io.ReadFull(vr, chunk); err != nil {
			return err // vr holds the classified error; Put returns it
		}
		sum := sha256.Sum256(chunk)
		out, err := s.client.UploadPart(ctx, &s3.UploadPartInput{
			Bucket: &s.bucket, Key: &key, UploadId: created.UploadId, PartNumber: aws.Int32(n),
			Body: bytes.NewReader(chunk), ContentLength: aws.Int64(int64(len(chunk))),
		}, withPayloadHash(hex.EncodeToString(sum[:])))
		if err != nil {
			return err
		}
		parts = append(parts, types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(n)})
		off += int64(len(chunk))
	}
	// Reading the last byte made vr check the digest and size; a mismatch
	// failed io.ReadFull above, so only verified content gets here.
	_, err = s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &s.bucket, Key: &key, UploadId: created.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
	})
	return err
}

// withPayloadHash signs a request with hash (lower-case hex SHA-256 of its
// body) as its payload hash instead of letting the SDK read the body to
// compute it, so that a streamed body can be signed and the server checks
// it.
func withPayloadHash(hash string) func(*s3.Options) {
	return func(o *s3.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Finalize.Insert(middleware.FinalizeMiddlewareFunc("TrovePayloadHash",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					return next.HandleFinalize(v4.SetPayloadHash(ctx, hash), in)
				}), "ComputePayloadHash", middleware.Before)
		})
	}
}

// verifyingReader passes through the size bytes of r while hashing them,
// and withholds the last bytes unless they complete content of the
// expected digest and r has nothing more. Its first error is sticky and
// kept for Close. It is safe to Close concurrently with a Read (an HTTP
// transport may read a request body after the request has returned).
type verifyingReader struct {
	mu     sync.Mutex
	r      io.Reader
	digest string
	size   int64
	n      int64
	h      hash.Hash
	err    error // the content's problem: Invalid, or the reader's failure
	closed bool
}

func newVerifyingReader(r io.Reader, digest string, size int64) *verifyingReader {
	return &verifyingReader{r: r, digest: digest, size: size, h: sha256.New()}
}

var errBodyClosed = errors.New("s3blob: blob content read after the upload ended")

// Read implements io.Reader. Its errors tell the SDK not to retry: the
// body cannot be replayed.
func (v *verifyingReader) Read(p []byte) (int, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch {
	case v.err != nil:
		return 0, noRetry{v.err}
	case v.closed:
		return 0, noRetry{errBodyClosed}
	case v.n == v.size:
		return 0, io.EOF
	}
	if rem := v.size - v.n; int64(len(p)) > rem {
		p = p[:rem]
	}
	k, err := v.r.Read(p)
	v.h.Write(p[:k])
	v.n += int64(k)
	switch {
	case v.n == v.size:
		if err := v.verifyEnd(); err != nil {
			return 0, noRetry{err} // withhold the last bytes
		}
		return k, nil
	case errors.Is(err, io.EOF):
		v.err = registry.Errorf(registry.Invalid, "blob %s: content ended after %d bytes, want %d", v.digest, v.n, v.size)
		return 0, noRetry{v.err}
	case err != nil:
		v.err = readError(err, v.digest)
		return 0, noRetry{v.err}
	}
	return k, nil
}

// noRetry marks an error as final for the SDK's retryer, which would
// otherwise wait before finding that the body cannot be rewound.
type noRetry struct{ error }

func (noRetry) RetryableError() bool { return false }
func (e noRetry) Unwrap() error      { return e.error }

// verifyEnd checks, once all size bytes are read, that they have the
// expected digest and that the reader holds nothing more; it records and
// returns a failure. Callers hold v.mu, or own v exclusively.
func (v *verifyingReader) verifyEnd() error {
	if got := hex.EncodeToString(v.h.Sum(nil)); got != v.digest {
		v.err = registry.Errorf(registry.Invalid, "blob content has SHA-256 %s, not the declared %s", got, v.digest)
		return v.err
	}
	var one [1]byte
	for range 100 { // readers may return (0, nil) a few times; not forever
		k, err := v.r.Read(one[:])
		switch {
		case k > 0:
			v.err = registry.Errorf(registry.Invalid, "blob %s: content is longer than the declared %d bytes", v.digest, v.size)
			return v.err
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			v.err = readError(err, v.digest)
			return v.err
		}
	}
	v.err = registry.Errorf(registry.Internal, "blob %s: the content reader makes no progress", v.digest)
	return v.err
}

// Close stops further reads, waiting for one in progress, and returns the
// content's problem if there was one.
func (v *verifyingReader) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.closed = true
	return v.err
}

// readError classifies an error of the reader given to Put: its own kind if
// it has one, Unavailable for an ended context, Internal otherwise.
func readError(err error, digest string) error {
	kind := registry.KindOf(err)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		kind = registry.Unavailable
	}
	return registry.Wrap(kind, err, "reading the content of blob "+digest)
}

// Open returns the blob for reading. Its Content reads from one GET of
// the whole object; seeking elsewhere than where that GET stands opens a
// ranged GET at the first Read after the seek. Content uses ctx for those
// requests, so it is valid only as long as ctx is, and like an *os.File it
// is not for concurrent use.
func (s *Store) Open(ctx context.Context, digest string) (*store.Blob, error) {
	if err := registry.CheckDigest(digest); err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(digest))})
	if err != nil {
		return nil, s.fail(err, "opening blob "+digest)
	}
	if out.ContentLength == nil || *out.ContentLength < 0 {
		out.Body.Close()
		return nil, registry.Errorf(registry.Internal, "S3 answered the GET of blob %s without a Content-Length", digest)
	}
	o := &object{s: s, ctx: ctx, digest: digest, size: *out.ContentLength, body: out.Body}
	return &store.Blob{Content: o, Size: o.size, ModTime: aws.ToTime(out.LastModified)}, nil
}

// object is the Content of an open blob.
type object struct {
	s      *Store
	ctx    context.Context
	digest string
	size   int64
	pos    int64         // where the next Read reads
	body   io.ReadCloser // nil, or a GET response body standing at bodyAt
	bodyAt int64
	closed bool
}

var errClosed = errors.New("s3blob: read of a closed blob")

// Read implements io.Reader.
func (o *object) Read(p []byte) (int, error) {
	if o.closed {
		return 0, errClosed
	}
	if o.pos >= o.size {
		return 0, io.EOF
	}
	if o.body != nil && o.bodyAt != o.pos {
		o.body.Close()
		o.body = nil
	}
	if o.body == nil {
		out, err := o.s.client.GetObject(o.ctx, &s3.GetObjectInput{
			Bucket: &o.s.bucket, Key: aws.String(o.s.key(o.digest)), Range: aws.String(fmt.Sprintf("bytes=%d-", o.pos)),
		})
		if err != nil {
			return 0, o.s.fail(err, fmt.Sprintf("reading blob %s at offset %d", o.digest, o.pos))
		}
		o.body, o.bodyAt = out.Body, o.pos
	}
	if rem := o.size - o.pos; int64(len(p)) > rem {
		p = p[:rem]
	}
	n, err := o.body.Read(p)
	o.pos += int64(n)
	o.bodyAt += int64(n)
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, io.EOF) && o.pos == o.size:
		return n, io.EOF
	case errors.Is(err, io.EOF):
		err = io.ErrUnexpectedEOF
	}
	o.body.Close()
	o.body = nil
	return n, registry.Wrap(registry.Unavailable, err, fmt.Sprintf("reading blob %s from %s", o.digest, o.s.endpoint))
}

// Seek implements io.Seeker; it only moves the position.
func (o *object) Seek(offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = o.pos + offset
	case io.SeekEnd:
		abs = o.size + offset
	default:
		return 0, fmt.Errorf("s3blob: Seek: invalid whence %d", whence)
	}
	if abs < 0 {
		return 0, fmt.Errorf("s3blob: Seek to negative position %d", abs)
	}
	o.pos = abs
	return abs, nil
}

// Close releases the open GET, if any.
func (o *object) Close() error {
	o.closed = true
	if o.body != nil {
		err := o.body.Close()
		o.body = nil
		return err
	}
	return nil
}

// Stat returns the blob's size.
func (s *Store) Stat(ctx context.Context, digest string) (int64, error) {
	if err := registry.CheckDigest(digest); err != nil {
		return 0, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(digest))})
	if err != nil {
		return 0, s.fail(err, "inspecting blob "+digest)
	}
	return aws.ToInt64(out.ContentLength), nil
}

// Delete removes a blob; deleting an absent blob succeeds.
func (s *Store) Delete(ctx context.Context, digest string) error {
	if err := registry.CheckDigest(digest); err != nil {
		return err
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(digest))})
	if err == nil {
		return nil
	}
	if err := s.fail(err, "deleting blob "+digest); !registry.IsKind(err, registry.NotFound) {
		return err
	}
	return nil // S3 answers 204 for an absent key; some servers 404
}

// Walk calls fn for every blob under the store's prefix, listing the
// bucket page by page. Blobs added or deleted during the walk may or may
// not be reported; objects that are not named like blobs never are.
func (s *Store) Walk(ctx context.Context, fn func(digest string, size int64) error) error {
	dir := s.prefix + blobsDirectory
	pages := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: &dir})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return s.fail(err, "listing blobs")
		}
		for _, obj := range page.Contents {
			shard, digest, ok := strings.Cut(strings.TrimPrefix(aws.ToString(obj.Key), dir), "/")
			if !ok || registry.CheckDigest(digest) != nil || shard != digest[:2] {
				continue
			}
			if err := fn(digest, aws.ToInt64(obj.Size)); err != nil {
				return err
			}
		}
	}
	return nil
}

// PresignGet returns a URL from which the blob can be fetched without
// credentials for ttl (at most MaxPresignTTL), answered with
// Content-Disposition: attachment; filename=<filename>. It does not check
// that the blob exists: a URL of an absent blob answers 404. With
// temporary credentials (a role) the URL stops working when they expire,
// which may be before ttl.
func (s *Store) PresignGet(ctx context.Context, digest, filename string, ttl time.Duration) (string, error) {
	if err := registry.CheckDigest(digest); err != nil {
		return "", err
	}
	if ttl <= 0 {
		return "", registry.Errorf(registry.Invalid, "presigned URL lifetime %s is not positive", ttl)
	}
	in := &s3.GetObjectInput{Bucket: &s.bucket, Key: aws.String(s.key(digest))}
	if filename != "" {
		in.ResponseContentDisposition = aws.String(mime.FormatMediaType("attachment", map[string]string{"filename": filename}))
	}
	req, err := s.presign.PresignGetObject(ctx, in, s3.WithPresignExpires(min(ttl, MaxPresignTTL)))
	if err != nil {
		return "", s.fail(err, "presigning a URL of blob "+digest)
	}
	return req.URL, nil
}

// fail classifies an error of the S3 client: NotFound for a missing
// object, Unavailable for a missing bucket, refused credentials, an
// unreachable or failing server and an ended context, Internal otherwise.
// doing says what Trove was doing, for the message.
func (s *Store) fail(err error, doing string) error {
	if interrupted(err) {
		return registry.Wrap(registry.Unavailable, err, doing+": interrupted")
	}
	status := 0
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	code := ""
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	switch {
	case code == "InvalidAccessKeyId" || code == "XAdminUserNotFound" || code == "SignatureDoesNotMatch" ||
		code == "AccessDenied" || code == "ExpiredToken" || code == "InvalidToken" ||
		status == http.StatusForbidden || status == http.StatusUnauthorized:
		return registry.Wrap(registry.Unavailable, err, fmt.Sprintf("%s: %s refused Trove's credentials for the S3 bucket %q; check the access key and secret key (--s3-access-key/--s3-secret-key, or the AWS credential chain) and the bucket's policy", doing, s.endpoint, s.bucket))
	case code == "NoSuchBucket":
		return registry.Wrap(registry.Unavailable, err, fmt.Sprintf("%s: the S3 bucket %q does not exist at %s", doing, s.bucket, s.endpoint))
	case code == "NoSuchKey" || code == "NotFound" || status == http.StatusNotFound:
		return registry.Wrap(registry.NotFound, err, doing+": not found")
	case status >= 500 || code == "SlowDown" || code == "RequestTimeout":
		return registry.Wrap(registry.Unavailable, err, fmt.Sprintf("%s: S3 at %s is failing; retry later", doing, s.endpoint))
	case status == 0 && isTransportError(err):
		return registry.Wrap(registry.Unavailable, err, fmt.Sprintf("%s: cannot reach S3 at %s", doing, s.endpoint))
	}
	return registry.Wrap(registry.Internal, err, doing)
}

// interrupted reports whether err means that the caller's context ended.
// A connection that timed out by itself matches context.DeadlineExceeded
// too (net's timeout error says so) but comes inside a *net.OpError, while
// the SDK reports a request its context ended as a smithy.CanceledError.
func interrupted(err error) bool {
	var canceled *smithy.CanceledError
	if errors.As(err, &canceled) || errors.Is(err, context.Canceled) {
		return true
	}
	var op *net.OpError
	return errors.Is(err, context.DeadlineExceeded) && !errors.As(err, &op)
}

// isTransportError reports whether err means that no HTTP response came
// back: a refused or broken connection, a timeout, a DNS failure.
func isTransportError(err error) bool {
	var send *smithyhttp.RequestSendError
	var netErr net.Error
	return errors.As(err, &send) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}
