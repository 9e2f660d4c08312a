package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/store/postgres/pgtest"
	"trove.dev/trove/internal/store/s3blob/s3test"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
	"trove.dev/trove/internal/trovetest/logbuf"
)

// seedEmbedded writes a small registry (a namespace and a blob) into the
// embedded store of a data directory.
func seedEmbedded(t *testing.T, dataDir string) string {
	t.Helper()
	st := sqlitetest.Open(t, dataDir)
	defer st.Close() // the commands under test open the data directory
	if err := st.Index.CreateNamespace(t.Context(), registry.Namespace{Name: "acme", Description: "copied", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	return st.Put(t, []byte("a provider archive"))
}

func writeSettings(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "settings.env")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStoreCopy(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	digest := seedEmbedded(t, src)
	from := writeSettings(t, "TROVE_DATA_DIR="+src)
	to := writeSettings(t, "# the new home", "TROVE_DATA_DIR="+dst)
	environ := map[string]string{"HOME": t.TempDir(), "TROVE_DATA_DIR": "/must/not/be/used"}

	r := runTrove(t, environ, "", "store", "copy", "--from-config", from, "--to-config", to)
	if r.code != exitOK || !strings.Contains(r.stdout, "namespaces              1 copied,      0 already there") ||
		!strings.Contains(r.stdout, "blobs                   1 copied") {
		t.Fatalf("store copy: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dst, "blobs", "sha256", digest[:2], digest)); err != nil {
		t.Errorf("the blob was not copied: %v", err)
	}
	r = runTrove(t, environ, "", "store", "copy", "--to-config", to, "--from-config", from)
	if r.code != exitOK || !strings.Contains(r.stdout, "namespaces              0 copied,      1 already there") {
		t.Errorf("second store copy: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	for name, tc := range map[string]struct {
		args []string
		code int
		want string
	}{
		"missing source":   {[]string{"--from-config", writeSettings(t, "TROVE_DATA_DIR="+filepath.Join(src, "typo")), "--to-config", to}, exitError, "does not exist; check TROVE_DATA_DIR"},
		"and back":         {[]string{"--from-config", to, "--to-config", writeSettings(t, "TROVE_DATA_DIR="+t.TempDir())}, exitOK, ""},
		"no target":        {[]string{"--from-config", from}, exitUsage, "both --from-config and --to-config"},
		"unknown setting":  {[]string{"--from-config", writeSettings(t, "TROVE_DATADIR="+src), "--to-config", to}, exitUsage, `unknown setting "TROVE_DATADIR"`},
		"invalid settings": {[]string{"--from-config", from, "--to-config", writeSettings(t, "TROVE_BLOB_BACKEND=s3")}, exitUsage, "needs --s3-bucket"},
		"no such file":     {[]string{"--from-config", filepath.Join(src, "nope.env"), "--to-config", to}, exitUsage, "nope.env"},
	} {
		t.Run(name, func(t *testing.T) {
			r := runTrove(t, environ, "", append([]string{"store", "copy"}, tc.args...)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d mentioning %q", r.code, r.stderr, tc.code, tc.want)
			}
		})
	}

	// A target that holds something else is refused.
	other := t.TempDir()
	seedEmbedded(t, other) // another "acme", created at another time
	r = runTrove(t, environ, "", "store", "copy", "--from-config", from, "--to-config", writeSettings(t, "TROVE_DATA_DIR="+other))
	if r.code != exitError || !strings.Contains(r.stderr, "namespace acme differs") {
		t.Errorf("copy into a diverged target: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestStoreCopyToScaleOut copies through the command line into PostgreSQL
// and S3, with the secrets expanded from the environment.
func TestStoreCopyToScaleOut(t *testing.T) {
	dsn := pgtest.NewDatabase(t)
	bucket := s3test.NewBucket(t)
	src := t.TempDir()
	seedEmbedded(t, src)
	to := writeSettings(t,
		"TROVE_INDEX_BACKEND=postgres", "TROVE_POSTGRES_DSN=${TEST_DSN}",
		"TROVE_BLOB_BACKEND=s3", "TROVE_S3_ENDPOINT="+bucket.Endpoint, "TROVE_S3_REGION="+bucket.Region,
		"TROVE_S3_BUCKET="+bucket.Bucket, "TROVE_S3_PREFIX=registry/", "TROVE_S3_PATH_STYLE=true",
		"TROVE_S3_ACCESS_KEY="+bucket.AccessKey, "TROVE_S3_SECRET_KEY='${TEST_SECRET}'")
	environ := map[string]string{"HOME": t.TempDir(), "TEST_DSN": dsn, "TEST_SECRET": "unused: single quotes keep it literal"}
	r := runTrove(t, environ, "", "store", "copy", "--from-config", writeSettings(t, "TROVE_DATA_DIR="+src), "--to-config", to)
	if r.code != exitError || !strings.Contains(r.stderr, "secret key does not belong to the access key") {
		t.Fatalf("copy with a literal ${TEST_SECRET} as S3 secret: exit %d, stderr %q; want refused credentials", r.code, r.stderr)
	}
	if err := os.WriteFile(to, []byte(strings.ReplaceAll(mustRead(t, to), "'${TEST_SECRET}'", "${TEST_SECRET}")), 0o600); err != nil {
		t.Fatal(err)
	}
	environ["TEST_SECRET"] = bucket.SecretKey
	r = runTrove(t, environ, "", "store", "copy", "--from-config", writeSettings(t, "TROVE_DATA_DIR="+src), "--to-config", to)
	if r.code != exitOK || !strings.Contains(r.stdout, "blobs                   1 copied") {
		t.Fatalf("store copy to PostgreSQL and S3: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if keys := s3test.Keys(t, bucket); len(keys) != 1 || !strings.HasPrefix(keys[0], "registry/sha256/") {
		t.Errorf("bucket holds %v, want one blob under registry/sha256/", keys)
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestServeWithS3 runs `trove serve` with its blobs in S3, publishes
// through the command line and downloads a package as Terraform does:
// the signed URL of the download document answers a redirect to S3 in
// redirect mode and the bytes themselves in proxy mode.
func TestServeWithS3(t *testing.T) {
	for _, mode := range []string{"redirect", "proxy"} {
		t.Run(mode, func(t *testing.T) {
			bucket := s3test.NewBucket(t)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			listen := ln.Addr().String()
			ln.Close()
			environ := map[string]string{
				"HOME": t.TempDir(), "TROVE_DATA_DIR": t.TempDir(), "TROVE_LISTEN": listen,
				"TROVE_BLOB_BACKEND": "s3", "TROVE_S3_ENDPOINT": bucket.Endpoint, "TROVE_S3_REGION": bucket.Region,
				"TROVE_S3_BUCKET": bucket.Bucket, "TROVE_S3_PATH_STYLE": "true",
				"TROVE_S3_ACCESS_KEY": bucket.AccessKey, "TROVE_S3_SECRET_KEY": bucket.SecretKey, "TROVE_DOWNLOAD_MODE": mode,
			}
			caFile, token := startServe(t, environ)
			admin := map[string]string{"TROVE_ADDR": "https://" + listen, "TROVE_TOKEN": token, "TROVE_CA_FILE": caFile}
			for _, args := range [][]string{{"namespace", "create", "acme"}} {
				if r := runTrove(t, admin, "", args...); r.code != exitOK {
					t.Fatalf("trove %v: %s", args, r.stderr)
				}
			}
			key := signingtest.NewKeyWith(t, "acme", signingtest.Options{Algorithm: signingtest.Ed25519})
			if r := runTrove(t, admin, key.ArmoredPublic, "key", "add", "acme", "--file", "-"); r.code != exitOK {
				t.Fatalf("key add: %s", r.stderr)
			}
			dist := writeSignedDist(t, key, "foo", "1.0.0", "linux_amd64")
			if r := runTrove(t, admin, "", "publish", "--namespace", "acme", dist); r.code != exitOK {
				t.Fatalf("publish: %s", r.stderr)
			}
			want, err := os.ReadFile(filepath.Join(dist, "terraform-provider-foo_1.0.0_linux_amd64.zip"))
			if err != nil {
				t.Fatal(err)
			}

			pem, err := os.ReadFile(caFile)
			if err != nil {
				t.Fatal(err)
			}
			pool := x509.NewCertPool()
			pool.AppendCertsFromPEM(pem)
			var hops []string
			client := &http.Client{
				Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}},
				CheckRedirect: func(req *http.Request, via []*http.Request) error {
					hops = append(hops, req.Response.Status+" -> "+req.URL.Scheme+"://"+req.URL.Host)
					return nil
				},
			}
			req, _ := http.NewRequest(http.MethodGet, "https://"+listen+"/v1/providers/acme/foo/1.0.0/download/linux/amd64", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				DownloadURL string `json:"download_url"`
			}
			err = json.NewDecoder(resp.Body).Decode(&doc)
			resp.Body.Close()
			if err != nil || doc.DownloadURL == "" {
				t.Fatalf("download document: %s, %v", resp.Status, err)
			}
			resp, err = client.Get(doc.DownloadURL) // without the token, as Terraform does
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || err != nil || string(got) != string(want) {
				t.Fatalf("GET %s: %s, %d bytes (%v); want 200 with the zip", doc.DownloadURL, resp.Status, len(got), err)
			}
			wantHops := map[string][]string{"redirect": {"302 Found -> " + bucket.Endpoint}, "proxy": nil}[mode]
			if strings.Join(hops, ",") != strings.Join(wantHops, ",") {
				t.Errorf("redirects %q, want %q", hops, wantHops)
			}
		})
	}
}

// startServe runs `trove serve` with environ until the test ends and
// returns its CA file and first admin token from the banner.
func startServe(t *testing.T, environ map[string]string) (caFile, token string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	var stderr logbuf.Buffer
	done := make(chan struct{}) // closed when serve returned code
	var code int
	go func() {
		defer close(done)
		code = run(ctx, []string{"serve"}, func(k string) string { return environ[k] }, strings.NewReader(""), pw, &stderr)
		pw.Close()
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if code != exitOK {
			t.Errorf("trove serve exited %d", code)
		}
	})
	lines := bufio.NewScanner(pr)
	for lines.Scan() {
		line := strings.TrimSpace(lines.Text())
		if v, ok := strings.CutPrefix(line, "export SSL_CERT_FILE="); ok {
			caFile = v
		}
		if v, ok := strings.CutPrefix(line, "export TROVE_TOKEN="); ok {
			token = v
			break
		}
	}
	go io.Copy(io.Discard, pr)
	if token == "" {
		cancel()
		<-done
		t.Fatalf("trove serve printed no admin token; stderr:\n%s", stderr.String())
	}
	return caFile, token
}
