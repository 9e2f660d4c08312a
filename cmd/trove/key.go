package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"trove.dev/trove/apispec"
)

// maxKeyFileBytes bounds a public key file; real ones are a few KiB.
const maxKeyFileBytes = 1 << 20

func keyAdd() *command {
	return &command{
		name: "key add", args: "NAMESPACE --file KEY.asc", minArgs: 1, maxArgs: 1, client: true,
		summary: "Add a GPG public key that may sign the namespace's releases (needs admin on the namespace).",
		examples: []string{
			"gpg --armor --export 0123456789ABCDEF > key.asc && trove key add acme --file key.asc",
			"gpg --armor --export 0123456789ABCDEF | trove key add acme --file -",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			file := fs.String("file", "", "ASCII-armored public key `file`, or - for standard input")
			return func(ctx context.Context, args []string) error {
				if *file == "" {
					return usagef("--file is required")
				}
				armor, err := readKeyFile(*file, cl.stdin)
				if err != nil {
					return err
				}
				c, err := cl.client()
				if err != nil {
					return err
				}
				key, err := c.AddSigningKey(ctx, args[0], apispec.AddSigningKeyRequest{ASCIIArmor: armor})
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(key)
				}
				fmt.Fprintf(cl.stdout, "Added signing key %s to namespace %s\nFingerprint: %s\n", key.KeyID, key.Namespace, key.Fingerprint)
				return nil
			}
		},
	}
}

// readInput reads at most limit+1 bytes of the file at path ("-":
// stdin), and the name to give it in messages; callers refuse more than
// limit bytes with their own advice.
func readInput(path string, stdin io.Reader, limit int64) (data []byte, name string, err error) {
	var r io.Reader = stdin
	name = "standard input"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, "", err
		}
		defer f.Close()
		r, name = f, path
	}
	data, err = io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", name, err)
	}
	return data, name, nil
}

// readKeyFile reads an ASCII-armored public key from path ("-": stdin) and
// refuses anything else, above all a private key.
func readKeyFile(path string, stdin io.Reader) (string, error) {
	data, name, err := readInput(path, stdin, maxKeyFileBytes)
	if err != nil {
		return "", err
	}
	text := string(data)
	switch {
	case len(data) > maxKeyFileBytes:
		return "", fmt.Errorf("%s is larger than %d bytes: is it a public key?", name, maxKeyFileBytes)
	case strings.Contains(text, "PRIVATE KEY BLOCK"):
		return "", fmt.Errorf("%s holds a PRIVATE key: never upload it; export the public key with gpg --armor --export KEY_ID", name)
	case !strings.Contains(text, "-----BEGIN PGP PUBLIC KEY BLOCK-----"):
		return "", errors.New(name + " is not an ASCII-armored public key: export one with gpg --armor --export KEY_ID")
	}
	return text, nil
}

func keyGenerate() *command {
	return &command{
		name: "key generate", args: "NAMESPACE", minArgs: 1, maxArgs: 1, client: true,
		summary: "Make Trove generate and keep the namespace's signing key (needs admin on the namespace); releases published without a .sig are then signed by Trove.",
		examples: []string{
			"trove key generate acme",
			"trove key generate acme --json | jq -r .ascii_armor > acme-trove.asc",
		},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				key, err := c.GenerateSigningKey(ctx, args[0])
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(key)
				}
				fmt.Fprintf(cl.stdout, "Generated managed signing key %s for namespace %s\nFingerprint: %s\n"+
					"Trove keeps its private key and signs the SHA256SUMS of releases published to %s without a .sig.\n",
					key.KeyID, key.Namespace, key.Fingerprint, key.Namespace)
				return nil
			}
		},
	}
}

func keyList() *command {
	return &command{
		name: "key list", args: "NAMESPACE", minArgs: 1, maxArgs: 1, client: true,
		summary:  "List the signing keys of a namespace.",
		examples: []string{"trove key list acme"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				keys, err := c.ListSigningKeys(ctx, args[0])
				if err != nil {
					return err
				}
				if cl.jsonOut {
					return cl.printJSON(apispec.SigningKeyList{Keys: nonNil(keys)})
				}
				if len(keys) == 0 {
					fmt.Fprintf(cl.stdout, "Namespace %s has no signing keys; add one with: trove key add %s --file KEY.asc\n", args[0], args[0])
					return nil
				}
				rows := make([]string, 0, len(keys))
				for _, k := range keys {
					kind := "uploaded"
					if k.Managed {
						kind = "managed"
					}
					rows = append(rows, row(k.KeyID, k.Fingerprint, kind, when(k.CreatedAt), whenPtr(k.ExpiresAt, "never")))
				}
				return table(cl.stdout, "KEY ID\tFINGERPRINT\tKIND\tADDED\tEXPIRES", rows)
			}
		},
	}
}

func keyRemove() *command {
	return &command{
		name: "key remove", args: "NAMESPACE KEY_ID", minArgs: 2, maxArgs: 2, client: true,
		summary:  "Remove a signing key from a namespace; versions it signed stay installable.",
		examples: []string{"trove key remove acme 0123456789ABCDEF"},
		setup: func(fs *flag.FlagSet, cl *cli) func(context.Context, []string) error {
			return func(ctx context.Context, args []string) error {
				c, err := cl.client()
				if err != nil {
					return err
				}
				if err := c.DeleteSigningKey(ctx, args[0], args[1]); err != nil {
					return err
				}
				if !cl.jsonOut {
					fmt.Fprintf(cl.stdout, "Removed signing key %s from namespace %s\n", args[1], args[0])
				}
				return nil
			}
		},
	}
}
