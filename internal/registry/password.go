package registry

import (
	"strings"
	"unicode/utf8"
)

// MinPasswordLength is the shortest password a user may set, in
// characters: long enough to resist guessing within the login rate limits.
// MaxPasswordLength bounds it in bytes, so that hashing is bounded.
const MinPasswordLength = 10

// CheckPassword enforces the password rules on a new password. The API
// checks them before it hashes anything; the CLI and the Terraform
// provider check them before they send one.
func CheckPassword(password string) error {
	switch {
	case len(password) > MaxPasswordLength:
		return Errorf(Invalid, "the password is longer than %d bytes", MaxPasswordLength)
	case !utf8.ValidString(password):
		return Errorf(Invalid, "the password is not valid UTF-8")
	case utf8.RuneCountInString(password) < MinPasswordLength:
		return Errorf(Invalid, "the password is shorter than %d characters", MinPasswordLength)
	case strings.TrimSpace(password) != password:
		return Errorf(Invalid, "the password starts or ends with white space (a copy-and-paste mistake?)")
	}
	return nil
}
