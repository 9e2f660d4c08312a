package config

import (
	"strings"
	"testing"
)

func TestLoadS3(t *testing.T) {
	tests := map[string]struct {
		args []string
		env  map[string]string
		want S3
	}{
		"flags": {
			[]string{"--blob-backend", "s3", "--s3-endpoint", "http://127.0.0.1:7070", "--s3-region", "eu-west-1",
				"--s3-bucket", "trove", "--s3-prefix", "reg/", "--s3-path-style", "--s3-access-key", "AK", "--s3-secret-key", "SK",
				"--download-mode", "proxy"},
			nil,
			S3{Endpoint: "http://127.0.0.1:7070", Region: "eu-west-1", Bucket: "trove", Prefix: "reg/", PathStyle: true,
				AccessKey: "AK", SecretKey: "SK", DownloadMode: "proxy"},
		},
		"environment": {
			nil,
			map[string]string{"TROVE_BLOB_BACKEND": "s3", "TROVE_S3_BUCKET": "trove", "TROVE_S3_ACCESS_KEY": "AK", "TROVE_S3_SECRET_KEY": "SK", "TROVE_S3_PATH_STYLE": "true"},
			S3{Bucket: "trove", PathStyle: true, AccessKey: "AK", SecretKey: "SK", DownloadMode: "redirect"},
		},
		"credential chain and redirect by default": {
			[]string{"--blob-backend=s3", "--s3-bucket=trove"},
			nil,
			S3{Bucket: "trove", DownloadMode: "redirect"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := map[string]string{"HOME": "/home/u"}
			for k, v := range tc.env {
				e[k] = v
			}
			c, err := Load(tc.args, env(e))
			if err != nil {
				t.Fatal(err)
			}
			if c.Blobs.Backend != BlobsS3 || c.Blobs.S3 != tc.want {
				t.Errorf("Blobs = %+v, want backend s3 with %+v", c.Blobs, tc.want)
			}
		})
	}
}

func TestLoadS3Errors(t *testing.T) {
	tests := map[string]struct {
		args []string
		want string
	}{
		"no bucket":             {[]string{"--blob-backend", "s3"}, "needs --s3-bucket"},
		"blank bucket":          {[]string{"--blob-backend", "s3", "--s3-bucket", " "}, "needs --s3-bucket"},
		"endpoint scheme":       {[]string{"--blob-backend", "s3", "--s3-bucket", "b", "--s3-endpoint", "s3.example.com"}, "invalid --s3-endpoint"},
		"endpoint without host": {[]string{"--blob-backend", "s3", "--s3-bucket", "b", "--s3-endpoint", "https://"}, "invalid --s3-endpoint"},
		"access key alone":      {[]string{"--blob-backend", "s3", "--s3-bucket", "b", "--s3-access-key", "AK"}, "go together"},
		"secret key alone":      {[]string{"--blob-backend", "s3", "--s3-bucket", "b", "--s3-secret-key", "SK"}, "go together"},
		"download mode":         {[]string{"--blob-backend", "s3", "--s3-bucket", "b", "--download-mode", "stream"}, "--download-mode must be redirect or proxy"},
		"unknown backend":       {[]string{"--blob-backend", "gcs"}, "want fs or s3"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Load(tc.args, env(baseEnv))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load(%q) = %v, want an error containing %q", tc.args, err, tc.want)
			}
		})
	}
}

func TestS3SettingsIgnoredWithFS(t *testing.T) {
	// A half-configured S3 section must not stop an fs deployment.
	c, err := Load([]string{"--s3-access-key", "AK", "--download-mode", "proxy"}, env(baseEnv))
	if err != nil {
		t.Fatalf("Load with the fs backend and stray S3 flags: %v", err)
	}
	if c.Blobs.Backend != BlobsFS {
		t.Errorf("backend = %q, want fs", c.Blobs.Backend)
	}
}
