package storecopy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trove.dev/trove/internal/publish"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/release/releasetest"
	"trove.dev/trove/internal/signing"
	"trove.dev/trove/internal/signing/signingtest"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/postgres"
	"trove.dev/trove/internal/store/postgres/pgtest"
	"trove.dev/trove/internal/store/s3blob"
	"trove.dev/trove/internal/store/s3blob/s3test"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

const signingKeyName = "url-signing-key"

var opts = Options{Secrets: []string{signingKeyName}}

// embedded opens an empty SQLite index and filesystem blob store; dir
// holds the blob directory at dir/blobs.
func embedded(t *testing.T) (Store, string) {
	t.Helper()
	st := sqlitetest.New(t)
	return Store{Index: st.Index, Blobs: st.Blobs}, st.Dir
}

// scaleOut opens an empty PostgreSQL index and S3 bucket, skipping the
// test without them (failing with TROVE_REQUIRE_BACKENDS=1).
func scaleOut(t *testing.T) Store {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	bucket := s3test.NewBucket(t)
	idx, err := postgres.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	blobs, err := s3blob.Open(t.Context(), bucket)
	if err != nil {
		t.Fatal(err)
	}
	return Store{Index: idx, Blobs: blobs}
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// registryData fills a store the way a running Trove would, through the
// real publisher for provider releases.
type registryData struct {
	t   *testing.T
	s   Store
	key *signingtest.Key
	pub *publish.Publisher
	now time.Time
}

func fill(t *testing.T, s Store) *registryData {
	t.Helper()
	ctx := t.Context()
	d := &registryData{t: t, s: s, key: signingtest.NewKeyWith(t, "acme", signingtest.Options{Algorithm: signingtest.Ed25519}),
		pub: publish.New(publish.Options{Index: s.Index, Blobs: s.Blobs, TempDir: t.TempDir()}),
		now: time.Date(2026, 5, 1, 12, 0, 0, 123456000, time.UTC)}
	a := s.Index.(store.Access)
	must(t, s.Index.CreateNamespace(ctx, registry.Namespace{Name: "acme", Description: "Acme", Visibility: registry.VisibilityPublic, CreatedAt: d.now}))
	must(t, s.Index.CreateNamespace(ctx, registry.Namespace{Name: "empty", CreatedAt: d.now.Add(time.Second)}))
	k, err := signing.ParsePublicKey(d.key.ArmoredPublic)
	must(t, err)
	k.Namespace, k.CreatedAt = "acme", d.now
	must(t, s.Index.AddSigningKey(ctx, k))
	must(t, a.CreateUser(ctx, registry.User{Name: "alice", PasswordHash: "$argon2id$v=19$fake", CreatedAt: d.now}))
	must(t, a.CreateUser(ctx, registry.User{Name: "root", Admin: true, CreatedAt: d.now}))
	must(t, a.SetMembership(ctx, registry.Membership{User: "alice", Namespace: "acme", Role: registry.RolePublisher, CreatedAt: d.now}))
	for i, tok := range []registry.Token{
		{ID: "tok-admin", Scopes: []registry.Scope{registry.ScopeAdmin}, Description: "first admin"},
		{ID: "tok-ci", Namespaces: []string{"acme", "empty"}, Scopes: []registry.Scope{registry.ScopePublish, registry.ScopeRead}, ExpiresAt: d.now.Add(720 * time.Hour), CI: &ciClaims},
		{ID: "tok-old", Namespaces: []string{"acme"}, Scopes: []registry.Scope{registry.ScopeRead}, RevokedAt: d.now.Add(time.Hour)},
		{ID: "tok-alice", User: "alice", Scopes: []registry.Scope{registry.ScopePublish}},
	} {
		tok.Hash = sha([]byte(tok.ID))
		tok.CreatedAt = d.now.Add(time.Duration(i) * time.Minute)
		must(t, s.Index.CreateToken(ctx, tok))
	}
	d.publish("1.0.0", "")
	d.publish("1.1.0", "")
	d.legacy(k)
	d.mirror(k)
	must(t, s.Index.CreateTrustPolicy(ctx, registry.TrustPolicy{ID: "tp_00000000000000c1", Namespace: "acme",
		Issuer: "https://token.actions.githubusercontent.com", Audience: "https://registry.example",
		Conditions: map[string]string{"repository": "acme/infra"}, Scope: registry.ScopePublish, TokenTTL: 15 * time.Minute, CreatedAt: d.now}))
	for _, w := range []registry.Webhook{
		{ID: "wh_00000000000000a1", Namespace: "acme", URL: "https://hooks.example/acme", Events: []string{"provider.*"}, Active: true},
		{ID: "wh_00000000000000a2", URL: "https://hooks.example/all", Description: "global"},
	} {
		w.Secret, w.CreatedAt, w.CreatedBy = "whsec_"+w.ID, d.now, "user:alice"
		must(t, s.Index.CreateWebhook(ctx, w))
	}
	must(t, s.Index.PutRetentionRule(ctx, registry.RetentionRule{Namespace: "acme", KeepLast: 3, KeepWithin: 90 * 24 * time.Hour,
		Pin: []string{"~> 1.0"}, UpdatedAt: d.now, UpdatedBy: "user:alice"}))
	archive := []byte("module archive bytes")
	must(t, s.Blobs.Put(ctx, sha(archive), int64(len(archive)), bytes.NewReader(archive)))
	must(t, s.Index.CreateModuleVersion(ctx, registry.ModuleVersion{
		Namespace: "acme", Name: "network", System: "aws", Version: "0.1.0",
		ArchiveDigest: sha(archive), ArchiveFormat: "tar.gz", ArchiveSize: int64(len(archive)),
		Metadata: []byte(`{"root":{"inputs":[]}}`), Description: "A network", PublishedAt: d.now,
		Provenance: []byte(moduleProvenance),
	}))
	stray := []byte("a blob no version names (the leftover of a failed publish)")
	must(t, s.Blobs.Put(ctx, sha(stray), int64(len(stray)), bytes.NewReader(stray)))
	for i, action := range []string{registry.AuditLoginSuccess, registry.AuditTokenCreate, registry.AuditProviderPublish} {
		_, err := a.AppendAudit(ctx, registry.AuditEvent{Time: d.now.Add(time.Duration(i) * time.Second), Action: action, Actor: "user:alice", Namespace: "acme", Target: fmt.Sprint(i)})
		must(t, err)
	}
	_, err = s.Index.Secret(ctx, signingKeyName, func() ([]byte, error) { return []byte("0123456789abcdef0123456789abcdef"), nil })
	must(t, err)
	return d
}

// putBlob stores b in the data's blob store and returns its digest.
func (d *registryData) putBlob(b string) string {
	d.t.Helper()
	must(d.t, d.s.Blobs.Put(d.t.Context(), sha([]byte(b)), int64(len(b)), strings.NewReader(b)))
	return sha([]byte(b))
}

// legacy stores acme/legacy 0.9.0 as a Trove before package hashes did:
// its package has no H1.
func (d *registryData) legacy(k registry.SigningKey) {
	d.t.Helper()
	zip := "legacy package"
	must(d.t, d.s.Index.CreateProviderVersion(d.t.Context(), registry.ProviderVersion{
		Namespace: "acme", Type: "legacy", Version: "0.9.0", Protocols: []string{"5.0"},
		SHASumsDigest: d.putBlob("legacy sums"), SHASumsSignatureDigest: d.putBlob("legacy sig"), SigningKey: k,
		Platforms: []registry.Platform{{OS: "linux", Arch: "amd64", Filename: "terraform-provider-legacy_0.9.0_linux_amd64.zip",
			SHA256: d.putBlob(zip), Size: int64(len(zip))}},
		PublishedAt: d.now,
		Provenance:  []byte(legacyProvenance),
	}))
}

// legacyProvenance is the provenance envelope stored with acme/legacy
// 0.9.0 (the index stores it as given), and ciClaims the claims of the
// token tok-ci: both must survive a copy.
const legacyProvenance = `{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[{"keyid":"ab","sig":"c2ln"}]}`

// moduleProvenance is the provenance envelope stored with module
// acme/network/aws 0.1.0.
const moduleProvenance = `{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[{"keyid":"cd","sig":"bW9k"}]}`

var ciClaims = registry.CIClaims{Issuer: "https://ci.example", Repository: "acme/infra", Ref: "refs/heads/main", Workflow: "release.yml", Commit: "0123abcd", RunID: "42"}

// legacyDigest is the digest of acme/legacy's package.
var legacyDigest = sha([]byte("legacy package"))

// mirrorHost is the upstream of the mirrored version fill stores.
const mirrorHost = "upstream.example"

// mirror stores a mirrored version with one of its two packages held,
// adds an upstream, changes the first default upstream and deletes the
// second.
func (d *registryData) mirror(k registry.SigningKey) {
	d.t.Helper()
	ctx := d.t.Context()
	zip := "mirrored package"
	v := registry.MirroredVersion{Host: mirrorHost, ProviderVersion: registry.ProviderVersion{
		Namespace: "hashicorp", Type: "null", Version: "3.2.0", Protocols: []string{"5.0"},
		SHASumsDigest: d.putBlob("mirrored sums"), SHASumsSignatureDigest: d.putBlob("mirrored sig"), SigningKey: k,
		Platforms: []registry.Platform{
			{OS: "linux", Arch: "amd64", Filename: "terraform-provider-null_3.2.0_linux_amd64.zip", SHA256: d.putBlob(zip)},
			{OS: "darwin", Arch: "arm64", Filename: "terraform-provider-null_3.2.0_darwin_arm64.zip", SHA256: sha([]byte("not fetched"))},
		},
		PublishedAt: d.now,
	}}
	_, err := d.s.Index.PutMirroredVersion(ctx, v)
	must(d.t, err)
	must(d.t, d.s.Index.SetMirroredPackage(ctx, mirrorHost, "hashicorp", "null", "3.2.0", "linux", "amd64", int64(len(zip)), "h1:held="))
	defaults, err := d.s.Index.ListMirrorUpstreams(ctx)
	must(d.t, err)
	if len(defaults) != 2 {
		d.t.Fatalf("a new index has upstreams %+v, want the two defaults", defaults)
	}
	changed := defaults[0]
	changed.Description, changed.Allow, changed.UpdatedAt = "hashicorp only", []registry.MirrorRule{{Provider: "hashicorp/*"}}, d.now
	must(d.t, d.s.Index.PutMirrorUpstream(ctx, changed))
	must(d.t, d.s.Index.DeleteMirrorUpstream(ctx, defaults[1].Host))
	must(d.t, d.s.Index.PutMirrorUpstream(ctx, registry.MirrorUpstream{Host: mirrorHost, ServiceURL: "https://" + mirrorHost + "/v1/providers/",
		Allow: []registry.MirrorRule{{Provider: "*/*", Versions: ">= 1.0"}}, CreatedAt: d.now, UpdatedAt: d.now}))
}

// publish publishes a release of acme/example through the real
// publisher; payload varies its bytes.
func (d *registryData) publish(version, payload string) {
	d.t.Helper()
	rel := releasetest.Build(d.t, d.key, releasetest.Spec{
		Type: "example", Version: version, Platforms: []string{"linux_amd64", "darwin_arm64"}, Payload: payload,
	})
	_, err := d.pub.PublishProvider(d.t.Context(), "acme", "example", version, rel.Source())
	must(d.t, err)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// checkSame fails unless b holds exactly the data of a: the index records
// (by the same comparison Copy uses, and for the blobs by content).
func checkSame(t *testing.T, a, b Store) {
	t.Helper()
	ctx := t.Context()
	sa, err := read(ctx, a.Index, opts.Secrets)
	must(t, err)
	sb, err := read(ctx, b.Index, opts.Secrets)
	must(t, err)
	p := compare(sa, sb)
	if len(p.conflicts) > 0 {
		t.Errorf("the copies differ:\n%s", strings.Join(p.conflicts, "\n"))
	}
	if n := len(p.namespaces) + len(p.users) + len(p.memberships) + len(p.keys) + len(p.trust) + len(p.webhooks) + len(p.retention) + len(p.tokens) + len(p.providers) + len(p.modules) +
		len(p.mirrored) + len(p.upstreams) + len(p.audit) + len(p.secrets); n > 0 {
		t.Errorf("%d records of the source are missing from the copy", n)
	}
	n := len(p.namespaceUpdates) + len(p.userUpdates) + len(p.membershipUpdates) + len(p.tokenRevokes) + len(p.tokenExpiries) +
		len(p.packageHashes) + len(p.upstreamDeletes) + len(p.providerDocs) + len(p.webhookUpdates) + len(p.retentionDeletes)
	for _, v := range p.mirroredHeld {
		n += len(v.Platforms)
	}
	if n > 0 {
		t.Errorf("%d records of the copy are outdated", n)
	}
	if len(sa.providers) == 0 || len(sa.trust) == 0 || len(sa.webhooks) == 0 || len(sa.retention) == 0 || len(sa.tokens) == 0 || len(sa.audit) == 0 || len(sa.mirrored) == 0 || len(sa.upstreams) == 0 {
		t.Fatalf("the source snapshot is empty: %+v", sa)
	}
	ba, bb := blobContents(t, a.Blobs), blobContents(t, b.Blobs)
	if !maps.Equal(ba, bb) {
		t.Errorf("blobs differ: %d in the source, %d in the copy", len(ba), len(bb))
	}
}

// blobContents returns every blob's digest with the SHA-256 of what it
// reads back.
func blobContents(t *testing.T, b store.Blobs) map[string]string {
	t.Helper()
	out := map[string]string{}
	must(t, b.Walk(t.Context(), func(d string, size int64) error {
		blob, err := b.Open(t.Context(), d)
		if err != nil {
			return err
		}
		defer blob.Close()
		content, err := io.ReadAll(blob.Content)
		out[d] = sha(content)
		return err
	}))
	return out
}

func TestCopyEmbeddedToEmbedded(t *testing.T) {
	src, _ := embedded(t)
	fill(t, src)
	dst, _ := embedded(t)

	r, err := Copy(t.Context(), src, dst, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := Report{
		Namespaces: Count{Copied: 2}, Users: Count{Copied: 2}, Memberships: Count{Copied: 1}, SigningKeys: Count{Copied: 1},
		Tokens: Count{Copied: 4}, ProviderVersions: Count{Copied: 3}, ModuleVersions: Count{Copied: 1},
		MirroredVersions: Count{Copied: 1}, MirrorUpstreams: Count{Copied: 2}, TrustPolicies: Count{Copied: 1},
		Webhooks: Count{Copied: 2}, RetentionRules: Count{Copied: 1}, AuditEvents: Count{Copied: 3}, Secrets: Count{Copied: 1}, Blobs: Count{Copied: 16},
		Updated: 1, // the default upstream the source deleted
	}
	r.BlobBytes = 0
	if r != want {
		t.Errorf("report:\n%+v\nwant\n%+v", r, want)
	}
	checkSame(t, src, dst)
	env, err := dst.Index.ProviderProvenance(t.Context(), "acme", "legacy", "0.9.0")
	if err != nil || string(env) != legacyProvenance {
		t.Errorf("provenance in the copy: %q, %v; want %q", env, err, legacyProvenance)
	}
	if _, err := dst.Index.ProviderProvenance(t.Context(), "acme", "example", "1.0.0"); !registry.IsKind(err, registry.NotFound) {
		t.Errorf("a version without provenance has one in the copy: %v", err)
	}
	if env, err := dst.Index.ModuleProvenance(t.Context(), "acme", "network", "aws", "0.1.0"); err != nil || string(env) != moduleProvenance {
		t.Errorf("module provenance in the copy: %q, %v; want %q", env, err, moduleProvenance)
	}
	claims, ok, err := dst.Index.TokenCIClaims(t.Context(), "tok-ci")
	if err != nil || !ok || claims != ciClaims {
		t.Errorf("CI claims of tok-ci in the copy: %+v, %v, %v; want %+v", claims, ok, err, ciClaims)
	}
	if _, ok, _ := dst.Index.TokenCIClaims(t.Context(), "tok-admin"); ok {
		t.Error("a token without CI claims has some in the copy")
	}

	again, err := Copy(t.Context(), src, dst, opts)
	if err != nil {
		t.Fatalf("second copy: %v", err)
	}
	if again.Blobs.Copied != 0 || again.ProviderVersions.Copied != 0 || again.Tokens.Copied != 0 || again.AuditEvents.Copied != 0 ||
		again.Updated != 0 || again.BlobBytes != 0 || again.Blobs.Present != 16 || again.ProviderVersions.Present != 3 ||
		again.MirroredVersions != (Count{Present: 1}) || again.MirrorUpstreams != (Count{Present: 2}) ||
		again.TrustPolicies != (Count{Present: 1}) || again.Webhooks != (Count{Present: 2}) || again.RetentionRules != (Count{Present: 1}) {
		t.Errorf("second copy did something: %+v", again)
	}
	checkSame(t, src, dst)
}

// TestCopyCatchesUp copies again after the source changed, as a migration
// does for the writes that came in during the first copy.
func TestCopyCatchesUp(t *testing.T) {
	ctx := t.Context()
	src, _ := embedded(t)
	data := fill(t, src)
	dst, _ := embedded(t)
	if _, err := Copy(ctx, src, dst, opts); err != nil {
		t.Fatal(err)
	}
	a := src.Index.(store.Access)
	data.publish("2.0.0", "")
	must(t, src.Index.RevokeToken(ctx, "tok-ci", data.now.Add(2*time.Hour)))
	must(t, a.ExpireToken(ctx, "tok-alice", data.now.Add(3*time.Hour)))
	must(t, src.Index.UpdateNamespace(ctx, registry.Namespace{Name: "empty", Description: "now described"}))
	must(t, a.SetMembership(ctx, registry.Membership{User: "alice", Namespace: "acme", Role: registry.RoleAdmin}))
	must(t, a.UpdateUser(ctx, registry.User{Name: "alice", PasswordHash: "$argon2id$v=19$changed"}))
	_, err := a.AppendAudit(ctx, registry.AuditEvent{Time: data.now.Add(time.Hour), Action: registry.AuditTokenRevoke, Actor: "user:root", Target: "tok-ci"})
	must(t, err)
	// The backfill hashed the legacy package; the mirror fetched its
	// second package.
	must(t, src.Index.SetPackageHash(ctx, legacyDigest, "h1:legacy="))
	zip := "not fetched"
	must(t, src.Blobs.Put(ctx, sha([]byte(zip)), int64(len(zip)), strings.NewReader(zip)))
	must(t, src.Index.SetMirroredPackage(ctx, mirrorHost, "hashicorp", "null", "3.2.0", "darwin", "arm64", int64(len(zip)), "h1:fetched="))
	// Documentation uploaded for a version the first copy carried.
	docs := "a documentation archive"
	must(t, src.Blobs.Put(ctx, sha([]byte(docs)), int64(len(docs)), strings.NewReader(docs)))
	if _, err := src.Index.SetProviderDocs(ctx, "acme", "legacy", "0.9.0", sha([]byte(docs)), int64(len(docs))); err != nil {
		t.Fatal(err)
	}
	// A webhook deactivated by a 410 Gone.
	_, err = src.Index.UpdateWebhook(ctx, "wh_00000000000000a1", func(hook *registry.Webhook) error {
		hook.Active, hook.DisabledReason = false, "its URL answered 410 Gone"
		return nil
	})
	must(t, err)

	r, err := Copy(ctx, src, dst, opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.ProviderVersions.Copied != 1 || r.Blobs.Copied != 6 || r.AuditEvents.Copied != 1 || r.Updated != 9 {
		t.Errorf("catch-up report %+v; want 1 version, 6 blobs, 1 audit event and 9 updates", r)
	}
	legacy, err := dst.Index.GetProviderVersion(ctx, "acme", "legacy", "0.9.0")
	must(t, err)
	if legacy.DocsDigest != sha([]byte(docs)) || legacy.DocsSize != int64(len(docs)) {
		t.Errorf("the copy's legacy version has docs %q (%d bytes), want the source's", legacy.DocsDigest, legacy.DocsSize)
	}
	if legacy.Platforms[0].H1 != "h1:legacy=" {
		t.Errorf("the copy's legacy package has H1 %q, want the source's", legacy.Platforms[0].H1)
	}
	mv, err := dst.Index.GetMirroredVersion(ctx, mirrorHost, "hashicorp", "null", "3.2.0")
	must(t, err)
	if p, _ := mv.Platform("darwin", "arm64"); !p.Held() || p.H1 != "h1:fetched=" {
		t.Errorf("the copy's mirrored package %+v, want it held as in the source", p)
	}
	checkSame(t, src, dst)
}

// TestCopyRefusesDivergedTarget checks that a target holding data the
// source lacks is refused before anything is written.
func TestCopyRefusesDivergedTarget(t *testing.T) {
	tests := map[string]struct {
		diverge func(t *testing.T, dst Store)
		want    string
	}{
		"namespace only in the target": {func(t *testing.T, dst Store) {
			must(t, dst.Index.CreateNamespace(t.Context(), registry.Namespace{Name: "other", CreatedAt: time.Now()}))
		}, `namespace other exists only in the target`},
		"first admin token of a started target": {func(t *testing.T, dst Store) {
			must(t, dst.Index.CreateToken(t.Context(), registry.Token{ID: "boot", Hash: sha([]byte("boot")), Scopes: []registry.Scope{registry.ScopeAdmin}, CreatedAt: time.Now()}))
		}, `token boot exists only in the target`},
		"another release under the same version": {func(t *testing.T, dst Store) {
			fill(t, dst) // the same names, another signing key and other bytes
		}, `provider version acme/example 1.0.0 differs: another release`},
		"mirrored version only in the target": {func(t *testing.T, dst Store) {
			_, err := dst.Index.PutMirroredVersion(t.Context(), registry.MirroredVersion{Host: mirrorHost, ProviderVersion: registry.ProviderVersion{
				Namespace: "hashicorp", Type: "random", Version: "1.0.0", PublishedAt: time.Now(),
				Platforms: []registry.Platform{{OS: "linux", Arch: "amd64", Filename: "f.zip", SHA256: sha([]byte("f"))}},
			}})
			must(t, err)
		}, `mirrored version upstream.example/hashicorp/random 1.0.0 exists only in the target`},
		"another URL-signing key": {func(t *testing.T, dst Store) {
			_, err := dst.Index.Secret(t.Context(), signingKeyName, func() ([]byte, error) { return []byte("another key of thirty-two bytes!"), nil })
			must(t, err)
		}, `secret url-signing-key differs`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			src, _ := embedded(t)
			fill(t, src)
			dst, _ := embedded(t)
			tc.diverge(t, dst)
			before := blobContents(t, dst.Blobs)
			_, err := Copy(t.Context(), src, dst, opts)
			if !registry.IsKind(err, registry.Conflict) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Copy = %v, want a conflict naming %q", err, tc.want)
			}
			if after := blobContents(t, dst.Blobs); !maps.Equal(before, after) {
				t.Errorf("the refused copy wrote %d blobs", len(after)-len(before))
			}
			if ns, _ := dst.Index.ListNamespaces(t.Context()); len(ns) > 2 {
				t.Errorf("the refused copy wrote namespaces: %v", ns)
			}
		})
	}
}

// TestCopyVerifiesBlobs corrupts and removes source blobs: the copy stops
// before the index, and keeps no corrupt blob.
// TestJudgeTokenComparesBindings checks that a token bound to other
// namespaces in the target is a conflict, not the same token.
func TestJudgeTokenComparesBindings(t *testing.T) {
	src := registry.Token{ID: "tok", Hash: "h", Namespaces: []string{"acme", "empty"}, Scopes: []registry.Scope{registry.ScopeRead}}
	for _, ns := range [][]string{{"acme"}, nil, {"acme", "other"}} {
		dst := src
		dst.Namespaces = ns
		if v, why := judgeToken(src, dst); v != differs {
			t.Errorf("judgeToken of a token bound to %q in the source and %q in the target = %v, %q; want differs", src.Namespaces, ns, v, why)
		}
	}
	if v, _ := judgeToken(src, src); v != same {
		t.Errorf("judgeToken of equal tokens = %v, want same", v)
	}
}

// TestJudgeHashes checks how h1 hashes and held mirrored packages
// compare: what only the source knows is outdated, another value differs.
func TestJudgeHashes(t *testing.T) {
	pv := func(h1 ...string) registry.ProviderVersion {
		v := registry.ProviderVersion{SHASumsDigest: "s"}
		for i, h := range h1 {
			v.Platforms = append(v.Platforms, registry.Platform{OS: fmt.Sprint("os", i), Arch: "amd64", SHA256: fmt.Sprint("d", i), Size: 1, H1: h})
		}
		return v
	}
	for _, tc := range []struct {
		src, dst registry.ProviderVersion
		want     verdict
	}{
		{pv("h1:a", ""), pv("h1:a", ""), same},
		{pv("", "h1:b"), pv("h1:a", "h1:b"), same}, // the target's backfill got further
		{pv("h1:a", "h1:b"), pv("h1:a", ""), outdated},
		{pv("h1:a", "h1:b"), pv("h1:a", "h1:c"), differs},
		{pv("h1:a"), pv("h1:a", ""), differs},
	} {
		if got, why := judgeProvider(tc.src, tc.dst); got != tc.want {
			t.Errorf("judgeProvider(%+v, %+v) = %v (%s), want %v", tc.src.Platforms, tc.dst.Platforms, got, why, tc.want)
		}
	}
	mv := func(size int64, h1 string) registry.MirroredVersion {
		return registry.MirroredVersion{Host: mirrorHost, ProviderVersion: registry.ProviderVersion{SHASumsDigest: "s",
			Platforms: []registry.Platform{{OS: "linux", Arch: "amd64", SHA256: "d", Size: size, H1: h1}}}}
	}
	for _, tc := range []struct {
		src, dst registry.MirroredVersion
		want     verdict
	}{
		{mv(0, ""), mv(0, ""), same},
		{mv(0, ""), mv(10, "h1:a"), same},
		{mv(10, "h1:a"), mv(0, ""), outdated},
		{mv(10, "h1:a"), mv(10, "h1:a"), same},
		{mv(10, "h1:a"), mv(11, "h1:a"), differs},
		{mv(10, "h1:a"), mv(10, "h1:b"), differs},
	} {
		if got, why := judgeMirrored(tc.src, tc.dst); got != tc.want {
			t.Errorf("judgeMirrored(%+v, %+v) = %v (%s), want %v", tc.src.Platforms, tc.dst.Platforms, got, why, tc.want)
		}
	}
}

func TestCopyVerifiesBlobs(t *testing.T) {
	tests := map[string]struct {
		damage func(path string) error
		kind   registry.Kind
	}{
		"corrupt": {func(p string) error { return os.WriteFile(p, []byte("garbage"), 0o600) }, registry.Invalid},
		"missing": {os.Remove, registry.NotFound},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			src, dir := embedded(t)
			fill(t, src)
			v, err := src.Index.GetProviderVersion(ctx, "acme", "example", "1.1.0")
			must(t, err)
			victim := v.Platforms[0].SHA256
			must(t, tc.damage(filepath.Join(dir, "blobs", "sha256", victim[:2], victim)))
			dst, _ := embedded(t)
			_, err = Copy(ctx, src, dst, opts)
			if !registry.IsKind(err, tc.kind) || !strings.Contains(err.Error(), victim) {
				t.Fatalf("Copy = %v, want kind %v naming blob %s", err, tc.kind, victim)
			}
			if _, err := dst.Blobs.Stat(ctx, victim); !registry.IsKind(err, registry.NotFound) {
				t.Errorf("the damaged blob is in the target: %v", err)
			}
			if ns, err := dst.Index.ListNamespaces(ctx); err != nil || len(ns) != 0 {
				t.Errorf("the failed copy wrote index records: %v, %v", ns, err)
			}
		})
	}
}

// TestCopyRefusesDamagedTargetBlob pre-places a truncated copy of a blob
// in the target, as a broken earlier copy might leave: the copy must not
// take it for the real blob, and must work once it is deleted.
func TestCopyRefusesDamagedTargetBlob(t *testing.T) {
	ctx := t.Context()
	src, srcDir := embedded(t)
	fill(t, src)
	v, err := src.Index.GetProviderVersion(ctx, "acme", "example", "1.1.0")
	must(t, err)
	victim := v.Platforms[0].SHA256
	full, err := os.ReadFile(filepath.Join(srcDir, "blobs", "sha256", victim[:2], victim))
	must(t, err)
	dst, dstDir := embedded(t)
	damaged := filepath.Join(dstDir, "blobs", "sha256", victim[:2], victim)
	must(t, os.MkdirAll(filepath.Dir(damaged), 0o700))
	must(t, os.WriteFile(damaged, full[:len(full)/2], 0o600))

	_, err = Copy(ctx, src, dst, opts)
	if !registry.IsKind(err, registry.Conflict) || !strings.Contains(err.Error(), victim) ||
		!strings.Contains(err.Error(), fmt.Sprintf("with %d bytes, but the source's has %d", len(full)/2, len(full))) {
		t.Fatalf("Copy = %v, want a conflict naming blob %s and both sizes", err, victim)
	}
	if ns, err := dst.Index.ListNamespaces(ctx); err != nil || len(ns) != 0 {
		t.Errorf("the refused copy wrote index records: %v, %v", ns, err)
	}

	must(t, dst.Blobs.Delete(ctx, victim))
	if _, err := Copy(ctx, src, dst, opts); err != nil {
		t.Fatalf("copy after deleting the damaged blob: %v", err)
	}
	checkSame(t, src, dst)
}

// TestCopyToPostgresAndS3AndBack moves a registry to the scale-out
// backends and back into a fresh embedded store: nothing is lost or
// changed on the way.
func TestCopyToPostgresAndS3AndBack(t *testing.T) {
	ctx := t.Context()
	src, _ := embedded(t)
	fill(t, src)
	out := scaleOut(t)
	if _, err := Copy(ctx, src, out, opts); err != nil {
		t.Fatalf("embedded -> PostgreSQL+S3: %v", err)
	}
	checkSame(t, src, out)
	again, err := Copy(ctx, src, out, opts)
	if err != nil || again.Blobs.Copied != 0 || again.ProviderVersions.Copied != 0 || again.Updated != 0 {
		t.Errorf("second copy to PostgreSQL+S3 = %+v, %v; want nothing copied", again, err)
	}
	back, _ := embedded(t)
	if _, err := Copy(ctx, out, back, opts); err != nil {
		t.Fatalf("PostgreSQL+S3 -> embedded: %v", err)
	}
	checkSame(t, src, back)
}

// TestJudgeProviderDocs checks how the documentation of two versions
// compares: documentation only the source has is outdated (uploaded
// after an earlier copy), documentation only the target has, or another
// archive, differs.
func TestJudgeProviderDocs(t *testing.T) {
	v := func(digest string, size int64) registry.ProviderVersion {
		return registry.ProviderVersion{SHASumsDigest: "s", DocsDigest: digest, DocsSize: size}
	}
	for _, c := range []struct {
		src, dst registry.ProviderVersion
		want     verdict
	}{
		{v("", 0), v("", 0), same},
		{v("d", 1), v("d", 1), same},
		{v("d", 1), v("", 0), outdated},
		{v("", 0), v("d", 1), differs},
		{v("d", 1), v("e", 1), differs},
		{v("d", 1), v("d", 2), differs},
	} {
		if got, why := judgeProvider(c.src, c.dst); got != c.want {
			t.Errorf("judgeProvider(docs %q, %q) = %v (%s), want %v", c.src.DocsDigest, c.dst.DocsDigest, got, why, c.want)
		}
	}
}

// TestJudgeProvenance checks how the provenance of two versions and the
// CI claims of two tokens compare: another envelope or other claims
// differ; the target's lack of either is left as it is (the index never
// adds them to a stored record).
func TestJudgeProvenance(t *testing.T) {
	v := func(env string) registry.ProviderVersion {
		return registry.ProviderVersion{SHASumsDigest: "s", Provenance: []byte(env)}
	}
	for _, c := range []struct {
		src, dst string
		want     verdict
	}{
		{"", "", same}, {"e", "e", same}, {"e", "", same}, {"", "e", same}, {"e", "f", differs},
	} {
		if got, why := judgeProvider(v(c.src), v(c.dst)); got != c.want {
			t.Errorf("judgeProvider(provenance %q, %q) = %v (%s), want %v", c.src, c.dst, got, why, c.want)
		}
		m := func(env string) registry.ModuleVersion {
			return registry.ModuleVersion{ArchiveDigest: "a", Provenance: []byte(env)}
		}
		if got, why := judgeModule(m(c.src), m(c.dst)); got != c.want {
			t.Errorf("judgeModule(provenance %q, %q) = %v (%s), want %v", c.src, c.dst, got, why, c.want)
		}
	}
	// A mirrored version the target holds without the provenance a
	// bundle brought to the source gains it (outdated).
	for _, c := range []struct {
		src, dst string
		want     verdict
	}{
		{"", "", same}, {"e", "e", same}, {"e", "", outdated}, {"", "e", same}, {"e", "f", differs},
	} {
		mv := func(env string) registry.MirroredVersion {
			return registry.MirroredVersion{ProviderVersion: registry.ProviderVersion{SHASumsDigest: "s", Provenance: []byte(env)}}
		}
		if got, why := judgeMirrored(mv(c.src), mv(c.dst)); got != c.want {
			t.Errorf("judgeMirrored(provenance %q, %q) = %v (%s), want %v", c.src, c.dst, got, why, c.want)
		}
	}
	other := ciClaims
	other.Repository = "evil/infra"
	tok := func(c *registry.CIClaims) registry.Token { return registry.Token{ID: "t", Hash: "h", CI: c} }
	if got, _ := judgeToken(tok(&ciClaims), tok(&other)); got != differs {
		t.Errorf("tokens with other CI claims: %v, want differs", got)
	}
	if got, _ := judgeToken(tok(&ciClaims), tok(&ciClaims)); got != same {
		t.Errorf("tokens with the same CI claims: %v, want same", got)
	}
}
