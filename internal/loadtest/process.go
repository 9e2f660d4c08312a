package loadtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"trove.dev/trove/internal/registry"
)

// child is a process the harness started. It runs in its own process
// group, so that a Ctrl-C in the terminal reaches only the harness, which
// then stops it; and it is killed by the kernel if the harness dies first.
type child struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
	waitErr error
}

// startChild starts bin with args and env, on pin's server CPU when pin is
// not nil. Its stderr (and stdout, unless stdout is given) go to logPath.
func startChild(name, bin string, args, env []string, logPath string, stdout io.Writer, stdin io.Reader, pin *pinning) (*child, error) {
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, registry.Wrap(registry.Internal, err, "creating the log of "+name)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stderr = logFile
	cmd.Stdout = logFile
	if stdout != nil {
		cmd.Stdout = stdout
	}
	cmd.Stdin = stdin
	cmd.SysProcAttr = childAttr()
	start := cmd.Start
	if pin != nil {
		start = func() error { return pin.start(cmd) }
	}
	if err := start(); err != nil {
		logFile.Close()
		return nil, registry.Wrap(registry.Internal, err, "starting "+name)
	}
	c := &child{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		c.waitErr = cmd.Wait()
		logFile.Close()
		close(c.done)
	}()
	return c, nil
}

// pid returns the process ID.
func (c *child) pid() int { return c.cmd.Process.Pid }

// exited reports whether the process has ended.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop asks the process to end (SIGTERM), kills it after grace, and
// waits for it. Stopping an ended process does nothing.
func (c *child) stop(grace time.Duration) {
	if c.exited() {
		return
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
		return
	case <-time.After(grace):
	}
	_ = c.cmd.Process.Kill()
	<-c.done
}

// failure describes an unexpected exit with the end of the process's log.
func (c *child) failure(what string) error {
	return registry.Errorf(registry.Unavailable, "%s: %s exited (%v); end of its log:\n%s", what, c.name, c.waitErr, c.logTail(20))
}

// logTail returns the last n lines of the process's log.
func (c *child) logTail(n int) string {
	data, err := os.ReadFile(c.logPath)
	if err != nil {
		return "(log unreadable: " + err.Error() + ")"
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, registry.Wrap(registry.Unavailable, err, "finding a free port on 127.0.0.1")
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitHealthy polls url until it answers 200, the child exits or timeout
// passes. newClient is called before every attempt until it succeeds (the
// CA file may appear only once the server has started).
func waitHealthy(ctx context.Context, c *child, url string, newClient func() (*http.Client, error), timeout time.Duration) (*http.Client, error) {
	deadline := time.Now().Add(timeout)
	var lastErr error
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, registry.Wrap(registry.Unavailable, ctx.Err(), "waiting for "+c.name)
			case <-c.done:
				return nil, c.failure("waiting for " + url)
			case <-time.After(100 * time.Millisecond):
			}
		}
		client, err := newClient()
		if err != nil {
			lastErr = err
			continue
		}
		reqCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		req, _ := http.NewRequestWithContext(reqCtx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err != nil {
			cancel()
			lastErr = err
			continue
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		cancel()
		if resp.StatusCode == http.StatusOK {
			return client, nil
		}
		lastErr = fmt.Errorf("status %s", resp.Status)
	}
	if c.exited() {
		return nil, c.failure("waiting for " + url)
	}
	return nil, registry.Errorf(registry.Unavailable, "%s did not answer %s within %s (last error: %v); end of its log:\n%s", c.name, url, timeout, lastErr, c.logTail(20))
}

// fetch GETs url and returns its body, which must be a 200 JSON answer.
func fetch(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	return fetchAs(ctx, client, url, "application/json")
}

// fetchPage fetches a page of the web UI as a browser asks for it
// (Accept: text/html) and returns its body, which must be HTML.
func fetchPage(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	return fetchAs(ctx, client, url, "text/html")
}

// htmlHeader is the header of the requests for the web UI's pages.
func htmlHeader() http.Header {
	return http.Header{"Accept": {"text/html,application/xhtml+xml"}}
}

// fetchAs fetches url and returns its body, which must be 200 with a
// Content-Type of the media type want (text/html is asked for in Accept).
func fetchAs(ctx context.Context, client *http.Client, url, want string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if want == "text/html" {
		req.Header = htmlHeader()
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, registry.Wrap(registry.Unavailable, err, "fetching "+url)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocumentBytes+1))
	if err != nil {
		return nil, registry.Wrap(registry.Unavailable, err, "reading "+url)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, registry.Errorf(registry.Unavailable, "GET %s answered %s: %s", url, resp.Status, bytes.TrimSpace(body[:min(len(body), 500)]))
	}
	if len(body) > maxDocumentBytes {
		return nil, registry.Errorf(registry.TooLarge, "GET %s answered more than %d bytes", url, maxDocumentBytes)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, want) {
		return nil, registry.Errorf(registry.Invalid, "GET %s answered Content-Type %q, want %s", url, ct, want)
	}
	return body, nil
}
