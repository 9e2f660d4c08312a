package config

import (
	"flag"
	"time"

	"trove.dev/trove/internal/registry"
)

// Defaults and bounds of the access-control settings.
const (
	// DefaultPrivateDownloadURLTTL is the lifetime of the download URLs
	// of private namespaces: long enough for a client to fetch a file
	// right after reading the download document, short enough that a
	// leaked URL soon stops working.
	DefaultPrivateDownloadURLTTL = 5 * time.Minute
	MaxPrivateDownloadURLTTL     = time.Hour

	// DefaultLoginTokenTTL is the lifetime of the tokens `terraform login`
	// obtains.
	DefaultLoginTokenTTL = 30 * 24 * time.Hour
	MinLoginTokenTTL     = time.Hour
	MaxLoginTokenTTL     = 365 * 24 * time.Hour
)

// Access configures access control.
type Access struct {
	// PrivateDownloadURLTTL is how long the signed download URLs of
	// private namespaces stay valid.
	PrivateDownloadURLTTL time.Duration
	// LoginTokenTTL is the lifetime of tokens issued by `terraform login`.
	LoginTokenTTL time.Duration
	// MirrorPublic lets anyone who reaches Trove install the providers its
	// mirror fetches from upstream registries; otherwise any valid token
	// may.
	MirrorPublic bool
	// LocalPasswords lets people log in with the passwords of local
	// accounts (the login page of terraform login, the web UI's sign-in
	// page, password checks of the API). Off, they sign in through an
	// identity provider (single sign-on); tokens, the first admin token
	// and `trove admin token` keep working.
	LocalPasswords bool
}

// accessFlags defines the access-control flags on fs.
func (c *Config) accessFlags(fs *flag.FlagSet) {
	fs.DurationVar(&c.Access.PrivateDownloadURLTTL, "private-download-url-ttl", DefaultPrivateDownloadURLTTL,
		"how long the signed download URLs of private namespaces stay valid")
	fs.DurationVar(&c.Access.LoginTokenTTL, "login-token-ttl", DefaultLoginTokenTTL,
		"`lifetime` of the tokens that terraform login obtains (personal tokens of the user who logs in)")
	fs.BoolVar(&c.Access.MirrorPublic, "mirror-public", false,
		"let anyone who can reach Trove install the providers its mirror fetches from upstream registries, without a token (default: any valid token may)")
	fs.BoolVar(&c.Access.LocalPasswords, "local-passwords", true,
		"let people log in with the passwords of local accounts; false leaves single sign-on through identity providers (tokens and trove admin token keep working)")
}

// validate checks the access-control settings.
func (a Access) validate() []error {
	var errs []error
	if a.PrivateDownloadURLTTL < MinDownloadURLTTL || a.PrivateDownloadURLTTL > MaxPrivateDownloadURLTTL {
		errs = append(errs, registry.Errorf(registry.Invalid, "--private-download-url-ttl must be between %s and %s, got %s",
			ShortDuration(MinDownloadURLTTL), ShortDuration(MaxPrivateDownloadURLTTL), ShortDuration(a.PrivateDownloadURLTTL)))
	}
	if a.LoginTokenTTL < MinLoginTokenTTL || a.LoginTokenTTL > MaxLoginTokenTTL {
		errs = append(errs, registry.Errorf(registry.Invalid, "--login-token-ttl must be between %s and %s, got %s",
			ShortDuration(MinLoginTokenTTL), ShortDuration(MaxLoginTokenTTL), ShortDuration(a.LoginTokenTTL)))
	}
	return errs
}
