package config

import (
	"flag"
	"net/url"
	"strings"

	"trove.dev/trove/internal/registry"
)

// BlobsS3 names the S3-compatible blob backend.
const BlobsS3 = "s3"

// Download modes of a blob backend that can presign URLs (S3).
const (
	// DownloadRedirect answers a verified signed file URL with a 302 to a
	// short-lived presigned URL of the object store: the bytes bypass
	// Trove, and clients must be able to reach the store.
	DownloadRedirect = "redirect"
	// DownloadProxy streams the bytes through Trove, for networks where
	// clients cannot reach the object store.
	DownloadProxy = "proxy"
)

// S3 configures the blob store in a bucket of an S3-compatible object
// store, for several replicas sharing one bucket.
type S3 struct {
	// Endpoint is the base URL of the S3 API; empty means AWS S3.
	Endpoint string
	// Region is the bucket's region; empty means the AWS configuration's,
	// else us-east-1 with a custom Endpoint.
	Region string
	// Bucket holds the blobs; it must exist.
	Bucket string
	// Prefix is the key prefix ("folder") of the blobs in the bucket.
	Prefix string
	// PathStyle addresses the bucket as <endpoint>/<bucket>/ rather than
	// as a subdomain; most self-hosted S3 servers need it.
	PathStyle bool
	// AccessKey and SecretKey are static credentials; both empty means the
	// AWS credential chain. The secret is never printed.
	AccessKey string
	SecretKey string
	// DownloadMode is DownloadRedirect or DownloadProxy.
	DownloadMode string
}

// s3Flags defines the flags of the S3 blob backend on fs.
func (c *Config) s3Flags(fs *flag.FlagSet) {
	s := &c.Blobs.S3
	fs.StringVar(&s.Endpoint, "s3-endpoint", "", "base `URL` of the S3 API with --blob-backend s3, e.g. https://minio.example.com:9000 (default: AWS S3 in --s3-region)")
	fs.StringVar(&s.Region, "s3-region", "", "`region` of the S3 bucket (default: AWS_REGION or ~/.aws/config, else us-east-1 with --s3-endpoint)")
	fs.StringVar(&s.Bucket, "s3-bucket", "", "S3 `bucket` of the blobs with --blob-backend s3; it must exist")
	fs.StringVar(&s.Prefix, "s3-prefix", "", "key `prefix` of the blobs in the S3 bucket, e.g. trove/ (default: the bucket's root)")
	fs.BoolVar(&s.PathStyle, "s3-path-style", false, "address the S3 bucket as <endpoint>/<bucket> rather than <bucket>.<endpoint host>; most self-hosted S3 servers need it")
	fs.StringVar(&s.AccessKey, "s3-access-key", "", "S3 access `key` ID (with --s3-secret-key; default: the AWS credential chain: AWS_ACCESS_KEY_ID, ~/.aws, web identity, instance role)")
	fs.StringVar(&s.SecretKey, "s3-secret-key", "", "S3 secret access `key` (prefer the environment variable TROVE_S3_SECRET_KEY: command lines are visible to other users)")
	fs.StringVar(&s.DownloadMode, "download-mode", DownloadRedirect, "how an S3 blob store serves downloads after Trove has checked the signed URL, `mode` redirect (a 302 to a short-lived presigned URL of the bucket, which clients must reach) or proxy (the bytes pass through Trove)")
}

// validate checks the S3 settings that need no network; the bucket and
// the credentials are checked when the store is opened.
func (s S3) validate() []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, registry.Errorf(registry.Invalid, format, args...))
	}
	if strings.TrimSpace(s.Bucket) == "" {
		bad("--blob-backend s3 needs --s3-bucket (or TROVE_S3_BUCKET)")
	}
	if s.Endpoint != "" {
		u, err := url.Parse(s.Endpoint)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			bad("invalid --s3-endpoint %q: want the base URL of the S3 API, e.g. https://minio.example.com:9000", s.Endpoint)
		}
	}
	if (s.AccessKey == "") != (s.SecretKey == "") {
		bad("--s3-access-key and --s3-secret-key go together: pass both, or neither to use the AWS credential chain")
	}
	switch s.DownloadMode {
	case DownloadRedirect, DownloadProxy:
	default:
		bad("--download-mode must be %s or %s, got %q", DownloadRedirect, DownloadProxy, s.DownloadMode)
	}
	return errs
}
