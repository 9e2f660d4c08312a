package config

import (
	"flag"
	"path/filepath"

	"trove.dev/trove/internal/registry"
)

// DefaultSigningSecretName is the file of the key-encryption secret in the
// data directory, the default of the embedded (SQLite) index.
const DefaultSigningSecretName = "signing-secret"

// Signing configures registry-managed signing keys.
type Signing struct {
	// SecretFile holds the secret that seals the private halves of
	// managed signing keys. Every replica sharing an index needs the same
	// file. Default: <data-dir>/signing-secret with the SQLite index,
	// created on the first managed key; none with PostgreSQL, where
	// managed keys then cannot be generated or used.
	SecretFile string
	// CreateSecret reports that SecretFile is the default in the data
	// directory, which Trove creates on first use. A file set explicitly
	// must exist.
	CreateSecret bool
}

// signingFlags defines the managed-signing-key flags on fs.
func (c *Config) signingFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Signing.SecretFile, "signing-secret-file", "",
		"`file` of at least 32 random bytes that encrypts the private halves of registry-managed signing keys; the same file on every replica "+
			"(default with the sqlite index: <data-dir>/"+DefaultSigningSecretName+", created on first use; none with postgres)")
}

// signingDefaults fills the default secret file of the embedded index.
func (c *Config) signingDefaults() {
	if c.Signing.SecretFile == "" && c.Index.Backend == IndexSQLite {
		c.Signing.SecretFile = filepath.Join(c.DataDir, DefaultSigningSecretName)
		c.Signing.CreateSecret = true
	}
}

// validate checks the managed-signing-key settings.
func (s Signing) validate() []error {
	if s.SecretFile != "" && !filepath.IsAbs(s.SecretFile) {
		return []error{registry.Errorf(registry.Invalid, "--signing-secret-file must be an absolute path, got %q", s.SecretFile)}
	}
	return nil
}
