package registry

import (
	"strconv"
	"strings"
	"testing"
)

// TestParseLimits checks each parser at its field's limit (valid) and one
// byte over it (refused with the limit's message, before the grammar).
func TestParseLimits(t *testing.T) {
	version := func(n int) string { return "1.0.0-" + strings.Repeat("a", n-len("1.0.0-")) }
	repeat := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		limit Limit
		value func(int) string
		parse func(string) error
	}{
		{NamespaceLimit, repeat, func(s string) error { _, err := ParseNamespace(s); return err }},
		{ProviderTypeLimit, repeat, func(s string) error { _, err := ParseProviderType(s); return err }},
		{ModuleNameLimit, repeat, func(s string) error { _, err := ParseModuleName(s); return err }},
		{ModuleSystemLimit, repeat, func(s string) error { _, err := ParseModuleSystem(s); return err }},
		{UserNameLimit, repeat, func(s string) error { _, err := ParseUserName(s); return err }},
		{VersionLimit, version, func(s string) error { _, err := ParseVersion(s); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.limit.Field, func(t *testing.T) {
			if err := tt.parse(tt.value(tt.limit.Max)); err != nil {
				t.Fatalf("at the limit of %d: %v", tt.limit.Max, err)
			}
			over := tt.value(tt.limit.Max + 1)
			err := tt.parse(over)
			want := tt.limit.Field + " is too long: " + strconv.Itoa(tt.limit.Max+1) + " bytes, the limit is " + strconv.Itoa(tt.limit.Max)
			if err == nil || err.Error() != want || !IsKind(err, Invalid) {
				t.Fatalf("one over the limit: %v, want %q", err, want)
			}
			// A huge value gets the same short message.
			if err := tt.parse(tt.value(10000)); err == nil || len(err.Error()) > 100 {
				t.Fatalf("10000 bytes: %v", err)
			}
		})
	}
}

// TestKeywordsAreNotEchoedInFull checks that refused keywords of any
// length make short messages.
func TestKeywordsAreNotEchoedInFull(t *testing.T) {
	huge := strings.Repeat("x", 10000)
	for name, parse := range map[string]func(string) error{
		"visibility": func(s string) error { _, err := ParseVisibility(s); return err },
		"role":       func(s string) error { _, err := ParseRole(s); return err },
		"platform":   func(s string) error { return ValidatePlatform(s, "amd64") },
	} {
		if err := parse(huge); err == nil || len(err.Error()) > 200 {
			t.Errorf("%s: %d bytes of message", name, len(err.Error()))
		}
	}
}

// TestCheckText checks the one rule of free-text fields: length, UTF-8,
// and no control characters.
func TestCheckText(t *testing.T) {
	tests := []struct {
		value string
		want  string // "" for valid
	}{
		{"", ""},
		{"CI token for the acme pipeline", ""},
		{"Zürich, 東京 — ok", ""},
		{strings.Repeat("a", MaxDescriptionLength), ""},
		{strings.Repeat("a", MaxDescriptionLength+1), "description is too long: 1025 bytes, the limit is 1024"},
		{"two\nlines", "description contains the control character U+000A at byte 3"},
		{"tab\there", "control character U+0009"},
		{"esc \x1b[31mred", "control character U+001B"},
		{"del \x7f", "control character U+007F"},
		{"c1 \u009b", "control character U+009B"},
		{"bad \xff utf-8", "description is not valid UTF-8"},
	}
	for _, tt := range tests {
		err := DescriptionLimit.CheckText(tt.value)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tt.value, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) || !IsKind(err, Invalid) || len(err.Error()) > 200 {
			t.Errorf("%.20q: %v, want %q", tt.value, err, tt.want)
		}
	}
}

// TestCheckLines checks the rule of multi-line text (PEM certificates):
// CheckText's, but for line breaks.
func TestCheckLines(t *testing.T) {
	tests := []struct {
		value string
		want  string // "" for valid
	}{
		{"", ""},
		{"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n", ""},
		{"windows\r\nlines\r\n", ""},
		{strings.Repeat("a", MaxCACertificatesLength+1), "CA certificates is too long: 65537 bytes, the limit is 65536"},
		{"tab\there", "CA certificates contains the control character U+0009 at byte 3"},
		{"esc \x1b[31mred", "control character U+001B"},
		{"c1 \u009b", "control character U+009B"},
		{"bad \xff utf-8", "CA certificates is not valid UTF-8"},
	}
	for _, tt := range tests {
		err := CACertificatesLimit.CheckLines(tt.value)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tt.value, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) || !IsKind(err, Invalid) || len(err.Error()) > 200 {
			t.Errorf("%.20q: %v, want %q", tt.value, err, tt.want)
		}
	}
}

func TestCheckArchivePath(t *testing.T) {
	long := strings.Repeat("a", MaxArchiveNameLength)
	deep := strings.Repeat(strings.Repeat("b", 99)+"/", 10) + strings.Repeat("c", MaxArchivePathLength-1000)
	for name, ok := range map[string]bool{
		"main.tf":                 true,
		long:                      true,
		long + "/" + long:         true,
		deep:                      true,
		long + "a":                false,
		"dir/" + long + "a/x":     false,
		deep + "d":                false,
		strings.Repeat("a/", 600): false,
	} {
		if err := CheckArchivePath(name); (err == nil) != ok {
			t.Errorf("CheckArchivePath(%d bytes) = %v, want accepted %v", len(name), err, ok)
		} else if err != nil && !IsKind(err, Invalid) {
			t.Errorf("CheckArchivePath(%d bytes) = %v, want Invalid", len(name), err)
		}
	}
}
