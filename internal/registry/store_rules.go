package registry

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"time"

	version "github.com/hashicorp/go-version"
)

// The domain rules every index backend applies when it stores or lists
// data. They live here, not in a backend, so that all backends agree.

// Bounds of an audit log listing (AuditFilter.Limit).
const (
	DefaultAuditLimit = 100
	MaxAuditLimit     = 1000
)

// AuditLimit returns the number of events a listing asked for limit
// returns: DefaultAuditLimit for limit <= 0, at most MaxAuditLimit.
func AuditLimit(limit int) int {
	if limit <= 0 {
		return DefaultAuditLimit
	}
	return min(limit, MaxAuditLimit)
}

// DefaultModuleLimit is the page size of a module listing that asks for
// none (ModuleFilter.Limit <= 0).
const DefaultModuleLimit = 100

// ModulePage returns the limit and offset of a module listing: Limit <= 0
// means DefaultModuleLimit, a negative Offset counts as 0.
func ModulePage(f ModuleFilter) (limit, offset int) {
	limit = f.Limit
	if limit <= 0 {
		limit = DefaultModuleLimit
	}
	return limit, max(f.Offset, 0)
}

// NewerLatestModule reports whether v should replace cur as a module's
// latest version, as modules.v1 means "latest": a release beats every
// pre-release, and otherwise the higher version wins. A module's summary
// names a pre-release only when the module has no release.
func NewerLatestModule(v, cur *version.Version) bool {
	if release := v.Prerelease() == ""; release != (cur.Prerelease() == "") {
		return release
	}
	return v.GreaterThan(cur)
}

// NewerLatestProvider reports whether v should replace the stored latest
// version cur of a provider: the higher version by semver precedence
// wins, and any valid version replaces one that does not parse.
func NewerLatestProvider(v *version.Version, cur string) bool {
	c, err := version.NewSemver(cur)
	return err != nil || v.GreaterThan(c)
}

// CheckPlatforms refuses a provider version that lists a platform (an OS
// and architecture pair) twice.
func CheckPlatforms(v ProviderVersion) error {
	seen := make(map[[2]string]bool, len(v.Platforms))
	for _, p := range v.Platforms {
		if seen[[2]string{p.OS, p.Arch}] {
			return Errorf(Invalid, "provider %s/%s version %s lists platform %s_%s twice",
				v.Namespace, v.Type, v.Version, p.OS, p.Arch)
		}
		seen[[2]string{p.OS, p.Arch}] = true
	}
	return nil
}

// CheckStoredTime refuses a time an index cannot store: one outside the
// years 1 to 9999. field names it in the message.
func CheckStoredTime(t time.Time, field string) error {
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		return Errorf(Invalid, "%s %s is out of range", field, t.UTC().Format(time.RFC3339))
	}
	return nil
}

// KeySnapshotDigest returns the identity of the snapshot of signing key k
// that a provider version of namespace keeps: the SHA-256 of every field
// an index stores, each length-prefixed, times in Unix microseconds (the
// precision an index keeps). Versions signed by the same key share one
// snapshot.
func KeySnapshotDigest(namespace string, k SigningKey) string {
	h := sha256.New()
	for _, s := range []string{namespace, k.Namespace, k.KeyID, k.Fingerprint, k.ASCIIArmor} {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(s))))
		h.Write([]byte(s))
	}
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(k.CreatedAt.UnixMicro())))
	if !k.ExpiresAt.IsZero() {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(k.ExpiresAt.UnixMicro())))
	}
	return hex.EncodeToString(h.Sum(nil))
}
