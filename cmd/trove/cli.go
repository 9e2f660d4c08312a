package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	svchost "github.com/hashicorp/terraform-svchost"

	"trove.dev/trove/client"
)

// cli is the state of one client command: its process environment and the
// client flags shared by every command that talks to a server.
type cli struct {
	env
	addr    string
	token   string
	caFile  string
	jsonOut bool
	set     map[string]bool // client flags given on the command line

	// tokenSource says where the token of the last client came from, for
	// errors: "--token", "TROVE_TOKEN", the credentials file, an exchanged
	// CI ID token, or "".
	tokenSource string
	// oidcAudience is --oidc-audience of the publishing commands.
	oidcAudience string
}

// clientEnv returns the environment variable of a client flag, or "".
func clientEnv(flagName string) string {
	switch flagName {
	case "addr":
		return "TROVE_ADDR"
	case "token":
		return "TROVE_TOKEN"
	case "ca-file":
		return "TROVE_CA_FILE"
	}
	return ""
}

// defineFlags defines the client flags of cmd on fs: --addr and
// --ca-file, and --token and --json unless cmd is connOnly. Their
// environment defaults are applied in client, after parsing, so that help
// output never shows a token.
func (c *cli) defineFlags(fs *flag.FlagSet, cmd *command) {
	fs.Var(trackedString{&c.addr, c, "addr"}, "addr", "`URL` of the Trove server (default "+defaultAddr+")")
	fs.Var(trackedString{&c.caFile, c, "ca-file"}, "ca-file", "PEM `file` of a certificate authority to trust (default: the system roots, which honour $SSL_CERT_FILE)")
	if cmd.connOnly {
		return
	}
	fs.Var(trackedString{&c.token, c, "token"}, "token", "API `token`")
	fs.BoolVar(&c.jsonOut, "json", false, "print the API's JSON document instead of text")
}

// trackedString is a string flag that remembers it was set, even to "".
type trackedString struct {
	p    *string
	c    *cli
	name string
}

func (t trackedString) String() string {
	if t.p == nil {
		return ""
	}
	return *t.p
}

func (t trackedString) Set(s string) error {
	*t.p = s
	if t.c.set == nil {
		t.c.set = map[string]bool{}
	}
	t.c.set[t.name] = true
	return nil
}

// client returns a client configured from the flags, falling back to the
// TROVE_* environment and then to the defaults.
func (c *cli) client() (*client.Client, error) {
	value := func(name, v, def string) string {
		if c.set[name] {
			return v
		}
		if e := c.getenv(clientEnv(name)); e != "" {
			return e
		}
		return def
	}
	addr := value("addr", c.addr, defaultAddr)
	token := value("token", c.token, "")
	switch {
	case c.set["token"]:
		c.tokenSource = "--token"
	case token != "":
		c.tokenSource = "TROVE_TOKEN"
	default:
		// Neither given: the token Terraform uses for the host, which
		// `trove login` or `terraform login` stored, if any.
		t, source, err := c.storedToken(addr)
		if err != nil {
			return nil, err
		}
		token, c.tokenSource = t, source
	}
	return c.clientFor(addr, token)
}

// clientFor returns a client of addr with token and the --ca-file.
func (c *cli) clientFor(addr, token string) (*client.Client, error) {
	caFile := c.caFile
	if !c.set["ca-file"] {
		caFile = c.getenv(clientEnv("ca-file"))
	}
	opts := []client.Option{client.WithUserAgent("trove-cli/" + buildVersion())}
	if caFile != "" {
		opts = append(opts, client.WithCAFile(caFile))
	}
	return client.New(addr, token, opts...)
}

// serverAddr returns the server address from --addr, TROVE_ADDR or the
// default.
func (c *cli) serverAddr() string {
	if c.set["addr"] {
		return c.addr
	}
	if e := c.getenv(clientEnv("addr")); e != "" {
		return e
	}
	return defaultAddr
}

// storedToken returns the token Terraform would use for the host of addr
// (its TF_TOKEN_<host> variable, else the credentials file) and a
// description of where it came from, or "" and "" if there is none. For
// a local address the clients know as trove.localhost, that name's token
// serves when the address has none of its own.
func (c *cli) storedToken(addr string) (token, source string, err error) {
	hosts, err := credentialsHosts(addr)
	if err != nil {
		return "", "", nil // client.New explains a bad address
	}
	var doc credentialsDoc
	path, pathErr := credentialsPath(c.getenv)
	if pathErr == nil {
		if doc, err = readCredentials(path); err != nil {
			return "", "", fmt.Errorf("reading the token for %s: %w (fix or remove the file, or pass --token)", hosts[0].ForDisplay(), err)
		}
	}
	for _, host := range hosts {
		// Terraform's own order: its TF_TOKEN_<host> variable first.
		if name := tfTokenVar(host); c.getenv(name) != "" {
			return c.getenv(name), name, nil
		}
		if token = doc.token(host); token != "" {
			return token, fmt.Sprintf("%s (host %s, written by trove login or terraform login)", path, host.ForDisplay()), nil
		}
	}
	return "", "", nil
}

// tfTokenVar returns the TF_TOKEN_ variable that Terraform and OpenTofu
// read the token of host from: "-" written "__" and "." written "_"
// (registry.my-corp.example gives TF_TOKEN_registry_my__corp_example).
func tfTokenVar(host svchost.Hostname) string {
	h := strings.ReplaceAll(host.ForDisplay(), "-", "__")
	return "TF_TOKEN_" + strings.ReplaceAll(h, ".", "_")
}

// explain adds to an error of the server that refused the credentials
// where the token came from and what to do.
func (c *cli) explain(err error) error {
	switch {
	case err == nil:
		return nil
	case client.IsUnauthenticated(err) && c.tokenSource == "":
		host, _ := credentialsHost(c.serverAddr())
		return fmt.Errorf("%w\n(no token was sent: pass --token, set TROVE_TOKEN, or run `trove login %s`; in CI, publish keyless with an ID token: docs/keyless.md)", err, host.ForDisplay())
	case client.IsUnauthenticated(err) || client.IsForbidden(err):
		return fmt.Errorf("%w\n(the token came from %s)", err, c.tokenSource)
	}
	return err
}

// printJSON writes v as indented JSON on stdout.
func (c *cli) printJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(c.stdout, "%s\n", b)
	return err
}

// table writes aligned columns; rows are tab-separated.
func table(w io.Writer, header string, rows []string) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, r)
	}
	return tw.Flush()
}

// cell makes s safe for a table cell: no tabs, line breaks or other
// control characters, and "-" for an empty value.
func cell(s string) string {
	s = strings.Map(func(r rune) rune {
		if isControl(r) {
			return ' '
		}
		return r
	}, s)
	if s == "" {
		return "-"
	}
	return s
}

// row joins cells with tabs.
func row(cells ...string) string {
	for i, s := range cells {
		cells[i] = cell(s)
	}
	return strings.Join(cells, "\t")
}

// when formats a time for humans.
func when(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// whenPtr formats an optional time, with ifNil when it is absent.
func whenPtr(t *time.Time, ifNil string) string {
	if t == nil {
		return ifNil
	}
	return when(*t)
}

// size formats a byte count for humans.
func size(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + " B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
