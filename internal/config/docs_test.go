package config

import (
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDocumentedSettings holds docs/configuration.md to the flags: every
// flag of trove serve has a row with its environment variable, and a
// default the row writes as one literal is the one --help prints.
func TestDocumentedSettings(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `--([a-z0-9-]+)[^`]*` \\| `([A-Z0-9_]+)` \\| ([^|]*) \\|")
	literal := regexp.MustCompile("^`([^`]*)`$")
	printed := regexp.MustCompile(`\(default ([^)]*)\)`)
	var c Config
	fs := c.FlagSet("serve")
	documented := map[string]bool{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		name, env, def := m[1], m[2], strings.TrimSpace(m[3])
		documented[name] = true
		f := fs.Lookup(name)
		if f == nil {
			t.Errorf("docs/configuration.md documents --%s, which trove serve does not have", name)
			continue
		}
		if env != EnvVar(name) {
			t.Errorf("docs/configuration.md gives --%s the variable %s, want %s", name, env, EnvVar(name))
		}
		lit := literal.FindStringSubmatch(def)
		if lit == nil {
			continue // a default described in words
		}
		got := f.DefValue
		if got == "" {
			if p := printed.FindStringSubmatch(f.Usage); p != nil {
				got = p[1]
			}
		}
		if got != lit[1] {
			t.Errorf("--%s: docs/configuration.md says the default is %q, --help prints %q", name, lit[1], got)
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if !documented[f.Name] {
			t.Errorf("--%s is missing from the table of docs/configuration.md", f.Name)
		}
	})
}

func TestShortDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		15 * time.Minute: "15m", 720 * time.Hour: "720h", 90 * time.Minute: "1h30m",
		90 * time.Second: "1m30s", 0: "0s", 1500 * time.Millisecond: "1.5s",
	} {
		if got := ShortDuration(d); got != want {
			t.Errorf("ShortDuration(%s) = %q, want %q", d, got, want)
		}
	}
}
