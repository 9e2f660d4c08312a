package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/crypto/argon2"

	"trove.dev/trove/internal/registry"
)

// MaxPasswordBytes bounds the passwords VerifyPassword hashes; the rules
// of new passwords are registry.CheckPassword's.
const MaxPasswordBytes = registry.MaxPasswordLength

// Argon2id parameters of new hashes: the OWASP recommendation of 19 MiB of
// memory, two passes and one lane (about 25 ms on a current core). Stored
// hashes carry their own parameters, so these can be raised later without
// invalidating existing passwords.
const (
	argonMemory  = 19 * 1024 // KiB
	argonTime    = 2
	argonThreads = 1
	argonSaltLen = 16
	argonKeyLen  = 32

	// Bounds on the parameters of a stored hash, so that a tampered hash
	// cannot make a verification take unbounded memory or time.
	maxArgonMemory  = 256 * 1024
	maxArgonTime    = 16
	maxArgonThreads = 16
)

// HashPassword returns the argon2id hash of password in the PHC string
// format: $argon2id$v=19$m=<KiB>,t=<passes>,p=<lanes>$<salt>$<hash>, with
// unpadded standard base64. It does not check the password rules.
func HashPassword(password string) (string, error) {
	salt := make([]byte, argonSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(password), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, argonMemory, argonTime, argonThreads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

// VerifyPassword reports whether password matches the encoded hash, by a
// constant-time comparison. A malformed hash (or an empty one: a user
// without a password) never matches.
func VerifyPassword(encoded, password string) bool {
	p, ok := parseArgon2id(encoded)
	if !ok || len(password) > MaxPasswordBytes {
		return false
	}
	key := argon2.IDKey([]byte(password), p.salt, p.time, p.memory, p.threads, uint32(len(p.key)))
	return subtle.ConstantTimeCompare(key, p.key) == 1
}

// dummyHash is verified against when a login names an unknown user, so
// that such a login takes as long as one with a wrong password.
var dummyHash = sync.OnceValue(func() string {
	h, err := HashPassword("unknown user: no password matches")
	if err != nil {
		return ""
	}
	return h
})

// VerifyNoPassword spends the time of a password verification and returns
// false: call it when there is no user to check against, so that response
// times do not tell which user names exist.
func VerifyNoPassword(password string) bool {
	VerifyPassword(dummyHash(), password)
	return false
}

type argonParams struct {
	memory, time uint32
	threads      uint8
	salt, key    []byte
}

func parseArgon2id(encoded string) (argonParams, bool) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != fmt.Sprintf("v=%d", argon2.Version) {
		return argonParams{}, false
	}
	var p argonParams
	var threads uint32
	if n, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.memory, &p.time, &threads); err != nil || n != 3 {
		return argonParams{}, false
	}
	if p.memory < 8 || p.memory > maxArgonMemory || p.time < 1 || p.time > maxArgonTime || threads < 1 || threads > maxArgonThreads {
		return argonParams{}, false
	}
	p.threads = uint8(threads)
	var err error
	if p.salt, err = base64.RawStdEncoding.DecodeString(parts[4]); err != nil || len(p.salt) < 8 {
		return argonParams{}, false
	}
	if p.key, err = base64.RawStdEncoding.DecodeString(parts[5]); err != nil || len(p.key) < 16 || len(p.key) > 64 {
		return argonParams{}, false
	}
	return p, true
}
