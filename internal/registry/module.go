package registry

import (
	"regexp"
	"strings"
	"time"
)

// ModuleVersion is one immutable, published version of a module
// namespace/name/system (for example acme/network/aws).
type ModuleVersion struct {
	Namespace string // an existing Trove namespace, normalized (lowercase)
	Name      string // normalized (lowercase); see ParseModuleName
	System    string // the target system, lowercase (aws, azurerm, ...)
	Version   string // canonical semver

	ArchiveDigest string // SHA-256 hex of the archive blob
	ArchiveFormat string // "tar.gz" or "zip": the suffix the download URL ends in
	ArchiveSize   int64

	// Metadata is the JSON document extracted at publish time (README,
	// inputs, outputs, required providers, submodules, examples); nil when
	// none was extracted. Its shape is owned by the modules package.
	Metadata []byte

	// Description is a one-line summary taken from the metadata (the
	// README's first paragraph), kept apart so that listings and search
	// can use it without reading Metadata.
	Description string

	// Origin records where the version came from (e.g. "git tag v1.2.0 at
	// <commit>"), free text for people.
	Origin      string
	PublishedAt time.Time

	// Deprecation, if not nil, marks the version deprecated, and
	// Revocation, if not nil, revoked (see Deprecation and Revocation).
	Deprecation *Deprecation
	Revocation  *Revocation

	// Provenance is the DSSE envelope (JSON) of the version's signed
	// in-toto provenance statement (package provenance), written once by
	// the publish. CreateModuleVersion stores it with the version; reads
	// leave it nil (store.Provenance reads it), as it is needed only when
	// asked for.
	Provenance []byte
}

// Module summarises a module for listings and search.
type Module struct {
	Namespace     string
	Name          string
	System        string
	LatestVersion string
	VersionCount  int
	Description   string // from the latest version's metadata, if any
	UpdatedAt     time.Time
}

// ModuleFilter selects modules in a listing or search.
type ModuleFilter struct {
	Namespace string // "" for all namespaces
	System    string // "" for all systems
	Query     string // case-insensitive substring of namespace, name or description; "" for all
	Offset    int
	Limit     int // <= 0 means a backend default (e.g. 100)
}

var moduleNamePattern = regexp.MustCompile(`^[0-9A-Za-z](?:[0-9A-Za-z_-]{0,62}[0-9A-Za-z])?$`)
var moduleSystemPattern = regexp.MustCompile(`^[0-9a-z]{1,64}$`)

// ParseModuleName validates a module name as the clients accept it and
// returns it lowercased: Trove looks module names up case-insensitively.
func ParseModuleName(name string) (string, error) {
	if err := ModuleNameLimit.Check(name); err != nil {
		return "", err
	}
	if !moduleNamePattern.MatchString(name) {
		return "", Errorf(Invalid, "invalid module name %q: use letters, digits, '-' and '_', starting and ending with a letter or digit, at most 64 characters", name)
	}
	return strings.ToLower(name), nil
}

// ParseModuleSystem validates a module's target system (lowercase letters
// and digits, as the clients require).
func ParseModuleSystem(system string) (string, error) {
	if err := ModuleSystemLimit.Check(system); err != nil {
		return "", err
	}
	if !moduleSystemPattern.MatchString(system) {
		return "", Errorf(Invalid, "invalid module system %q: use 1 to 64 lowercase letters and digits (e.g. aws)", system)
	}
	return system, nil
}
