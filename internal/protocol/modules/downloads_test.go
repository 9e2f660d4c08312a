package modules

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/downloads"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signedurl"
	"trove.dev/trove/internal/store/sqlite"
)

// countingFixture is a Service on a real SQLite index holding
// acme/network/aws 1.0.0 and 1.1.0, counting downloads with consumer
// records as `trove serve` does.
type countingFixture struct {
	idx     *sqlite.Index
	counter *downloads.Counter
	svc     *Service
	mux     *http.ServeMux
}

func newCountingFixture(t *testing.T) *countingFixture {
	x, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "trove.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	if err := x.CreateNamespace(t.Context(), registry.Namespace{Name: "acme", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"1.0.0", "1.1.0"} {
		err := x.CreateModuleVersion(t.Context(), registry.ModuleVersion{
			Namespace: "acme", Name: "network", System: "aws", Version: v, ArchiveFormat: "tar.gz", ArchiveSize: 4096,
			ArchiveDigest: strings.Repeat("ab", 32), PublishedAt: time.Now(),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	counter, err := downloads.New(downloads.Options{Store: x, Interval: time.Hour, Consumers: true})
	if err != nil {
		t.Fatal(err)
	}
	signer := signedurl.New([]byte("0123456789abcdef0123456789abcdef"), 15*time.Minute)
	f := &countingFixture{idx: x, counter: counter,
		svc: New(x, signer, &url.URL{Scheme: "https", Host: "trove.test"}, nil, WithDownloadCounter(counter)), mux: http.NewServeMux()}
	f.svc.Register(f.mux)
	return f
}

// do answers method path with the User-Agent ua (none if ua is "-").
func (f *countingFixture) do(method, path, ua string) int {
	r := httptest.NewRequest(method, path, nil)
	if ua != "-" {
		r.Header["User-Agent"] = []string{ua}
	}
	w := httptest.NewRecorder()
	f.mux.ServeHTTP(w, r)
	return w.Code
}

// TestDownloadsCountedPerVersionMemo: downloads counted through each
// version's memo (downloads.Memo in the cached module) are recorded as
// without one: per version, client and client version, under the
// normalized names whatever the path's spelling, with odd and hostile
// User-Agents taken for what ParseClient makes of them; HEAD, a missing
// version and the versions document count nothing.
func TestDownloadsCountedPerVersionMemo(t *testing.T) {
	f := newCountingFixture(t)
	const v100, v110 = "/v1/modules/acme/network/aws/1.0.0/download", "/v1/modules/acme/network/aws/1.1.0/download"
	long := "Terraform/1.9.5 " + strings.Repeat("y", 4000)
	type rec struct{ version, client, clientVersion string }
	want := map[rec]int64{}
	for i := range 60 {
		// The clients alternate on one version's memo, so that it is
		// both hit and missed.
		for j, c := range []struct {
			path, ua string
			r        rec
		}{
			{v100, "Terraform/1.9.5 (+https://www.terraform.io)", rec{"1.0.0", registry.ClientTerraform, "1.9.5"}},
			{v100, "OpenTofu/1.12.6", rec{"1.0.0", registry.ClientOpenTofu, "1.12.6"}},
			{v100, "terraform/1.9.5", rec{"1.0.0", registry.ClientTerraform, "1.9.5"}},
			{v110, long, rec{"1.1.0", registry.ClientTerraform, "1.9.5"}},
			{v110, "OpenTofu/1.12.6<script>", rec{"1.1.0", registry.ClientOpenTofu, ""}},
			{v110, "", rec{"1.1.0", registry.ClientOther, ""}},
			{v110, "-", rec{"1.1.0", registry.ClientOther, ""}},
			{"/v1/modules/ACME/Network/aws/1.1.0/download", "OpenTofu/1.12.6", rec{"1.1.0", registry.ClientOpenTofu, "1.12.6"}},
		} {
			if (i+j)%(j%3+1) != 0 { // an uneven mix
				continue
			}
			if code := f.do(http.MethodGet, c.path, c.ua); code != http.StatusNoContent {
				t.Fatalf("GET %s: %d", c.path, code)
			}
			want[c.r]++
		}
		for _, c := range []struct {
			method, path string
			code         int
		}{
			{http.MethodHead, v100, http.StatusNoContent},
			{http.MethodGet, "/v1/modules/acme/network/aws/9.9.9/download", http.StatusNotFound},
			{http.MethodGet, "/v1/modules/acme/network/aws/versions", http.StatusOK},
		} {
			if code := f.do(c.method, c.path, "OpenTofu/1.12.6"); code != c.code {
				t.Fatalf("%s %s: %d, want %d", c.method, c.path, code, c.code)
			}
		}
	}
	if err := f.counter.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	stored, err := f.idx.ConsumerDownloads(t.Context(), registry.ConsumerQuery{Kind: registry.DownloadModule,
		Namespace: "acme", Name: "network", System: "aws", Since: registry.DayOf(time.Now().AddDate(0, 0, -1))})
	if err != nil {
		t.Fatal(err)
	}
	got := map[rec]int64{}
	for _, s := range stored {
		if s.Consumer != registry.AnonymousConsumer {
			t.Errorf("record %+v: want the anonymous consumer", s)
		}
		got[rec{s.Version, s.Client, s.ClientVersion}] += s.Count
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("consumer records\n%v\nwant\n%v", got, want)
	}
}

// TestCachedDownloadDoesNotAllocate: a download answered from the cached
// module, counted with its consumer record through the version's memo,
// allocates nothing (the header map is the ResponseWriter's).
func TestCachedDownloadDoesNotAllocate(t *testing.T) {
	f := newCountingFixture(t)
	r := httptest.NewRequest(http.MethodGet, "/v1/modules/acme/network/aws/1.1.0/download", nil)
	r.Header["User-Agent"] = []string{"Terraform/1.9.5"}
	w := &discardWriter{h: http.Header{}}
	serve := func() {
		w.reset()
		f.svc.ServeDownload(w, r, "acme", "network", "aws", "1.1.0")
	}
	for range 3 { // the cache filled, the key counted, then remembered
		serve()
	}
	if w.status != http.StatusNoContent {
		t.Fatalf("status %d", w.status)
	}
	if n := testing.AllocsPerRun(200, serve); n != 0 {
		t.Errorf("a cached download allocates %v times, want 0", n)
	}
	// The download was counted through its version's memo, and only
	// that version's.
	e := f.svc.cache.Lookup(allModules, modKey{"acme", "network", "aws"})
	if e == nil || len(e.Value.counted) != len(e.Value.versions) {
		t.Fatal("the module's entry has no memo per version")
	}
	for i, v := range e.Value.versions {
		if used := !e.Value.counted[i].Empty(); used != (v.Version == "1.1.0") {
			t.Errorf("version %s: memo used %v", v.Version, used)
		}
	}
}
