package provider

import (
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-cty/cty"

	"trove.dev/trove/internal/signing/signingtest"
)

// errText runs a schema.SchemaValidateFunc and returns its errors joined,
// "" for none.
func errText(f func(any, string) ([]string, []error), v any) string {
	_, errs := f(v, "attr")
	var msgs []string
	for _, err := range errs {
		msgs = append(msgs, err.Error())
	}
	return strings.Join(msgs, "; ")
}

func TestValidateNamespaceName(t *testing.T) {
	tests := map[string]string{ // name -> part of the error, "" if valid
		"acme":          "",
		"Acme-Corp":     "",
		"a1":            "",
		"":              "namespace name is empty",
		"-acme":         "invalid namespace",
		"acme-":         "invalid namespace",
		"ac me":         "invalid namespace",
		"ac_me":         "invalid namespace",
		"acme/provider": "invalid namespace",
	}
	for name, want := range tests {
		got := errText(validateNamespaceName, name)
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("validateNamespaceName(%q) = %q, want an error containing %q", name, got, want)
		}
	}
	if got := errText(validateNamespaceName, 42); !strings.Contains(got, "expected attr to be a string") {
		t.Errorf("validateNamespaceName(42) = %q", got)
	}
}

func TestValidateProviderType(t *testing.T) {
	tests := map[string]string{
		"trove":                   "",
		"aws":                     "",
		"":                        "provider type is empty",
		"terraform-provider-aws":  `may not start with "terraform-"`,
		"bad type":                "invalid provider type",
		"under_score_is_not_okay": "invalid provider type",
	}
	for typ, want := range tests {
		got := errText(validateProviderType, typ)
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("validateProviderType(%q) = %q, want an error containing %q", typ, got, want)
		}
	}
}

func TestValidateScope(t *testing.T) {
	tests := map[string]string{
		"read":    "",
		"publish": "",
		"admin":   "",
		"Admin":   `unknown scope "Admin": use read, publish, admin`,
		"write":   `unknown scope "write"`,
		"":        `unknown scope ""`,
	}
	for scope, want := range tests {
		got := errText(validateScope, scope)
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("validateScope(%q) = %q, want an error containing %q", scope, got, want)
		}
	}
}

func TestValidateDescription(t *testing.T) {
	tests := map[int]string{ // length -> error
		0:    "",
		1024: "",
		1025: "attr: description is too long: 1025 bytes, the limit is 1024",
	}
	for n, want := range tests {
		got := errText(validateDescription, strings.Repeat("x", n))
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("validateDescription(%d bytes) = %q, want an error containing %q", n, got, want)
		}
	}
}

func TestValidateRFC3339(t *testing.T) {
	tests := map[string]bool{ // value -> valid
		"2030-01-02T15:04:05Z":          true,
		"2030-01-02T16:04:05+01:00":     true,
		"2030-01-02T15:04:05.123456Z":   true,
		"2001-01-01T00:00:00Z":          true, // the past is for the server to refuse
		"2030-01-02":                    false,
		"2030-01-02 15:04:05Z":          false,
		"tomorrow":                      false,
		"":                              false,
		"2030-13-02T15:04:05Z":          false,
		"Mon, 02 Jan 2030 15:04:05 GMT": false,
	}
	for v, valid := range tests {
		diags := validateRFC3339(v, cty.GetAttrPath("expires_at"))
		if diags.HasError() == valid {
			t.Errorf("validateRFC3339(%q) = %v, want valid %v", v, diags, valid)
		}
	}
}

func TestValidateArmoredPublicKey(t *testing.T) {
	key := signingtest.NewKey(t, "validate")
	tests := map[string]string{
		key.ArmoredPublic:  "",
		key.ArmoredPrivate: "holds a private key",
		"":                 "is not an ASCII-armored public key",
		"mQENBFakeBase64":  "is not an ASCII-armored public key",
	}
	for armor, want := range tests {
		got := errText(validateArmoredPublicKey, armor)
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("validateArmoredPublicKey(%.40q) = %q, want an error containing %q", armor, got, want)
		}
	}
}

func TestSuppressNamespaceCase(t *testing.T) {
	tests := []struct {
		old, new string
		same     bool
	}{
		{"acme", "acme", true},
		{"acme", "ACME", true},
		{"acme", "Acme", true},
		{"acme", "acme2", false},
		{"", "acme", false},
		{"bad name", "BAD NAME", false}, // invalid names compare exactly
		{"bad name", "bad name", true},
	}
	for _, tc := range tests {
		if got := suppressNamespaceCase("name", tc.old, tc.new, nil); got != tc.same {
			t.Errorf("suppressNamespaceCase(%q, %q) = %v, want %v", tc.old, tc.new, got, tc.same)
		}
	}
}

func TestLowercase(t *testing.T) {
	tests := map[string]string{"Acme": "acme", "acme": "acme", "ACME-1": "acme-1", "Bad Name": "bad name"}
	for in, want := range tests {
		if got := lowercase(in); got != want {
			t.Errorf("lowercase(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSuppressArmorFormatting(t *testing.T) {
	key := signingtest.NewKey(t, "armor")
	other := signingtest.NewKey(t, "other")
	canonical := strings.TrimSpace(key.ArmoredPublic)
	// The key without its checksum line ("=XXXX" before the END line), as
	// some OpenPGP implementations export it.
	lines := strings.Split(canonical, "\n")
	var noChecksum []string
	for _, l := range lines {
		if len(l) == 5 && strings.HasPrefix(l, "=") {
			continue
		}
		noChecksum = append(noChecksum, l)
	}
	if len(noChecksum) == len(lines) {
		t.Fatalf("the test key has no checksum line:\n%s", canonical)
	}
	tests := map[string]struct {
		new  string
		same bool
	}{
		"identical":                {canonical, true},
		"trailing newline":         {canonical + "\n", true},
		"blank lines around":       {"\n\n" + canonical + "\n\n\n", true},
		"CRLF line endings":        {strings.ReplaceAll(canonical, "\n", "\r\n"), true},
		"trailing spaces":          {strings.ReplaceAll(canonical, "\n", " \t\n"), true},
		"no checksum line":         {strings.Join(noChecksum, "\n"), true},
		"another key":              {strings.TrimSpace(other.ArmoredPublic), false},
		"empty":                    {"", false},
		"one character changed":    {strings.Replace(canonical, "A", "B", 1), false},
		"text that is not a block": {"hello", false},
	}
	for name, tc := range tests {
		if got := suppressArmorFormatting("ascii_armor", canonical, tc.new, nil); got != tc.same {
			t.Errorf("%s: suppressArmorFormatting = %v, want %v", name, got, tc.same)
		}
	}
}

func TestSuppressSameInstant(t *testing.T) {
	tests := []struct {
		old, new string
		same     bool
	}{
		{"2030-01-02T15:04:05Z", "2030-01-02T15:04:05Z", true},
		{"2030-01-02T15:04:05Z", "2030-01-02T16:04:05+01:00", true},
		{"2030-01-02T15:04:05Z", "2030-01-02T15:04:05.000Z", true},
		{"2030-01-02T15:04:05Z", "2030-01-02T15:04:06Z", false},
		{"", "2030-01-02T15:04:05Z", false},
		{"2030-01-02T15:04:05Z", "", false},
		{"", "", true},
		{"not a time", "not a time", true},
		{"not a time", "2030-01-02T15:04:05Z", false},
	}
	for _, tc := range tests {
		if got := suppressSameInstant("expires_at", tc.old, tc.new, nil); got != tc.same {
			t.Errorf("suppressSameInstant(%q, %q) = %v, want %v", tc.old, tc.new, got, tc.same)
		}
	}
}

func TestFormatTime(t *testing.T) {
	at := time.Date(2030, 1, 2, 16, 4, 5, 0, time.FixedZone("CET", 3600))
	tests := map[string]struct {
		in   *time.Time
		want string
	}{
		"nil":       {nil, ""},
		"zero":      {&time.Time{}, ""},
		"to UTC":    {&at, "2030-01-02T15:04:05Z"},
		"fractions": {ptr(at.Add(1500 * time.Millisecond)), "2030-01-02T15:04:06.5Z"},
	}
	for name, tc := range tests {
		if got := formatTime(tc.in); got != tc.want {
			t.Errorf("%s: formatTime = %q, want %q", name, got, tc.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestParseSigningKeyID(t *testing.T) {
	tests := map[string]struct {
		ns, keyID, err string
	}{
		"acme/51852D87348FFC4C": {"acme", "51852D87348FFC4C", ""},
		"acme/51852d87348ffc4c": {"acme", "51852D87348FFC4C", ""},
		"acme":                  {"", "", "want <namespace>/<KEYID>"},
		"/51852D87348FFC4C":     {"", "", "want <namespace>/<KEYID>"},
		"acme/":                 {"", "", "want <namespace>/<KEYID>"},
		"acme/a/b":              {"", "", "want <namespace>/<KEYID>"},
	}
	for id, tc := range tests {
		ns, keyID, err := parseSigningKeyID(id)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseSigningKeyID(%q) error = %v, want %q", id, err, tc.err)
			}
			continue
		}
		if err != nil || ns != tc.ns || keyID != tc.keyID {
			t.Errorf("parseSigningKeyID(%q) = %q, %q, %v; want %q, %q", id, ns, keyID, err, tc.ns, tc.keyID)
		}
	}
}

func TestValidateModuleNameAndSystem(t *testing.T) {
	names := map[string]string{
		"network":    "",
		"vpc_peer-2": "",
		"Network":    "",
		"":           "invalid module name",
		"-network":   "invalid module name",
		"net work":   "invalid module name",
		"net/work":   "invalid module name",
	}
	for name, want := range names {
		got := errText(validateModuleName, name)
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("validateModuleName(%q) = %q, want an error containing %q", name, got, want)
		}
	}
	systems := map[string]string{
		"aws":     "",
		"azurerm": "",
		"AWS":     "invalid module system",
		"":        "invalid module system",
		"a-b":     "invalid module system",
	}
	for system, want := range systems {
		got := errText(validateModuleSystem, system)
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("validateModuleSystem(%q) = %q, want an error containing %q", system, got, want)
		}
	}
}

func TestAccessValidators(t *testing.T) {
	tests := map[string]struct {
		validate func(any, string) ([]string, []error)
		cases    map[string]string // value -> part of the error, "" if valid
	}{
		"visibility": {validateVisibility, map[string]string{
			"public":   "",
			"private":  "",
			"Public":   `attr: invalid visibility "Public": use public or private`,
			"internal": `invalid visibility "internal"`,
			"":         `invalid visibility ""`,
		}},
		"role": {validateRole, map[string]string{
			"reader":    "",
			"publisher": "",
			"admin":     "",
			"owner":     `attr: invalid role "owner": use reader, publisher or admin`,
			"read":      `invalid role "read"`,
			"":          `invalid role ""`,
		}},
		"user name": {validateUserName, map[string]string{
			"alice":                 "",
			"Alice.Smith":           "",
			"a":                     "",
			"ci_bot-2":              "",
			strings.Repeat("a", 64): "",
			strings.Repeat("a", 65): "user name is too long: 65 bytes, the limit is 64",
			"":                      "invalid user name",
			".alice":                "invalid user name",
			"alice-":                "invalid user name",
			"alice smith":           "invalid user name",
			"alice/bob":             "invalid user name",
		}},
		"password": {validatePassword, map[string]string{
			"ten chars!":              "",
			"nine char":               "shorter than 10 characters",
			" padded password":        "starts or ends with white space",
			"padded password\n":       "starts or ends with white space",
			strings.Repeat("p", 513):  "password is too long: 513 bytes, the limit is 512",
			"not utf-8 \xff\xfe\xfd!": "not valid UTF-8",
		}},
	}
	for name, tc := range tests {
		for v, want := range tc.cases {
			got := errText(tc.validate, v)
			if want == "" && got != "" || !strings.Contains(got, want) {
				t.Errorf("%s: validating %q = %q, want an error containing %q", name, v, got, want)
			}
		}
		if got := errText(tc.validate, 42); !strings.Contains(got, "expected attr to be a string") {
			t.Errorf("%s: validating 42 = %q", name, got)
		}
	}
}

// TestValidatePasswordHidesValue checks that a refused password never
// appears in the error, which Terraform prints.
func TestValidatePasswordHidesValue(t *testing.T) {
	for _, pw := range []string{"secret9", " secret secret", strings.Repeat("secret", 100)} {
		if got := errText(validatePassword, pw); got == "" || strings.Contains(got, "secret") {
			t.Errorf("validatePassword(%d bytes) = %q, want an error that does not quote the password", len(pw), got)
		}
	}
}

func TestSuppressUserNameCase(t *testing.T) {
	tests := map[[2]string]bool{
		{"alice", "alice"}: true,
		{"alice", "Alice"}: true,
		{"ALICE", "alice"}: true,
		{"alice", "bob"}:   false,
		{"", "alice"}:      false,
	}
	for in, want := range tests {
		if got := suppressUserNameCase("name", in[0], in[1], nil); got != want {
			t.Errorf("suppressUserNameCase(%q, %q) = %t, want %t", in[0], in[1], got, want)
		}
	}
	if got := lowercaseUserName("Alice.Smith"); got != "alice.smith" {
		t.Errorf("lowercaseUserName(Alice.Smith) = %q", got)
	}
}

func TestParseMemberID(t *testing.T) {
	tests := map[string]struct{ ns, user, err string }{
		"acme/alice":     {ns: "acme", user: "alice"},
		"Acme/Alice.Sm":  {ns: "acme", user: "alice.sm"},
		"acme":           {err: "want <namespace>/<user>"},
		"/alice":         {err: "want <namespace>/<user>"},
		"acme/":          {err: "want <namespace>/<user>"},
		"acme/alice/bob": {err: "want <namespace>/<user>"},
	}
	for id, tc := range tests {
		ns, user, err := parseMemberID(id)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseMemberID(%q) error = %v, want %q", id, err, tc.err)
			}
			continue
		}
		if err != nil || ns != tc.ns || user != tc.user {
			t.Errorf("parseMemberID(%q) = %q, %q, %v; want %q, %q", id, ns, user, err, tc.ns, tc.user)
		}
	}
}
