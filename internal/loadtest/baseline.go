package loadtest

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
)

// BaselineConfig is what the baseline server serves: fixed bodies from
// memory and one file from disk, on the paths Trove serves them on.
type BaselineConfig struct {
	// CertFile and KeyFile are the PEM certificate chain and key of the
	// HTTPS listener (Trove's own).
	CertFile string `json:"cert_file"`
	KeyFile  string `json:"key_file"`
	// Documents maps URL paths to files whose content is answered as
	// application/json.
	Documents map[string]string `json:"documents"`
	// Pages maps request URIs (a path, with its query if it has one, as
	// the load sends it) to files whose content is answered as
	// text/html; charset=utf-8: the web UI's pages.
	Pages map[string]string `json:"pages,omitempty"`
	// Locations maps URL paths to X-Terraform-Get values, answered with
	// 204 No Content as Trove answers a module download.
	Locations map[string]string `json:"locations,omitempty"`
	// Families maps URL path prefixes (ending in "/") to files answered as
	// application/json for every path under the prefix that Documents
	// does not name: one static answer for a family of URLs that a load
	// asks for one by one (the download documents of many versions). The
	// longest matching prefix wins.
	Families map[string]string `json:"families,omitempty"`
	// Responses maps URL paths to files answered with the given headers
	// (and Content-Length): the OCI API's tag lists and manifests, whose
	// Content-Type and Docker-Content-Digest a client reads.
	Responses map[string]BaselineResponse `json:"responses,omitempty"`
	// ArchivePath is the URL path of the archive; ArchiveFile its file.
	ArchivePath string `json:"archive_path"`
	ArchiveFile string `json:"archive_file"`
}

// BaselineResponse is a body the baseline answers with fixed headers.
type BaselineResponse struct {
	File   string            `json:"file"`
	Header map[string]string `json:"header"`
}

// maxDocumentBytes bounds one in-memory document of the baseline.
const maxDocumentBytes = 64 << 20

// ReadBaselineConfig reads a BaselineConfig from a JSON file.
func ReadBaselineConfig(file string) (BaselineConfig, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return BaselineConfig{}, registry.Wrap(registry.Invalid, err, "cannot read the baseline configuration")
	}
	var c BaselineConfig
	if err := json.Unmarshal(data, &c); err != nil {
		return BaselineConfig{}, registry.Wrap(registry.Invalid, err, "invalid baseline configuration "+file)
	}
	return c, nil
}

// WriteBaselineConfig writes c as JSON to file.
func WriteBaselineConfig(file string, c BaselineConfig) error {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return registry.Wrap(registry.Internal, err, "encoding the baseline configuration")
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		return registry.Wrap(registry.Internal, err, "writing the baseline configuration")
	}
	return nil
}

// NewBaselineHandler returns the baseline's handler: the least a Go
// server can do to answer the same requests. Documents are read into
// memory once; the archive is opened per request and answered with
// http.ServeContent over the *os.File, so that plain HTTP can use
// sendfile. Every other path is 404.
func NewBaselineHandler(c BaselineConfig) (http.Handler, error) {
	docs := make(map[string][]byte, len(c.Documents))
	for p, file := range c.Documents {
		if !validPath(p) {
			return nil, registry.Errorf(registry.Invalid, "baseline document path %q must be an absolute, clean URL path", p)
		}
		body, err := readLimited(file, maxDocumentBytes)
		if err != nil {
			return nil, err
		}
		docs[p] = body
	}
	pages := make(map[string][]byte, len(c.Pages))
	for uri, file := range c.Pages {
		u, err := url.ParseRequestURI(uri)
		if err != nil || !validPath(u.Path) || strings.ContainsAny(uri, "# ") {
			return nil, registry.Errorf(registry.Invalid, "baseline page %q must be an absolute, clean URL path with an optional query", uri)
		}
		body, err := readLimited(file, maxDocumentBytes)
		if err != nil {
			return nil, err
		}
		pages[uri] = body
	}
	type response struct {
		header http.Header
		body   []byte
	}
	responses := make(map[string]response, len(c.Responses))
	for p, res := range c.Responses {
		if !validPath(p) {
			return nil, registry.Errorf(registry.Invalid, "baseline response path %q must be an absolute, clean URL path", p)
		}
		body, err := readLimited(res.File, maxDocumentBytes)
		if err != nil {
			return nil, err
		}
		h := http.Header{}
		for k, v := range res.Header {
			if k == "" || strings.ContainsAny(k+v, "\r\n") {
				return nil, registry.Errorf(registry.Invalid, "baseline response %q has an invalid header %q", p, k)
			}
			h.Set(k, v)
		}
		h.Set("Content-Length", strconv.Itoa(len(body)))
		responses[p] = response{header: h, body: body}
	}
	locations := make(map[string][]string, len(c.Locations))
	for p, loc := range c.Locations {
		if !validPath(p) {
			return nil, registry.Errorf(registry.Invalid, "baseline location path %q must be an absolute, clean URL path", p)
		}
		locations[p] = []string{loc}
	}
	type family struct {
		prefix string
		body   []byte
	}
	var families []family
	for p, file := range c.Families {
		if !validPath(strings.TrimSuffix(p, "/")) || !strings.HasSuffix(p, "/") || p == "/" {
			return nil, registry.Errorf(registry.Invalid, "baseline family prefix %q must be an absolute, clean URL path ending in /, not the root", p)
		}
		body, err := readLimited(file, maxDocumentBytes)
		if err != nil {
			return nil, err
		}
		families = append(families, family{prefix: p, body: body})
	}
	slices.SortFunc(families, func(a, b family) int { return len(b.prefix) - len(a.prefix) })
	if c.ArchivePath != "" && !validPath(c.ArchivePath) {
		return nil, registry.Errorf(registry.Invalid, "baseline archive path %q must be an absolute, clean URL path", c.ArchivePath)
	}
	if c.ArchivePath != "" {
		if _, err := os.Stat(c.ArchiveFile); err != nil {
			return nil, registry.Wrap(registry.Invalid, err, "baseline archive file")
		}
	}
	archiveName := path.Base(c.ArchivePath)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if body, ok := docs[r.URL.Path]; ok {
			h := w.Header()
			h.Set("Content-Type", "application/json")
			h.Set("Content-Length", strconv.Itoa(len(body)))
			_, _ = w.Write(body)
			return
		}
		if res, ok := responses[r.URL.Path]; ok {
			h := w.Header()
			for k, v := range res.header {
				h[k] = v
			}
			_, _ = w.Write(res.body)
			return
		}
		if body, ok := pages[r.RequestURI]; ok {
			h := w.Header()
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Content-Length", strconv.Itoa(len(body)))
			_, _ = w.Write(body)
			return
		}
		if loc, ok := locations[r.URL.Path]; ok {
			w.Header()["X-Terraform-Get"] = loc
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if c.ArchivePath != "" && r.URL.Path == c.ArchivePath {
			f, err := os.Open(c.ArchiveFile)
			if err != nil {
				http.Error(w, "archive unavailable", http.StatusInternalServerError)
				return
			}
			defer f.Close()
			st, err := f.Stat()
			if err != nil {
				http.Error(w, "archive unavailable", http.StatusInternalServerError)
				return
			}
			http.ServeContent(w, r, archiveName, st.ModTime(), f)
			return
		}
		for _, f := range families {
			if strings.HasPrefix(r.URL.Path, f.prefix) {
				h := w.Header()
				h.Set("Content-Type", "application/json")
				h.Set("Content-Length", strconv.Itoa(len(f.body)))
				_, _ = w.Write(f.body)
				return
			}
		}
		http.NotFound(w, r)
	}), nil
}

func validPath(p string) bool { return p != "" && p[0] == '/' && path.Clean(p) == p }

func readLimited(file string, limit int64) ([]byte, error) {
	st, err := os.Stat(file)
	if err != nil {
		return nil, registry.Wrap(registry.Invalid, err, "baseline document")
	}
	if st.Size() > limit {
		return nil, registry.Errorf(registry.TooLarge, "baseline document %s has %d bytes, more than %d", file, st.Size(), limit)
	}
	body, err := os.ReadFile(file)
	if err != nil {
		return nil, registry.Wrap(registry.Invalid, err, "baseline document")
	}
	return body, nil
}

// ServeBaseline serves h over HTTPS on tlsLn (with c's certificate) and
// over plain HTTP on plainLn until ctx ends, then shuts both down.
func ServeBaseline(ctx context.Context, c BaselineConfig, h http.Handler, tlsLn, plainLn net.Listener) error {
	cert, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
	if err != nil {
		return registry.Wrap(registry.Invalid, err, "loading the baseline's TLS certificate")
	}
	quiet := log.New(discard{}, "", 0) // clients cancelled at the end of a window are expected
	newServer := func(tlsCfg *tls.Config) *http.Server {
		return &http.Server{
			Handler:           h,
			TLSConfig:         tlsCfg,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       2 * time.Minute,
			ErrorLog:          quiet,
		}
	}
	secure := newServer(&tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	plain := newServer(nil)
	errc := make(chan error, 2)
	go func() { errc <- secure.ServeTLS(tlsLn, "", "") }()
	go func() { errc <- plain.Serve(plainLn) }()
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = secure.Shutdown(shutCtx)
	_ = plain.Shutdown(shutCtx)
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("baseline server: %w", serveErr)
	}
	return nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
