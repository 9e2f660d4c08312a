package e2e

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// The web UI's tests drive a real Chromium, headless, against a real
// `trove serve`. scripts/testenv/chromium.sh installs Debian's chromium
// and exports TROVE_TEST_CHROMIUM; like terraform, a missing browser fails
// the tests with the command that installs it, never skips them.

// Bounds on the browser. They end a hung browser with a clear failure; no
// assertion depends on them.
const (
	browserTimeout = 4 * time.Minute  // the whole life of one browser
	stepTimeout    = 30 * time.Second // one action: a navigation, a click, a wait
)

// defaultChromium is Debian's chromium, used when TROVE_TEST_CHROMIUM is unset.
const defaultChromium = "/usr/bin/chromium"

// requireChromium returns the chromium binary, failing the test with the
// command that provides it when it is missing.
func requireChromium(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("TROVE_TEST_CHROMIUM")
	if bin == "" {
		bin = defaultChromium
	}
	if _, err := exec.LookPath(bin); err != nil {
		t.Fatalf("Chromium is not available (%v): the web UI's browser tests drive it headless; "+
			"install it with 'apt-get update && apt-get install -y chromium' "+
			"(or 'source scripts/testenv/chromium.sh', which does that as root and exports TROVE_TEST_CHROMIUM) and run again", err)
	}
	return bin
}

// browserTab is one tab of a headless Chromium that trusts the test
// server's CA. Every message the pages write to the console at the level
// of an error (an uncaught exception, a Content-Security-Policy violation,
// a console.error) fails the test when it ends, but for the 404 of a
// page the test opened on purpose.
type browserTab struct {
	t   *testing.T
	srv *troveServer
	ctx context.Context // the tab's chromedp context; the browser is running
	log *consoleLog
}

// consoleLog collects the problems the tab's console reports.
type consoleLog struct {
	mu       sync.Mutex
	problems []string
	expected map[string]bool // URLs whose 404 the test asked for
}

// newBrowser starts a headless Chromium for srv with a fresh profile and
// a 1280 pixels wide window, and opens one tab. The browser stops when the
// test ends, or after browserTimeout.
//
// The server's certificate is trusted by its public key and its CA's
// (--ignore-certificate-errors-spki-list, read over a connection that
// verifies the certificate against the CA): Chromium then accepts this
// test server's certificate only, where --ignore-certificate-errors would
// accept any. Chromium takes trust anchors only from an NSS database (no
// SSL_CERT_FILE), and certutil is not on these machines. The page is a
// secure context, so the __Host- cookies of the UI work as on a real
// deployment.
func newBrowser(t *testing.T, srv *troveServer) *browserTab {
	t.Helper()
	bin := requireChromium(t)
	profile := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("ignore-certificate-errors-spki-list", spkiHashes(t, srv)),
		chromedp.UserDataDir(filepath.Join(profile, "user-data")),
		chromedp.WindowSize(1280, 900),
		// A HOME of its own: nothing of the machine's profile or NSS
		// database is read or written.
		chromedp.Env("HOME="+profile),
	)
	life, stop := context.WithTimeout(context.Background(), browserTimeout)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(life, opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	b := &browserTab{t: t, srv: srv, ctx: ctx, log: &consoleLog{expected: map[string]bool{}}}
	t.Cleanup(func() {
		// Close the browser gracefully, within bounds, then release
		// everything; the process is killed if it does not stop.
		done, cancel := context.WithTimeout(ctx, 10*time.Second)
		_ = chromedp.Cancel(done)
		cancel()
		cancelTab()
		cancelAlloc()
		stop()
	})

	// The first Do starts the browser and binds it to ctx (see
	// chromedp.NewContext): no timeout of its own, life bounds it.
	messages := chromedp.Console(ctx)
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s headless: %v", bin, err)
	}
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			b.log.record(m)
		}
	}()
	t.Cleanup(b.checkConsole)
	return b
}

// in returns the tab for use by the subtest t, whose end checks the
// console of the pages it visited.
func (b *browserTab) in(t *testing.T) *browserTab {
	c := *b
	c.t = t
	t.Cleanup(c.checkConsole)
	return &c
}

// spkiHashes returns the base64 SHA-256 hashes of the public keys of the
// CA certificate in srv.CAFile and of the certificates srv presents, as
// --ignore-certificate-errors-spki-list wants them (comma-separated).
// The connection that reads them trusts only the CA.
func spkiHashes(t *testing.T, srv *troveServer) string {
	t.Helper()
	raw, err := os.ReadFile(srv.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw) {
		t.Fatalf("%s holds no PEM certificate", srv.CAFile)
	}
	var certs []*x509.Certificate
	for rest := raw; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatalf("parsing the CA certificate %s: %v", srv.CAFile, err)
		}
		certs = append(certs, cert)
	}
	d := tls.Dialer{Config: &tls.Config{RootCAs: pool, ServerName: "localhost"}}
	ctx, cancel := context.WithTimeout(t.Context(), stepTimeout)
	defer cancel()
	conn, err := d.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(srv.Port))
	if err != nil {
		t.Fatalf("reading the server's certificate: %v", err)
	}
	certs = append(certs, conn.(*tls.Conn).ConnectionState().PeerCertificates...)
	conn.Close()
	var hashes []string
	for _, c := range certs {
		sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
		hashes = append(hashes, base64.StdEncoding.EncodeToString(sum[:]))
	}
	return strings.Join(hashes, ",")
}

// record keeps a console message that shows something wrong with a page.
func (l *consoleLog) record(m chromedp.ConsoleMessage) {
	if m.Type != chromedp.ConsoleError && m.Type != chromedp.ConsoleException {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// Chromium logs every response with an error status as "Failed to
	// load resource": a 404 page the test navigated to on purpose is
	// fine, and so is /favicon.ico, which Chromium asks for by itself and
	// the UI does not serve.
	if m.Source == "network" && strings.Contains(m.Text, "status of 404") {
		if u, err := url.Parse(m.URL); l.expected[m.URL] || err == nil && u.Path == "/favicon.ico" {
			return
		}
	}
	where := m.URL
	if where != "" {
		where = fmt.Sprintf(" (%s:%d)", m.URL, m.Line+1)
	}
	l.problems = append(l.problems, fmt.Sprintf("%s %s: %s%s", m.Type, m.Source, m.Text, where))
}

// take returns the problems recorded so far and forgets them.
func (l *consoleLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.problems
	l.problems = nil
	return p
}

// checkConsole fails the test for every console problem of its pages.
func (b *browserTab) checkConsole() {
	// Let the console stream deliver what the last page wrote: a round
	// trip to the tab orders it after every earlier event.
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	_, _ = chromedp.Run(ctx, chromedp.Evaluate[int]("1"))
	cancel()
	for _, p := range b.log.take() {
		b.t.Errorf("browser console: %s", p)
	}
}

// step runs actions with stepTimeout and fails the test on an error.
func (b *browserTab) step(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("%s: %v%s", what, err, b.where())
	}
}

// run runs one action of b with stepTimeout and returns its value,
// failing the test on an error.
func run[T any](b *browserTab, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("%s: %v%s", what, err, b.where())
	}
	return v
}

// where says which page the tab shows, for failure messages.
func (b *browserTab) where() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		return ""
	}
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body ? document.body.innerText.slice(0, 2000) : ''"))
	return fmt.Sprintf("\n(the tab shows %s:\n%s)", loc, text)
}

// addr returns the absolute URL of path on the server.
func (b *browserTab) addr(path string) string {
	return b.srv.Addr + path
}

// open navigates to path, waits for the page to load and fails unless it
// answered status.
func (b *browserTab) open(path string, status int) {
	b.t.Helper()
	u := b.addr(path)
	if status == 404 {
		b.log.mu.Lock()
		b.log.expected[u] = true
		b.log.mu.Unlock()
	}
	resp := run(b, "opening "+path, chromedp.NavigateResponse(u))
	if resp == nil || int(resp.Status) != status {
		got := "no response"
		if resp != nil {
			got = fmt.Sprintf("status %d", resp.Status)
		}
		b.t.Fatalf("opening %s: %s, want %d%s", path, got, status, b.where())
	}
}

// navigating runs trigger, an action that makes the page navigate (a
// click on a link or a button, a change of the version selector), waits
// until the next page has loaded and fails unless it answered status.
func (b *browserTab) navigating(what string, status int, trigger chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	resp, err := chromedp.RunResponse(ctx, trigger)
	if err != nil {
		b.t.Fatalf("%s: %v%s", what, err, b.where())
	}
	if resp == nil || int(resp.Status) != status {
		got := "no response"
		if resp != nil {
			got = fmt.Sprintf("status %d", resp.Status)
		}
		b.t.Fatalf("%s: %s, want %d%s", what, got, status, b.where())
	}
}

// location returns the tab's URL. It asks the page's navigation history
// rather than the document, whose script context may be being replaced
// just after a navigation.
func (b *browserTab) location() *url.URL {
	b.t.Helper()
	h := run(b, "reading the location", chromedp.NavigationEntries())
	if h.CurrentIndex < 0 || int(h.CurrentIndex) >= len(h.Entries) {
		b.t.Fatalf("the tab's history has no current entry: %+v", h)
	}
	u, err := url.Parse(h.Entries[h.CurrentIndex].URL)
	if err != nil {
		b.t.Fatal(err)
	}
	return u
}

// text returns the visible text of the first element matching the CSS
// selector, waiting until one is visible.
func (b *browserTab) text(sel string) string {
	b.t.Helper()
	b.step("waiting for "+sel, chromedp.WaitVisible(chromedp.CSS(sel)))
	return strings.TrimSpace(run(b, "reading the text of "+sel, chromedp.Text(chromedp.CSS(sel))))
}

// waitText waits until the text of the element matching sel contains want.
func (b *browserTab) waitText(sel, want string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	var err error
	for {
		_, err = chromedp.Run(ctx, chromedp.PollFunction[bool](
			`(sel, want) => { const e = document.querySelector(sel); return !!e && e.textContent.includes(want); }`,
			chromedp.WithPollingArgs(sel, want), chromedp.WithPollingTimeout(stepTimeout), chromedp.WithPollingMutation()))
		// Just after a navigation the poll may start in the document being
		// replaced, whose script context then disappears: poll again in the
		// new one.
		if err == nil || ctx.Err() != nil || !strings.Contains(err.Error(), "Cannot find context") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		b.t.Fatalf("waiting for %q in %s: %v%s", want, sel, err, b.where())
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](b *browserTab, expr string) T {
	b.t.Helper()
	return run(b, "evaluating "+expr, chromedp.Evaluate[T](expr))
}

// grantClipboard lets the server's pages read and write the clipboard
// without asking, as a user who allowed it would.
func (b *browserTab) grantClipboard() {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		_, err := chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
			Permission: &browser.PermissionDescriptor{Name: name},
			Setting:    browser.PermissionSettingGranted,
			Origin:     b.srv.Addr,
		})
		if err != nil {
			b.t.Fatalf("granting %s to %s: %v", name, b.srv.Addr, err)
		}
	}
}

// cookie returns the browser's cookie name for the server, or nil.
func (b *browserTab) cookie(name string) *network.Cookie {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{b.srv.Addr + "/"}})
	if err != nil {
		b.t.Fatalf("reading the cookies: %v", err)
	}
	for _, c := range res.Cookies {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// setCookie puts a cookie back into the browser as the server once set it.
func (b *browserTab) setCookie(c *network.Cookie) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, stepTimeout)
	defer cancel()
	secure, httpOnly := c.Secure, c.HTTPOnly
	_, err := chromedp.Call(ctx, network.SetCookie, network.SetCookieParams{
		Name: c.Name, Value: c.Value, URL: b.srv.Addr + "/", Path: c.Path,
		Secure: &secure, HTTPOnly: &httpOnly, SameSite: c.SameSite,
	})
	if err != nil {
		b.t.Fatalf("setting cookie %s: %v", c.Name, err)
	}
}

// signIn signs user in through the sign-in form and waits for the header
// to name them.
func (b *browserTab) signIn(user, password string) {
	b.t.Helper()
	b.open("/sign-in", 200)
	b.step("filling the sign-in form",
		chromedp.WaitVisible(chromedp.CSS("#username")),
		chromedp.SendKeys(chromedp.CSS("#username"), user),
		chromedp.SendKeys(chromedp.CSS("#password"), password),
	)
	b.navigating("submitting the sign-in form", 200, chromedp.Click(chromedp.CSS(`form[action="/sign-in"] button[type=submit]`)))
	if got := b.text("header .who a"); got != user {
		b.t.Fatalf("after signing in, the header names %q, want %q%s", got, user, b.where())
	}
}

// screenshots is where screenshot writes: docs/images when
// TROVE_UPDATE_SCREENSHOTS=1, else a temporary directory.
func screenshots(t *testing.T) string {
	t.Helper()
	if os.Getenv("TROVE_UPDATE_SCREENSHOTS") != "1" {
		return t.TempDir()
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "docs", "images")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// screenshot writes a full-page PNG of the tab to dir/ui-name.png.
func (b *browserTab) screenshot(dir, name string) {
	b.t.Helper()
	png := run(b, "taking a screenshot", chromedp.FullScreenshot(100))
	if len(png) < 8 || string(png[1:4]) != "PNG" {
		b.t.Fatalf("the screenshot of %s is not a PNG", name)
	}
	path := filepath.Join(dir, "ui-"+name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s: %d KB", path, len(png)>>10)
}
