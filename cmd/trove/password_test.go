package main

import (
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"trove.dev/trove/internal/trovetest"
)

// fakeTerminal answers password prompts in order and records them.
type fakeTerminal struct {
	answers []string
	prompts []string
}

func (f *fakeTerminal) install(t *testing.T) {
	t.Helper()
	old := newPrompter
	newPrompter = func(io.Reader, io.Writer) secretPrompter {
		return func(prompt string) (string, error) {
			f.prompts = append(f.prompts, prompt)
			if len(f.answers) == 0 {
				return "", errors.New("no more input")
			}
			a := f.answers[0]
			f.answers = f.answers[1:]
			return a, nil
		}
	}
	t.Cleanup(func() { newPrompter = old })
}

func TestPasswordsFromTerminal(t *testing.T) {
	s := trovetest.Start(t)
	admin := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": s.AdminToken, "TROVE_CA_FILE": s.CAFile, "HOME": t.TempDir()}

	term := &fakeTerminal{answers: []string{"a long password 1", "a long password 1"}}
	term.install(t)
	r := runTrove(t, admin, "", "user", "create", "alice", "--password")
	if r.code != exitOK {
		t.Fatalf("user create --password: exit %d\n%s", r.code, r.stderr)
	}
	if want := []string{"Password for alice: ", "Repeat the password: "}; !slices.Equal(term.prompts, want) {
		t.Errorf("prompts %q, want %q", term.prompts, want)
	}
	if strings.Contains(r.stdout+r.stderr, "a long password") {
		t.Error("the password was printed")
	}

	// A mistyped confirmation changes nothing.
	term = &fakeTerminal{answers: []string{"a long password 2", "a long pasword 2"}}
	term.install(t)
	if r := runTrove(t, admin, "", "user", "passwd", "alice"); r.code != exitError || !strings.Contains(r.stderr, "differ") {
		t.Errorf("user passwd with differing passwords: exit %d, stderr %q", r.code, r.stderr)
	}
	// An empty password is refused before anything is sent.
	term = &fakeTerminal{answers: []string{""}}
	term.install(t)
	if r := runTrove(t, admin, "", "user", "passwd", "alice"); r.code != exitError || !strings.Contains(r.stderr, "empty") {
		t.Errorf("user passwd with an empty password: exit %d, stderr %q", r.code, r.stderr)
	}

	// alice changes her own password with a personal token: current,
	// new, repeated.
	tok := runTrove(t, admin, "", "token", "create", "--user", "alice", "--scope", "read")
	alice := map[string]string{"TROVE_ADDR": s.URL, "TROVE_TOKEN": strings.TrimSpace(tok.stdout), "TROVE_CA_FILE": s.CAFile, "HOME": t.TempDir()}
	term = &fakeTerminal{answers: []string{"a long password 1", "a long password 3", "a long password 3"}}
	term.install(t)
	if r := runTrove(t, alice, "", "user", "passwd", "alice", "--current"); r.code != exitOK {
		t.Fatalf("user passwd --current: exit %d\n%s", r.code, r.stderr)
	}
	if want := []string{"Current password of alice: ", "New password for alice: ", "Repeat the password: "}; !slices.Equal(term.prompts, want) {
		t.Errorf("prompts %q, want %q", term.prompts, want)
	}
	// The old password no longer counts as the current one.
	term = &fakeTerminal{answers: []string{"a long password 1", "a long password 4", "a long password 4"}}
	term.install(t)
	if r := runTrove(t, alice, "", "user", "passwd", "alice", "--current"); r.code != exitError || !strings.Contains(r.stderr, "current password") {
		t.Errorf("user passwd with the old current password: exit %d, stderr %q", r.code, r.stderr)
	}

	// Without --current, her own password is still asked for first, not
	// refused after she typed the new one twice.
	term = &fakeTerminal{answers: []string{"a long password 3", "a long password 6", "a long password 6"}}
	term.install(t)
	if r := runTrove(t, alice, "", "user", "passwd", "alice"); r.code != exitOK {
		t.Fatalf("user passwd of her own without --current: exit %d\n%s", r.code, r.stderr)
	}
	if want := []string{"Current password of alice: ", "New password for alice: ", "Repeat the password: "}; !slices.Equal(term.prompts, want) {
		t.Errorf("prompts without --current %q, want %q", term.prompts, want)
	}

	// Without a terminal the lines of standard input are read, with no prompt.
	newPrompter = func(io.Reader, io.Writer) secretPrompter { return nil }
	if r := runTrove(t, admin, "a long password 5\n", "user", "create", "bob", "--password"); r.code != exitOK || strings.Contains(r.stderr, "Password") {
		t.Errorf("user create --password from a pipe: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := runTrove(t, admin, "", "user", "create", "carol", "--password", "--password-stdin"); r.code != exitUsage {
		t.Errorf("--password with --password-stdin: exit %d, stderr %q", r.code, r.stderr)
	}
}
