package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"trove.dev/trove/internal/provenance"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/signing"
)

// Limits of the small files trove verify reads.
const (
	maxVerifySums = 1 << 20
	maxVerifySig  = 64 << 10
	maxVerifyKey  = 1 << 20
)

func verifyCommand() *command {
	return &command{
		name: "verify", args: "ARCHIVE.zip ... --sums FILE --sig FILE --key FILE [--key FILE ...] [--provenance FILE] | MODULE.tar.gz ... --provenance FILE [--key FILE ...] | --lock FILE [--key FILE ...]",
		minArgs: 0, maxArgs: 1 << 10, client: true,
		summary: "Check downloaded provider archives offline against their signed SHA256SUMS and their signed provenance, module archives against their signed provenance, or a whole lock file against this Trove; exits non-zero if any check fails.",
		examples: []string{
			"trove verify widget_linux_amd64.zip --sums SHA256SUMS --sig SHA256SUMS.sig \\\n    --key acme.asc --key acme-managed.asc --provenance provenance.json",
			"trove verify net-aws-1.0.0.tar.gz --provenance provenance.json --key acme-managed.asc",
			"trove verify --lock .terraform.lock.hcl",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			sums := fs.String("sums", "", "the release's SHA256SUMS `file`")
			sig := fs.String("sig", "", "the binary detached signature `file` of SHA256SUMS")
			var keys []string
			fs.Func("key", "an ASCII-armored public key `file` of the namespace (repeat it: the release's key and the managed key that signs the provenance)", func(v string) error {
				keys = append(keys, v)
				return nil
			})
			prov := fs.String("provenance", "", "the provenance `file`: a DSSE envelope, or the answer of a module's GET .../versions/{version}/provenance, whose keys verify it when no --key is given")
			lock := fs.String("lock", "", "a dependency lock `file` (.terraform.lock.hcl): check every provider of this Trove in it")
			return func(ctx context.Context, args []string) error {
				if *lock != "" {
					if len(args) > 0 || *sums != "" || *sig != "" || *prov != "" {
						return usagef("--lock checks a lock file against this Trove: give no archives, --sums, --sig or --provenance with it")
					}
					c, err := cl.client()
					if err != nil {
						return err
					}
					return runVerifyLock(ctx, cl.stdout, c, *lock, keys, time.Now())
				}
				if len(args) == 0 {
					return usagef("trove verify needs archives to check, or --lock FILE")
				}
				if len(keys) == 0 && (*sums != "" || *prov == "") {
					return usagef("trove verify needs at least one --key")
				}
				if (*sums == "") != (*sig == "") {
					return usagef("trove verify needs both --sums and --sig (provider archives), or neither and --provenance (module archives)")
				}
				if *sums == "" && *prov == "" {
					return usagef("trove verify needs --sums and --sig (provider archives) or --provenance (module archives, which have no SHA256SUMS)")
				}
				return runVerify(ctx, cl.stdout, args, *sums, *sig, *prov, keys, time.Now())
			}
		},
	}
}

// runVerify checks each archive against SHA256SUMS (whose signature must
// verify with one of keys) and, with prov, against the provenance's
// subjects (whose envelope must verify with one of keys), printing one
// line per check. Without sumsPath (module archives, which have no
// SHA256SUMS) only the provenance is checked, and prov is required.
func runVerify(ctx context.Context, out io.Writer, archives []string, sumsPath, sigPath, provPath string, keyPaths []string, now time.Time) error {
	keys, err := readVerifyKeys(keyPaths)
	if err != nil {
		return err
	}
	var sums, sig []byte
	if sumsPath != "" {
		if sums, err = readLimited(sumsPath, maxVerifySums); err != nil {
			return err
		}
		if sig, err = readLimited(sigPath, maxVerifySig); err != nil {
			return err
		}
	} else if provPath == "" {
		return errors.New("nothing to check the archives against: give --sums and --sig, or --provenance")
	}
	failed := 0
	report := func(ok bool, format string, args ...any) {
		mark := "OK  "
		if !ok {
			mark, failed = "FAIL", failed+1
		}
		fmt.Fprintf(out, "%s %s\n", mark, fmt.Sprintf(format, args...))
	}
	listed := map[string]string{}
	// A module archive has no SHA256SUMS: its provenance is the only
	// signed record of it.
	if sumsPath != "" {
		if k, err := signing.VerifyDetachedAt(keys, sums, sig, now); err != nil {
			report(false, "%s: signature: %s", filepath.Base(sumsPath), signatureMessage(err, true))
		} else if parsed, err := release.ParseSHA256SUMS(sums); err != nil {
			report(false, "%s: %s", filepath.Base(sumsPath), verifyMessage(err))
		} else {
			report(true, "%s: signed by key %s", filepath.Base(sumsPath), k.KeyID)
			for _, s := range parsed {
				listed[s.Filename] = s.Digest
			}
		}
	}
	var stmt *provenance.Statement
	if provPath != "" {
		data, err := readLimited(provPath, maxVerifyProvenanceFile)
		var named []registry.SigningKey
		var answer bool
		if err == nil {
			data, named, answer, err = provenanceFile(data)
		}
		byNamed := ""
		if err == nil && len(keys) == 0 {
			// The API answers a module's provenance with the keys that
			// verify it: the registry's word, as verify --lock takes it.
			if !answer {
				return usagef("trove verify needs at least one --key: %s is a bare envelope, which names no keys", filepath.Base(provPath))
			}
			keys, byNamed = named, " (a key the provenance file names; pass --key to check against keys you hold)"
		}
		if err == nil {
			var v provenance.Verified
			if v, err = provenance.Verify(ctx, data, keys, now); err == nil {
				stmt = &v.Statement
				b := v.Statement.Predicate.RunDetails.Builder.ID
				ext := v.Statement.Predicate.BuildDefinition.ExternalParameters
				what := ""
				if m := ext["module"]; m != "" {
					what = "; module " + m + " " + ext["version"]
				}
				report(true, "%s: signed by key %s%s; built by %s %s%s", filepath.Base(provPath), v.Key.KeyID, byNamed, b, ext["repository"], what)
			}
		}
		if err != nil {
			report(false, "%s: %s", filepath.Base(provPath), verifyMessage(err))
		}
	}
	for _, a := range archives {
		name := filepath.Base(a)
		digest, err := fileSHA256(a)
		if err != nil {
			report(false, "%s: %v", name, err)
			continue
		}
		switch want, ok := listed[name]; {
		case sumsPath == "":
		case !ok:
			report(false, "%s: not listed in a SHA256SUMS whose signature verified", name)
		case want != digest:
			report(false, "%s: sha256 %s, but SHA256SUMS lists %s", name, digest, want)
		default:
			report(true, "%s: matches SHA256SUMS", name)
		}
		if stmt != nil {
			// The statement must be about the release the archive is
			// of (its type or name and system, and version), not only
			// name the same bytes.
			if err := stmt.CheckArchiveName(name); err != nil {
				report(false, "%s: %s", name, verifyMessage(err))
			} else if err := stmt.CheckArchive(name, digest); err != nil {
				report(false, "%s: %s", name, verifyMessage(err))
			} else {
				report(true, "%s: matches the provenance", name)
			}
		} else if provPath != "" {
			report(false, "%s: no provenance that verified", name)
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d check(s) failed", failed)
	}
	return nil
}

// readVerifyKeys reads ASCII-armored public key files.
func readVerifyKeys(paths []string) ([]registry.SigningKey, error) {
	var keys []registry.SigningKey
	for _, p := range paths {
		data, err := readLimited(p, maxVerifyKey)
		if err != nil {
			return nil, err
		}
		k, err := signing.ParsePublicKey(string(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// verifyMessage is the text of a failed check: a registry error's
// message, or the error itself (a file that cannot be read).
// signatureMessage is verifyMessage for a signature checked against
// keys: an unknown signer is named with where the keys came from (the
// --key files, or the registry's list), not with the server's advice to
// add a key to a namespace.
func signatureMessage(err error, fromKeyFiles bool) string {
	var unknown *signing.UnknownIssuerError
	switch {
	case !errors.As(err, &unknown):
		return verifyMessage(err)
	case fromKeyFiles:
		return fmt.Sprintf("signed by key %s, which none of the --key files holds: give the key that signed it", unknown.Issuer)
	}
	return fmt.Sprintf("signed by key %s, which is none of the keys the registry lists for the namespace", unknown.Issuer)
}

func verifyMessage(err error) string {
	var e *registry.Error
	if errors.As(err, &e) && e.Kind != registry.Internal {
		return registry.Message(err)
	}
	return err.Error()
}
