package oci

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/sqlite"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

// countingIndex is a real SQLite index that counts its reads of
// provenance envelopes.
type countingIndex struct {
	*sqlite.Index
	provenance atomic.Int64
}

func (x *countingIndex) ProviderProvenance(ctx context.Context, namespace, typ, version string) ([]byte, error) {
	x.provenance.Add(1)
	return x.Index.ProviderProvenance(ctx, namespace, typ, version)
}

// countingBlobs is a real blob store that counts Stat.
type countingBlobs struct {
	store.Blobs
	stats atomic.Int64
}

func (b *countingBlobs) Stat(ctx context.Context, digest string) (int64, error) {
	b.stats.Add(1)
	return b.Blobs.Stat(ctx, digest)
}

// TestProviderRepoReadsMarkedProvenanceOnly: generating the repository of
// a provider of many versions, few of which have provenance, reads the
// envelopes of those few (the list's HasProvenance says which), not one
// per version, and still attaches each; the blob store is asked for the
// sizes of each version's SHA256SUMS and signature (the index keeps only
// their digests), never per platform (a package's size is in the index).
func TestProviderRepoReadsMarkedProvenanceOnly(t *testing.T) {
	ctx := t.Context()
	st := sqlitetest.New(t)
	idx := st.Index
	if err := idx.CreateNamespace(ctx, registry.Namespace{Name: "acme", Visibility: registry.VisibilityPublic, CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	key := registry.SigningKey{Namespace: "acme", KeyID: "0123456789ABCDEF", Fingerprint: strings.Repeat("AB", 20), ASCIIArmor: "x", CreatedAt: time.Now()}
	const versions, every = 300, 100 // versions 0, 100 and 200 have provenance
	platforms := []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"}
	put := func(body string) string { return st.Put(t, []byte(body)) }
	for i := range versions {
		ver := fmt.Sprintf("%d.%d.%d", i/100, i/10%10, i%10)
		v := registry.ProviderVersion{Namespace: "acme", Type: "widget", Version: ver, Protocols: []string{"6.0"}, PublishedAt: time.Now(),
			SHASumsDigest: put("sums of " + ver), SHASumsSignatureDigest: put("signature of " + ver), SigningKey: key}
		for _, p := range platforms {
			os, arch, _ := strings.Cut(p, "_")
			name := "terraform-provider-widget_" + ver + "_" + p + ".zip"
			s := sha256.Sum256([]byte(name))
			v.Platforms = append(v.Platforms, registry.Platform{OS: os, Arch: arch, Filename: name, SHA256: hex.EncodeToString(s[:]), Size: 1 << 20})
		}
		if i%every == 0 {
			v.Provenance = []byte(`{"payloadType":"application/vnd.in-toto+json","payload":"` + ver + `","signatures":[]}`)
		}
		if err := idx.CreateProviderVersion(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	x, blobs := &countingIndex{Index: idx}, &countingBlobs{Blobs: st.Blobs}
	s := New(Options{Index: x, Blobs: blobs, PublicURL: &url.URL{Scheme: "https", Host: "trove.test"}})

	rp, err := s.generate(ctx, repoKey{kind: 'p', ns: "acme", name: "widget"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rp.tags) != versions {
		t.Fatalf("%d tags, want %d", len(rp.tags), versions)
	}
	if got, want := x.provenance.Load(), int64(versions/every); got != want {
		t.Errorf("ProviderProvenance read %d times for %d versions, %d with provenance; want %d", got, versions, versions/every, want)
	}
	if got, want := blobs.stats.Load(), int64(2*versions); got != want {
		t.Errorf("Blobs.Stat called %d times for %d versions of %d platforms; want %d (SHA256SUMS and signature)", got, versions, len(platforms), want)
	}
	attached := 0
	for _, refs := range rp.referrers {
		for _, d := range refs {
			if d.ArtifactType == ArtifactProvenance {
				attached++
			}
		}
	}
	if attached != versions/every {
		t.Errorf("%d provenance referrers, want %d", attached, versions/every)
	}

	// One version's documents (renderVersion's GetProviderVersion) read
	// its envelope only if it has one.
	x.provenance.Store(0)
	for _, ver := range []string{"1.0.0", "1.0.1"} {
		if _, err := s.renderVersion(ctx, repoKey{kind: 'p', ns: "acme", name: "widget"}, TagOf(ver)); err != nil {
			t.Fatalf("renderVersion %s: %v", ver, err)
		}
	}
	if got := x.provenance.Load(); got != 1 {
		t.Errorf("ProviderProvenance read %d times for one version with provenance and one without; want 1", got)
	}
}
