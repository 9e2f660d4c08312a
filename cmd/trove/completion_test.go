package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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
	for _, args := range [][]string{
		{"serve", "--listen", "nope"},
		{"migrate", "--log-format", "xml"},
		{"admin", "token", "--expires", "-1s"},
		{"namespace", "create"},
		{"namespace", "create", "a", "--colour", "red"},
		{"token", "create", "--expires-in", "30d", "--scope", "read"},
		{"login", "a", "b"},
		{"completion"},
	} {
		r := runTrove(t, map[string]string{"HOME": home}, "", args...)
		c, _ := lookup(commands(), args)
		if r.code != exitUsage || !strings.HasPrefix(r.stderr, "trove "+c.name+": ") || !strings.Contains(r.stderr, "\nUsage: trove "+c.name+" ") {
			t.Errorf("trove %q: exit %d, stderr %q; want exit 2, \"trove %s: ...\" and its usage", args, r.code, r.stderr, c.name)
		}
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
		{[]string{"serve", "--help"}, []string{"(default info)", "(default 15m)", "(default 720h)"}, []string{"INFO", "0s)"}},
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
