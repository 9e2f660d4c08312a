package config

import (
	"strings"
	"testing"
)

func TestAccessSettings(t *testing.T) {
	tests := map[string]string{ // arguments -> flag named in the error, "" for valid
		"--private-download-url-ttl 1m":  "",
		"--private-download-url-ttl 1h":  "",
		"--private-download-url-ttl 59s": "--private-download-url-ttl",
		"--private-download-url-ttl 61m": "--private-download-url-ttl",
		"--login-token-ttl 1h":           "",
		"--login-token-ttl 8760h":        "",
		"--login-token-ttl 59m":          "--login-token-ttl",
		"--login-token-ttl 8761h":        "--login-token-ttl",
	}
	for args, wantFlag := range tests {
		_, err := Load(strings.Fields(args), env(baseEnv))
		switch {
		case wantFlag == "" && err != nil:
			t.Errorf("Load(%s) = %v, want success", args, err)
		case wantFlag != "" && (err == nil || !strings.Contains(err.Error(), wantFlag)):
			t.Errorf("Load(%s) = %v, want an error naming %s", args, err, wantFlag)
		}
	}
}
