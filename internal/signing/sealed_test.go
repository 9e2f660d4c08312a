package signing

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"trove.dev/trove/internal/registry"
)

func TestSealOpen(t *testing.T) {
	dir := t.TempDir()
	f := SecretFile{Path: filepath.Join(dir, "secret"), Create: true}
	plain := []byte(`{"password":"hunter22"}`)
	sealed, err := f.Seal(plain, "git source of module acme/net/aws")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("hunter22")) {
		t.Fatal("the sealed bytes hold the plain text")
	}
	got, err := f.Open(sealed, "git source of module acme/net/aws")
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("Open = %q, %v", got, err)
	}

	tampered := append([]byte(nil), sealed...)
	tampered[len(tampered)-1] ^= 1
	other := SecretFile{Path: filepath.Join(dir, "other")}
	if err := os.WriteFile(other.Path, []byte(strings.Repeat("x", 40)), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]func() ([]byte, error){
		"tampered":      func() ([]byte, error) { return f.Open(tampered, "git source of module acme/net/aws") },
		"another owner": func() ([]byte, error) { return f.Open(sealed, "git source of module acme/other/aws") },
		"another secret": func() ([]byte, error) {
			return other.Open(sealed, "git source of module acme/net/aws")
		},
		"truncated": func() ([]byte, error) { return f.Open(sealed[:10], "git source of module acme/net/aws") },
		"no secret": func() ([]byte, error) { return SecretFile{}.Open(sealed, "x") },
	} {
		got, err := open()
		if !registry.IsKind(err, registry.Unavailable) || got != nil || strings.Contains(err.Error(), "hunter22") {
			t.Errorf("%s: Open = %q, %v; want an Unavailable error", name, got, err)
		}
	}
}
