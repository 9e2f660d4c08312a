// Package signedurl issues and checks the HMAC-signed, expiring URLs under
// which Trove serves archives, SHA256SUMS and signatures. The clients fetch
// those without the registry token, so the URL itself is the credential:
// it is bound to one blob digest and file name and stops working after its
// expiry. A mirrored package's URL is also bound to its origin (the
// provider version and platform it was listed for), so that the mirror
// fetches it from that provider's upstream.
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
	"trove.dev/trove/internal/reqtime"
)

// PathPrefix is where signed files are served: PathPrefix + digest + "/" + filename.
const PathPrefix = "/v1/files/"

// Signer signs and verifies file URLs with one secret key.
type Signer struct {
	key   []byte
	ttl   time.Duration
	clock reqtime.Clock // set by WithClock: it takes precedence over a request's time
}

// New returns a Signer. ttl is how long an issued URL stays valid at least;
// URLs issued within the same half-ttl window are identical, so responses
// that embed them can be cached for that long.
func New(key []byte, ttl time.Duration) *Signer {
	if ttl < 2*time.Second {
		ttl = 2 * time.Second
	}
	return &Signer{key: key, ttl: ttl}
}

// WithClock returns a copy of s that reads the time from now (for tests),
// also where it is handed a request's time (ExpiryAt).
func (s *Signer) WithClock(now func() time.Time) *Signer {
	c := *s
	c.clock = reqtime.ClockFrom(now)
	return &c
}

// Expiry returns the expiry that URLs issued now carry: the end of the
// current half-ttl window plus half a ttl, so at least ttl/2 remains and at
// most ttl.
func (s *Signer) Expiry() time.Time {
	return s.expiry(s.clock.Now())
}

// ExpiryAt is Expiry for a request that arrived at now (reqtime.Of: the
// server reads the clock once per request), so that a cached download
// document's check of its URLs' expiry does not read the clock again;
// judged at now unless the Signer's clock was set (WithClock).
func (s *Signer) ExpiryAt(now time.Time) time.Time {
	return s.expiry(s.clock.At(now))
}

// expiry returns the expiry of URLs issued at now.
func (s *Signer) expiry(now time.Time) time.Time {
	half := s.ttl / 2
	return now.Truncate(half).Add(s.ttl)
}

// Path returns the signed path and query for a blob, relative to the
// server root: /v1/files/<digest>/<filename>?expires=<unix>&signature=<mac>.
func (s *Signer) Path(digest, filename string) string {
	return s.PathFrom(digest, filename, "")
}

// PathFrom is Path for a blob fetched on request from origin (a mirrored
// package's registry.PackageOrigin): the query carries origin=, and the
// signature binds it too. An empty origin gives Path's URL.
func (s *Signer) PathFrom(digest, filename, origin string) string {
	exp := s.Expiry().Unix()
	p := PathPrefix + digest + "/" + url.PathEscape(filename) + "?expires=" + strconv.FormatInt(exp, 10)
	if origin != "" {
		p += "&origin=" + url.QueryEscape(origin)
	}
	return p + "&signature=" + s.mac(digest, filename, origin, exp)
}

// Verify checks a request for /v1/files/<digest>/<filename> with its
// query. It returns the digest and filename on success, and a Forbidden
// (bad or expired signature) or NotFound (malformed path) error otherwise.
func (s *Signer) Verify(path string, query url.Values) (digest, filename string, err error) {
	digest, filename, _, err = s.VerifyOrigin(path, query)
	return digest, filename, err
}

// VerifyOrigin is Verify that also returns the origin the URL was signed
// with ("" for a URL of Path).
func (s *Signer) VerifyOrigin(path string, query url.Values) (digest, filename, origin string, err error) {
	rest, ok := strings.CutPrefix(path, PathPrefix)
	if !ok {
		return "", "", "", registry.Errorf(registry.NotFound, "not found")
	}
	digest, filename, ok = strings.Cut(rest, "/")
	if !ok || registry.CheckDigest(digest) != nil || filename == "" || strings.Contains(filename, "/") {
		return "", "", "", registry.Errorf(registry.NotFound, "not found")
	}
	exp, err := strconv.ParseInt(query.Get("expires"), 10, 64)
	if err != nil {
		return "", "", "", registry.Errorf(registry.Forbidden, "download URL is missing a valid expiry; ask the registry for a new one")
	}
	origin = query.Get("origin")
	want := s.mac(digest, filename, origin, exp)
	if !hmac.Equal([]byte(want), []byte(query.Get("signature"))) {
		return "", "", "", registry.Errorf(registry.Forbidden, "download URL signature is invalid")
	}
	if s.clock.Now().Unix() >= exp {
		return "", "", "", registry.Errorf(registry.Forbidden, "download URL has expired; run the command again to get a fresh one")
	}
	return digest, filename, origin, nil
}

// mac signs a URL's parts. A URL without an origin keeps the v1 message,
// so that URLs handed out before origins existed stay valid; one with an
// origin signs a v2 message, which no v1 message equals.
func (s *Signer) mac(digest, filename, origin string, exp int64) string {
	m := hmac.New(sha256.New, s.key)
	if origin == "" {
		m.Write([]byte("trove-file-v1\n" + digest + "\n" + filename + "\n" + strconv.FormatInt(exp, 10)))
	} else {
		m.Write([]byte("trove-file-v2\n" + digest + "\n" + filename + "\n" + origin + "\n" + strconv.FormatInt(exp, 10)))
	}
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Sum returns the MAC of msg under the Signer's key for purpose, a name
// no other use shares (such as "oci-token-v1"), base64url-encoded: other
// stateless credentials that every replica must verify (the OCI bearer
// tokens) reuse the URL-signing key this way. The message is prefixed
// with "trove-<purpose>\n", so that a MAC of one purpose is never one of
// another, nor of a file URL (whose purposes are "file-v1" and "file-v2",
// which Sum refuses).
func (s *Signer) Sum(purpose string, msg []byte) string {
	if purpose == "" || strings.HasPrefix(purpose, "file-") || strings.ContainsAny(purpose, "\n") {
		panic("signedurl: Sum purpose " + strconv.Quote(purpose) + " is reserved or invalid")
	}
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("trove-" + purpose + "\n"))
	m.Write(msg)
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// Now returns the Signer's current time.
func (s *Signer) Now() time.Time { return s.clock.Now() }
