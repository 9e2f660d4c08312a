package config

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

// TestFlagErrorMessage checks the rewriting of the flag package's errors
// into the style of the trove commands.
func TestFlagErrorMessage(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Duration("expires-in", time.Hour, "")
	fs.Int("limit", 0, "")
	fs.Bool("json", false, "")
	fs.String("name", "", "")
	fs.Var(new(byteSize), "max-bytes", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "unknown flag --bogus"},
		{[]string{"-bogus=1"}, "unknown flag --bogus"},
		{[]string{"--expires-in", "abc"}, `--expires-in: want a duration such as 24h, 90m or 30s, got "abc"`},
		{[]string{"--limit=x"}, `--limit: want a whole number, got "x"`},
		{[]string{"--json=maybe"}, `--json: want true or false, got "maybe"`},
		{[]string{"--name"}, "--name needs a value"},
		{[]string{"--max-bytes", "lots"}, "--max-bytes: "},
	} {
		err := fs.Parse(tc.args)
		if err == nil {
			t.Fatalf("%v: parsed", tc.args)
		}
		got := FlagErrorMessage(fs, err)
		if tc.want == "--max-bytes: " {
			if len(got) <= len(tc.want) || got[:len(tc.want)] != tc.want {
				t.Errorf("%v: %q, want the Set error after %q", tc.args, got, tc.want)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%v: %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestDurationMessages checks that range errors print durations as the
// docs write them (24h, not 24h0m0s).
func TestDurationMessages(t *testing.T) {
	a := Access{PrivateDownloadURLTTL: 0, LoginTokenTTL: 0}
	for _, err := range a.validate() {
		if s := err.Error(); strings.Contains(s, "m0s") || strings.Contains(s, "h0m") {
			t.Errorf("%s", s)
		}
	}
}

func TestClosest(t *testing.T) {
	names := []string{"namespace", "token", "publish", "provider", "module", "mirror", "json", "listen", "modules"}
	for word, want := range map[string]string{
		"namspace":  "namespace",
		"tokn":      "token",
		"pubilsh":   "publish",
		"jsn":       "json",
		"listn":     "listen",
		"mod":       "", // module and modules: no guess
		"pro":       "provider",
		"mo":        "",
		"mi":        "",
		"xyz":       "",
		"terraform": "",
		"":          "",
	} {
		if got := Closest(word, names); got != want {
			t.Errorf("Closest(%q) = %q, want %q", word, got, want)
		}
	}
}
