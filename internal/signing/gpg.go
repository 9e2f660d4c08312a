package signing

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"trove.dev/trove/internal/registry"
)

// GPGSigner signs release SHA256SUMS documents with gpg, so that the key
// stays in gpg's keyring (or on a smartcard gpg drives).
type GPGSigner struct {
	ctx         context.Context
	program     string
	fingerprint string // of the primary key the user named
	public      registry.SigningKey
}

// NewGPGSigner finds gpg on the PATH and the one secret key in its keyring
// (GNUPGHOME, else ~/.gnupg) that user names (a key ID, fingerprint or
// user ID), and reads the key's public half, which ParsePublicKey must
// accept. ctx bounds every gpg run, signing included.
func NewGPGSigner(ctx context.Context, user string) (*GPGSigner, error) {
	program, err := exec.LookPath("gpg")
	if err != nil {
		return nil, registry.Errorf(registry.Invalid, "gpg is not on the PATH: install GnuPG, or sign without it with --key-file FILE (gpg --armor --export-secret-keys KEYID on a machine that has the key)")
	}
	s := &GPGSigner{ctx: ctx, program: program}
	listing, err := s.run(nil, "--with-colons", "--list-secret-keys", "--", user)
	if err != nil {
		return nil, registry.Errorf(registry.Invalid, "gpg has no secret key %q in %s: list the keys with gpg --list-secret-keys, or import one with gpg --import (%s)", user, keyring(), err)
	}
	var fprs []string
	inSec := false
	for line := range strings.Lines(string(listing)) {
		fields := strings.Split(strings.TrimSpace(line), ":")
		switch {
		case fields[0] == "sec":
			inSec = true
		case fields[0] == "ssb":
			inSec = false
		case fields[0] == "fpr" && inSec && len(fields) > 9:
			fprs = append(fprs, fields[9])
			inSec = false
		}
	}
	switch len(fprs) {
	case 0:
		return nil, registry.Errorf(registry.Invalid, "gpg has no secret key %q in %s: list the keys with gpg --list-secret-keys", user, keyring())
	case 1:
	default:
		return nil, registry.Errorf(registry.Invalid, "%q names %d secret keys in %s (%s): name one by its fingerprint", user, len(fprs), keyring(), strings.Join(fprs, ", "))
	}
	s.fingerprint = fprs[0]
	armored, err := s.run(nil, "--armor", "--export", "--", s.fingerprint)
	if err != nil {
		return nil, fmt.Errorf("exporting the public key %s with gpg: %w", s.fingerprint, err)
	}
	if s.public, err = ParsePublicKey(string(armored)); err != nil {
		return nil, registry.Errorf(registry.KindOf(err), "gpg key %s cannot sign releases: %s", s.fingerprint, registry.Message(err))
	}
	return s, nil
}

// PublicKey returns the public half of the key, as ParsePublicKey returns
// it: what `trove key add` registers for a namespace.
func (s *GPGSigner) PublicKey() registry.SigningKey { return s.public }

// SignDetached runs gpg --batch --local-user <fingerprint> --detach-sign
// on data and checks the binary signature it writes with VerifyDetached,
// as a registry will.
func (s *GPGSigner) SignDetached(data []byte) ([]byte, error) {
	sig, err := s.run(data, "--local-user", s.fingerprint, "--output", "-", "--detach-sign")
	if err != nil {
		return nil, fmt.Errorf("gpg could not sign with key %s: %w", s.fingerprint, err)
	}
	if _, err := VerifyDetached([]registry.SigningKey{s.public}, data, sig); err != nil {
		return nil, fmt.Errorf("the signature gpg made with key %s does not verify: %w", s.fingerprint, err)
	}
	return sig, nil
}

// run runs gpg --batch with args and stdin, and returns its standard
// output; an error carries what gpg wrote on standard error.
func (s *GPGSigner) run(stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(s.ctx, s.program, append([]string{"--batch", "--no-tty"}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("%s", strings.ReplaceAll(msg, "\n", "; "))
	}
	return stdout.Bytes(), nil
}

// keyring names gpg's keyring for messages.
func keyring() string {
	if home := os.Getenv("GNUPGHOME"); home != "" {
		return "the keyring in GNUPGHOME=" + home
	}
	return "gpg's keyring (~/.gnupg)"
}
