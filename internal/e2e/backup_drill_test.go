package e2e

import (
	"bytes"
	"context"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"trove.dev/trove/internal/server"
	"trove.dev/trove/internal/store/postgres/pgtest"
	"trove.dev/trove/internal/store/s3blob"
	"trove.dev/trove/internal/store/s3blob/s3test"
)

// TestBackupDrillPostgresS3 is the restore drill of docs/backup.md, run
// on the real services: a Trove on PostgreSQL and S3 is backed up by the
// documented procedure (pg_dump of the database, THEN a copy of the
// bucket's objects), restored into a fresh database and a fresh bucket,
// and a Trove started on them serves every version the dump holds:
// versions and download documents, archives matching their digests, and
// a real terraform init. A version published between the dump and the
// bucket copy shows the ordering argument: its blobs are in the copy but
// the dump does not name them, which is harmless; the other way round
// (bucket first) could lose blobs the dump names.
func TestBackupDrillPostgresS3(t *testing.T) {
	requireTerraform(t)
	pgDump, pgRestore := postgresTool(t, "pg_dump"), postgresTool(t, "pg_restore")
	dsn := pgtest.NewDatabase(t)
	bucket := s3test.NewBucket(t)
	cert, err := server.EnsureSelfSigned(filepath.Join(t.TempDir(), "tls"), []string{"localhost", "127.0.0.1"})
	if err != nil {
		t.Fatalf("creating the certificate: %v", err)
	}
	flagsFor := func(b s3blob.Options) []string {
		return []string{
			"--index-backend", "postgres",
			"--blob-backend", "s3", "--s3-endpoint", b.Endpoint, "--s3-region", b.Region,
			"--s3-bucket", b.Bucket, "--s3-path-style", "--s3-prefix", "registry", "--s3-access-key", b.AccessKey,
			"--tls-cert", cert.CertFile, "--tls-key", cert.KeyFile,
		}
	}
	a := startReplica(t, cert, true, []string{"TROVE_POSTGRES_DSN=" + dsn, "TROVE_S3_SECRET_KEY=" + bucket.SecretKey}, flagsFor(bucket))
	key, token := setupNamespace(t, a)
	moduleAddr := namespace + "/" + moduleName + "/" + moduleSystem
	var releases []*dist
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0"} {
		releases = append(releases, packageRelease(t, key, releaseSpec{Version: v, Platforms: []string{hostPlatform}}))
	}
	for _, d := range releases[:2] {
		publish(t, a, token, d)
		a.mustCLI(t, token, "module", "publish", moduleAddr, d.Version, writeModuleDir(t, moduleName, d.Version, ""))
	}

	// The backup: first the database, as one consistent snapshot ...
	work := t.TempDir()
	dump := filepath.Join(work, "trove.dump")
	runTool(t, pgDump, "--format=custom", "--file="+dump, "--dbname="+dsn)
	// ... a publish that the dump does not hold ...
	publish(t, a, token, releases[2])
	// ... then the bucket, which holds at least every blob the dump names.
	restoredBucket := s3test.NewBucket(t)
	n := copyBucket(t, bucket, restoredBucket)
	t.Logf("copied %d objects", n)

	// The restore: a fresh database and the copied bucket.
	restoredDSN := pgtest.NewDatabase(t)
	runTool(t, pgRestore, "--no-owner", "--no-privileges", "--exit-on-error", "--dbname="+restoredDSN, dump)
	b := startReplica(t, cert, false, []string{"TROVE_POSTGRES_DSN=" + restoredDSN, "TROVE_S3_SECRET_KEY=" + restoredBucket.SecretKey}, flagsFor(restoredBucket))
	b.AdminToken = a.AdminToken // in the restored database

	if got := getVersions(t, b).platforms(); !slices.Equal(slices.Sorted(maps.Keys(got)), []string{"1.0.0", "1.1.0"}) {
		t.Fatalf("the restored Trove lists provider versions %v, want those of the dump: [1.0.0 1.1.0]", got)
	}
	for i, d := range releases {
		if present := checkAllOrNothing(t, b, d); present != (i < 2) {
			t.Errorf("provider %s present = %v in the restored Trove, want %v", d.Version, present, i < 2)
		}
	}
	if got := moduleVersions(t, b, moduleAddr); !slices.Equal(got, []string{"1.0.0", "1.1.0"}) {
		t.Fatalf("the restored Trove lists module versions %v, want [1.0.0 1.1.0]", got)
	}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		if got, want := sha256Hex(moduleArchive(t, b, moduleAddr, v)), sha256Hex(moduleArchive(t, a, moduleAddr, v)); got != want {
			t.Errorf("module %s %s: the restored archive's SHA-256 is %s, the original's %s", moduleAddr, v, got, want)
		}
	}

	tf := newTerraform(t, b, "")
	dir := writeProject(t, b, "~> 1.0", "restored-drill")
	res := tf.mustRun(t, dir, "init", "-input=false")
	if want := tf.installedLine(b.Host+"/"+namespace+"/"+providerType, "1.1.0", key.KeyID); !strings.Contains(res.Flat, want) {
		t.Errorf("terraform init output lacks %q:\n%s", want, res.Output)
	}
	applyAndCheck(t, tf, dir, "restored-drill")
}

// postgresTool returns the path of a PostgreSQL client program of the
// test server's version: beside TROVE_TEST_PG_CTL, else on the PATH.
func postgresTool(t *testing.T, name string) string {
	t.Helper()
	if ctl := os.Getenv(pgtest.EnvPgCtl); ctl != "" {
		p := filepath.Join(filepath.Dir(ctl), name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not available (%v): the restore drill runs the PostgreSQL client programs; source scripts/testenv/postgres.sh", name, err)
	}
	return p
}

// runTool runs a program that must succeed.
func runTool(t *testing.T, bin string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = baseEnv(t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", filepath.Base(bin), err, out)
	}
}

// copyBucket copies every object of from into to, as a bucket copy
// (aws s3 sync, rclone, mc mirror) does, and returns how many.
func copyBucket(t *testing.T, from, to s3blob.Options) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	src, dst := s3test.Client(from), s3test.Client(to)
	n := 0
	pages := s3.NewListObjectsV2Paginator(src, &s3.ListObjectsV2Input{Bucket: &from.Bucket})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatalf("listing bucket %s: %v", from.Bucket, err)
		}
		for _, o := range page.Contents {
			obj, err := src.GetObject(ctx, &s3.GetObjectInput{Bucket: &from.Bucket, Key: o.Key})
			if err != nil {
				t.Fatalf("getting %s: %v", aws.ToString(o.Key), err)
			}
			body, err := io.ReadAll(obj.Body)
			obj.Body.Close()
			if err != nil {
				t.Fatalf("reading %s: %v", aws.ToString(o.Key), err)
			}
			if _, err := dst.PutObject(ctx, &s3.PutObjectInput{Bucket: &to.Bucket, Key: o.Key, Body: bytes.NewReader(body)}); err != nil {
				t.Fatalf("putting %s: %v", aws.ToString(o.Key), err)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatalf("bucket %s is empty", from.Bucket)
	}
	return n
}
