package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"trove.dev/trove/internal/store/s3blob/s3test"
)

// TestInstallFromS3 keeps the archives in S3 and runs the real terraform
// init in both download modes. In redirect mode the signed download URL
// answers 302 to a presigned S3 URL (Terraform's HEAD before the GET
// follows it too); in proxy mode Trove streams the bytes. The install
// must succeed either way, signature check included.
func TestInstallFromS3(t *testing.T) {
	requireTerraform(t)
	for _, mode := range []string{"redirect", "proxy"} {
		t.Run(mode, func(t *testing.T) {
			bucket := s3test.NewBucket(t)
			srv := startTrove(t, filepath.Join(t.TempDir(), "data"),
				"--blob-backend", "s3", "--s3-endpoint", bucket.Endpoint, "--s3-region", bucket.Region,
				"--s3-bucket", bucket.Bucket, "--s3-path-style", "--s3-prefix", "registry",
				"--s3-access-key", bucket.AccessKey, "--s3-secret-key", bucket.SecretKey,
				"--download-mode", mode)
			key, publishToken := setupNamespace(t, srv)
			rel := packageRelease(t, key, releaseSpec{Version: "1.0.0"})
			publish(t, srv, publishToken, rel)
			if keys := s3test.Keys(t, bucket); len(keys) == 0 || !strings.HasPrefix(keys[0], "registry/sha256/") {
				t.Fatalf("the bucket holds %q, want the release's blobs under registry/sha256/", keys)
			}

			tf := newTerraform(t, srv, createToken(t, srv, "read"))
			dir := writeProject(t, srv, "1.0.0", "from-s3")
			res := tf.mustRun(t, dir, "init", "-input=false")
			want := fmt.Sprintf("Installed %s/%s/%s v1.0.0 (self-signed, key ID %s)", srv.Host, namespace, providerType, key.KeyID)
			if !strings.Contains(res.Flat, want) {
				t.Errorf("terraform init output lacks %q:\n%s", want, res.Output)
			}
		})
	}
}
