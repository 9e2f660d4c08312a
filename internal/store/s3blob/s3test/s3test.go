// Package s3test gives tests a real S3-compatible server: a fresh, empty
// bucket per test on the server named by TROVE_TEST_S3_ENDPOINT (with the
// keys in TROVE_TEST_S3_ACCESS_KEY and TROVE_TEST_S3_SECRET_KEY), and a
// TCP proxy in front of it that a fault test can cut without disturbing
// the tests of other packages, which share the server.
//
// Without TROVE_TEST_S3_ENDPOINT a test skips, unless
// TROVE_REQUIRE_BACKENDS=1 (the test script sets it) turns the skip into
// a failure, so that CI never passes without having run them. The script
// scripts/testenv/s3.sh starts a suitable throwaway server (versitygw) and
// sets the variables.
package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"trove.dev/trove/internal/store/s3blob"
)

// Environment variables read by the package.
const (
	EnvEndpoint  = "TROVE_TEST_S3_ENDPOINT"   // http://127.0.0.1:<port>, path-style
	EnvAccessKey = "TROVE_TEST_S3_ACCESS_KEY" // may create and delete buckets
	EnvSecretKey = "TROVE_TEST_S3_SECRET_KEY"
	EnvRegion    = "TROVE_TEST_S3_REGION" // default us-east-1
	// EnvRequire set to 1 makes a missing server a failure, not a skip.
	EnvRequire = "TROVE_REQUIRE_BACKENDS"
)

// Server returns the options of the test server with no bucket set,
// skipping (or, with TROVE_REQUIRE_BACKENDS=1, failing) the test when
// there is none.
func Server(t testing.TB) s3blob.Options {
	t.Helper()
	opt := s3blob.Options{
		Endpoint:  os.Getenv(EnvEndpoint),
		Region:    os.Getenv(EnvRegion),
		AccessKey: os.Getenv(EnvAccessKey),
		SecretKey: os.Getenv(EnvSecretKey),
		PathStyle: true,
	}
	if opt.Endpoint == "" || opt.AccessKey == "" || opt.SecretKey == "" {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("%s, %s and %s are not all set but %s=1: start an S3 server with scripts/testenv/s3.sh (scripts/test.sh does)", EnvEndpoint, EnvAccessKey, EnvSecretKey, EnvRequire)
		}
		t.Skipf("%s is not set: skipping a test that needs an S3-compatible server (source scripts/testenv/s3.sh to run it)", EnvEndpoint)
	}
	if opt.Region == "" {
		opt.Region = "us-east-1"
	}
	return opt
}

// Client returns a plain S3 client of the server that opt names, for
// setting up and inspecting buckets behind the store's back.
func Client(opt s3blob.Options) *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint:               aws.String(opt.Endpoint),
		Region:                     opt.Region,
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(opt.AccessKey, opt.SecretKey, ""),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// NewBucket creates an empty bucket on the test server and returns the
// options of a store in it; the bucket is emptied and deleted when the
// test ends.
func NewBucket(t testing.TB) s3blob.Options {
	t.Helper()
	opt := Server(t)
	opt.Bucket = "trove-test-" + randomHex(t, 8)
	client := Client(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &opt.Bucket}); err != nil {
		t.Fatalf("s3test: creating bucket %s: %v", opt.Bucket, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := deleteBucket(ctx, client, opt.Bucket); err != nil {
			t.Logf("s3test: deleting bucket %s: %v", opt.Bucket, err)
		}
	})
	return opt
}

// deleteBucket aborts the bucket's multipart uploads, deletes its objects
// and then the bucket.
func deleteBucket(ctx context.Context, client *s3.Client, bucket string) error {
	uploads, err := client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &bucket})
	if err != nil {
		return err
	}
	for _, u := range uploads.Uploads {
		if _, err := client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &bucket, Key: u.Key, UploadId: u.UploadId}); err != nil {
			return err
		}
	}
	pages := s3.NewListObjectsV2Paginator(client, &s3.ListObjectsV2Input{Bucket: &bucket})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, o := range page.Contents {
			if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: o.Key}); err != nil {
				return err
			}
		}
	}
	_, err = client.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: &bucket})
	return err
}

// Keys returns every key of the bucket, for checks that nothing else was
// written.
func Keys(t testing.TB, opt s3blob.Options) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // also in a Cleanup
	defer cancel()
	var keys []string
	pages := s3.NewListObjectsV2Paginator(Client(opt), &s3.ListObjectsV2Input{Bucket: &opt.Bucket})
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			t.Fatalf("s3test: listing bucket %s: %v", opt.Bucket, err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	return keys
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// Proxy is a TCP proxy on 127.0.0.1 in front of an S3 server. Cutting it
// drops every open connection and resets new ones, as an unreachable
// server would look to Trove, without stopping the server other tests
// use. It is safe for concurrent use.
type Proxy struct {
	// Endpoint is the proxy's http://127.0.0.1:<port>.
	Endpoint string

	ln       net.Listener
	target   string
	up       atomic.Int64 // bytes sent to the server
	cutAfter atomic.Int64 // cut once up exceeds it; 0: never

	mu    sync.Mutex
	down  bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewProxy starts a proxy to the server of opt.Endpoint and stops it when
// the test ends. Point a store at it with opt.Endpoint = p.Endpoint.
func NewProxy(t testing.TB, opt s3blob.Options) *Proxy {
	t.Helper()
	target, err := hostPort(opt.Endpoint)
	if err != nil {
		t.Fatalf("s3test: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Endpoint: "http://" + ln.Addr().String(), ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(func() {
		ln.Close()
		p.Cut()
		p.wg.Wait()
	})
	return p
}

func hostPort(endpoint string) (string, error) {
	const scheme = "http://"
	if len(endpoint) <= len(scheme) || endpoint[:len(scheme)] != scheme {
		return "", errors.New("the proxy forwards plain http:// endpoints only, not " + endpoint)
	}
	return endpoint[len(scheme):], nil
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.down {
			p.mu.Unlock()
			reset(c)
			continue
		}
		p.conns[c] = struct{}{}
		p.mu.Unlock()
		p.wg.Go(func() { p.forward(c) })
	}
}

// reset closes c so that the peer sees a connection reset.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	c.Close()
}

func (p *Proxy) forward(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		p.drop(client)
		return
	}
	p.mu.Lock()
	if p.down {
		p.mu.Unlock()
		reset(client)
		server.Close()
		return
	}
	p.conns[server] = struct{}{}
	p.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() {
		io.Copy(&countingWriter{p: p, w: server}, client)
		p.drop(server)
	})
	io.Copy(client, server)
	p.drop(client)
	wg.Wait()
	p.drop(server)
}

func (p *Proxy) drop(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

// countingWriter counts the bytes sent to the server and cuts the proxy
// once they exceed cutAfter.
type countingWriter struct {
	p *Proxy
	w io.Writer
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	total := c.p.up.Add(int64(n))
	if limit := c.p.cutAfter.Load(); limit > 0 && total > limit {
		c.p.Cut()
		return n, net.ErrClosed
	}
	return n, err
}

// Cut drops every connection and resets new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		reset(c)
		delete(p.conns, c)
	}
}

// CutAfter makes the proxy Cut itself once another n bytes have been sent
// to the server through it: in the middle of an upload, say.
func (p *Proxy) CutAfter(n int64) {
	p.cutAfter.Store(p.up.Load() + n)
}

// Restore makes the proxy forward new connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
	p.cutAfter.Store(0)
}
