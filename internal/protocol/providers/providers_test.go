package providers

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/respcache"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/sqlite"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

// countingIndex wraps the real SQLite index: it counts reads so tests can
// tell cache hits from misses, and can hold a read (after the index
// answered) until released, to stage races with publishes.
type countingIndex struct {
	*sqlite.Index
	reads atomic.Int64
	hold  chan chan struct{} // if set, each read sends a release channel and waits on it
}

var _ store.Providers = (*countingIndex)(nil)

func newIndex(t testing.TB, vs ...registry.ProviderVersion) *countingIndex {
	t.Helper()
	ctx := context.Background()
	x := sqlitetest.NewIndex(t)
	if err := x.CreateNamespace(ctx, registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	idx := &countingIndex{Index: x}
	for _, v := range vs {
		idx.put(t, v)
	}
	return idx
}

func (c *countingIndex) put(t testing.TB, v registry.ProviderVersion) {
	if err := c.CreateProviderVersion(context.Background(), v); err != nil {
		t.Error(err) // t.Error: put is also called from other goroutines
	}
}

func (c *countingIndex) read() {
	c.reads.Add(1)
	if c.hold != nil {
		release := make(chan struct{})
		c.hold <- release
		<-release
	}
}

func (c *countingIndex) GetProviderVersion(ctx context.Context, ns, typ, version string) (registry.ProviderVersion, error) {
	v, err := c.Index.GetProviderVersion(ctx, ns, typ, version)
	c.read()
	return v, err
}

func (c *countingIndex) ListProviderVersions(ctx context.Context, ns, typ string) ([]registry.ProviderVersion, error) {
	vs, err := c.Index.ListProviderVersions(ctx, ns, typ)
	c.read()
	return vs, err
}

func (c *countingIndex) ListProviderVersionSummaries(ctx context.Context, ns, typ string) ([]registry.ProviderVersionSummary, error) {
	vs, err := c.Index.ListProviderVersionSummaries(ctx, ns, typ)
	c.read()
	return vs, err
}

const testArmor = "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nxjMEZ...\n-----END PGP PUBLIC KEY BLOCK-----\n"

func digestOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// version returns a provider version of acme/widget with the given platforms ("os_arch").
func version(v string, platforms ...string) registry.ProviderVersion {
	pv := registry.ProviderVersion{
		Namespace: "acme", Type: "widget", Version: v, Protocols: []string{"5.0", "6.0"}, PublishedAt: time.Now(),
		SHASumsDigest:          digestOf("sums" + v),
		SHASumsSignatureDigest: digestOf("sig" + v),
		SigningKey: registry.SigningKey{Namespace: "acme", KeyID: "0123456789ABCDEF", Fingerprint: strings.Repeat("AB", 20),
			ASCIIArmor: testArmor, CreatedAt: time.Now()},
	}
	for _, p := range platforms {
		os, arch, _ := strings.Cut(p, "_")
		pv.Platforms = append(pv.Platforms, registry.Platform{
			OS: os, Arch: arch, Filename: "terraform-provider-widget_" + v + "_" + p + ".zip",
			SHA256: digestOf("zip" + v + p), Size: 1000,
		})
	}
	return pv
}

type fixture struct {
	idx    *countingIndex
	svc    *Service
	signer *signedurl.Signer
	clock  *fakeClock
	srv    *httptest.Server
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newFixture(t testing.TB, idx *countingIndex, opts ...Option) *fixture {
	return newFixtureAt(t, "https://trove.example:8443", idx, opts...)
}

// newFixtureAt is newFixture for a Trove whose public URL is public.
func newFixtureAt(t testing.TB, public string, idx *countingIndex, opts ...Option) *fixture {
	clock := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	signer := signedurl.New([]byte("test key"), 10*time.Minute).WithClock(clock.Now)
	base, _ := url.Parse(public)
	svc := New(idx, signer, base, nil, append([]Option{WithClock(clock.Now)}, opts...)...)
	mux := http.NewServeMux()
	svc.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &fixture{idx: idx, svc: svc, signer: signer, clock: clock, srv: srv}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (f *fixture) do(t testing.TB, method, path string, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: body}
}

func decodeObject(t testing.TB, body []byte) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, body)
	}
	return m
}

func keys(m map[string]json.RawMessage) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func wantKeys(t testing.TB, what string, m map[string]json.RawMessage, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := keys(m); !slices.Equal(got, want) {
		t.Fatalf("%s has keys %v, want %v", what, got, want)
	}
}

func unmarshal[T any](t testing.TB, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	return v
}

func TestVersionsDocument(t *testing.T) {
	f := newFixture(t, newIndex(t,
		version("1.2.0", "linux_amd64", "darwin_arm64"),
		version("1.10.0", "windows_amd64", "linux_arm64", "linux_amd64"),
		version("1.10.0-beta.1", "linux_amd64"),
		version("0.9.0"),
	))
	resp := f.do(t, http.MethodGet, "/v1/providers/acme/widget/versions")
	if resp.status != http.StatusOK {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	if ct := resp.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if cc := resp.header.Get("Cache-Control"); cc != "no-cache" {
		t.Errorf("Cache-Control %q", cc)
	}
	doc := decodeObject(t, resp.body)
	wantKeys(t, "versions document", doc, "versions")
	versions := unmarshal[[]map[string]json.RawMessage](t, doc["versions"])
	wantOrder := []string{"1.10.0", "1.10.0-beta.1", "1.2.0", "0.9.0"}
	if len(versions) != len(wantOrder) {
		t.Fatalf("%d versions, want %d: %s", len(versions), len(wantOrder), resp.body)
	}
	for i, v := range versions {
		wantKeys(t, "version entry", v, "version", "protocols", "platforms")
		if got := unmarshal[string](t, v["version"]); got != wantOrder[i] {
			t.Errorf("versions[%d] = %s, want %s", i, got, wantOrder[i])
		}
		if got := unmarshal[[]string](t, v["protocols"]); !slices.Equal(got, []string{"5.0", "6.0"}) {
			t.Errorf("versions[%d].protocols = %v", i, got)
		}
		for _, p := range unmarshal[[]map[string]json.RawMessage](t, v["platforms"]) {
			wantKeys(t, "platform", p, "os", "arch")
		}
	}
	type plat struct{ OS, Arch string }
	got := unmarshal[[]plat](t, versions[0]["platforms"])
	want := []plat{{"linux", "amd64"}, {"linux", "arm64"}, {"windows", "amd64"}}
	if !slices.Equal(got, want) {
		t.Errorf("platforms of 1.10.0 = %v, want %v (sorted)", got, want)
	}
	if string(versions[3]["platforms"]) != "[]" {
		t.Errorf("platforms of a version without packages = %s, want []", versions[3]["platforms"])
	}
}

func TestDownloadDocument(t *testing.T) {
	v := version("1.2.0", "linux_amd64", "darwin_arm64")
	f := newFixture(t, newIndex(t, v))
	resp := f.do(t, http.MethodGet, "/v1/providers/acme/widget/1.2.0/download/darwin/arm64")
	if resp.status != http.StatusOK {
		t.Fatalf("status %d: %s", resp.status, resp.body)
	}
	if ct := resp.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	doc := decodeObject(t, resp.body)
	wantKeys(t, "download document", doc, "protocols", "os", "arch", "filename", "download_url",
		"shasums_url", "shasums_signature_url", "shasum", "signing_keys")
	p, _ := v.Platform("darwin", "arm64")
	for field, want := range map[string]string{"os": "darwin", "arch": "arm64", "filename": p.Filename, "shasum": p.SHA256} {
		if got := unmarshal[string](t, doc[field]); got != want {
			t.Errorf("%s = %q, want %q", field, got, want)
		}
	}
	if got := unmarshal[[]string](t, doc["protocols"]); !slices.Equal(got, []string{"5.0", "6.0"}) {
		t.Errorf("protocols = %v", got)
	}
	for field, want := range map[string][2]string{
		"download_url":          {p.SHA256, p.Filename},
		"shasums_url":           {v.SHASumsDigest, v.SHASumsFilename()},
		"shasums_signature_url": {v.SHASumsSignatureDigest, v.SHASumsSignatureFilename()},
	} {
		raw := unmarshal[string](t, doc[field])
		u, err := url.Parse(raw)
		if err != nil || u.Scheme != "https" || u.Host != "trove.example:8443" {
			t.Errorf("%s = %q: want an absolute URL on the public base", field, raw)
			continue
		}
		digest, name, err := f.signer.Verify(u.Path, u.Query())
		if err != nil || digest != want[0] || name != want[1] {
			t.Errorf("%s = %q verifies as %q %q %v, want %q %q", field, raw, digest, name, err, want[0], want[1])
		}
	}
	keysDoc := unmarshal[map[string]json.RawMessage](t, doc["signing_keys"])
	wantKeys(t, "signing_keys", keysDoc, "gpg_public_keys")
	gpg := unmarshal[[]map[string]json.RawMessage](t, keysDoc["gpg_public_keys"])
	if len(gpg) != 1 {
		t.Fatalf("%d gpg_public_keys, want 1", len(gpg))
	}
	wantKeys(t, "gpg key", gpg[0], "key_id", "ascii_armor", "trust_signature", "source", "source_url")
	for field, want := range map[string]string{"key_id": "0123456789ABCDEF", "ascii_armor": testArmor, "trust_signature": "", "source": "", "source_url": ""} {
		if got := unmarshal[string](t, gpg[0][field]); got != want {
			t.Errorf("gpg_public_keys[0].%s = %q, want %q", field, got, want)
		}
	}
}

func TestDownloadDocumentsShareTheirKeys(t *testing.T) {
	f := newFixture(t, newIndex(t, version("1.2.0", "linux_amd64", "darwin_arm64"), version("1.3.0", "linux_amd64")))
	var bodies []string
	for _, path := range []string{"1.2.0/download/darwin/arm64", "1.2.0/download/linux/amd64", "1.3.0/download/linux/amd64"} {
		resp := f.do(t, http.MethodGet, "/v1/providers/acme/widget/"+path, "Accept-Encoding", "identity")
		if resp.status != http.StatusOK || resp.header.Get("Content-Length") != strconv.Itoa(len(resp.body)) {
			t.Fatalf("%s: status %d, Content-Length %s for %d bytes", path, resp.status, resp.header.Get("Content-Length"), len(resp.body))
		}
		keys := unmarshal[map[string]json.RawMessage](t, decodeObject(t, resp.body)["signing_keys"])
		gpg := unmarshal[[]map[string]string](t, keys["gpg_public_keys"])
		if len(gpg) != 1 || gpg[0]["ascii_armor"] != testArmor {
			t.Fatalf("%s: signing keys %s", path, keys["gpg_public_keys"])
		}
		bodies = append(bodies, string(resp.body))
	}
	var tails [][]byte
	for _, dk := range []docKey{{version: "1.2.0", os: "darwin", arch: "arm64"}, {version: "1.2.0", os: "linux", arch: "amd64"}, {version: "1.3.0", os: "linux", arch: "amd64"}} {
		e := f.svc.cache.Lookup(provKey{ns: "acme", typ: "widget"}, dk)
		if e == nil || len(e.Tail) == 0 || !strings.Contains(string(e.Tail), "ascii_armor") || strings.Contains(string(e.Body), "ascii_armor") {
			t.Fatalf("cached %v: want the keys in a tail apart from the body", dk)
		}
		tails = append(tails, e.Tail)
	}
	if &tails[0][0] != &tails[1][0] || &tails[0][0] != &tails[2][0] {
		t.Errorf("the three documents hold their own copies of the same keys: want one shared tail")
	}
	if bodies[0] == bodies[1] {
		t.Errorf("two platforms gave the same document")
	}
}

func TestNotFound(t *testing.T) {
	f := newFixture(t, newIndex(t, version("1.2.0", "linux_amd64")))
	tests := map[string]string{ // path -> text the message must contain
		"/v1/providers/nobody/widget/versions":                           "nobody/widget not found",
		"/v1/providers/acme/gadget/versions":                             "acme/gadget not found",
		"/v1/providers/a_b/widget/versions":                              "a_b/widget not found",
		"/v1/providers/acme/terraform-widget/versions":                   "acme/terraform-widget not found",
		"/v1/providers/acme/gadget/1.2.0/download/linux/amd64":           "acme/gadget has no version 1.2.0",
		"/v1/providers/acme/widget/1.3.0/download/linux/amd64":           "acme/widget has no version 1.3.0",
		"/v1/providers/acme/widget/v1.2.0/download/linux/amd64":          `has no version "v1.2.0"`,
		"/v1/providers/acme/widget/1.2.0/download/linux/arm64":           "has no package for linux_arm64 (it has: linux_amd64)",
		"/v1/providers/acme/widget/1.2.0/download/Linux/amd64":           "has no package for Linux_amd64",
		"/v1/providers/acme/widget/1.2.0/download/linux/amd64%2f..":      "has no package for linux_amd64/..",
		"/v1/providers/acme/a--b/1.2.0/download/linux/amd64":             "acme/a--b not found",
		"/v1/providers/acme/widget/1.2.0-/download/linux/amd64":          `has no version "1.2.0-"`,
		"/v1/providers/" + strings.Repeat("a", 200) + "/widget/versions": "not found",
	}
	for path, want := range tests {
		t.Run(path, func(t *testing.T) {
			resp := f.do(t, http.MethodGet, path)
			if resp.status != http.StatusNotFound {
				t.Fatalf("status %d, want 404: %s", resp.status, resp.body)
			}
			if ct := resp.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			doc := decodeObject(t, resp.body)
			wantKeys(t, "error body", doc, "errors")
			msgs := unmarshal[[]string](t, doc["errors"])
			if len(msgs) != 1 || !strings.Contains(msgs[0], want) {
				t.Fatalf("errors = %q, want one containing %q", msgs, want)
			}
		})
	}
	t.Run("a huge name is not repeated whole", func(t *testing.T) {
		huge := strings.Repeat("a", 10000)
		for _, path := range []string{"/v1/providers/" + huge + "/widget/versions", "/v1/providers/acme/" + huge + "/versions"} {
			resp := f.do(t, http.MethodGet, path)
			if resp.status != http.StatusNotFound || len(resp.body) > 512 || !strings.Contains(string(resp.body), "aaa...") {
				t.Errorf("GET %s...: status %d, %d bytes, want a 404 that elides the name: %.300s", path[:40], resp.status, len(resp.body), resp.body)
			}
		}
	})
	if n, _ := f.svc.CacheStats(); n != 0 {
		t.Fatalf("%d entries cached after only 404s", n)
	}
}

func TestCaseFoldedNames(t *testing.T) {
	f := newFixture(t, newIndex(t, version("1.2.0", "linux_amd64")))
	lower := f.do(t, http.MethodGet, "/v1/providers/acme/widget/versions")
	upper := f.do(t, http.MethodGet, "/v1/providers/ACME/Widget/versions")
	if upper.status != http.StatusOK || string(upper.body) != string(lower.body) {
		t.Fatalf("ACME/Widget: %d %s, want the document of acme/widget %s", upper.status, upper.body, lower.body)
	}
	dl := f.do(t, http.MethodGet, "/v1/providers/Acme/WIDGET/1.2.0/download/linux/amd64")
	if dl.status != http.StatusOK {
		t.Fatalf("download with upper case names: %d %s", dl.status, dl.body)
	}
	if n, _ := f.svc.CacheStats(); n != 2 {
		t.Fatalf("%d cache entries, want 2 (keyed by normalized names only)", n)
	}
}

func TestETagAndCacheHits(t *testing.T) {
	f := newFixture(t, newIndex(t, version("1.2.0", "linux_amd64")))
	for _, path := range []string{"/v1/providers/acme/widget/versions", "/v1/providers/acme/widget/1.2.0/download/linux/amd64"} {
		t.Run(path, func(t *testing.T) {
			first := f.do(t, http.MethodGet, path)
			etag := first.header.Get("ETag")
			if first.status != http.StatusOK || len(etag) < 3 || etag[0] != '"' || etag[len(etag)-1] != '"' {
				t.Fatalf("status %d, ETag %q: want 200 and a strong quoted ETag", first.status, etag)
			}
			reads := f.idx.reads.Load()

			again := f.do(t, http.MethodGet, path)
			if again.status != http.StatusOK || string(again.body) != string(first.body) || again.header.Get("ETag") != etag {
				t.Fatalf("second GET differs: %d %q", again.status, again.header.Get("ETag"))
			}
			notModified := f.do(t, http.MethodGet, path, "If-None-Match", `"x", `+etag)
			if notModified.status != http.StatusNotModified || len(notModified.body) != 0 || notModified.header.Get("ETag") != etag {
				t.Fatalf("If-None-Match: status %d, body %q, ETag %q", notModified.status, notModified.body, notModified.header.Get("ETag"))
			}
			other := f.do(t, http.MethodGet, path, "If-None-Match", `"x"`)
			if other.status != http.StatusOK {
				t.Fatalf("If-None-Match with another tag: status %d", other.status)
			}
			head := f.do(t, http.MethodHead, path)
			if head.status != http.StatusOK || len(head.body) != 0 || head.header.Get("Content-Length") != fmt.Sprint(len(first.body)) {
				t.Fatalf("HEAD: status %d, %d body bytes, Content-Length %q", head.status, len(head.body), head.header.Get("Content-Length"))
			}
			if got := f.idx.reads.Load(); got != reads {
				t.Fatalf("cache hits read the index %d times", got-reads)
			}
		})
	}
}

func TestInvalidateShowsNewVersion(t *testing.T) {
	f := newFixture(t, newIndex(t, version("1.0.0", "linux_amd64")))
	path := "/v1/providers/acme/widget/versions"
	before := f.do(t, http.MethodGet, path)
	f.idx.put(t, version("1.1.0", "linux_amd64"))
	if cached := f.do(t, http.MethodGet, path); string(cached.body) != string(before.body) {
		t.Fatalf("document changed without an invalidation (no cache?)")
	}
	f.svc.Invalidate("acme", "widget")
	after := f.do(t, http.MethodGet, path)
	if !strings.Contains(string(after.body), `"1.1.0"`) || after.header.Get("ETag") == before.header.Get("ETag") {
		t.Fatalf("after Invalidate: %s (ETag %s, before %s)", after.body, after.header.Get("ETag"), before.header.Get("ETag"))
	}
	// A download document of the new version was never cached as a miss.
	if dl := f.do(t, http.MethodGet, "/v1/providers/acme/widget/1.1.0/download/linux/amd64"); dl.status != http.StatusOK {
		t.Fatalf("download of the new version: %d", dl.status)
	}
}

// TestInvalidateDuringRender stages the race a publish can have with a
// render: the render read the index before the publish committed, and
// finishes after the invalidation. Its stale result must not be cached.
func TestInvalidateDuringRender(t *testing.T) {
	idx := newIndex(t, version("1.0.0", "linux_amd64"))
	f := newFixture(t, idx)
	path := "/v1/providers/acme/widget/versions"
	idx.hold = make(chan chan struct{})

	done := make(chan response)
	go func() { done <- f.do(t, http.MethodGet, path) }()
	release := <-idx.hold // the render has read the index (old state)

	idx.put(t, version("1.1.0", "linux_amd64")) // the publish commits...
	f.svc.Invalidate("acme", "widget")          // ...and invalidates
	go func() {
		for r := range idx.hold { // later renders pass through
			close(r)
		}
	}()
	close(release)
	stale := <-done
	if stale.status != http.StatusOK {
		t.Fatalf("racing request: %d", stale.status)
	}
	after := f.do(t, http.MethodGet, path)
	if !strings.Contains(string(after.body), `"1.1.0"`) {
		t.Fatalf("a render that raced with Invalidate was cached: %s", after.body)
	}
	close(idx.hold)
}

func TestDownloadFollowsURLWindow(t *testing.T) {
	f := newFixture(t, newIndex(t, version("1.2.0", "linux_amd64")), WithMaxAge(time.Hour))
	path := "/v1/providers/acme/widget/1.2.0/download/linux/amd64"
	first := f.do(t, http.MethodGet, path)
	reads := f.idx.reads.Load()
	f.clock.Add(5 * time.Minute) // half the URL lifetime: a new expiry window
	second := f.do(t, http.MethodGet, path)
	if f.idx.reads.Load() == reads || second.header.Get("ETag") == first.header.Get("ETag") {
		t.Fatalf("download document not rendered again in a new URL window")
	}
	url1 := unmarshal[string](t, decodeObject(t, first.body)["download_url"])
	url2 := unmarshal[string](t, decodeObject(t, second.body)["download_url"])
	if url1 == url2 {
		t.Fatalf("download_url unchanged across URL windows: %s", url1)
	}
}

func TestMaxAge(t *testing.T) {
	f := newFixture(t, newIndex(t, version("1.2.0", "linux_amd64")), WithMaxAge(time.Minute))
	path := "/v1/providers/acme/widget/versions"
	f.do(t, http.MethodGet, path)
	f.idx.put(t, version("1.3.0", "linux_amd64")) // published through another replica
	f.clock.Add(59 * time.Second)
	if r := f.do(t, http.MethodGet, path); strings.Contains(string(r.body), "1.3.0") {
		t.Fatalf("re-rendered before the maximum age")
	}
	f.clock.Add(time.Second)
	if r := f.do(t, http.MethodGet, path); !strings.Contains(string(r.body), "1.3.0") {
		t.Fatalf("not re-rendered after the maximum age: %s", r.body)
	}
}

// While the index is settled (every change reaches Invalidate as it
// commits), the versions document and the mirror index.json of a
// provider are not rendered again on the maximum age, only on the
// settled age or an invalidation; the download and mirror version
// documents, whose signed URLs age, still are.
func TestSettledDocumentsLast(t *testing.T) {
	f := newFixture(t, newIndex(t, version("1.2.0", "linux_amd64")), WithMaxAge(time.Minute), WithSettled(func() bool { return true }))
	lasting := []string{"/v1/providers/acme/widget/versions", "/v1/mirror/trove.example:8443/acme/widget/index.json"}
	aging := []string{"/v1/providers/acme/widget/1.2.0/download/linux/amd64", "/v1/mirror/trove.example:8443/acme/widget/1.2.0.json"}
	for _, p := range append(lasting, aging...) {
		if r := f.do(t, http.MethodGet, p); r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", p, r.status, r.body)
		}
	}
	f.clock.Add(2 * time.Minute)
	before := f.idx.reads.Load()
	for _, p := range lasting {
		f.do(t, http.MethodGet, p)
	}
	if n := f.idx.reads.Load() - before; n != 0 {
		t.Errorf("the lasting documents past the maximum age: %d index reads, want 0", n)
	}
	for _, p := range aging {
		f.do(t, http.MethodGet, p)
	}
	if n := f.idx.reads.Load() - before; n != int64(len(aging)) {
		t.Errorf("the documents with signed URLs past the maximum age: %d index reads, want %d", n, len(aging))
	}

	// A publish through this index is seen at once.
	f.idx.put(t, version("1.3.0", "linux_amd64"))
	f.svc.Invalidate("acme", "widget") // what the server's change hook does
	for _, p := range lasting {
		if r := f.do(t, http.MethodGet, p); !strings.Contains(string(r.body), "1.3.0") {
			t.Errorf("%s after a publish: %s, want 1.3.0 listed", p, r.body)
		}
	}
	// Past the settled age, rendered again even without an invalidation.
	f.idx.put(t, version("1.4.0", "linux_amd64"))
	f.clock.Add(respcache.DefaultSettledAge)
	for _, p := range lasting {
		if r := f.do(t, http.MethodGet, p); !strings.Contains(string(r.body), "1.4.0") {
			t.Errorf("%s past the settled age: %s, want 1.4.0 listed", p, r.body)
		}
	}
}

func TestCacheIsBounded(t *testing.T) {
	var vs []registry.ProviderVersion
	for i := range 50 {
		vs = append(vs, version(fmt.Sprintf("1.0.%d", i), "linux_amd64"))
	}
	const limit = 8 << 10
	f := newFixture(t, newIndex(t, vs...), WithCacheBytes(limit))
	for _, v := range vs {
		if r := f.do(t, http.MethodGet, "/v1/providers/acme/widget/"+v.Version+"/download/linux/amd64"); r.status != http.StatusOK {
			t.Fatalf("status %d", r.status)
		}
		if _, bytes := f.svc.CacheStats(); bytes > limit {
			t.Fatalf("cache holds %d bytes, limit %d", bytes, limit)
		}
	}
	if n, _ := f.svc.CacheStats(); n == 0 || n >= len(vs) {
		t.Fatalf("%d entries cached of %d documents: want some evicted, some kept", n, len(vs))
	}
}

func TestConcurrentRequestsAndPublishes(t *testing.T) {
	idx := newIndex(t, version("1.0.0", "linux_amd64"))
	f := newFixture(t, idx, WithCacheBytes(16<<10))
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 30 {
				path := "/v1/providers/acme/widget/versions"
				if i%2 == 1 {
					path = "/v1/providers/acme/widget/1.0.0/download/linux/amd64"
				}
				r := f.do(t, http.MethodGet, path)
				if r.status != http.StatusOK || !json.Valid(r.body) {
					errs <- fmt.Errorf("goroutine %d: %s: %d %s", g, path, r.status, r.body)
					return
				}
			}
		})
	}
	for i := 1; i <= 20; i++ {
		idx.put(t, version(fmt.Sprintf("1.0.%d", i), "linux_amd64"))
		f.svc.Invalidate("acme", "widget")
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if r := f.do(t, http.MethodGet, "/v1/providers/acme/widget/versions"); !strings.Contains(string(r.body), `"1.0.20"`) {
		t.Fatalf("last published version missing after the storm: %s", r.body)
	}
}

// TestConcurrentMissesRenderOnce checks that requests arriving while a
// document is being rendered wait for that render instead of each
// querying the index.
func TestConcurrentMissesRenderOnce(t *testing.T) {
	idx := newIndex(t, version("1.0.0", "linux_amd64"))
	f := newFixture(t, idx)
	idx.hold = make(chan chan struct{}, 16)
	path := "/v1/providers/acme/widget/versions"
	const n = 8
	done := make(chan response, n)
	go func() { done <- f.do(t, http.MethodGet, path) }()
	release := <-idx.hold
	for range n - 1 {
		go func() { done <- f.do(t, http.MethodGet, path) }()
	}
	for waiting := 0; waiting < n-1; {
		if reads := idx.reads.Load(); reads > 1 {
			go func() { // let the stray renders finish so the server can close
				for r := range idx.hold {
					close(r)
				}
			}()
			close(release)
			t.Fatalf("a request arriving during a render read the index itself (%d reads)", reads)
		}
		runtime.Gosched()
		waiting = f.svc.cache.Stats().Waiting
	}
	close(release)
	for range n {
		if r := <-done; r.status != http.StatusOK {
			t.Fatalf("status %d", r.status)
		}
	}
	if reads := idx.reads.Load(); reads != 1 {
		t.Fatalf("%d concurrent misses read the index %d times, want once", n, reads)
	}
}

// TestDocumentsCompressedForClientsThatAsk checks that a download
// document (with its shared tail of signing keys) is sent gzip-compressed
// to a client that asks, with its own ETag and Content-Length, and as it
// is to others; a small versions document is never compressed.
func TestDocumentsCompressedForClientsThatAsk(t *testing.T) {
	f := newFixture(t, newIndex(t, version("1.2.0", "linux_amd64")))
	const path = "/v1/providers/acme/widget/1.2.0/download/linux/amd64"
	plain := f.do(t, http.MethodGet, path, "Accept-Encoding", "identity")
	gz := f.do(t, http.MethodGet, path, "Accept-Encoding", "gzip")
	if plain.status != 200 || gz.status != 200 || len(plain.body) < respcache.DefaultGzipMinBytes {
		t.Fatalf("statuses %d %d, %d bytes", plain.status, gz.status, len(plain.body))
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz.body))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, _ := io.ReadAll(zr)
	if string(unzipped) != string(plain.body) || gz.header.Get("Content-Encoding") != "gzip" ||
		gz.header.Get("Content-Length") != strconv.Itoa(len(gz.body)) || gz.header.Get("Vary") != "Accept-Encoding" ||
		plain.header.Get("Vary") != "Accept-Encoding" || plain.header.Get("Content-Encoding") != "" ||
		gz.header.Get("Etag") == plain.header.Get("Etag") || gz.header.Get("Content-Type") != "application/json" {
		t.Fatalf("gzip answer %v (%d bytes), plain %v", gz.header, len(gz.body), plain.header)
	}
	if r := f.do(t, http.MethodGet, path, "Accept-Encoding", "gzip", "If-None-Match", gz.header.Get("Etag")); r.status != http.StatusNotModified {
		t.Errorf("gzip revalidation: %d", r.status)
	}
	if r := f.do(t, http.MethodHead, path, "Accept-Encoding", "gzip"); r.status != 200 || len(r.body) != 0 ||
		r.header.Get("Content-Length") != gz.header.Get("Content-Length") || r.header.Get("Content-Encoding") != "gzip" {
		t.Errorf("gzip HEAD: %d %v", r.status, r.header)
	}
	if r := f.do(t, http.MethodGet, path, "Accept-Encoding", "gzip;q=0, *"); r.header.Get("Content-Encoding") != "" || string(r.body) != string(plain.body) {
		t.Errorf("gzip refused but sent: %v", r.header)
	}
	if r := f.do(t, http.MethodGet, "/v1/providers/acme/widget/versions", "Accept-Encoding", "gzip"); r.status != 200 ||
		r.header.Get("Content-Encoding") != "" || r.header.Get("Vary") != "" {
		t.Errorf("a small versions document: %d %v", r.status, r.header)
	}
	// Go's client (Terraform's and OpenTofu's) asks for gzip by itself and
	// decompresses.
	resp, err := f.srv.Client().Get(f.srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !resp.Uncompressed || string(body) != string(plain.body) {
		t.Errorf("Go's client: uncompressed %v, %d bytes", resp.Uncompressed, len(body))
	}
}
