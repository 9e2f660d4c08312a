// Package files serves the blobs behind signed download URLs:
// GET and HEAD /v1/files/{digest}/{filename}?expires=..[&origin=..]&signature=..
// (see internal/signedurl). Terraform and OpenTofu fetch provider
// archives, SHA256SUMS and signatures there without the registry token, so
// the signature is the only credential: it binds the digest, the file name,
// the expiry and, for a mirrored package, its origin.
//
// Blobs are served with http.ServeContent: Range requests, If-None-Match
// and If-Modified-Since work, and a file-backed blob reaches the socket
// with sendfile on plain HTTP. When the blob store can presign URLs and
// redirects are enabled, the handler answers 302 to the store instead.
//
// With a Fetcher (the provider mirror), a blob that is not stored yet may
// be fetched on request: a mirrored provider's package is downloaded from
// the upstream registry its origin names, and every request for it gets
// the bytes as they arrive; a response ends cleanly only once the fetcher
// verified every byte (stream). Only a stored blob is redirected to.
package files

import (
	"context"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/route"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/store"
)

// Route is the ServeMux pattern of signed file downloads (GET includes HEAD).
const Route = "GET " + signedurl.PathPrefix + "{digest}/{filename}"

// Options configures a Handler.
type Options struct {
	Blobs  store.Blobs
	Signer *signedurl.Signer
	Logger *slog.Logger
	// RedirectDownloads answers 302 to a presigned URL of the blob store
	// instead of streaming the blob, if Blobs implements store.Presigner.
	RedirectDownloads bool
	// Now is the clock for Cache-Control lifetimes (time.Now if nil); the
	// Signer checks expiry with its own clock.
	Now func() time.Time
	// Fetcher, if set, is asked for a blob that is not stored.
	Fetcher Fetcher
}

// OriginGuard is an optional ability of a Fetcher: whether the package
// that origin names may still be served (the mirror refuses a version
// held or denied since the URL was signed).
type OriginGuard interface {
	ServesPackage(ctx context.Context, origin string) error
}

// Fetcher makes a blob that is not stored available, for the provider
// mirror's packages (*mirror.Mirror implements it). origin is what the
// signed URL was issued with (signedurl.PathFrom): the mirrored provider
// version and platform the package was listed for, "" for a URL without.
type Fetcher interface {
	// HasPackage reports whether the fetcher can fetch blob digest of
	// origin.
	HasPackage(ctx context.Context, origin, digest string) (bool, error)
	// OpenPackage returns blob digest of origin as it arrives (size -1 if
	// unknown), or NotFound when the fetcher knows no such blob. Its
	// Read returns io.EOF only once every byte was verified; any other
	// error means what was read must not pass for the blob. See
	// mirror.Mirror.OpenPackage.
	OpenPackage(ctx context.Context, origin, digest string) (body io.ReadCloser, size int64, err error)
}

// streamWriteTimeout bounds one write of a streamed download: a client
// that takes no chunk for that long is dropped. A variable for tests.
var streamWriteTimeout = 10 * time.Second

// Handler serves signed file downloads. It is safe for concurrent use.
type Handler struct {
	blobs     store.Blobs
	presigner store.Presigner // nil unless redirects are enabled and supported
	fetcher   Fetcher
	signer    *signedurl.Signer
	log       *slog.Logger
	now       func() time.Time
	serve     http.Handler
}

// New returns a Handler.
func New(opt Options) *Handler {
	h := &Handler{blobs: opt.Blobs, signer: opt.Signer, log: opt.Logger, now: opt.Now, fetcher: opt.Fetcher}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.now == nil {
		h.now = time.Now
	}
	if p, ok := opt.Blobs.(store.Presigner); ok && opt.RedirectDownloads {
		h.presigner = p
	}
	h.serve = httpjson.Handler(h.log, h.serveFile)
	return h
}

// Register mounts the handler on mux at Route.
func (h *Handler) Register(mux route.Registrar) { mux.Handle(Route, h) }

// ServeHTTP serves one signed file request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.serve.ServeHTTP(w, r) }

func (h *Handler) serveFile(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return registry.Errorf(registry.NotFound, "files are served to GET and HEAD only")
	}
	query := r.URL.Query()
	digest, filename, origin, err := h.signer.VerifyOrigin(r.URL.Path, query)
	if err != nil {
		return err
	}
	if g, ok := h.fetcher.(OriginGuard); ok && origin != "" {
		// A mirrored version denied since the URL was signed is not
		// served, even from the store.
		if err := g.ServesPackage(r.Context(), origin); err != nil {
			return err
		}
	}
	expires, _ := strconv.ParseInt(query.Get("expires"), 10, 64) // Verify parsed it already
	remaining := time.Unix(expires, 0).Sub(h.now())
	if remaining < 0 {
		remaining = 0
	}
	hdr := w.Header()

	// A presigned URL is valid for GET only (its signature covers the
	// method), so a HEAD, which Terraform sends before the GET, is
	// answered here from the store rather than redirected to a 403. A
	// blob the fetcher has yet to fetch is streamed below as it is
	// verified: only a stored (verified) blob is redirected to.
	if h.presigner != nil && r.Method == http.MethodGet {
		stored := true
		if h.fetcher != nil {
			if _, err := h.blobs.Stat(r.Context(), digest); registry.IsKind(err, registry.NotFound) {
				stored = false
			}
		}
		if stored {
			target, err := h.presigner.PresignGet(r.Context(), digest, filename, max(remaining, time.Minute))
			if err != nil {
				return err
			}
			hdr.Set("Cache-Control", "no-store")
			http.Redirect(w, r, target, http.StatusFound)
			return nil
		}
	}

	setHeaders := func() {
		hdr.Set("Content-Type", ContentType(filename))
		hdr.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": filename}))
		hdr.Set("ETag", `"`+digest+`"`)
		// The content never changes, but the URL stops working at its
		// expiry: let the client keep it as long as the URL is valid, and
		// no shared cache keep it at all.
		hdr.Set("Cache-Control", "private, max-age="+strconv.FormatInt(int64(remaining/time.Second), 10)+", immutable")
	}
	blob, err := h.blobs.Open(r.Context(), digest)
	if registry.IsKind(err, registry.NotFound) && h.fetcher != nil {
		if r.Method == http.MethodGet {
			return h.stream(w, r, origin, digest, filename, setHeaders)
		}
		// A HEAD (which clients send before their GET) is answered from
		// what the fetcher knows, without fetching: the GET that follows
		// streams the package while it is fetched.
		known, err := h.fetcher.HasPackage(r.Context(), origin, digest)
		if err != nil {
			return err
		}
		if known {
			setHeaders()
			w.WriteHeader(http.StatusOK)
			return nil
		}
	}
	if registry.IsKind(err, registry.NotFound) {
		return registry.Errorf(registry.NotFound, "file %s is not stored on this registry (blob %s is missing)", filename, digest)
	}
	if err != nil {
		return err
	}
	defer blob.Close()

	setHeaders()
	// blob.Content keeps its dynamic type (an *os.File for the filesystem
	// backend), so ServeContent's copy can use sendfile.
	httpjson.ServeRange(r)
	http.ServeContent(&httpjson.RangeRefusal{ResponseWriter: w, Body: httpjson.FileRangeRefusal}, r, "", blob.ModTime, blob.Content)
	return nil
}

// stream answers a GET of a blob the fetcher fetches with its bytes as
// they arrive. An error before the first byte is answered as usual; after
// it, the response is aborted (panic(http.ErrAbortHandler): a reset
// HTTP/2 stream, an HTTP/1.1 connection closed before its Content-Length
// or final chunk), so that a client never takes a refused or short
// package for a whole one. The fetcher keeps the last bytes back until
// the blob is verified, so an unverified response never has all of them.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, origin, digest, filename string, setHeaders func()) error {
	body, size, err := h.fetcher.OpenPackage(r.Context(), origin, digest)
	if registry.IsKind(err, registry.NotFound) {
		return registry.Errorf(registry.NotFound, "file %s is not stored on this registry (blob %s is missing)", filename, digest)
	}
	if err != nil {
		return err
	}
	defer body.Close()
	buf := make([]byte, 32<<10)
	n, err := body.Read(buf)
	for n == 0 && err == nil {
		n, err = body.Read(buf)
	}
	if n == 0 && err != io.EOF {
		return err // nothing was sent: the status says what failed
	}
	setHeaders()
	if size >= 0 {
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
	}
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	for {
		if n > 0 {
			// A slow client holds up no one (every request reads the
			// staged file at its own pace), but one that takes no chunk
			// for streamWriteTimeout is dropped.
			_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
			_, werr := w.Write(buf[:n])
			if werr == nil {
				werr = rc.Flush()
			}
			if werr != nil {
				panic(http.ErrAbortHandler) // the client is gone or stalled: never end its response cleanly
			}
			// The deadline bounds the write alone: over HTTP/2 a
			// deadline left armed resets the stream when it passes,
			// even while the response only waits for the upstream.
			_ = rc.SetWriteDeadline(time.Time{})
		}
		switch {
		case err == io.EOF:
			return nil
		case err != nil:
			// Some bytes went out unverified and the rest never will:
			// the client must see a broken download, not a short one.
			h.log.WarnContext(r.Context(), "aborting a streamed download", "file", filename, "error", registry.Message(err))
			panic(http.ErrAbortHandler)
		}
		n, err = body.Read(buf)
	}
}

// ContentType returns the media type Trove serves a release file with.
func ContentType(filename string) string {
	switch {
	case strings.HasSuffix(filename, ".zip"):
		return "application/zip"
	case strings.HasSuffix(filename, "_SHA256SUMS"):
		return "text/plain; charset=utf-8"
	case strings.HasSuffix(filename, ".sig"):
		return "application/pgp-signature"
	case strings.HasSuffix(filename, ".json"):
		return "application/json"
	default:
		return "application/octet-stream"
	}
}
