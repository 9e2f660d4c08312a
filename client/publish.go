package client

import (
	"context"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

// PublishFile is one file of a provider release: its name in the goreleaser
// dist folder and a function that opens its content. Open is called once,
// when the file's turn comes in the upload, and the reader is closed
// after it has been sent.
type PublishFile struct {
	Name string
	Open func() (io.ReadCloser, error)
}

// FileFromPath returns the PublishFile that uploads the file at path under
// its base name.
func FileFromPath(path string) PublishFile {
	return PublishFile{
		Name: filepath.Base(path),
		Open: func() (io.ReadCloser, error) { return os.Open(path) },
	}
}

// errUploadDone tells the body writer that the request is over.
var errUploadDone = errors.New("publish request finished")

// PublishProvider uploads a provider release: one multipart/form-data part
// named apispec.PublishFileField per file, in the order given (SHA256SUMS,
// its .sig, the optional manifest, then the zips). The body is streamed:
// memory use does not grow with the size of the files. Created is false in
// the result when the very same release was already published.
func (c *Client) PublishProvider(ctx context.Context, namespace, typ, version string, files []PublishFile) (apispec.PublishResult, error) {
	var out apispec.PublishResult
	target, err := c.apiURL(apispec.RouteProviderVersion, params("namespace", namespace, "type", typ, "version", version), nil)
	if err != nil {
		return out, err
	}
	if err := checkPublishFiles(files); err != nil {
		return out, err
	}

	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	written := make(chan error, 1)
	go func() {
		err := writeParts(mw, files)
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err) // nil: the reader sees io.EOF
		written <- err
	}()

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, pr)
	if err != nil {
		pr.CloseWithError(errUploadDone)
		<-written
		return out, err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	err = c.send(req, &out)
	pr.CloseWithError(errUploadDone) // unblocks the writer if the server stopped reading
	werr := <-written
	var rerr *readError
	if errors.As(werr, &rerr) {
		// A local file failed: that, not the aborted request, is the cause.
		return apispec.PublishResult{}, rerr
	}
	return out, err
}

func checkPublishFiles(files []PublishFile) error {
	if len(files) == 0 {
		return registry.Errorf(registry.Invalid, "nothing to publish: no files given")
	}
	seen := make(map[string]bool, len(files))
	for _, f := range files {
		switch {
		case f.Name == "" || f.Name == "." || f.Name == "..":
			return registry.Errorf(registry.Invalid, "invalid file name %q", f.Name)
		case strings.ContainsAny(f.Name, `/\`):
			return registry.Errorf(registry.Invalid, "invalid file name %q: give the base name without a directory", f.Name)
		case strings.ContainsFunc(f.Name, unicode.IsControl):
			return registry.Errorf(registry.Invalid, "invalid file name %q: it contains control characters", f.Name)
		case f.Open == nil:
			return registry.Errorf(registry.Invalid, "file %s has no Open function", f.Name)
		case seen[f.Name]:
			return registry.Errorf(registry.Invalid, "file %s is given twice", f.Name)
		}
		seen[f.Name] = true
	}
	return nil
}

// writeParts writes one form-data part per file, in order.
func writeParts(mw *multipart.Writer, files []PublishFile) error {
	for _, f := range files {
		if err := writePart(mw, f); err != nil {
			return err
		}
	}
	return nil
}

func writePart(mw *multipart.Writer, f PublishFile) error {
	part, err := mw.CreateFormFile(apispec.PublishFileField, f.Name)
	if err != nil {
		return err
	}
	rc, err := f.Open()
	if err != nil {
		return &readError{name: f.Name, err: err}
	}
	defer rc.Close()
	r := &trackingReader{r: rc}
	if _, err := io.Copy(part, r); err != nil {
		if r.err != nil {
			return &readError{name: f.Name, err: r.err}
		}
		return err
	}
	return nil
}

// readError is a failure to open or read a local file being published.
type readError struct {
	name string
	err  error
}

func (e *readError) Error() string { return "reading " + e.name + ": " + e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// trackingReader remembers a read error other than io.EOF, so that it can
// be told apart from a failure to send.
type trackingReader struct {
	r   io.Reader
	err error
}

func (t *trackingReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF {
		t.err = err
	}
	return n, err
}
