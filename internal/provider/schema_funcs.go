package provider

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/hashicorp/go-cty/cty"
	"github.com/hashicorp/terraform-plugin-sdk/v2/diag"
	"github.com/hashicorp/terraform-plugin-sdk/v2/helper/schema"

	"trove.dev/trove/internal/registry"
)

// Validators, diff suppressors and state functions shared by the resources
// and data sources. They hold the rules Terraform applies before any API
// call; the server checks everything again.

// scopes are the token scopes the API knows (registry.Scopes), weakest
// first, for messages.
var scopes = func() []string {
	out := make([]string, len(registry.Scopes))
	for i, s := range registry.Scopes {
		out[i] = string(s)
	}
	return out
}()

// validateNamespaceName is a schema.SchemaValidateFunc that applies the
// provider address rules Trove names namespaces by.
func validateNamespaceName(v any, key string) (warnings []string, errs []error) {
	s, ok := v.(string)
	if !ok {
		return nil, []error{fmt.Errorf("expected %s to be a string", key)}
	}
	if _, err := registry.ParseNamespace(s); err != nil {
		return nil, []error{fmt.Errorf("%s: %s", key, registry.Message(err))}
	}
	return nil, nil
}

// validateProviderType is a schema.SchemaValidateFunc for a provider type.
func validateProviderType(v any, key string) (warnings []string, errs []error) {
	s, ok := v.(string)
	if !ok {
		return nil, []error{fmt.Errorf("expected %s to be a string", key)}
	}
	if _, err := registry.ParseProviderType(s); err != nil {
		return nil, []error{fmt.Errorf("%s: %s", key, registry.Message(err))}
	}
	return nil, nil
}

// validateModuleName is a schema.SchemaValidateFunc for a module name.
func validateModuleName(v any, key string) (warnings []string, errs []error) {
	s, ok := v.(string)
	if !ok {
		return nil, []error{fmt.Errorf("expected %s to be a string", key)}
	}
	if _, err := registry.ParseModuleName(s); err != nil {
		return nil, []error{fmt.Errorf("%s: %s", key, registry.Message(err))}
	}
	return nil, nil
}

// validateModuleSystem is a schema.SchemaValidateFunc for a module's
// target system.
func validateModuleSystem(v any, key string) (warnings []string, errs []error) {
	s, ok := v.(string)
	if !ok {
		return nil, []error{fmt.Errorf("expected %s to be a string", key)}
	}
	if _, err := registry.ParseModuleSystem(s); err != nil {
		return nil, []error{fmt.Errorf("%s: %s", key, registry.Message(err))}
	}
	return nil, nil
}

// validateScope is a schema.SchemaValidateFunc for one token scope.
func validateScope(v any, key string) (warnings []string, errs []error) {
	s, ok := v.(string)
	if !ok {
		return nil, []error{fmt.Errorf("expected %s to be a string", key)}
	}
	if _, err := registry.ParseScope(s); err == nil {
		return nil, nil
	}
	return nil, []error{fmt.Errorf("unknown scope %q: use %s", s, strings.Join(scopes, ", "))}
}

// keywordValidator returns a schema.SchemaValidateFunc that accepts what
// parse accepts and reports parse's message otherwise: the rule and its
// wording are the API's.
func keywordValidator(parse func(string) error) schema.SchemaValidateFunc {
	return func(v any, key string) (warnings []string, errs []error) {
		s, ok := v.(string)
		if !ok {
			return nil, []error{fmt.Errorf("expected %s to be a string", key)}
		}
		if err := parse(s); err != nil {
			return nil, []error{fmt.Errorf("%s: %s", key, registry.Message(err))}
		}
		return nil, nil
	}
}

// validateVisibility is a schema.SchemaValidateFunc for a namespace's
// visibility: public or private.
var validateVisibility = keywordValidator(func(s string) error {
	_, err := registry.ParseVisibility(s)
	return err
})

// validateRole is a schema.SchemaValidateFunc for a membership role:
// reader, publisher or admin.
var validateRole = keywordValidator(func(s string) error {
	_, err := registry.ParseRole(s)
	return err
})

// validateUserName is a schema.SchemaValidateFunc for a user name.
var validateUserName = keywordValidator(func(s string) error {
	_, err := registry.ParseUserName(s)
	return err
})

// validatePassword is a schema.SchemaValidateFunc applying the API's
// password rules, its length limit first as the API checks it. Its
// messages never contain the password.
var validatePassword = keywordValidator(func(s string) error {
	if err := registry.PasswordLimit.Check(s); err != nil {
		return err
	}
	return registry.CheckPassword(s)
})

// validateDescription is a schema.SchemaValidateFunc that bounds a
// description as the API does (registry.CheckText: its length limit,
// UTF-8, no control characters).
var validateDescription = keywordValidator(registry.DescriptionLimit.CheckText)

// validateRFC3339 is a schema.SchemaValidateDiagFunc for a time stamp such
// as 2030-01-02T15:04:05Z. Whether it lies in the future is for the server
// to judge at creation: a configuration must stay valid as time passes.
func validateRFC3339(v any, path cty.Path) diag.Diagnostics {
	s, ok := v.(string)
	if !ok {
		return diag.Diagnostics{{Severity: diag.Error, Summary: "Expected a string", AttributePath: path}}
	}
	if _, err := time.Parse(time.RFC3339, s); err != nil {
		return diag.Diagnostics{{
			Severity:      diag.Error,
			Summary:       "Invalid RFC 3339 time stamp",
			Detail:        fmt.Sprintf("%q is not an RFC 3339 time stamp such as 2030-01-02T15:04:05Z or 2030-01-02T16:04:05+01:00.", s),
			AttributePath: path,
		}}
	}
	return nil
}

// Markers of the armored blocks validateArmoredPublicKey looks for.
const (
	beginPublicKey = "-----BEGIN PGP PUBLIC KEY BLOCK-----"
	privateKey     = "PRIVATE KEY BLOCK-----"
)

// validateArmoredPublicKey is a schema.SchemaValidateFunc that catches the
// two mistakes worth stopping before the request leaves: a value that is no
// armored public key at all, and a private key, which must never be sent.
// The server parses and checks the key itself.
func validateArmoredPublicKey(v any, key string) (warnings []string, errs []error) {
	s, ok := v.(string)
	if !ok {
		return nil, []error{fmt.Errorf("expected %s to be a string", key)}
	}
	switch {
	case strings.Contains(s, privateKey):
		return nil, []error{fmt.Errorf("%s holds a private key; never put it in a configuration. Export the public key with: gpg --armor --export KEYID", key)}
	case !strings.Contains(s, beginPublicKey):
		return nil, []error{fmt.Errorf("%s is not an ASCII-armored public key (%s ...); export one with: gpg --armor --export KEYID", key, beginPublicKey)}
	}
	return nil, nil
}

// lowercase is a schema.SchemaStateFunc: namespace names are stored in
// their canonical lowercase form, as the API returns them.
func lowercase(v any) string {
	s, _ := v.(string)
	if norm, err := registry.ParseNamespace(s); err == nil {
		return norm
	}
	return strings.ToLower(s)
}

// lowercaseUserName is a schema.SchemaStateFunc: user names are stored in
// lowercase, as the API returns them.
func lowercaseUserName(v any) string {
	s, _ := v.(string)
	return strings.ToLower(s)
}

// suppressUserNameCase is a schema.SchemaDiffSuppressFunc: Alice and alice
// are the same user.
func suppressUserNameCase(_, old, new string, _ *schema.ResourceData) bool {
	return strings.ToLower(old) == strings.ToLower(new)
}

// suppressNamespaceCase is a schema.SchemaDiffSuppressFunc: two spellings
// of one namespace name (Acme and acme) are the same namespace.
func suppressNamespaceCase(_, old, new string, _ *schema.ResourceData) bool {
	a, errA := registry.ParseNamespace(old)
	b, errB := registry.ParseNamespace(new)
	if errA != nil || errB != nil {
		return old == new
	}
	return a == b
}

// suppressArmorFormatting is a schema.SchemaDiffSuppressFunc for
// ASCII-armored keys: line endings, trailing spaces, surrounding blank
// lines and the optional checksum line do not change the key. Two values
// are the same key when their text is equal after normalizing white space,
// or when both decode to the same bytes.
func suppressArmorFormatting(_, old, new string, _ *schema.ResourceData) bool {
	if old == "" || new == "" {
		return old == new
	}
	if normalizeArmor(old) == normalizeArmor(new) {
		return true
	}
	a, errA := dearmor(old)
	b, errB := dearmor(new)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// normalizeArmor returns s with CRLF line endings turned into LF, trailing
// white space dropped from every line and blank lines trimmed from both ends.
func normalizeArmor(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	return strings.Trim(strings.Join(lines, "\n"), "\n")
}

// dearmor returns the binary content of one armored block.
func dearmor(s string) ([]byte, error) {
	block, err := armor.Decode(strings.NewReader(normalizeArmor(s)))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(block.Body, 1<<20))
}

// suppressSameInstant is a schema.SchemaDiffSuppressFunc for RFC 3339 time
// stamps: 2030-01-02T16:00:00+01:00 and 2030-01-02T15:00:00Z are the same
// moment, and the API answers in UTC.
func suppressSameInstant(_, old, new string, _ *schema.ResourceData) bool {
	a, errA := time.Parse(time.RFC3339, old)
	b, errB := time.Parse(time.RFC3339, new)
	if errA != nil || errB != nil {
		return old == new
	}
	return a.Equal(b)
}

// formatTime renders an API time stamp for the state: RFC 3339 in UTC, or
// "" for none.
func formatTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
