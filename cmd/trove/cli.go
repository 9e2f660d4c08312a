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

	"trove.dev/trove/internal/client"
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

// defineFlags defines the client flags on fs. Their environment defaults
// are applied in client, after parsing, so that help output never shows a
// token.
func (c *cli) defineFlags(fs *flag.FlagSet) {
	fs.Var(trackedString{&c.addr, c, "addr"}, "addr", "`URL` of the Trove server (default "+defaultAddr+")")
	fs.Var(trackedString{&c.token, c, "token"}, "token", "API `token`")
	fs.Var(trackedString{&c.caFile, c, "ca-file"}, "ca-file", "PEM `file` of a certificate authority to trust (default: the system roots, which honour $SSL_CERT_FILE)")
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
	caFile := value("ca-file", c.caFile, "")
	opts := []client.Option{client.WithUserAgent("trove-cli/" + buildVersion())}
	if caFile != "" {
		opts = append(opts, client.WithCAFile(caFile))
	}
	return client.New(addr, token, opts...)
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
