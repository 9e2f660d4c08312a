package mirror

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/fsblob"
	"trove.dev/trove/internal/store/sqlite"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
	"trove.dev/trove/internal/trovetest/logbuf"
)

const upstreamHost = "registry.example.com"

// fakeUpstream is a providers.v1 registry on loopback serving one signed
// release of hashicorp/random, with switches to tamper with what it sends.
type fakeUpstream struct {
	srv         *httptest.Server
	key         *signingtest.Key
	rel         releasetest.Release
	archiveGets atomic.Int64
	requests    atomic.Int64 // every request it was sent
	down        atomic.Bool
	tamperSig   atomic.Bool
	tamperZip   atomic.Bool
	badShasum   atomic.Bool   // download documents give another checksum than SHA256SUMS
	zipStatus   atomic.Int64  // if set, archive downloads are answered with this status
	cutZip      atomic.Bool   // archive downloads break off at half
	cutUnframed atomic.Bool   // archive downloads end at half, by closing a connection without Content-Length
	plainHTTP   atomic.Bool   // download URLs in plain http
	badPlatform atomic.Bool   // 3.1.0 also lists a platform with a slash in its OS
	slowZip     chan struct{} // closed to let archive downloads finish
}

var platforms = []string{"linux_amd64", "darwin_arm64"}

func newFakeUpstream(t *testing.T) *fakeUpstream {
	t.Helper()
	u := &fakeUpstream{key: signingtest.NewKey(t, "upstream")}
	u.rel = releasetest.Build(t, u.key, releasetest.Spec{Type: "random", Version: "3.1.0", Platforms: platforms, Protocols: []string{"5.0"}})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/providers/hashicorp/random/versions", func(w http.ResponseWriter, r *http.Request) {
		var ps []map[string]string
		for _, p := range platforms {
			os, arch, _ := strings.Cut(p, "_")
			ps = append(ps, map[string]string{"os": os, "arch": arch})
		}
		writeJSON(w, map[string]any{"versions": []any{
			map[string]any{"version": "3.1.0", "protocols": []string{"5.0"}, "platforms": func() []map[string]string {
				if u.badPlatform.Load() {
					return append(slices.Clone(ps), map[string]string{"os": "linux/../x", "arch": "amd64"})
				}
				return ps
			}()},
			map[string]any{"version": "2.0.0", "protocols": []string{"5.0"}, "platforms": ps[:1]},
		}})
	})
	mux.HandleFunc("GET /v1/providers/hashicorp/random/3.1.0/download/{os}/{arch}", func(w http.ResponseWriter, r *http.Request) {
		name := u.rel.ZipName(r.PathValue("os") + "_" + r.PathValue("arch"))
		writeJSON(w, map[string]any{
			"protocols": []string{"5.0"}, "os": r.PathValue("os"), "arch": r.PathValue("arch"), "filename": name,
			"download_url": func() string {
				if u.plainHTTP.Load() {
					return "http://" + r.Host + "/files/" + name
				}
				return "/files/" + name
			}(),
			"shasums_url":           "/files/" + u.rel.Prefix() + "_SHA256SUMS",
			"shasums_signature_url": "/files/" + u.rel.Prefix() + "_SHA256SUMS.sig",
			"shasum": func() string {
				if u.badShasum.Load() {
					return strings.Repeat("0", 64)
				}
				return u.rel.SHA256(name)
			}(),
			"signing_keys": map[string]any{"gpg_public_keys": []any{
				map[string]string{"key_id": u.key.KeyID, "ascii_armor": u.key.ArmoredPublic},
			}},
		})
	})
	mux.HandleFunc("GET /files/{name}", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		data := slices.Clone(u.rel.ByName(name))
		if data == nil {
			http.NotFound(w, r)
			return
		}
		switch {
		case strings.HasSuffix(name, ".sig") && u.tamperSig.Load():
			data = u.key.Sign([]byte("something else"))
		case strings.HasSuffix(name, ".zip"):
			u.archiveGets.Add(1)
			if u.slowZip != nil {
				<-u.slowZip
			}
			if u.tamperZip.Load() {
				data[len(data)/2] ^= 0xff
			}
			if code := u.zipStatus.Load(); code != 0 {
				http.Error(w, "upstream trouble", int(code))
				return
			}
			if u.cutUnframed.Load() {
				conn, buf, err := http.NewResponseController(w).Hijack()
				if err != nil {
					panic(err)
				}
				buf.WriteString("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Type: application/zip\r\n\r\n")
				buf.Write(data[:len(data)/2])
				buf.Flush()
				conn.Close()
				return
			}
			if u.cutZip.Load() {
				w.Header().Set("Content-Length", strconv.Itoa(len(data)))
				w.Write(data[:len(data)/2])
				panic(http.ErrAbortHandler) // the connection breaks before Content-Length
			}
		}
		w.Write(data)
	})
	u.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.requests.Add(1)
		if u.down.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// fixture is a Mirror over a real SQLite index and file blob store,
// configured with the fake upstream.
type fixture struct {
	m           *Mirror
	idx         *sqlite.Index
	blobs       *fsblob.Store
	up          *fakeUpstream
	invalidated atomic.Int64
}

func newFixture(t *testing.T, rules ...registry.MirrorRule) *fixture {
	t.Helper()
	ctx := context.Background()
	st := sqlitetest.New(t)
	dir, idx, blobs := st.Dir, st.Index, st.Blobs
	up := newFakeUpstream(t)
	if len(rules) == 0 {
		rules = []registry.MirrorRule{{Provider: "hashicorp/*"}}
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: up.srv.Certificate().Raw})
	if err := idx.PutMirrorUpstream(ctx, registry.MirrorUpstream{
		Host: upstreamHost, ServiceURL: up.srv.URL + "/v1/providers/", CACertificates: string(ca), Allow: rules,
		CreatedAt: time.Now(), UpdatedAt: time.Now(),
	}); err != nil {
		t.Fatal(err)
	}
	f := &fixture{idx: idx, blobs: blobs, up: up}
	// What the index announces to the caches of this process.
	idx.OnCommit(func(c store.Change) {
		if c == (store.Change{Kind: store.ChangeMirrored, Host: upstreamHost, Namespace: "hashicorp", Name: "random"}) {
			f.invalidated.Add(1)
		}
	})
	var err error
	f.m, err = New(Options{
		Index: idx, Blobs: blobs, TempDir: filepath.Join(dir, "tmp"), VersionsTTL: time.Nanosecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// version fetches the upstream's 3.1.0 through the mirror.
func (f *fixture) version(t *testing.T) registry.ProviderVersion {
	t.Helper()
	v, err := f.m.MirroredVersion(context.Background(), upstreamHost, "hashicorp", "random", "3.1.0")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// origin names platform pl of the upstream's hashicorp/random 3.1.0.
func (f *fixture) origin(pl registry.Platform) registry.PackageOrigin {
	return registry.PackageOrigin{Host: upstreamHost, Namespace: "hashicorp", Type: "random", Version: "3.1.0", OS: pl.OS, Arch: pl.Arch}
}

func (f *fixture) platform(t *testing.T, v registry.ProviderVersion, p string) registry.Platform {
	t.Helper()
	os, arch, _ := strings.Cut(p, "_")
	pl, ok := v.Platform(os, arch)
	if !ok {
		t.Fatalf("version %s has no platform %s: %+v", v.Version, p, v.Platforms)
	}
	return pl
}

func TestFetchVerifyHold(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	vs, err := f.m.MirroredVersions(ctx, upstreamHost, "hashicorp", "random")
	if err != nil || !slices.Equal(vs, []string{"3.1.0", "2.0.0"}) {
		t.Fatalf("MirroredVersions = %v, %v", vs, err)
	}
	v := f.version(t)
	if len(v.Platforms) != 2 || !slices.Equal(v.Protocols, []string{"5.0"}) || v.SigningKey.KeyID != f.up.key.KeyID {
		t.Fatalf("mirrored version %+v", v)
	}
	for _, p := range platforms {
		pl := f.platform(t, v, p)
		if pl.SHA256 != f.up.rel.SHA256(f.up.rel.ZipName(p)) || pl.Held() || pl.Filename != f.up.rel.ZipName(p) {
			t.Errorf("%s before any download: %+v, want the SHA256SUMS digest, not held", p, pl)
		}
	}
	// The original SHA256SUMS and signature are kept.
	for _, d := range []string{v.SHASumsDigest, v.SHASumsSignatureDigest} {
		if _, err := f.blobs.Stat(ctx, d); err != nil {
			t.Errorf("blob %s of the original SHA256SUMS or signature: %v", d, err)
		}
	}
	if f.invalidated.Load() == 0 {
		t.Errorf("storing a version invalidated nothing")
	}

	linux := f.platform(t, v, "linux_amd64")
	if err := f.m.FetchPackage(ctx, f.origin(linux)); err != nil {
		t.Fatal(err)
	}
	if size, err := f.blobs.Stat(ctx, linux.SHA256); err != nil || size != int64(len(f.up.rel.ByName(linux.Filename))) {
		t.Fatalf("blob after FetchPackage: %d, %v", size, err)
	}
	again, err := f.idx.GetMirroredVersion(ctx, upstreamHost, "hashicorp", "random", "3.1.0")
	if err != nil {
		t.Fatal(err)
	}
	held := f.platform(t, again.ProviderVersion, "linux_amd64")
	want := hashOf(t, f.up.rel.ByName(linux.Filename))
	if !held.Held() || held.H1 != want {
		t.Errorf("linux_amd64 after FetchPackage: %+v, want held with h1 %s", held, want)
	}
	if f.platform(t, again.ProviderVersion, "darwin_arm64").Held() {
		t.Errorf("darwin_arm64 is held without being fetched")
	}
	// A second fetch of a held package does not download it again.
	gets := f.up.archiveGets.Load()
	if err := f.m.FetchPackage(ctx, f.origin(linux)); err != nil || f.up.archiveGets.Load() != gets {
		t.Errorf("second FetchPackage: %v after %d more downloads", err, f.up.archiveGets.Load()-gets)
	}
	if err := f.m.FetchPackage(ctx, registry.PackageOrigin{Host: upstreamHost, Namespace: "hashicorp", Type: "random", Version: "3.1.0", OS: "plan9", Arch: "amd64"}); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("FetchPackage of an unknown package: %v, want NotFound", err)
	}
}

func hashOf(t *testing.T, zip []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.zip")
	if err := os.WriteFile(path, zip, 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := release.PackageHash(path)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestTamperedSignatureStoresNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.up.tamperSig.Store(true)
	_, err := f.m.MirroredVersion(ctx, upstreamHost, "hashicorp", "random", "3.1.0")
	if !registry.IsKind(err, registry.UpstreamInvalid) || !strings.Contains(registry.Message(err), "does not verify") {
		t.Fatalf("MirroredVersion with a bad signature: %v, want a refusal", err)
	}
	if _, err := f.idx.GetMirroredVersion(ctx, upstreamHost, "hashicorp", "random", "3.1.0"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("the refused version was stored: %v", err)
	}
	n := 0
	f.blobs.Walk(ctx, func(string, int64) error { n++; return nil })
	if n != 0 {
		t.Errorf("%d blobs stored after a refusal", n)
	}
}

func TestTamperedPackageStoresNothing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	v := f.version(t)
	f.up.tamperZip.Store(true)
	pl := f.platform(t, v, "darwin_arm64")
	err := f.m.FetchPackage(ctx, f.origin(pl))
	if !registry.IsKind(err, registry.UpstreamInvalid) || !strings.Contains(registry.Message(err), "signed SHA256SUMS lists") {
		t.Fatalf("FetchPackage of a tampered package: %v, want a refusal", err)
	}
	if _, err := f.blobs.Stat(ctx, pl.SHA256); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("tampered package stored: %v", err)
	}
	again, _ := f.idx.GetMirroredVersion(ctx, upstreamHost, "hashicorp", "random", "3.1.0")
	if f.platform(t, again.ProviderVersion, "darwin_arm64").Held() {
		t.Errorf("tampered package recorded as held")
	}
}

func TestUpstreamDown(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	v := f.version(t)
	pl := f.platform(t, v, "linux_amd64")
	if err := f.m.FetchPackage(ctx, f.origin(pl)); err != nil {
		t.Fatal(err)
	}
	f.up.down.Store(true)

	vs, err := f.m.MirroredVersions(ctx, upstreamHost, "hashicorp", "random")
	if err != nil || !slices.Equal(vs, []string{"3.1.0"}) {
		t.Errorf("MirroredVersions with the upstream down = %v, %v; want the held 3.1.0 only", vs, err)
	}
	if _, err := f.m.MirroredVersion(ctx, upstreamHost, "hashicorp", "random", "3.1.0"); err != nil {
		t.Errorf("MirroredVersion of a held version with the upstream down: %v", err)
	}
	other := f.platform(t, v, "darwin_arm64")
	if err := f.m.FetchPackage(ctx, f.origin(other)); !registry.IsKind(err, registry.Unavailable) || !strings.Contains(registry.Message(err), upstreamHost) {
		t.Errorf("FetchPackage of a package not held with the upstream down: %v, want Unavailable naming the upstream", err)
	}
	if _, err := f.m.MirroredVersion(ctx, upstreamHost, "hashicorp", "random", "2.0.0"); !registry.IsKind(err, registry.Unavailable) {
		t.Errorf("MirroredVersion of a version not held with the upstream down: %v, want Unavailable", err)
	}
}

func TestConcurrentFetchesDownloadOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	v := f.version(t)
	pl := f.platform(t, v, "linux_amd64")
	f.up.slowZip = make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Go(func() { errs <- f.m.FetchPackage(ctx, f.origin(pl)) })
	}
	for f.up.archiveGets.Load() == 0 {
		time.Sleep(time.Millisecond) // wait for the download to start; the assertion does not depend on timing
	}
	close(f.up.slowZip)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := f.up.archiveGets.Load(); n != 1 {
		t.Errorf("50 concurrent fetches downloaded the package %d times, want once", n)
	}
}

func TestRules(t *testing.T) {
	f := newFixture(t, registry.MirrorRule{Provider: "hashicorp/random", Versions: "~> 3.0"})
	ctx := context.Background()
	vs, err := f.m.MirroredVersions(ctx, upstreamHost, "hashicorp", "random")
	if err != nil || !slices.Equal(vs, []string{"3.1.0"}) {
		t.Errorf("MirroredVersions under ~> 3.0 = %v, %v", vs, err)
	}
	if _, err := f.m.MirroredVersion(ctx, upstreamHost, "hashicorp", "random", "2.0.0"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("a version the rule refuses: %v, want NotFound", err)
	}
	if _, err := f.m.MirroredVersions(ctx, upstreamHost, "hashicorp", "aws"); !registry.IsKind(err, registry.NotFound) || !strings.Contains(registry.Message(err), "no rule") {
		t.Errorf("a provider no rule allows: %v", err)
	}
	if _, err := f.m.MirroredVersions(ctx, "other.example.com", "hashicorp", "random"); !registry.IsKind(err, registry.NotFound) || !strings.Contains(registry.Message(err), "not an upstream") {
		t.Errorf("a host that is not an upstream: %v", err)
	}
}

func TestMatchAndCheckRule(t *testing.T) {
	for _, c := range []struct {
		pattern, ns, typ string
		want             bool
	}{
		{"*/*", "hashicorp", "aws", true}, {"hashicorp/*", "hashicorp", "aws", true}, {"HashiCorp/AWS", "hashicorp", "aws", true},
		{"hashicorp/*", "acme", "aws", false}, {"*/aws", "acme", "aws", true}, {"hashicorp/aws", "hashicorp", "awscc", false},
		{"hashicorp", "hashicorp", "aws", false}, {"hash*/aws", "hashicorp", "aws", false},
	} {
		if got := MatchProvider(c.pattern, c.ns, c.typ); got != c.want {
			t.Errorf("MatchProvider(%q, %s/%s) = %v", c.pattern, c.ns, c.typ, got)
		}
	}
	for _, r := range []registry.MirrorRule{{Provider: "*/*"}, {Provider: "hashicorp/aws", Versions: "~> 5.0"}, {Provider: "acme/*", Versions: ">= 1.2, < 2.0"}} {
		if err := CheckRule(r); err != nil {
			t.Errorf("CheckRule(%+v) = %v", r, err)
		}
	}
	for _, r := range []registry.MirrorRule{{Provider: "hashicorp"}, {Provider: "a/b/c"}, {Provider: "/aws"}, {Provider: "hashi corp/aws"}, {Provider: "hashicorp/aws", Versions: "five"}} {
		if err := CheckRule(r); !registry.IsKind(err, registry.Invalid) {
			t.Errorf("CheckRule(%+v) = %v, want Invalid", r, err)
		}
	}
}

func TestOpenPackage(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	v := f.version(t)
	pl := f.platform(t, v, "linux_amd64")
	body, size, err := f.m.OpenPackage(ctx, f.origin(pl).String(), pl.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(body)
	body.Close()
	want := f.up.rel.ByName(pl.Filename)
	if err != nil || !bytes.Equal(got, want) || size != int64(len(want)) {
		t.Fatalf("OpenPackage: %d bytes (size %d), %v; want the whole package of %d", len(got), size, err, len(want))
	}
	// The readers may get the end before the package is stored: a fetch
	// waits for it (joining the download, or finding it stored).
	if err := f.m.FetchPackage(ctx, f.origin(pl)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.blobs.Stat(ctx, pl.SHA256); err != nil {
		t.Errorf("the package read is not stored: %v", err)
	}
	if known, err := f.m.HasPackage(ctx, f.origin(pl).String(), strings.Repeat("0", 64)); known || err != nil {
		t.Errorf("HasPackage of another digest under the origin: %v, %v", known, err)
	}
	if _, _, err := f.m.OpenPackage(ctx, "nonsense", pl.SHA256); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("OpenPackage of a malformed origin: %v, want NotFound", err)
	}

	// A tampered package smaller than HoldBack is refused before a byte
	// of it can be read.
	f.up.tamperZip.Store(true)
	other := f.platform(t, v, "darwin_arm64")
	body, _, err = f.m.OpenPackage(ctx, f.origin(other).String(), other.SHA256)
	if err == nil {
		var n int
		n, err = body.Read(make([]byte, 1<<20))
		body.Close()
		if n != 0 {
			t.Errorf("read %d bytes of a tampered package", n)
		}
	}
	if !registry.IsKind(err, registry.UpstreamInvalid) {
		t.Errorf("reading a tampered package: %v, want UpstreamInvalid", err)
	}
}

// TestHeldWithoutUpstream: what the mirror holds of a host that is no
// longer (or never was, for an imported bundle) an upstream keeps being
// served; what it does not hold cannot be fetched.
func TestHeldWithoutUpstream(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	v := f.version(t)
	pl := f.platform(t, v, "linux_amd64")
	if err := f.m.FetchPackage(ctx, f.origin(pl)); err != nil {
		t.Fatal(err)
	}
	if err := f.idx.DeleteMirrorUpstream(ctx, upstreamHost); err != nil {
		t.Fatal(err)
	}
	f.m.Reload()
	if vs, err := f.m.MirroredVersions(ctx, upstreamHost, "hashicorp", "random"); err != nil || !slices.Equal(vs, []string{"3.1.0"}) {
		t.Errorf("MirroredVersions after the upstream was removed = %v, %v; want the held 3.1.0", vs, err)
	}
	if _, err := f.m.MirroredVersion(ctx, upstreamHost, "hashicorp", "random", "3.1.0"); err != nil {
		t.Errorf("MirroredVersion of a held version after the upstream was removed: %v", err)
	}
	other := f.platform(t, v, "darwin_arm64")
	if err := f.m.FetchPackage(ctx, f.origin(other)); !registry.IsKind(err, registry.Unavailable) || !strings.Contains(registry.Message(err), "not one of its upstream registries") {
		t.Errorf("FetchPackage without an upstream: %v", err)
	}
	if _, err := f.m.MirroredVersions(ctx, upstreamHost, "hashicorp", "other"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("MirroredVersions of a provider held nowhere: %v, want NotFound", err)
	}
}

// TestHostileUpstreamDocuments: platform names that are not platforms are
// left out, and a download URL that is not https is refused.
func TestHostileUpstreamDocuments(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.up.badPlatform.Store(true)
	v := f.version(t)
	if len(v.Platforms) != 2 {
		t.Errorf("platforms %+v: want the two valid ones only", v.Platforms)
	}
	f.up.plainHTTP.Store(true)
	pl := f.platform(t, v, "linux_amd64")
	if err := f.m.FetchPackage(ctx, f.origin(pl)); !registry.IsKind(err, registry.Unavailable) || !strings.Contains(registry.Message(err), "not an https URL") {
		t.Errorf("FetchPackage with an http download URL: %v", err)
	}
	if _, err := f.blobs.Stat(ctx, pl.SHA256); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("a package was stored from an http URL: %v", err)
	}
}

// TestNarrowedRuleStopsFetches: once an operator narrows an upstream's
// rule, packages of versions it no longer allows are not fetched, even
// through URLs handed out before.
func TestNarrowedRuleStopsFetches(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	pl := f.platform(t, f.version(t), "linux_amd64")
	u, err := f.idx.GetMirrorUpstream(ctx, upstreamHost)
	if err != nil {
		t.Fatal(err)
	}
	u.Allow = []registry.MirrorRule{{Provider: "hashicorp/*", Versions: "~> 2.0"}}
	if err := f.idx.PutMirrorUpstream(ctx, u); err != nil {
		t.Fatal(err)
	}
	f.m.Reload()
	if err := f.m.FetchPackage(ctx, f.origin(pl)); !registry.IsKind(err, registry.NotFound) || !strings.Contains(registry.Message(err), "~> 2.0") {
		t.Errorf("FetchPackage of a version the narrowed rule refuses: %v", err)
	}
	if n := f.up.archiveGets.Load(); n != 0 {
		t.Errorf("the upstream was asked for the package %d times", n)
	}
}

// TestPackageOverTheLimit: an upstream package over MaxPackageBytes is
// not stored, and the waiting client is told the upstream's package was
// refused (502), not that it sent something too large itself (413).
func TestPackageOverTheLimit(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.m.opt.MaxPackageBytes = 100
	pl := f.platform(t, f.version(t), "linux_amd64")
	err := f.m.FetchPackage(ctx, f.origin(pl))
	if !registry.IsKind(err, registry.UpstreamInvalid) || !strings.Contains(registry.Message(err), upstreamHost) {
		t.Errorf("FetchPackage of a package over the limit: %v, want UpstreamInvalid naming the upstream", err)
	}
	if _, err := f.blobs.Stat(ctx, pl.SHA256); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("a package over the limit was stored: %v", err)
	}
}

// TestUpstreamFailureCauseLogged: when an upstream cannot be reached, the
// log names the cause (a refused connection) that clients are not shown.
func TestUpstreamFailureCauseLogged(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var logs logbuf.Buffer
	f.m.log = slog.New(slog.NewTextHandler(&logs, nil))
	v := f.version(t)
	if err := f.m.FetchPackage(ctx, f.origin(f.platform(t, v, "linux_amd64"))); err != nil {
		t.Fatal(err)
	}
	pl := f.platform(t, v, "darwin_arm64")
	f.up.srv.Close() // connections are refused from now on

	if _, err := f.m.MirroredVersions(ctx, upstreamHost, "hashicorp", "random"); err != nil {
		t.Fatalf("MirroredVersions with the upstream gone: %v, want the held versions", err)
	}
	if got := logs.String(); !strings.Contains(got, "mirror upstream unreachable") || !strings.Contains(got, "connection refused") {
		t.Errorf("log lines do not name the cause of the upstream failure:\n%s", got)
	}
	err := f.m.FetchPackage(ctx, f.origin(pl))
	if !registry.IsKind(err, registry.Unavailable) {
		t.Fatalf("FetchPackage with the upstream gone: %v, want Unavailable", err)
	}
	if !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("the error logged for a failed request (Error()) lacks the cause: %v", err)
	}
	if strings.Contains(registry.Message(err), "connection refused") {
		t.Errorf("the message clients see carries the cause: %s", registry.Message(err))
	}
}
