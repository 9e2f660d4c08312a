package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"

	"trove.dev/trove/apispec"
)

// part is what the test server received of one multipart part.
type part struct {
	field, filename, sha256 string
	size                    int64
}

// publishServer answers a publish with answer after reading every part.
func publishServer(t *testing.T, tls bool, answer string) (*Client, *[]part, *string) {
	t.Helper()
	var parts []part
	var path string
	// One request at a time: a request the client gave up on (a local read
	// error) may still be in its handler when the next one arrives.
	var mu sync.Mutex
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		path = r.Method + " " + r.URL.EscapedPath()
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "multipart/form-data" {
			http.Error(w, `{"errors":["not multipart"]}`, 400)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+testToken {
			http.Error(w, `{"errors":["no token"]}`, 401)
			return
		}
		mr, err := r.MultipartReader()
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			h := sha256.New()
			n, err := io.Copy(h, p)
			if err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			parts = append(parts, part{p.FormName(), p.FileName(), hex.EncodeToString(h.Sum(nil)), n})
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	})
	var ts *httptest.Server
	if tls {
		ts = httptest.NewTLSServer(h)
	} else {
		ts = httptest.NewServer(h)
	}
	t.Cleanup(ts.Close)
	c, err := New(ts.URL, testToken, WithHTTPClient(ts.Client()))
	if err != nil {
		t.Fatal(err)
	}
	return c, &parts, &path
}

func memFile(name, content string) PublishFile {
	return PublishFile{Name: name, Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(content)), nil }}
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func TestPublishPartsInOrder(t *testing.T) {
	c, parts, path := publishServer(t, true, `{"created":true,"version":`+pvJSON+`}`)
	dir := t.TempDir()
	zipPath := filepath.Join(dir, "terraform-provider-foo_1.0.0_linux_amd64.zip")
	if err := os.WriteFile(zipPath, []byte("zip bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	files := []PublishFile{
		memFile("terraform-provider-foo_1.0.0_SHA256SUMS", "sums"),
		memFile("terraform-provider-foo_1.0.0_SHA256SUMS.sig", "sig"),
		memFile("terraform-provider-foo_1.0.0_manifest.json", "{}"),
		FileFromPath(zipPath),
		memFile(`we"ird name.zip`, ""),
	}
	res, err := c.PublishProvider(context.Background(), "acme", "foo", "1.0.0", files)
	if err != nil {
		t.Fatal(err)
	}
	if want := (apispec.PublishResult{Created: true, Version: pv}); !reflect.DeepEqual(res, want) {
		t.Errorf("result = %+v, want %+v", res, want)
	}
	if *path != "POST /api/v1/namespaces/acme/providers/foo/versions/1.0.0" {
		t.Errorf("request = %s", *path)
	}
	want := []part{
		{"file", "terraform-provider-foo_1.0.0_SHA256SUMS", digest("sums"), 4},
		{"file", "terraform-provider-foo_1.0.0_SHA256SUMS.sig", digest("sig"), 3},
		{"file", "terraform-provider-foo_1.0.0_manifest.json", digest("{}"), 2},
		{"file", "terraform-provider-foo_1.0.0_linux_amd64.zip", digest("zip bytes"), 9},
		{"file", `we"ird name.zip`, digest(""), 0},
	}
	if !reflect.DeepEqual(*parts, want) {
		t.Errorf("parts =\n%+v\nwant\n%+v", *parts, want)
	}
}

func TestPublishRejectsBadFileLists(t *testing.T) {
	ok := memFile("a", "x")
	tests := map[string][]PublishFile{
		"no files":      nil,
		"empty name":    {memFile("", "x")},
		"dot dot":       {memFile("..", "x")},
		"slash":         {memFile("dist/a.zip", "x")},
		"backslash":     {memFile(`dist\a.zip`, "x")},
		"control char":  {memFile("a\nb", "x")},
		"duplicate":     {ok, ok},
		"no open":       {{Name: "a"}},
		"bad namespace": {ok},
	}
	for name, files := range tests {
		t.Run(name, func(t *testing.T) {
			c, parts, path := publishServer(t, false, `{}`)
			ns := "acme"
			if name == "bad namespace" {
				ns = ".."
			}
			if _, err := c.PublishProvider(context.Background(), ns, "foo", "1.0.0", files); err == nil {
				t.Error("PublishProvider succeeded")
			}
			if *path != "" || len(*parts) > 0 {
				t.Errorf("a request was sent: %s", *path)
			}
		})
	}
}

func TestPublishLocalReadErrorWins(t *testing.T) {
	c, _, _ := publishServer(t, false, `{}`)
	files := []PublishFile{
		memFile("a", "x"),
		FileFromPath(filepath.Join(t.TempDir(), "missing.zip")),
	}
	_, err := c.PublishProvider(context.Background(), "acme", "foo", "1.0.0", files)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "reading missing.zip") {
		t.Errorf("error = %v, want one about reading missing.zip", err)
	}

	failing := PublishFile{Name: "b.zip", Open: func() (io.ReadCloser, error) {
		return io.NopCloser(io.MultiReader(strings.NewReader("abc"), errReader{})), nil
	}}
	_, err = c.PublishProvider(context.Background(), "acme", "foo", "1.0.0", []PublishFile{failing})
	if err == nil || !strings.Contains(err.Error(), "reading b.zip: disk on fire") {
		t.Errorf("error = %v, want the read error", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

// TestPublishEarlyRejection checks that an answer sent before the body was
// read (here 403) reaches the caller as the server's error.
func TestPublishEarlyRejection(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, `{"errors":["token tok_1 does not grant publish on namespace acme"]}`)
	}))
	defer ts.Close()
	c, err := New(ts.URL, testToken)
	if err != nil {
		t.Fatal(err)
	}
	big := PublishFile{Name: "big.zip", Open: func() (io.ReadCloser, error) {
		return io.NopCloser(io.LimitReader(patternReader{}, 32<<20)), nil
	}}
	_, err = c.PublishProvider(context.Background(), "acme", "foo", "1.0.0", []PublishFile{memFile("a", "x"), big})
	if !IsForbidden(err) || !strings.Contains(err.Error(), "does not grant publish") {
		t.Errorf("error = %v, want the server's 403", err)
	}
}

func TestPublishContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.CopyN(io.Discard, r.Body, 1<<20)
		cancel()
		io.Copy(io.Discard, r.Body)
	}))
	defer ts.Close()
	c, _ := New(ts.URL, testToken)
	endless := PublishFile{Name: "endless.zip", Open: func() (io.ReadCloser, error) { return io.NopCloser(patternReader{}), nil }}
	if _, err := c.PublishProvider(ctx, "acme", "foo", "1.0.0", []PublishFile{endless}); !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
}

// patternReader yields an endless deterministic byte pattern.
type patternReader struct{}

func (patternReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(i * 7)
	}
	return len(p), nil
}

// TestPublishStreams uploads a 200 MiB file generated on the fly and checks
// that the process allocated far less than that, a fixed maxAlloc however
// large the file: the body is never buffered, on either side.
func TestPublishStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("uploads 200 MiB")
	}
	const (
		size     = 200 << 20
		maxAlloc = 8 << 20
	)
	c, parts, _ := publishServer(t, false, `{"created":true,"version":`+pvJSON+`}`)
	h := sha256.New()
	io.Copy(h, io.LimitReader(patternReader{}, size))
	wantDigest := hex.EncodeToString(h.Sum(nil))
	big := PublishFile{Name: "terraform-provider-foo_1.0.0_linux_amd64.zip", Open: func() (io.ReadCloser, error) {
		return io.NopCloser(io.LimitReader(patternReader{}, size)), nil
	}}

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := c.PublishProvider(context.Background(), "acme", "foo", "1.0.0", []PublishFile{memFile("sums", "s"), big}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > maxAlloc {
		t.Errorf("publishing %d bytes allocated %d bytes, want at most %d: the body is buffered somewhere", size, alloc, maxAlloc)
	}
	if len(*parts) != 2 || (*parts)[1].size != size || (*parts)[1].sha256 != wantDigest {
		t.Errorf("parts = %+v, want the 200 MiB file intact", *parts)
	}
}

func TestFileFromPath(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.zip")
	os.WriteFile(p, []byte("hello"), 0o600)
	f := FileFromPath(p)
	if f.Name != "x.zip" {
		t.Errorf("Name = %q", f.Name)
	}
	rc, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var buf bytes.Buffer
	io.Copy(&buf, rc)
	if buf.String() != "hello" {
		t.Errorf("content = %q", buf.String())
	}
}

func Example_publish() {
	c, err := New("https://localhost:8443", os.Getenv("TROVE_TOKEN"))
	if err != nil {
		fmt.Println(err)
		return
	}
	files := []PublishFile{
		FileFromPath("dist/terraform-provider-foo_1.0.0_SHA256SUMS"),
		FileFromPath("dist/terraform-provider-foo_1.0.0_SHA256SUMS.sig"),
		FileFromPath("dist/terraform-provider-foo_1.0.0_linux_amd64.zip"),
	}
	_, _ = c.PublishProvider(context.Background(), "acme", "foo", "1.0.0", files)
}
