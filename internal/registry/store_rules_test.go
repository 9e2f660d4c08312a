package registry

import (
	"testing"
	"time"

	version "github.com/hashicorp/go-version"
)

func TestAuditLimit(t *testing.T) {
	for in, want := range map[int]int{-5: DefaultAuditLimit, 0: DefaultAuditLimit, 1: 1, 999: 999, 1000: 1000, 1001: MaxAuditLimit, 1 << 40: MaxAuditLimit} {
		if got := AuditLimit(in); got != want {
			t.Errorf("AuditLimit(%d) = %d, want %d", in, got, want)
		}
	}
}

func TestModulePage(t *testing.T) {
	for _, c := range []struct{ limit, offset, wantLimit, wantOffset int }{
		{0, 0, DefaultModuleLimit, 0}, {-1, -7, DefaultModuleLimit, 0}, {5, 10, 5, 10},
	} {
		l, o := ModulePage(ModuleFilter{Limit: c.limit, Offset: c.offset})
		if l != c.wantLimit || o != c.wantOffset {
			t.Errorf("ModulePage(limit %d, offset %d) = %d, %d; want %d, %d", c.limit, c.offset, l, o, c.wantLimit, c.wantOffset)
		}
	}
}

func TestNewerLatestModule(t *testing.T) {
	for _, c := range []struct {
		v, cur string
		want   bool
	}{
		{"1.1.0", "1.0.0", true},
		{"1.0.0", "1.1.0", false},
		{"1.0.0", "2.0.0-beta", true}, // a release beats every pre-release
		{"2.0.0-beta", "1.0.0", false},
		{"2.0.0-beta.2", "2.0.0-beta.1", true}, // among pre-releases the higher wins
		{"1.0.0", "1.0.0", false},
	} {
		if got := NewerLatestModule(version.Must(version.NewSemver(c.v)), version.Must(version.NewSemver(c.cur))); got != c.want {
			t.Errorf("NewerLatestModule(%s, %s) = %v, want %v", c.v, c.cur, got, c.want)
		}
	}
}

func TestNewerLatestProvider(t *testing.T) {
	for _, c := range []struct {
		v, cur string
		want   bool
	}{
		{"1.1.0", "1.0.0", true},
		{"1.0.0", "1.1.0", false},
		{"2.0.0-beta", "1.0.0", true}, // providers: precedence alone
		{"1.0.0", "", true},           // no latest yet
		{"1.0.0", "1.0.0", false},
	} {
		if got := NewerLatestProvider(version.Must(version.NewSemver(c.v)), c.cur); got != c.want {
			t.Errorf("NewerLatestProvider(%s, %q) = %v, want %v", c.v, c.cur, got, c.want)
		}
	}
}

func TestCheckPlatforms(t *testing.T) {
	v := ProviderVersion{Namespace: "acme", Type: "cloud", Version: "1.0.0", Platforms: []Platform{
		{OS: "linux", Arch: "amd64"}, {OS: "linux", Arch: "arm64"}, {OS: "darwin", Arch: "amd64"},
	}}
	if err := CheckPlatforms(v); err != nil {
		t.Fatalf("distinct platforms: %v", err)
	}
	v.Platforms = append(v.Platforms, Platform{OS: "linux", Arch: "arm64"})
	if err := CheckPlatforms(v); !IsKind(err, Invalid) {
		t.Fatalf("linux_arm64 twice: %v, want Invalid", err)
	}
}

func TestCheckStoredTime(t *testing.T) {
	for _, tm := range []time.Time{time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC), time.Now()} {
		if err := CheckStoredTime(tm, "t"); err != nil {
			t.Errorf("CheckStoredTime(%v) = %v", tm, err)
		}
	}
	for _, tm := range []time.Time{time.Time{}.Add(-time.Hour), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		if err := CheckStoredTime(tm, "t"); !IsKind(err, Invalid) {
			t.Errorf("CheckStoredTime(%v) = %v, want Invalid", tm, err)
		}
	}
}

// TestKeySnapshotDigest pins the digest: indexes store it, so it must
// never change (the values were computed independently of this code).
func TestKeySnapshotDigest(t *testing.T) {
	k := SigningKey{Namespace: "acme", KeyID: "0123456789ABCDEF", Fingerprint: "FP", ASCIIArmor: "armor",
		CreatedAt: time.Date(2024, 1, 2, 3, 4, 5, 123456789, time.UTC)}
	if got, want := KeySnapshotDigest("acme", k), "a9ebb154f1eeb10256330d49c3d131465722ec5e9e20f1aa845241a2e492f017"; got != want {
		t.Errorf("digest without expiry = %s, want %s", got, want)
	}
	k.ExpiresAt = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if got, want := KeySnapshotDigest("acme", k), "7498353ee0fb61e0cc77af1fb95299f024dc2b263e9d887ba001570d81c3f0c6"; got != want {
		t.Errorf("digest with expiry = %s, want %s", got, want)
	}
	if KeySnapshotDigest("other", k) == KeySnapshotDigest("acme", k) {
		t.Error("the digest ignores the version's namespace")
	}
}
