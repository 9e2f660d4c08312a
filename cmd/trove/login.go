package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"html"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	svchost "github.com/hashicorp/terraform-svchost"

	"trove.dev/trove/client"
	"trove.dev/trove/internal/config"
)

// defaultLoginTimeout bounds the wait for the browser.
const defaultLoginTimeout = 10 * time.Minute

func loginCommand() *command {
	return &command{
		name: "login", args: "[HOST] [--device] [--timeout DURATION]", maxArgs: 1, client: true, connOnly: true,
		summary: "Log in through a browser (as terraform login does) and store the token where terraform, tofu and trove find it. " +
			"With --device (the default over SSH without a display), the browser may be on another machine: type the code shown into the page named.",
		examples: []string{
			"trove login registry.internal",
			"trove login          # the host of --addr or TROVE_ADDR",
			"BROWSER=firefox trove login localhost:8443",
			"trove login --device registry.internal   # on a server or in a container",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			timeout := fs.Duration("timeout", defaultLoginTimeout, "how long to wait for the login in the browser")
			device := fs.Bool("device", false, "log in with a code typed into a browser anywhere (the device authorization grant), for a machine without a browser; "+
				"the default when SSH_CONNECTION is set and neither DISPLAY, WAYLAND_DISPLAY nor BROWSER is")
			return func(ctx context.Context, args []string) error {
				addr := cl.hostArg(args)
				if *timeout <= 0 {
					return usagef("--timeout must be positive, got %s", config.ShortDuration(*timeout))
				}
				if *device || noLocalBrowser(cl.getenv) {
					return runDeviceLogin(ctx, cl, addr, *timeout)
				}
				return runLogin(ctx, cl, addr, *timeout)
			}
		},
	}
}

// unresolvedHost returns err with advice when it says that host does not
// resolve, and err itself otherwise. trove.localhost never resolves: it
// is the name Terraform and OpenTofu use for a local Trove through the
// host block `trove serve` writes, not an address trove can reach.
func unresolvedHost(host svchost.Hostname, err error) error {
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		return err
	}
	if host.String() == localHostName {
		return fmt.Errorf("%s does not resolve: it is the name Terraform and OpenTofu use for a local Trove through the host block of "+
			"their CLI configuration (%s), not an address trove can reach; run `trove login` without a host, "+
			"which logs in to the server of --addr or TROVE_ADDR (default %s)", localHostName, cliConfigFile, defaultAddr)
	}
	return fmt.Errorf("%s does not resolve (%w): check the host name, or run `trove login` without a host, "+
		"which logs in to the server of --addr or TROVE_ADDR (default %s)", host.ForDisplay(), err, defaultAddr)
}

// runLogin runs the authorization code flow with PKCE against the login.v1
// service of the host of addr and stores the token it obtains.
func runLogin(ctx context.Context, cl *cli, addr string, timeout time.Duration) error {
	hosts, err := credentialsHosts(addr)
	if err != nil {
		return usagef("%s", err)
	}
	host := hosts[0]
	path, err := credentialsPath(cl.getenv)
	if err != nil {
		return err
	}
	c, err := cl.clientFor(addr, "")
	if err != nil {
		return err
	}
	svc, err := c.DiscoverLogin(ctx)
	if err != nil {
		return unresolvedHost(host, err)
	}
	ln, port, err := listenLoopback(svc.MinPort, svc.MaxPort)
	if err != nil {
		return err
	}
	defer ln.Close()
	req, err := svc.NewLoginRequest(port)
	if err != nil {
		return err
	}
	codes := make(chan loginResult, 1)
	srv := &http.Server{Handler: callbackHandler(req.State, codes), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	defer srv.Close()

	fmt.Fprintf(cl.stderr, "Open this URL in a web browser and log in to %s:\n\n    %s\n\n", host.ForDisplay(), req.URL)
	if b := cl.getenv("BROWSER"); b != "" {
		openBrowser(cl, b, req.URL)
	}
	fmt.Fprintf(cl.stderr, "Waiting for the browser to come back to http://localhost:%d (Ctrl-C to give up)...\n", port)

	wait, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var res loginResult
	select {
	case res = <-codes:
	case <-wait.Done():
		if ctx.Err() != nil {
			return errors.New("login cancelled")
		}
		return fmt.Errorf("no login within %s: run trove login again (--timeout sets the wait)", config.ShortDuration(timeout))
	}
	if res.err != nil {
		return res.err
	}
	token, err := c.ExchangeLoginCode(ctx, svc, req, res.code)
	if err != nil {
		return err
	}
	return storeLogin(ctx, cl, addr, hosts, path, token)
}

// noLocalBrowser reports a session without a browser of its own: over
// SSH, without a display or a BROWSER to open.
func noLocalBrowser(getenv func(string) string) bool {
	return getenv("SSH_CONNECTION") != "" && getenv("DISPLAY") == "" && getenv("WAYLAND_DISPLAY") == "" && getenv("BROWSER") == ""
}

// runDeviceLogin logs in by the device authorization grant: it shows a
// code and the page to type it into, in a browser on any machine, polls
// until the login is approved there, and stores the token.
func runDeviceLogin(ctx context.Context, cl *cli, addr string, timeout time.Duration) error {
	hosts, err := credentialsHosts(addr)
	if err != nil {
		return usagef("%s", err)
	}
	host := hosts[0]
	path, err := credentialsPath(cl.getenv)
	if err != nil {
		return err
	}
	c, err := cl.clientFor(addr, "")
	if err != nil {
		return err
	}
	svc, err := c.DiscoverLogin(ctx)
	if err != nil {
		return unresolvedHost(host, err)
	}
	d, err := c.StartDeviceLogin(ctx, svc)
	if err != nil {
		return err
	}
	fmt.Fprintf(cl.stderr, "To log in to %s, open this page in a browser on any machine, sign in, and type the code:\n\n    %s\n\n    Code: %s\n\n(or open %s)\n",
		host.ForDisplay(), printable(d.VerificationURI), printable(d.UserCode), printable(d.VerificationURIComplete))
	wait := min(timeout, time.Duration(d.ExpiresIn)*time.Second)
	fmt.Fprintf(cl.stderr, "Waiting for the code to be approved (it expires in %s; Ctrl-C to give up)...\n", config.ShortDuration(wait))
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	token, err := c.PollDeviceLogin(pctx, svc, d)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return errors.New("login cancelled")
		case pctx.Err() != nil:
			return fmt.Errorf("the code was not approved within %s: run trove login --device again", config.ShortDuration(wait))
		}
		return err
	}
	return storeLogin(ctx, cl, addr, hosts, path, token)
}

// storeLogin stores the token of a login in the credentials file under
// every name of the host and says who is logged in.
func storeLogin(ctx context.Context, cl *cli, addr string, hosts []svchost.Hostname, path, token string) error {
	host := hosts[0]
	doc, err := readCredentials(path)
	if err != nil {
		return err
	}
	names := make([]string, len(hosts))
	for i, h := range hosts {
		doc.set(h, token)
		names[i] = h.ForDisplay()
	}
	if err := doc.write(path); err != nil {
		return fmt.Errorf("storing the token in %s: %w", path, err)
	}
	who := ""
	if authed, err := cl.clientFor(addr, token); err == nil {
		if t, err := authed.WhoAmI(ctx); err == nil {
			who = fmt.Sprintf(" as %s (%s)", t.User, describeToken(t))
		}
	}
	fmt.Fprintf(cl.stdout, "Logged in to %s%s.\nThe token is stored in %s, where terraform, tofu and trove find it for %s; `trove logout %s` removes it.\n",
		host.ForDisplay(), who, path, strings.Join(names, " and "), host.ForDisplay())
	return nil
}

// hostArg returns the server address a login or logout is for: the
// command's HOST argument, else that of --addr or TROVE_ADDR. HOST
// trove.localhost, the name Terraform and OpenTofu give a local Trove
// through its host block, means that local server (--addr or
// TROVE_ADDR), which is where the name leads them.
func (c *cli) hostArg(args []string) string {
	addr := c.serverAddr()
	if len(args) == 0 {
		return addr
	}
	if h, err := credentialsHost(args[0]); err == nil && h == svchost.Hostname(localHostName) {
		if hosts, err := credentialsHosts(addr); err == nil && slices.Contains(hosts, h) {
			return addr
		}
	}
	return args[0]
}

// listenLoopback listens on 127.0.0.1 on a free port from lo to hi-1
// (the range the clients draw from), trying them from a random start.
func listenLoopback(lo, hi int) (net.Listener, int, error) {
	n := hi - lo
	if n < 1 {
		n = 1
	}
	start := rand.IntN(n)
	var lastErr error
	for i := range n {
		port := lo + (start+i)%n
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			return ln, port, nil
		}
		lastErr = err
	}
	return nil, 0, fmt.Errorf("no free local port from %d to %d for the browser to come back to: %w", lo, hi-1, lastErr)
}

// loginResult is what the browser brought back: a code or an error.
type loginResult struct {
	code string
	err  error
}

// callbackHandler serves /login, where the authorization server sends the
// browser back with a code (or an error) and the state, and delivers the
// first answer whose state matches on results.
func callbackHandler(state string, results chan<- loginResult) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(state)) != 1 {
			loginPage(w, http.StatusBadRequest, "This login does not belong to the trove login command waiting here. Run trove login again.")
			return
		}
		var res loginResult
		switch {
		case q.Get("error") != "":
			res.err = fmt.Errorf("the registry refused the login: %s %s", printable(q.Get("error")), printable(q.Get("error_description")))
			loginPage(w, http.StatusOK, "The login was refused. You can close this window.")
		case q.Get("code") == "":
			res.err = errors.New("the browser came back without an authorization code")
			loginPage(w, http.StatusBadRequest, "No authorization code. Run trove login again.")
		default:
			res.code = q.Get("code")
			loginPage(w, http.StatusOK, "You are logged in: go back to the terminal. You can close this window.")
		}
		select {
		case results <- res:
		default: // an answer was delivered already
		}
	})
	return mux
}

func loginPage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><title>trove login</title><p>%s</p>\n", html.EscapeString(msg))
}

// openBrowser starts the browser command (the BROWSER variable: a program,
// optionally with arguments, or several separated by ':' as in
// sensible-browser) with url, without waiting for it. A failure only
// prints a note: the URL is on the screen.
func openBrowser(cl *cli, browser, url string) {
	for _, candidate := range strings.Split(browser, ":") {
		fields := strings.Fields(candidate)
		if len(fields) == 0 {
			continue
		}
		cmd := exec.Command(fields[0], append(fields[1:], url)...)
		if err := cmd.Start(); err != nil {
			fmt.Fprintf(cl.stderr, "(could not start the browser %q: %s)\n", fields[0], err)
			continue
		}
		go cmd.Wait() //nolint:errcheck // reap it; the browser's fate is not ours
		return
	}
}

func logoutCommand() *command {
	return &command{
		name: "logout", args: "[HOST] [--keep-token]", maxArgs: 1, client: true, connOnly: true,
		summary:  "Revoke the token trove login or terraform login stored for HOST and remove it from the credentials file.",
		examples: []string{"trove logout registry.internal", "trove logout   # the host of --addr or TROVE_ADDR"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			keep := fs.Bool("keep-token", false, "only remove the token from the file; it stays valid until it expires")
			return func(ctx context.Context, args []string) error {
				addr := cl.hostArg(args)
				hosts, err := credentialsHosts(addr)
				if err != nil {
					return usagef("%s", err)
				}
				host := hosts[0]
				path, err := credentialsPath(cl.getenv)
				if err != nil {
					return err
				}
				doc, err := readCredentials(path)
				if err != nil {
					return err
				}
				var token string
				for _, h := range hosts {
					if token = doc.token(h); token != "" {
						host = h
						break
					}
				}
				if token == "" {
					fmt.Fprintf(cl.stdout, "No token for %s in %s: nothing to do.\n", host.ForDisplay(), path)
					return nil
				}
				if !*keep {
					if err := revokeOwnToken(ctx, cl, addr, token); err != nil {
						return fmt.Errorf("revoking the token on %s: %w (the file is unchanged; --keep-token removes it from the file only)", host.ForDisplay(), err)
					}
				}
				for _, h := range hosts {
					if doc.token(h) == token {
						doc.set(h, "")
					}
				}
				if err := doc.write(path); err != nil {
					return err
				}
				msg := "revoked it and removed it from"
				if *keep {
					msg = "removed it from"
				}
				fmt.Fprintf(cl.stdout, "Logged out of %s: %s %s.\n", host.ForDisplay(), msg, path)
				return nil
			}
		},
	}
}

// revokeOwnToken revokes the token it authenticates with; a token the
// server no longer accepts counts as revoked.
func revokeOwnToken(ctx context.Context, cl *cli, addr, token string) error {
	c, err := cl.clientFor(addr, token)
	if err != nil {
		return err
	}
	t, err := c.WhoAmI(ctx)
	if client.IsUnauthenticated(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return c.RevokeToken(ctx, t.ID)
}
