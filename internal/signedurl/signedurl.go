// Package signedurl issues and checks the HMAC-signed, expiring URLs under
// which Trove serves archives, SHA256SUMS and signatures. The clients fetch
// those without the registry token, so the URL itself is the credential:
// it is bound to one blob digest and file name and stops working after its
// expiry.
package signedurl

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
)

// PathPrefix is where signed files are served: PathPrefix + digest + "/" + filename.
const PathPrefix = "/v1/files/"

// Signer signs and verifies file URLs with one secret key.
type Signer struct {
	key []byte
	ttl time.Duration
	now func() time.Time
}

// New returns a Signer. ttl is how long an issued URL stays valid at least;
// URLs issued within the same half-ttl window are identical, so responses
// that embed them can be cached for that long.
func New(key []byte, ttl time.Duration) *Signer {
	if ttl < 2*time.Second {
		ttl = 2 * time.Second
	}
	return &Signer{key: key, ttl: ttl, now: time.Now}
}

// WithClock returns a copy of s that reads the time from now (for tests).
func (s *Signer) WithClock(now func() time.Time) *Signer {
	c := *s
	c.now = now
	return &c
}

// Expiry returns the expiry that URLs issued now carry: the end of the
// current half-ttl window plus half a ttl, so at least ttl/2 remains and at
// most ttl.
func (s *Signer) Expiry() time.Time {
	half := s.ttl / 2
	return s.now().Truncate(half).Add(s.ttl)
}

// Path returns the signed path and query for a blob, relative to the
// server root: /v1/files/<digest>/<filename>?expires=<unix>&signature=<mac>.
func (s *Signer) Path(digest, filename string) string {
	exp := s.Expiry().Unix()
	return PathPrefix + digest + "/" + url.PathEscape(filename) +
		"?expires=" + strconv.FormatInt(exp, 10) + "&signature=" + s.mac(digest, filename, exp)
}

// Verify checks a request for /v1/files/<digest>/<filename> with its
// query. It returns the digest and filename on success, and a Forbidden
// (bad or expired signature) or NotFound (malformed path) error otherwise.
func (s *Signer) Verify(path string, query url.Values) (digest, filename string, err error) {
	rest, ok := strings.CutPrefix(path, PathPrefix)
	if !ok {
		return "", "", registry.Errorf(registry.NotFound, "not found")
	}
	digest, filename, ok = strings.Cut(rest, "/")
	if !ok || registry.CheckDigest(digest) != nil || filename == "" || strings.Contains(filename, "/") {
		return "", "", registry.Errorf(registry.NotFound, "not found")
	}
	exp, err := strconv.ParseInt(query.Get("expires"), 10, 64)
	if err != nil {
		return "", "", registry.Errorf(registry.Forbidden, "download URL is missing a valid expiry; ask the registry for a new one")
	}
	want := s.mac(digest, filename, exp)
	if !hmac.Equal([]byte(want), []byte(query.Get("signature"))) {
		return "", "", registry.Errorf(registry.Forbidden, "download URL signature is invalid")
	}
	if s.now().Unix() >= exp {
		return "", "", registry.Errorf(registry.Forbidden, "download URL has expired; run the command again to get a fresh one")
	}
	return digest, filename, nil
}

func (s *Signer) mac(digest, filename string, exp int64) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("trove-file-v1\n" + digest + "\n" + filename + "\n" + strconv.FormatInt(exp, 10)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
