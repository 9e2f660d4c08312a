package registry

import "strings"

// PackageOrigin names the package of one platform of a mirrored provider
// version: where the mirror fetches it from. Signed file URLs of mirrored
// packages carry it (String), so that a package is fetched from the
// upstream of the provider that was asked for, not from whichever
// mirrored provider happens to list the same digest.
type PackageOrigin struct {
	Host, Namespace, Type, Version, OS, Arch string
}

// String returns "host/namespace/type/version/os_arch".
func (o PackageOrigin) String() string {
	return o.Host + "/" + o.Namespace + "/" + o.Type + "/" + o.Version + "/" + o.OS + "_" + o.Arch
}

// ParsePackageOrigin parses what String returns. It checks the shape
// only (five non-empty parts, a platform of two): the names are looked up
// in the index, which holds only valid ones.
func ParsePackageOrigin(s string) (PackageOrigin, error) {
	parts := strings.Split(s, "/")
	if len(parts) != 5 || len(s) > 512 {
		return PackageOrigin{}, Errorf(Invalid, "%q is not a package origin (host/namespace/type/version/os_arch)", Elide(s))
	}
	os, arch, ok := strings.Cut(parts[4], "_")
	o := PackageOrigin{Host: parts[0], Namespace: parts[1], Type: parts[2], Version: parts[3], OS: os, Arch: arch}
	if !ok || o.Host == "" || o.Namespace == "" || o.Type == "" || o.Version == "" || o.OS == "" || o.Arch == "" {
		return PackageOrigin{}, Errorf(Invalid, "%q is not a package origin (host/namespace/type/version/os_arch)", Elide(s))
	}
	return o, nil
}
