package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Bounds on how long the harness waits for a process. They only end a
// hung run with a clear message; no assertion depends on them.
const (
	startTimeout     = time.Minute
	stopTimeout      = 30 * time.Second
	commandTimeout   = 5 * time.Minute
	terraformTimeout = 10 * time.Minute
)

// troveServer is a `trove serve` process started by startTrove.
type troveServer struct {
	Addr       string // https://localhost:<port>, the public URL
	Host       string // localhost:<port>, the host in provider sources
	Port       int
	DataDir    string
	CAFile     string // from the "export SSL_CERT_FILE=" line
	AdminToken string // from the "export TROVE_TOKEN=" line of the first start; "" on a restart

	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has been reaped
	err    error         // cmd.Wait's result, valid after exited is closed
	stderr string        // path of the file that receives the server's log
	stdout *lineLog
	first  bool // started on a fresh data directory
}

// lineLog collects the lines a process writes and lets callers wait for one.
type lineLog struct {
	mu      sync.Mutex
	lines   []string
	changed chan struct{} // closed and replaced on every new line and at EOF
	eof     bool
}

func newLineLog(r io.Reader) *lineLog {
	l := &lineLog{changed: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			l.mu.Lock()
			l.lines = append(l.lines, sc.Text())
			close(l.changed)
			l.changed = make(chan struct{})
			l.mu.Unlock()
		}
		l.mu.Lock()
		l.eof = true
		close(l.changed)
		l.mu.Unlock()
	}()
	return l
}

// wait returns the first line with the given prefix (after trimming
// leading space), waiting for it until the stream ends or ctx is done.
func (l *lineLog) wait(ctx context.Context, prefix string) (string, bool) {
	return l.find(ctx, func(line string) string {
		if s := strings.TrimSpace(line); strings.HasPrefix(s, prefix) {
			return s
		}
		return ""
	})
}

// waitMatch returns the first match of re in any line, waiting for it
// until the stream ends or ctx is done.
func (l *lineLog) waitMatch(ctx context.Context, re *regexp.Regexp) (string, bool) {
	return l.find(ctx, re.FindString)
}

// find returns the first non-empty result of match on the lines read so
// far, waiting for more lines until the stream ends or ctx is done.
func (l *lineLog) find(ctx context.Context, match func(line string) string) (string, bool) {
	for {
		l.mu.Lock()
		for _, line := range l.lines {
			if s := match(line); s != "" {
				l.mu.Unlock()
				return s, true
			}
		}
		eof, changed := l.eof, l.changed
		l.mu.Unlock()
		if eof {
			return "", false
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return "", false
		}
	}
}

// waitEOF waits until the stream has been read to its end, or ctx is
// done: every line is in the log once it returns true. Call it before
// exec.Cmd.Wait when the stream is a StdoutPipe or StderrPipe, which Wait
// closes, possibly before its last lines were read.
func (l *lineLog) waitEOF(ctx context.Context) bool {
	for {
		l.mu.Lock()
		eof, changed := l.eof, l.changed
		l.mu.Unlock()
		if eof {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startTrove runs `trove serve` on a free loopback port with dataDir and
// the extra flags, waits until it answers /healthz and stops it when the
// test ends. A first start (no database in dataDir yet) must print the
// first admin token; a restart must not.
func startTrove(t *testing.T, dataDir string, extra ...string) *troveServer {
	t.Helper()
	return startTroveEnv(t, dataDir, nil, extra...)
}

// startTroveEnv is startTrove with env added to the server's environment
// (a client secret of an identity provider, say).
func startTroveEnv(t *testing.T, dataDir string, env []string, extra ...string) *troveServer {
	t.Helper()
	_, statErr := os.Stat(filepath.Join(dataDir, "trove.db"))
	first := errors.Is(statErr, os.ErrNotExist)
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ { // another process may take the port meanwhile
		s, err := tryStartTrove(t, dataDir, first, extra, env, nil)
		if err == nil {
			return s
		}
		lastErr = err
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	t.Fatalf("starting trove: %v", lastErr)
	return nil
}

// startTroveBehind is startTrove for a server reached through a proxy on
// loopback: front starts the proxy to the server's listening port and
// returns the proxy's port, which becomes the server's public URL (and
// Addr, Host and Port).
func startTroveBehind(t *testing.T, dataDir string, front func(listenPort int) int) *troveServer {
	t.Helper()
	s, err := tryStartTrove(t, dataDir, true, nil, nil, front)
	if err != nil {
		t.Fatalf("starting trove: %v", err)
	}
	return s
}

func tryStartTrove(t *testing.T, dataDir string, first bool, extra, env []string, front func(listenPort int) int) (*troveServer, error) {
	listen := freePort(t)
	port := listen
	if front != nil {
		port = front(listen)
	}
	s := &troveServer{
		Port:    port,
		Host:    "localhost:" + strconv.Itoa(port),
		Addr:    "https://localhost:" + strconv.Itoa(port),
		DataDir: dataDir,
		exited:  make(chan struct{}),
	}
	logFile, err := os.CreateTemp(t.TempDir(), "trove-serve-*.log")
	if err != nil {
		return nil, err
	}
	s.stderr = logFile.Name()
	args := append([]string{"serve",
		"--listen", "127.0.0.1:" + strconv.Itoa(listen),
		"--public-url", s.Addr,
		"--data-dir", dataDir,
	}, extra...)
	s.cmd = exec.Command(troveBin, args...)
	s.cmd.Env = append(baseEnv(t.TempDir()), env...)
	s.cmd.Stderr = logFile
	// An os.Pipe rather than StdoutPipe: Wait must not close the reading
	// end before every line has been read.
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	s.cmd.Stdout = stdoutW
	err = s.cmd.Start()
	logFile.Close() // the child holds its own descriptors
	stdoutW.Close()
	if err != nil {
		stdout.Close()
		return nil, err
	}
	s.stdout = newLineLog(stdout)
	s.first = first
	go func() {
		s.err = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() { s.stop(t) })

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	fail := func(format string, args ...any) (*troveServer, error) {
		s.kill()
		return nil, fmt.Errorf("%s\nstdout:\n%s\nstderr:\n%s", fmt.Sprintf(format, args...), s.stdout, s.log())
	}
	if _, ok := s.stdout.wait(ctx, "Trove listening on "+s.Addr); !ok {
		return fail("trove serve did not print %q", "Trove listening on "+s.Addr)
	}
	line, ok := s.stdout.wait(ctx, "export SSL_CERT_FILE=")
	if !ok {
		return fail("trove serve did not print the export SSL_CERT_FILE= line")
	}
	s.CAFile = strings.TrimPrefix(line, "export SSL_CERT_FILE=")
	if first {
		line, ok := s.stdout.wait(ctx, "export TROVE_TOKEN=")
		if !ok {
			return fail("the first start of trove serve did not print the export TROVE_TOKEN= line")
		}
		s.AdminToken = strings.TrimPrefix(line, "export TROVE_TOKEN=")
	}
	for {
		resp, err := s.httpClient(t).Get(s.Addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-s.exited:
			return fail("trove serve exited: %v", s.err)
		case <-ctx.Done():
			return fail("/healthz did not answer 200 (last error: %v)", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return s, nil
}

// log returns what the server wrote to stderr.
func (s *troveServer) log() string {
	b, _ := os.ReadFile(s.stderr)
	return string(b)
}

// kill stops the server with SIGKILL at once and waits for it.
func (s *troveServer) kill() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// stop interrupts the server (SIGINT) and expects a clean exit; after
// stopTimeout it kills it. The server's log is shown if the test failed.
func (s *troveServer) stop(t *testing.T) {
	select {
	case <-s.exited:
	default:
		_ = s.cmd.Process.Signal(os.Interrupt)
		select {
		case <-s.exited:
			if s.err != nil {
				t.Errorf("trove serve did not exit cleanly on SIGINT: %v", s.err)
			}
		case <-time.After(stopTimeout):
			s.kill()
			t.Errorf("trove serve did not stop within %s of SIGINT; killed it", stopTimeout)
		}
	}
	// The stream ends once the process is gone; only then is it certain
	// that a restart printed no admin token.
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if line, ok := s.stdout.wait(ctx, "export TROVE_TOKEN="); ok && !s.first {
		t.Errorf("a restart of trove serve on an existing data directory printed an admin token: %s", line)
	}
	if t.Failed() {
		t.Logf("trove serve on port %d logged:\n%s", s.Port, s.log())
	}
}

// pid returns the server's process ID.
func (s *troveServer) pid() int { return s.cmd.Process.Pid }

// httpClient returns a client that trusts only the server's CA and never
// sends credentials on its own.
func (s *troveServer) httpClient(t *testing.T) *http.Client {
	t.Helper()
	pem, err := os.ReadFile(s.CAFile)
	if err != nil {
		t.Fatalf("reading the CA file: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("%s holds no PEM certificate", s.CAFile)
	}
	return &http.Client{
		Timeout: commandTimeout,
		Transport: &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: pool},
			DisableKeepAlives: true,
		},
	}
}

// response is a fully read HTTP response.
type response struct {
	Status int
	Header http.Header
	Body   []byte
	URL    *url.URL // the URL requested
}

// do sends a request to rawURL (absolute, or a path on the server) with
// the given headers and reads the whole answer.
func (s *troveServer) do(t *testing.T, method, rawURL string, header http.Header) response {
	t.Helper()
	u, err := url.Parse(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	if u, err = u.Parse(rawURL); err != nil {
		t.Fatalf("parsing %q: %v", rawURL, err)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, u.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := s.httpClient(t).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, u, err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: body, URL: u}
}

// get is an unauthenticated GET.
func (s *troveServer) get(t *testing.T, rawURL string) response {
	t.Helper()
	return s.do(t, http.MethodGet, rawURL, nil)
}

// getJSON GETs rawURL with an optional token, expects 200 and decodes the
// JSON body into v.
func (s *troveServer) getJSON(t *testing.T, rawURL, token string, v any) response {
	t.Helper()
	h := http.Header{}
	if token != "" {
		h.Set("Authorization", "Bearer "+token)
	}
	r := s.do(t, http.MethodGet, rawURL, h)
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s: status %d, want 200: %s", rawURL, r.Status, r.Body)
	}
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("GET %s: decoding %s: %v", rawURL, r.Body, err)
	}
	return r
}

// providersBase returns the providers.v1 base URL from service discovery,
// resolved against the discovery URL as the clients do.
func (s *troveServer) providersBase(t *testing.T) *url.URL {
	t.Helper()
	var disco map[string]any // login.v1 is an object, the others strings
	r := s.getJSON(t, "/.well-known/terraform.json", "", &disco)
	providers, _ := disco["providers.v1"].(string)
	base, err := r.URL.Parse(providers)
	if err != nil || providers == "" {
		t.Fatalf("discovery document %s has no usable providers.v1: %v", r.Body, err)
	}
	return base
}

// cliResult is what a trove client command did.
type cliResult struct {
	Stdout, Stderr string
	Code           int
}

// cli runs the trove binary with TROVE_ADDR and TROVE_CA_FILE pointing at
// the server and TROVE_TOKEN set to token (unset if empty).
func (s *troveServer) cli(t *testing.T, token string, args ...string) cliResult {
	t.Helper()
	res, err := s.runCLI(t.Context(), t.TempDir(), token, args...)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// runCLI is cli for use outside the test's goroutine: it reports a
// failure to run the binary as an error. home is the child's HOME.
func (s *troveServer) runCLI(ctx context.Context, home, token string, args ...string) (cliResult, error) {
	ctx, cancel := context.WithTimeout(ctx, commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, troveBin, args...)
	cmd.Env = append(baseEnv(home), "TROVE_ADDR="+s.Addr, "TROVE_CA_FILE="+s.CAFile)
	if token != "" {
		cmd.Env = append(cmd.Env, "TROVE_TOKEN="+token)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := cliResult{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.Exited():
		res.Code = exit.ExitCode()
	default:
		return res, fmt.Errorf("trove %s: %v\nstderr: %s", strings.Join(args, " "), err, res.Stderr)
	}
	return res, nil
}

// mustCLI runs a trove client command that must succeed and returns its
// standard output.
func (s *troveServer) mustCLI(t *testing.T, token string, args ...string) string {
	t.Helper()
	res := s.cli(t, token, args...)
	if res.Code != 0 {
		t.Fatalf("trove %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.Code, res.Stdout, res.Stderr)
	}
	return res.Stdout
}

// baseEnv is the whole environment of a child process: PATH and a fresh
// HOME, nothing inherited that could point at another server, CA or
// configuration.
func baseEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C", "TZ=UTC"}
}

// The clients every client-facing scenario runs with.
const (
	clientTerraform = "terraform"
	clientTofu      = "tofu"
)

// clients lists the CLIs forEachClient runs a scenario with.
var clients = []string{clientTerraform, clientTofu}

// forEachClient runs fn as one subtest per client (terraform and tofu),
// in sequence: they share the machine's two cores with the server.
func forEachClient(t *testing.T, fn func(t *testing.T, client string)) {
	t.Helper()
	for _, client := range clients {
		t.Run(client, func(t *testing.T) { fn(t, client) })
	}
}

// terraformCLI runs the real terraform or tofu binary against one Trove
// with a controlled environment.
type terraformCLI struct {
	name string // clientTerraform or clientTofu
	bin  string
	env  []string
}

// newTerraform prepares a fresh HOME and CLI configuration for running
// terraform against s. With a non-empty token, the configuration holds a
// credentials block for the server's host.
func newTerraform(t *testing.T, s *troveServer, token string) *terraformCLI {
	t.Helper()
	return newClient(t, clientTerraform, s, token)
}

// newClient is newTerraform for the named client (clientTerraform or
// clientTofu). Both read the same CLI configuration file.
func newClient(t *testing.T, client string, s *troveServer, token string) *terraformCLI {
	t.Helper()
	var bin string
	switch client {
	case clientTerraform:
		bin = requireTerraform(t)
	case clientTofu:
		bin = requireTofu(t)
	default:
		t.Fatalf("unknown client %q", client)
	}
	home := t.TempDir()
	config := "# CLI configuration of a Trove end-to-end test.\n"
	if token != "" {
		for _, host := range []string{s.Host, "127.0.0.1:" + strconv.Itoa(s.Port)} {
			config += fmt.Sprintf("credentials %q {\n  token = %q\n}\n", host, token)
		}
	}
	configFile := filepath.Join(home, "terraform.rc")
	if err := os.WriteFile(configFile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	certDir := filepath.Join(home, "no-certs") // an empty SSL_CERT_DIR: trust only SSL_CERT_FILE
	if err := os.Mkdir(certDir, 0o700); err != nil {
		t.Fatal(err)
	}
	env := append(baseEnv(home),
		"TF_CLI_CONFIG_FILE="+configFile,
		"SSL_CERT_FILE="+s.CAFile,
		"SSL_CERT_DIR="+certDir,
		"TF_IN_AUTOMATION=1",
		"CHECKPOINT_DISABLE=1",
	)
	return &terraformCLI{name: client, bin: bin, env: env}
}

// installedLine is what init prints for a provider installed with a
// verified signature: Terraform calls a key that is not HashiCorp's or a
// partner's "self-signed", OpenTofu says "signed".
func (tf *terraformCLI) installedLine(source, version, keyID string) string {
	kind := "self-signed"
	if tf.name == clientTofu {
		kind = "signed"
	}
	return fmt.Sprintf("Installed %s v%s (%s, key ID %s)", source, version, kind, keyID)
}

// tfResult is what a terraform command did. Output holds stdout and
// stderr interleaved; Flat is Output unwrapped (see flatten).
type tfResult struct {
	Output string
	Flat   string
	Code   int
}

// run runs terraform with args (plus -no-color) in dir.
func (tf *terraformCLI) run(t *testing.T, dir string, args ...string) tfResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), terraformTimeout)
	defer cancel()
	if len(args) > 0 && args[0] != "version" {
		args = append(args[:1:1], append([]string{"-no-color"}, args[1:]...)...)
	}
	cmd := exec.CommandContext(ctx, tf.bin, args...)
	cmd.Dir = dir
	cmd.Env = tf.env
	out, err := cmd.CombinedOutput()
	res := tfResult{Output: string(out), Flat: flatten(string(out))}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.Exited():
		res.Code = exit.ExitCode()
	default:
		t.Fatalf("%s %s: %v\n%s", tf.name, strings.Join(args, " "), err, out)
	}
	return res
}

// mustRun runs a terraform command that must succeed.
func (tf *terraformCLI) mustRun(t *testing.T, dir string, args ...string) tfResult {
	t.Helper()
	res := tf.run(t, dir, args...)
	if res.Code != 0 {
		t.Fatalf("%s %s in %s: exit %d\n%s", tf.name, strings.Join(args, " "), dir, res.Code, res.Output)
	}
	return res
}

var (
	ansiEscape = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]`)
	whitespace = regexp.MustCompile(`\s+`)
)

// flatten undoes terraform's formatting so that messages can be matched
// as plain text: it drops colour codes and the box-drawing borders of
// diagnostics, and joins the lines terraform wraps at about 78 columns by
// collapsing every run of white space into one space.
func flatten(s string) string {
	s = ansiEscape.ReplaceAllString(s, "")
	s = strings.NewReplacer("│", " ", "╷", " ", "╵", " ").Replace(s)
	return strings.TrimSpace(whitespace.ReplaceAllString(s, " "))
}

// writeFile writes content to dir/name and returns the path.
func writeFile(t *testing.T, dir, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
