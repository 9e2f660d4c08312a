package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/term"
)

// secretPrompter reads one line from the terminal without echoing it,
// after writing prompt to the terminal user.
type secretPrompter func(prompt string) (string, error)

// newPrompter makes the secretPrompter of a run; tests replace it.
var newPrompter = terminalPrompter

// terminalPrompter returns a secretPrompter reading from stdin when stdin
// is a terminal, writing its prompts to stderr; nil otherwise.
func terminalPrompter(stdin io.Reader, stderr io.Writer) secretPrompter {
	f, ok := stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return func(prompt string) (string, error) {
		fmt.Fprint(stderr, prompt)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(stderr) // the user's Enter was not echoed either
		if err != nil {
			return "", fmt.Errorf("reading the password from the terminal: %w", err)
		}
		return string(b), nil
	}
}

// passwordPrompt is one password a command asks for.
type passwordPrompt struct {
	prompt  string // "New password for alice: "
	confirm bool   // ask a second time and compare
}

// readPasswordsInteractive returns one password per prompt: from the
// terminal without echo when there is one (see cli.secret), asking again
// for each prompt that wants a confirmation; otherwise one line each from
// standard input, with no prompt (a script's input).
func (c *cli) readPasswordsInteractive(prompts ...passwordPrompt) ([]string, error) {
	if c.secret == nil {
		return readPasswords(c.stdin, len(prompts))
	}
	out := make([]string, 0, len(prompts))
	for _, p := range prompts {
		pw, err := c.secret(p.prompt)
		if err != nil {
			return nil, err
		}
		if pw == "" {
			return nil, errors.New("the password is empty: nothing was changed")
		}
		if p.confirm {
			again, err := c.secret("Repeat the password: ")
			if err != nil {
				return nil, err
			}
			if again != pw {
				return nil, errors.New("the two passwords differ: nothing was changed; run the command again")
			}
		}
		out = append(out, pw)
	}
	return out, nil
}
