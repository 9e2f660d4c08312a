// Package files serves the blobs behind signed download URLs:
// GET and HEAD /v1/files/{digest}/{filename}?expires=..&signature=..
// (see internal/signedurl). Terraform and OpenTofu fetch provider
// archives, SHA256SUMS and signatures there without the registry token, so
// the signature is the only credential: it binds the digest, the file name
// and the expiry.
//
// Blobs are served with http.ServeContent: Range requests, If-None-Match
// and If-Modified-Since work, and a file-backed blob reaches the socket
// with sendfile on plain HTTP. When the blob store can presign URLs and
// redirects are enabled, the handler answers 302 to the store instead.
//
// With a Fetcher (the provider mirror), a blob that is not stored yet may
// be fetched on the first request for it: a mirrored provider's package is
// downloaded from its upstream registry, checked and stored, then served.
package files

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
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

// Fetcher makes a blob that is not stored available, for the provider
// mirror's packages (*mirror.Mirror implements it).
type Fetcher interface {
	// FetchPackage stores the blob digest (served as filename), or
	// returns NotFound when it knows no such blob.
	FetchPackage(ctx context.Context, digest, filename string) error
	// HasPackage reports whether the fetcher can fetch blob digest.
	HasPackage(ctx context.Context, digest string) (bool, error)
	// StreamPackage is FetchPackage that also writes the blob to into as
	// it arrives, when this call is the one that downloads it (streamed
	// is then true); see mirror.Mirror.StreamPackage.
	StreamPackage(ctx context.Context, digest, filename string, into io.Writer) (streamed bool, err error)
}

// streamWriter answers a download with the bytes a Fetcher streams while
// it stores them: the headers go out with the first byte. It is written
// from the Fetcher's goroutine; close, called by the handler before it
// returns, makes later writes fail so that nothing reaches a finished
// response.
type streamWriter struct {
	mu         sync.Mutex
	w          http.ResponseWriter
	setHeaders func()
	length     int64
	started    bool
	closed     bool
}

var errStreamClosed = errors.New("the download's request has ended")

// SetContentLength announces the size of the bytes to come.
func (s *streamWriter) SetContentLength(n int64) {
	s.mu.Lock()
	s.length = n
	s.mu.Unlock()
}

func (s *streamWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, errStreamClosed
	}
	if !s.started {
		s.started = true
		s.setHeaders()
		if s.length > 0 {
			s.w.Header().Set("Content-Length", strconv.FormatInt(s.length, 10))
		}
		s.w.WriteHeader(http.StatusOK)
	}
	// The fetch waits for this write, and every request for the package
	// waits for the fetch: a client too slow to take a chunk within
	// streamWriteTimeout is dropped (its download fails) and the fetch
	// goes on without it.
	rc := http.NewResponseController(s.w)
	_ = rc.SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	n, err := s.w.Write(p)
	if err == nil {
		err = rc.Flush()
	}
	_ = rc.SetWriteDeadline(time.Time{})
	return n, err
}

// streamWriteTimeout bounds one write of a streamed download.
const streamWriteTimeout = 10 * time.Second

// close ends the stream and reports whether any of it was written.
func (s *streamWriter) close() (started bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return s.started
}

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
func (h *Handler) Register(mux *http.ServeMux) { mux.Handle(Route, h) }

// ServeHTTP serves one signed file request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.serve.ServeHTTP(w, r) }

func (h *Handler) serveFile(w http.ResponseWriter, r *http.Request) error {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return registry.Errorf(registry.NotFound, "files are served to GET and HEAD only")
	}
	query := r.URL.Query()
	digest, filename, err := h.signer.Verify(r.URL.Path, query)
	if err != nil {
		return err
	}
	expires, _ := strconv.ParseInt(query.Get("expires"), 10, 64) // Verify parsed it already
	remaining := time.Unix(expires, 0).Sub(h.now())
	if remaining < 0 {
		remaining = 0
	}
	hdr := w.Header()

	// A presigned URL is valid for GET only (its signature covers the
	// method), so a HEAD, which Terraform sends before the GET, is
	// answered here from the store rather than redirected to a 403.
	if h.presigner != nil && r.Method == http.MethodGet {
		if h.fetcher != nil {
			if _, err := h.blobs.Stat(r.Context(), digest); registry.IsKind(err, registry.NotFound) {
				if err := h.fetch(r.Context(), digest, filename); err != nil {
					return err
				}
			}
		}
		target, err := h.presigner.PresignGet(r.Context(), digest, filename, max(remaining, time.Minute))
		if err != nil {
			return err
		}
		hdr.Set("Cache-Control", "no-store")
		http.Redirect(w, r, target, http.StatusFound)
		return nil
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
			// The request that makes the fetcher download the blob gets
			// its bytes as they arrive; the others wait for it to be stored.
			sw := &streamWriter{w: w, setHeaders: setHeaders}
			_, err = h.fetcher.StreamPackage(r.Context(), digest, filename, sw)
			switch started := sw.close(); {
			case started && err != nil:
				// Some bytes went out unverified and the rest never will:
				// the client must see a broken download, not a short one.
				h.log.WarnContext(r.Context(), "aborting a streamed download", "file", filename, "error", registry.Message(err))
				panic(http.ErrAbortHandler)
			case started:
				return nil
			case registry.IsKind(err, registry.NotFound):
				err = registry.Errorf(registry.NotFound, "file %s is not stored on this registry (blob %s is missing)", filename, digest)
			}
		} else {
			// A HEAD (which clients send before their GET) is answered
			// from what the fetcher knows, without fetching: the GET that
			// follows streams the package while it is fetched.
			known, herr := h.fetcher.HasPackage(r.Context(), digest)
			switch {
			case herr != nil:
				return herr
			case known:
				setHeaders()
				w.WriteHeader(http.StatusOK)
				return nil
			}
			err = registry.Errorf(registry.NotFound, "file %s is not stored on this registry (blob %s is missing)", filename, digest)
		}
		if err == nil {
			blob, err = h.blobs.Open(r.Context(), digest)
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
	http.ServeContent(&rangeErrorWriter{ResponseWriter: w}, r, "", blob.ModTime, blob.Content)
	return nil
}

// fetch asks the Fetcher for a blob that is not stored.
func (h *Handler) fetch(ctx context.Context, digest, filename string) error {
	err := h.fetcher.FetchPackage(ctx, digest, filename)
	if registry.IsKind(err, registry.NotFound) {
		return registry.Errorf(registry.NotFound, "file %s is not stored on this registry (blob %s is missing)", filename, digest)
	}
	return err
}

// rangeErrorWriter turns the one error http.ServeContent answers itself
// for a readable blob, 416 for a Range outside the file, into the JSON
// error body of every other answer; the Content-Range header ServeContent
// sets ("bytes */<size>") stays. ReadFrom and Unwrap are forwarded, so
// that a download keeps using sendfile.
type rangeErrorWriter struct {
	http.ResponseWriter
	swallow bool // the text body of the 416 is dropped
}

func (w *rangeErrorWriter) WriteHeader(code int) {
	if code != http.StatusRequestedRangeNotSatisfiable {
		w.ResponseWriter.WriteHeader(code)
		return
	}
	w.swallow = true
	body, _ := json.Marshal(httpjson.ErrorBody{Errors: []string{
		"the requested range lies outside the file (see Content-Range for its size): request a range within it, or the whole file"}})
	w.Header().Del("Content-Length")
	httpjson.WriteRaw(w.ResponseWriter, code, body)
}

func (w *rangeErrorWriter) Write(p []byte) (int, error) {
	if w.swallow {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

func (w *rangeErrorWriter) ReadFrom(src io.Reader) (int64, error) {
	if w.swallow {
		return io.Copy(io.Discard, src)
	}
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	return io.Copy(w.ResponseWriter, src)
}

// Unwrap returns the underlying ResponseWriter (for http.ResponseController).
func (w *rangeErrorWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

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
