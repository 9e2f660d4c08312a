package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"trove.dev/trove/internal/config"
)

func TestStorageAttrs(t *testing.T) {
	line := func(cfg config.Config) string {
		var buf bytes.Buffer
		slog.New(slog.NewTextHandler(&buf, nil)).Info("trove started", storageAttrs(cfg)...)
		return buf.String()
	}
	var embedded config.Config
	embedded.Index = config.Index{Backend: config.IndexSQLite, SQLite: config.SQLite{Path: "/var/lib/trove/trove.db"}}
	embedded.Blobs = config.Blobs{Backend: config.BlobsFS, FS: config.FS{Dir: "/var/lib/trove/blobs"}}
	if got := line(embedded); !strings.Contains(got, "index=sqlite sqlite_path=/var/lib/trove/trove.db blobs=fs fs_blob_dir=/var/lib/trove/blobs") {
		t.Errorf("embedded backends: %s", got)
	}

	var shared config.Config
	shared.Index = config.Index{Backend: config.IndexPostgres, Postgres: config.Postgres{DSN: "postgres://trove:hunter2@db.internal:5433/registry?sslmode=verify-full"}}
	shared.Blobs = config.Blobs{Backend: config.BlobsS3, S3: config.S3{Endpoint: "https://key:s3cret@minio.internal:9000", Bucket: "trove", Prefix: "blobs",
		AccessKey: "AKIAEXAMPLE", SecretKey: "wJalrXUtnFEMI", DownloadMode: config.DownloadRedirect}}
	got := line(shared)
	for _, want := range []string{"index=postgres", "postgres_host=db.internal:5433", "postgres_database=registry", "postgres_user=trove",
		"blobs=s3", "s3_bucket=trove", "s3_prefix=blobs", "s3_endpoint=https://minio.internal:9000", "download_mode=redirect"} {
		if !strings.Contains(got, want) {
			t.Errorf("shared backends: %s lacks %s", got, want)
		}
	}
	for _, secret := range []string{"hunter2", "s3cret", "wJalrXUtnFEMI", "AKIAEXAMPLE"} {
		if strings.Contains(got, secret) {
			t.Errorf("the start-up line shows the secret %s: %s", secret, got)
		}
	}
}
