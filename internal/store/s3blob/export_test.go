package s3blob

import "io"

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
