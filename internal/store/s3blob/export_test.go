package s3blob

import (
	"io"
	"time"
)

// SetMultipart lowers the multipart threshold and part size of s so that
// tests can exercise multipart uploads with small blobs.
func SetMultipart(s *Store, threshold, partSize int64) {
	s.multipartThreshold, s.partSize = threshold, partSize
}

// NewVerifyingReader exposes the reader that withholds the last bytes of
// wrong content.
func NewVerifyingReader(r io.Reader, digest string, size int64) io.ReadCloser {
	return newVerifyingReader(r, digest, size)
}

// WithStaleUploadAge returns opt with Open aborting the multipart uploads
// started more than age ago (a negative age reaches into the future, so
// that a test can treat the uploads it just made as a crash's leftovers).
func WithStaleUploadAge(opt Options, age time.Duration) Options {
	opt.staleUploadAge = age
	return opt
}
