package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/trovetest"
)

func TestCompletionBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	r := runTrove(t, nil, "", "completion", "bash")
	if r.code != exitOK {
		t.Fatalf("completion bash: exit %d\n%s", r.code, r.stderr)
	}
	script := filepath.Join(t.TempDir(), "trove.bash")
	if err := os.WriteFile(script, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bash, "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n refuses the script: %v\n%s", err, out)
	}
	complete := func(words ...string) string {
		t.Helper()
		prog := "source " + script + "; COMP_WORDS=(" + strings.Join(words, " ") + "); COMP_CWORD=" +
			string(rune('0'+len(words)-1)) + "; _trove; echo \"${COMPREPLY[*]}\""
		out, err := exec.Command(bash, "-c", prog).CombinedOutput()
		if err != nil {
			t.Fatalf("completing %q: %v\n%s", words, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{[]string{"trove", "names"}, "namespace"},
		{[]string{"trove", "namespace", "cr"}, "create"},
		{[]string{"trove", "admin", ""}, "token"},
		{[]string{"trove", "log"}, "login logout"},
		{[]string{"trove", "namespace", "create", "acme", "--desc"}, "--description"},
		{[]string{"trove", "token", "create", "--tok"}, "--token"}, // a client flag
		{[]string{"trove", "serve", "--log-l"}, "--log-level"},     // a flag of the configuration
		{[]string{"trove", "completion", "f"}, "fish"},
		{[]string{"trove", "mirror", ""}, "upstream sync hold"},
		{[]string{"trove", "mirror", "hold", "un"}, "unapprove undeny"},
		{[]string{"trove", "mirror", "sync", "--all"}, "--all-versions"},
		{[]string{"trove", "mirror", "upstream", "s"}, "show set"},
		{[]string{"trove", "mirror", "upstream", "set", "--all"}, "--allow"},
		{[]string{"trove", "mirror", "upstream", "set", "--upstream"}, "--upstream-ca-file"},
		// Flag values with fixed choices.
		{[]string{"trove", "token", "create", "--scope", ""}, "read publish admin"},
		{[]string{"trove", "token", "create", "--scope", "=", "p"}, "publish"}, // --scope=p, as bash splits it
		{[]string{"trove", "trust-policy", "create", "acme", "--scope", ""}, "publish read"},
		{[]string{"trove", "serve", "--log-level", "w"}, "warn"},
		{[]string{"trove", "serve", "-log-format", ""}, "text json"},
		{[]string{"trove", "namespace", "create", "acme", "--visibility", "p"}, "private public"},
		{[]string{"trove", "member", "add", "acme", "bob", "--role", "p"}, "publisher"},
		{[]string{"trove", "mirror", "sync", "--platform", "linux_arm"}, "linux_arm linux_arm64"},
		{[]string{"trove", "webhook", "create", "--events", "module.re"}, "module.revoked module.restored"},
	} {
		if got := complete(tc.words...); got != tc.want {
			t.Errorf("completing %q = %q, want %q", tc.words, got, tc.want)
		}
	}
}

func TestCompletionCoversEveryCommand(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		r := runTrove(t, nil, "", "completion", shell)
		if r.code != exitOK {
			t.Fatalf("completion %s: exit %d\n%s", shell, r.code, r.stderr)
		}
		for _, c := range commands() {
			for _, word := range strings.Fields(c.name) {
				if !strings.Contains(r.stdout, word) {
					t.Errorf("completion %s lacks %q of %q", shell, word, c.name)
				}
			}
		}
	}
	if r := runTrove(t, nil, "", "completion", "powershell"); r.code != exitUsage || !strings.Contains(r.stderr, "trove completion: unknown shell") {
		t.Errorf("completion powershell: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestUsageErrorStyle checks that every kind of usage error, whichever
// path reports it, prints "trove <cmd>: <problem>", the command's usage,
// and exits 2.
func TestUsageErrorStyle(t *testing.T) {
	home := t.TempDir()
	check := func(t *testing.T, c *command, args []string, want string) {
		t.Helper()
		r := runTrove(t, map[string]string{"HOME": home}, "", args...)
		prefix := "trove " + c.name + ": " + want
		if r.code != exitUsage || !strings.HasPrefix(r.stderr, prefix) || !strings.Contains(r.stderr, "\n"+usageLine(c)+"\n") {
			t.Errorf("trove %q: exit %d, stderr %q; want exit 2, %q and its usage", args, r.code, r.stderr, prefix)
		}
	}
	// Mistakes other than flags.
	for _, args := range [][]string{
		{"serve", "--listen", "nope"},
		{"migrate", "--log-format", "xml"},
		{"admin", "token", "--expires", "-1s"},
		{"namespace", "create"},
		{"login", "a", "b"},
		{"completion"},
	} {
		c, _ := lookup(commands(), args)
		check(t, c, args, "")
	}
	// Values that are not what a flag wants, checked before any request.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"token", "create", "--scope", "bogus"}, `--scope: unknown scope "bogus": use read, publish or admin`},
		{[]string{"token", "create", "--scope", "read", "--description", "two\nlines"}, "--description: description contains the control character U+000A"},
		{[]string{"namespace", "create", "foo", "--visibility", "secret"}, `--visibility: invalid visibility "secret": use public or private`},
		{[]string{"namespace", "update", "foo", "--visibility", "secret"}, `--visibility: invalid visibility "secret"`},
		{[]string{"namespace", "create", "foo", "--description", strings.Repeat("d", 2000)}, "--description: description is too long: 2000 bytes, the limit is 1024"},
		{[]string{"member", "add", "acme", "alice", "--role", "boss"}, "--role: "},
		{[]string{"provider", "package", "--binary", "linux_amd64=X", "--binary", "linux_amd64=X"}, "--binary: linux_amd64 is given twice"},
		{[]string{"provider", "package", "--binary", "linux"}, "--binary: want OS_ARCH=FILE"},
		{[]string{"provider", "package", "--binaries", "/nonexistent"}, "--binaries: /nonexistent does not exist"},
	} {
		c, _ := lookup(commands(), tc.args)
		check(t, c, tc.args, tc.want)
	}
	// Every command: an unknown flag, and a bad value for each flag of a
	// basic type.
	for _, c := range commands() {
		words := strings.Fields(c.name)
		check(t, c, append(words, "--bogus"), "unknown flag --bogus\n")
		var fs *flag.FlagSet
		switch {
		case c.rawFlags != nil:
			fs = c.rawFlags()
		case c.setup != nil:
			fs = flag.NewFlagSet(c.name, flag.ContinueOnError)
			cl := &cli{}
			c.setup(fs, cl)
			if c.client {
				cl.defineFlags(fs, c)
			}
		}
		fs.VisitAll(func(f *flag.Flag) {
			g, ok := f.Value.(flag.Getter)
			if !ok {
				return
			}
			var want string
			switch g.Get().(type) {
			case time.Duration:
				want = "a duration such as 24h"
			case int, int64, uint, uint64:
				want = "a whole number"
			case bool:
				want = "true or false"
			default:
				return
			}
			check(t, c, append(words, "--"+f.Name+"=abc"), "--"+f.Name+": want "+want)
		})
	}
}

func TestVersionFlag(t *testing.T) {
	a, b := runTrove(t, nil, "", "--version"), runTrove(t, nil, "", "version")
	if a.code != exitOK || a.stdout != b.stdout || !strings.HasPrefix(a.stdout, "trove ") {
		t.Errorf("--version = %d %q, version = %q", a.code, a.stdout, b.stdout)
	}
}

// TestHelpDefaults: defaults are printed as the documentation writes them.
func TestHelpDefaults(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{"serve", "--help"}, []string{"(default info)", "(default 15m)", "(default 720h)"}, []string{"INFO", "m0s)"}},
		{[]string{"login", "--help"}, []string{"(default 10m)"}, []string{"10m0s"}},
	} {
		r := runTrove(t, nil, "", tc.args...)
		for _, w := range tc.want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("trove %v lacks %q", tc.args, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(r.stdout, n) {
				t.Errorf("trove %v prints %q", tc.args, n)
			}
		}
	}
}

// TestSynopsisNamesEveryFlag checks that the usage line of every command
// names each of its own flags (client flags are listed by --help).
func TestSynopsisNamesEveryFlag(t *testing.T) {
	for _, c := range commands() {
		if c.setup == nil {
			continue
		}
		fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
		c.setup(fs, &cli{})
		fs.VisitAll(func(f *flag.Flag) {
			if !strings.Contains(c.args, "--"+f.Name) {
				t.Errorf("trove %s: usage %q does not name --%s", c.name, c.args, f.Name)
			}
		})
		if strings.HasSuffix(usageLine(c), " ") {
			t.Errorf("trove %s: usage line %q ends in a space", c.name, usageLine(c))
		}
	}
}

// TestVersionFromBuildInfo checks the version of builds without ldflags.
func TestVersionFromBuildInfo(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}}
	for _, tc := range []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "1.2.3"},
		{debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261125130000-0123456789ab"}}, "0.0.0-20261125130000-0123456789ab"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: rev}, "dev-0123456789ab"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: append(rev, debug.BuildSetting{Key: "vcs.modified", Value: "true"})}, "dev-0123456789ab-modified"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: append(rev, debug.BuildSetting{Key: "vcs.modified", Value: "false"})}, "dev-0123456789ab"},
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
		{debug.BuildInfo{}, "dev"},
	} {
		if got := versionFromBuildInfo(&tc.bi); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.bi.Main, got, tc.want)
		}
	}
}

// TestMain runs trove's main instead of the tests when
// TROVE_TEST_RUN_MAIN=1, so that a completion script can call this test
// binary as the trove it completes for.
func TestMain(m *testing.M) {
	if os.Getenv("TROVE_TEST_RUN_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestCompletionNamespaces: namespace names come from the server the
// command line talks to, and nothing at all when it cannot be asked.
func TestCompletionNamespaces(t *testing.T) {
	s := trovetest.Start(t)
	env := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile, "HOME": t.TempDir()}
	for _, ns := range []string{"acme", "zeta"} {
		if r := runTrove(t, env, "", "namespace", "create", ns); r.code != exitOK {
			t.Fatalf("namespace create %s: %d %s", ns, r.code, r.stderr)
		}
	}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		words []string
		want  string
	}{
		{"the configured server", env, []string{"namespace", "show"}, "acme\nzeta\n"},
		{"--addr of the command line", map[string]string{"TROVE_ADDR": "https://127.0.0.1:1", "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile},
			[]string{"key", "list", "--addr", s.URL}, "acme\nzeta\n"},
		{"--addr= of the command line", nil, []string{"key", "list", "--addr=" + s.URL, "--token", s.AdminToken, "--ca-file=" + s.CAFile}, "acme\nzeta\n"},
		{"a server that is not there", env, []string{"key", "list", "--addr", "https://127.0.0.1:1"}, ""},
		{"a wrong token", env, []string{"key", "list", "--token", "nope"}, ""},
		{"an untrusted certificate", env, []string{"key", "list", "--ca-file", "/nonexistent"}, ""},
	} {
		r := runTrove(t, tc.env, "", append([]string{"__complete", "namespaces", "--"}, tc.words...)...)
		if r.code != exitOK || r.stdout != tc.want || r.stderr != "" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 0, %q and nothing on stderr", tc.name, r.code, r.stdout, r.stderr, tc.want)
		}
	}

	// Through the bash script, with this test binary as trove.
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := runTrove(t, nil, "", "completion", "bash")
	script := filepath.Join(t.TempDir(), "trove.bash")
	if err := os.WriteFile(script, []byte(r.stdout), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{[]string{"namespace", "show", "a"}, "acme"},
		{[]string{"key", "list", ""}, "acme zeta"},
		{[]string{"token", "create", "--namespace", "z"}, "zeta"},
		{[]string{"webhook", "create", ""}, "acme zeta"},
		{[]string{"namespace", "create", "a"}, ""}, // a new name: no completion from the server
	} {
		words := append([]string{self}, tc.words...)
		quoted := make([]string, len(words))
		for i, w := range words {
			quoted[i] = "'" + w + "'"
		}
		prog := fmt.Sprintf("source %s; COMP_WORDS=(%s); COMP_CWORD=%d; _trove; echo \"${COMPREPLY[*]}\"", script, strings.Join(quoted, " "), len(words)-1)
		cmd := exec.Command(bash, "-c", prog)
		cmd.Dir = t.TempDir() // no files to complete
		cmd.Env = append(os.Environ(), "TROVE_TEST_RUN_MAIN=1", "TROVE_ADDR="+s.URL, "TROVE_TOKEN="+s.AdminToken, "TROVE_CA_FILE="+s.CAFile, "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("completing %q: %v\n%s", tc.words, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != tc.want {
			t.Errorf("completing %q = %q, want %q", tc.words, got, tc.want)
		}
	}
}
