package config

import (
	"strings"
	"testing"
)

func TestSigningSecretFile(t *testing.T) {
	tests := []struct {
		args       string
		wantFile   string
		wantCreate bool
		wantErr    string
	}{
		{"--data-dir /d", "/d/signing-secret", true, ""},
		{"--data-dir /d --signing-secret-file /etc/trove/secret", "/etc/trove/secret", false, ""},
		{"--data-dir /d --index-backend postgres --postgres-dsn postgres://db/trove", "", false, ""},
		{"--data-dir /d --index-backend postgres --postgres-dsn postgres://db/trove --signing-secret-file /run/s", "/run/s", false, ""},
		{"--data-dir /d --signing-secret-file relative/secret", "", false, "--signing-secret-file must be an absolute path"},
	}
	for _, tt := range tests {
		c, err := Load(strings.Fields(tt.args), env(baseEnv))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Load(%s) = %v, want an error saying %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Load(%s): %v", tt.args, err)
			continue
		}
		if c.Signing.SecretFile != tt.wantFile || c.Signing.CreateSecret != tt.wantCreate {
			t.Errorf("Load(%s): Signing = %+v, want file %q, create %v", tt.args, c.Signing, tt.wantFile, tt.wantCreate)
		}
	}
}
