package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/respcache"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var staticFiles embed.FS

// contentSecurityPolicy is the policy of every page: scripts and styles
// only from this origin's files (no inline script, style or handler),
// images from this origin or https (module READMEs show badges and
// diagrams), no frames, no plugins, forms only to this origin.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// staticVersions maps each embedded asset to a short hash of its content,
// added to its URLs so that browsers may keep it forever.
var staticVersions = func() map[string]string {
	m := map[string]string{}
	_ = fs.WalkDir(staticFiles, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := staticFiles.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		m[strings.TrimPrefix(p, "static/")] = hex.EncodeToString(sum[:6])
		return nil
	})
	return m
}()

// staticURL returns the URL of an embedded asset, versioned by its content.
func staticURL(name string) string {
	return StaticPath + name + "?v=" + staticVersions[name]
}

// staticHandler serves the embedded assets: forever cacheable when asked
// for with their current version, revalidated otherwise.
func staticHandler() http.Handler {
	sub, _ := fs.Sub(staticFiles, "static")
	files := http.StripPrefix(StaticPath, http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, StaticPath)
		v, ok := staticVersions[name]
		if !ok {
			httpjson.WriteRaw(w, http.StatusNotFound, []byte(`{"errors":["no such asset"]}`))
			return
		}
		if r.URL.Query().Get("v") == v {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		} else {
			w.Header().Set("Cache-Control", "no-cache")
		}
		files.ServeHTTP(w, r)
	})
}

var funcs = template.FuncMap{
	"static": staticURL,
	"date": func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.UTC().Format("2006-01-02")
	},
	"datetime": func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.UTC().Format("2006-01-02 15:04 UTC")
	},
	"iso":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
	"bytes": humanBytes,
	"join":  strings.Join,
	"plural": func(n int, one, many string) string {
		if n == 1 {
			return strconv.Itoa(n) + " " + one
		}
		return strconv.Itoa(n) + " " + many
	},
	"count":       func(n int64) string { return groupDigits(n) },
	"pathEscape":  url.PathEscape,
	"queryEscape": url.QueryEscape,
	"json":        prettyJSON,
	"snippetOf": func(id, label, text string) snippetData {
		return snippetData{ID: id, Label: label, Text: text}
	},
	"oneLine":   oneLine,
	"wrapType":  wrapType,
	"multiline": func(s string) bool { return strings.Contains(s, "\n") },
}

var templates = template.Must(template.New("").Funcs(funcs).ParseFS(templateFiles, "templates/*.html"))

// snippetData is a block of code with a button that copies it.
type snippetData struct{ ID, Label, Text string }

// humanBytes says a size for people.
func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return strconv.FormatInt(n, 10) + " B"
}

// groupDigits writes n with thousands separators.
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// visit is one request to a page: who asks, and what the layout needs.
type visit struct {
	p         auth.Principal
	sessionID string // the session's token ID, "" when not signed in
	now       time.Time
	query     string // the search box's value
	secret    bool   // the page shows a secret once: no-store, no validator
}

// signedIn reports whether the visitor has a session.
func (v *visit) signedIn() bool { return v.sessionID != "" }

// pageHandler serves one page for a visit; it returns an error instead of
// writing one, and the error page is rendered for it.
type pageHandler func(w http.ResponseWriter, r *http.Request, v *visit) error

// page wraps h: it reads the session, runs h and renders its error.
func (s *Service) page(h pageHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.serve(w, r, h) }
}

// serve reads the session, runs h and renders its error. h does not
// outlive the call, so a closure passed as h stays on the stack.
func (s *Service) serve(w http.ResponseWriter, r *http.Request, h pageHandler) {
	v := &visit{now: s.opt.Now()}
	if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
		p, err := s.opt.Access.Authenticator().AuthenticateSession(r.Context(), c.Value)
		switch {
		case err == nil && p.Session && p.Token.User != "":
			v.p, v.sessionID = p, p.Token.ID
		case err == nil || registry.IsKind(err, registry.Unauthenticated):
			clearSession(w) // expired, revoked, or not a session
		default:
			s.errorPage(w, r, v, err)
			return
		}
	}
	if err := h(w, r, v); err != nil {
		s.errorPage(w, r, v, err)
	}
}

// errorPage renders err as a page: its kind decides the status, its
// registry.Message is shown (never a backend's text, which is logged).
func (s *Service) errorPage(w http.ResponseWriter, r *http.Request, v *visit, err error) {
	kind := registry.KindOf(err)
	if kind == registry.Unauthenticated && r.Method == http.MethodGet {
		http.Redirect(w, r, SignInPath+"?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		return
	}
	status := httpjson.Status(kind)
	msg := registry.Message(err)
	if kind == registry.Internal || kind == registry.Unavailable {
		s.log.ErrorContext(r.Context(), "web: page failed", "path", r.URL.Path, "err", err)
	}
	title := map[int]string{
		http.StatusNotFound: "Not found", http.StatusForbidden: "Not allowed", http.StatusBadRequest: "Bad request",
		http.StatusConflict: "Conflict", http.StatusUnauthorized: "Sign in needed", http.StatusTooManyRequests: "Too many requests",
	}[status]
	if title == "" {
		title = "Something went wrong"
	}
	s.render(w, r, v, status, title, "error", struct {
		Title, Message string
		Status         int
	}{title, msg, status})
}

// layoutData is what the layout around every page needs: the head
// (layout-head, everything up to the page's content) and the foot
// (layout-foot, the same on every page of a Service: layoutFoot).
type layoutData struct {
	Title string
	User  string
	Admin bool
	CSRF  string
	Query string
	Host  string
	Next  string
}

// render executes the page template name with data and writes it inside
// the layout.
func (s *Service) render(w http.ResponseWriter, r *http.Request, v *visit, status int, title, name string, data any) {
	content, err := execute(name, data)
	if err != nil {
		s.log.ErrorContext(r.Context(), "web: rendering a page failed", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	b := []byte(content)
	s.write(w, r, v, status, title, b, sha256.Sum256(b))
}

// execute runs one template into HTML.
func execute(name string, data any) (template.HTML, error) {
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, name, data); err != nil {
		return "", err
	}
	return template.HTML(buf.String()), nil // html/template escaped it
}

var bufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// layoutFoot renders the end of every page for host.
func layoutFoot(host string) ([]byte, error) {
	var buf bytes.Buffer
	if err := templates.ExecuteTemplate(&buf, "layout-foot", layoutData{Host: host}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// layoutFor is the layout's data for visit v of r.
func (s *Service) layoutFor(r *http.Request, v *visit, title string) layoutData {
	d := layoutData{Title: title, Query: v.query, Host: s.opt.Host, Next: signInNext(r)}
	if v.signedIn() {
		d.User, d.Admin, d.CSRF = v.p.User.Name, v.p.User.Admin, s.csrfFor("session", v.sessionID)
	}
	return d
}

// pageETag is the validator of a page made of head, content (whose
// SHA-256 is contentSum) and the layout's foot: a page's ETag changes
// whenever one of its bytes does, and a cached page part is never hashed
// again per request.
func pageETag(head []byte, contentSum [sha256.Size]byte, foot []byte) string {
	h := sha256.New()
	h.Write(head)
	h.Write(contentSum[:])
	h.Write(foot)
	var sum [sha256.Size]byte
	return `"` + base64.RawURLEncoding.EncodeToString(h.Sum(sum[:0])[:16]) + `"`
}

// The headers of every page, shared header values: net/http never
// modifies them, and their capacity equals their length, so an append
// copies.
var (
	headerHTML       = []string{"text/html; charset=utf-8"}
	headerCSP        = []string{contentSecurityPolicy}
	headerDeny       = []string{"DENY"}
	headerNoCache    = []string{"private, no-cache"}
	headerNoStore    = []string{"no-store"}
	headerVaryCookie = []string{"Cookie, Accept-Encoding"}
	headerGzip       = []string{"gzip"}
)

// pageHeaders sets the headers of every page. With the middleware's
// X-Content-Type-Options, the ETag and Content-Length (and
// Content-Encoding, or write's X-Frame-Options) a page sends at most 8
// headers: past 8 the map outgrows its first group and net/http's
// clone, sort and write of it cost every page more
// (docs/benchmarks.md). The referrer policy is the layout's
// <meta name="referrer">, which governs every request a page makes as
// the header would; framing is refused by the policy's frame-ancestors
// in every browser with CSP 2, and by X-Frame-Options, for older ones,
// on every page but the cached pages an anonymous visitor reads, which
// offer nothing to click that acts (docs/ui.md, "Security headers").
func pageHeaders(h http.Header) {
	h["Content-Type"] = headerHTML
	h["Content-Security-Policy"] = headerCSP
	h["Cache-Control"] = headerNoCache
	h["Vary"] = headerVaryCookie
}

// write sends content (whose SHA-256 is contentSum) inside the layout,
// with the headers of every page and a validator (304 when the browser
// has this very page).
func (s *Service) write(w http.ResponseWriter, r *http.Request, v *visit, status int, title string, content []byte, contentSum [sha256.Size]byte) {
	buf := bufs.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufs.Put(buf)
	if err := templates.ExecuteTemplate(buf, "layout-head", s.layoutFor(r, v, title)); err != nil {
		s.log.ErrorContext(r.Context(), "web: rendering the layout failed", "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	pageHeaders(h)
	h["X-Frame-Options"] = headerDeny
	if v != nil && v.secret {
		// A secret shown once is stored nowhere: no browser's disk cache,
		// and no validator to ask for the page again with.
		h["Cache-Control"] = headerNoStore
	} else if status == http.StatusOK {
		etag := pageETag(buf.Bytes(), contentSum, s.foot)
		h["Etag"] = []string{etag}
		if httpjson.MatchETag(r.Header.Get("If-None-Match"), etag) {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	h["Content-Length"] = []string{strconv.Itoa(buf.Len() + len(content) + len(s.foot))}
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		buf.Write(content)
		buf.Write(s.foot)
		_, _ = w.Write(buf.Bytes())
	}
}

// writePart sends a cached page: the whole page kept for anonymous
// visitors of the same address (and search text), as it is or as its
// gzip variant (made once per page) when the request accepts gzip;
// otherwise the part inside this visitor's layout, uncompressed.
func (s *Service) writePart(w http.ResponseWriter, r *http.Request, v *visit, e *respcache.Entry[*pagePart]) {
	p := e.Value
	if v.signedIn() || v.query != p.query || !isRequestURI(r.URL, p.next) {
		s.write(w, r, v, http.StatusOK, p.title, e.Body[p.start:p.end], p.sum)
		return
	}
	h := w.Header()
	pageHeaders(h)
	body, etag, length := e.Body, e.ETag, e.Length
	gz := e.Compressible() && respcache.AcceptsGzip(r.Header["Accept-Encoding"])
	if gz {
		z := e.Gzip()
		body, etag, length = z.Body, z.ETag, z.Length
	}
	h["Etag"] = etag
	if inm := r.Header["If-None-Match"]; len(inm) > 0 && httpjson.MatchETag(inm[0], etag[0]) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if gz {
		h["Content-Encoding"] = headerGzip
	}
	h["Content-Length"] = length
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// isRequestURI reports whether uri is u.RequestURI(), without making
// the latter (a string per request for an address with a query).
func isRequestURI(u *url.URL, uri string) bool {
	if u.Opaque != "" || u.ForceQuery {
		return u.RequestURI() == uri
	}
	p := u.EscapedPath()
	if p == "" {
		p = "/"
	}
	if u.RawQuery == "" {
		return uri == p
	}
	return len(uri) == len(p)+1+len(u.RawQuery) && uri[:len(p)] == p && uri[len(p)] == '?' && uri[len(p)+1:] == u.RawQuery
}

// signInNext is the page of r to return to after signing in (the layout's
// sign-in link): its address, unless longer than maxNextLength (no page
// of this site has such an address: sign-in then leads home).
func signInNext(r *http.Request) string {
	if next := r.URL.RequestURI(); len(next) <= maxNextLength {
		return next
	}
	return ""
}

// maxNextLength bounds the page to return to after signing in: longer
// than any address of this site, so the sign-in link of a page for a
// hostile address does not repeat it.
const maxNextLength = 2048

// cleanPath reports whether p is a clean absolute path of this site, for
// the "next" page after signing in: no scheme, no host, no "//" or "\"
// that a browser would take for another site.
func cleanPath(p string) bool {
	if p == "" || len(p) > maxNextLength || !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\\r\n\t") {
		return false
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" {
		return false
	}
	return path.Clean(u.Path) == u.Path || u.Path+"/" == path.Clean(u.Path)+"/"
}
