// Package apispec defines Trove's management API once: its routes and the
// JSON documents it exchanges. The server (internal/api) and the Go client
// (client) both build on it, so they cannot drift apart.
//
// Every route lives under Prefix and takes "Authorization: Bearer <token>".
// Errors are {"errors": ["..."]} with a 4xx/5xx status.
package apispec

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
)

// Prefix is the path under which the management API is mounted.
const Prefix = "/api/v1"

// Route patterns (net/http ServeMux syntax) of the management API.
const (
	RouteNamespaces = "/api/v1/namespaces"             // GET list, POST create
	RouteNamespace  = "/api/v1/namespaces/{namespace}" // GET, PATCH, DELETE

	RouteKeys = "/api/v1/namespaces/{namespace}/keys"          // GET list, POST add
	RouteKey  = "/api/v1/namespaces/{namespace}/keys/{key_id}" // GET, DELETE

	RouteTokens = "/api/v1/tokens"      // GET list (?namespace= or ?user=), POST create
	RouteToken  = "/api/v1/tokens/{id}" // GET, PATCH (expire), DELETE (revoke)

	RouteProviders       = "/api/v1/namespaces/{namespace}/providers"                           // GET list
	RouteProvider        = "/api/v1/namespaces/{namespace}/providers/{type}"                    // GET with versions
	RouteProviderVersion = "/api/v1/namespaces/{namespace}/providers/{type}/versions/{version}" // GET; POST publishes (multipart)
	// RouteProviderProvenance answers the version's signed provenance:
	// the DSSE envelope JSON (docs/provenance.md).
	RouteProviderProvenance = RouteProviderVersion + "/provenance" // GET
	// RouteProviderDocs is a provider version's documentation archive:
	// PUT uploads it (the body is the .tar.gz or .zip, see
	// ProviderDocsResult), GET answers it.
	RouteProviderDocs = "/api/v1/namespaces/{namespace}/providers/{type}/versions/{version}/docs"

	RouteWhoAmI = "/api/v1/whoami" // GET the calling token
)

// PublishFileField is the multipart form field name of every file in a
// publish request; each part's filename is the file's name in the
// goreleaser dist folder. Send SHA256SUMS, its .sig and the manifest
// before the zips: the server checks the signature before it accepts any
// archive bytes.
const PublishFileField = "file"

// Namespace is a namespace document.
type Namespace struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Visibility  string    `json:"visibility"` // "public" or "private"
	CreatedAt   time.Time `json:"created_at"`
}

// CreateNamespaceRequest creates a namespace.
type CreateNamespaceRequest struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Visibility is "public" or "private"; "" means private.
	Visibility string `json:"visibility,omitempty"`
}

// UpdateNamespaceRequest changes a namespace's mutable fields.
type UpdateNamespaceRequest struct {
	Description *string `json:"description,omitempty"`
	Visibility  *string `json:"visibility,omitempty"` // "public" or "private"
}

// NamespaceList is the answer of GET RouteNamespaces.
type NamespaceList struct {
	Namespaces []Namespace `json:"namespaces"`
}

// SigningKey is a namespace's GPG public key.
type SigningKey struct {
	Namespace   string     `json:"namespace"`
	KeyID       string     `json:"key_id"`
	Fingerprint string     `json:"fingerprint"`
	ASCIIArmor  string     `json:"ascii_armor"`
	CreatedAt   time.Time  `json:"created_at"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
	// Managed is true for the namespace's registry-managed key: Trove
	// generated it, keeps its private half (never shown) and signs with it
	// the releases published without a signature.
	Managed bool `json:"managed"`
}

// AddSigningKeyRequest adds a key to a namespace: either ASCIIArmor, an
// ASCII-armored public key, or Managed, which makes Trove generate the
// namespace's registry-managed key (one per namespace) and answer its
// public half.
type AddSigningKeyRequest struct {
	ASCIIArmor string `json:"ascii_armor,omitempty"`
	Managed    bool   `json:"managed,omitempty"`
}

// SigningKeyList is the answer of GET RouteKeys.
type SigningKeyList struct {
	Keys []SigningKey `json:"keys"`
}

// Token describes a token; the secret is never part of it.
type Token struct {
	ID string `json:"id"`
	// Namespaces are the namespaces the token is bound to, sorted; absent
	// for a global token. Only those the caller may read are listed:
	// HiddenNamespaces counts the others.
	Namespaces []string `json:"namespaces,omitempty"`
	// HiddenNamespaces is how many namespaces of the token the caller may
	// not read and are therefore not listed. A token with no Namespaces
	// is global only when this is zero too.
	HiddenNamespaces int `json:"hidden_namespaces,omitempty"`
	// Namespace is the one namespace of a token bound to exactly one,
	// absent otherwise.
	//
	// Deprecated: use Namespaces; kept for clients of the API before
	// tokens were bound to sets of namespaces.
	Namespace   string     `json:"namespace,omitempty"`
	User        string     `json:"user,omitempty"` // the user a personal token acts for
	Scopes      []string   `json:"scopes"`
	Description string     `json:"description,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
	RevokedAt   *time.Time `json:"revoked_at,omitempty"`
}

// NamespaceSet returns the namespaces the token is bound to: Namespaces,
// or the one Namespace of an answer from a Trove that predates namespace
// sets; none for a global token.
func (t Token) NamespaceSet() []string {
	if len(t.Namespaces) == 0 && t.Namespace != "" {
		return []string{t.Namespace}
	}
	return t.Namespaces
}

// Global reports whether the token applies to every namespace: it lists
// none and hides none.
func (t Token) Global() bool { return len(t.NamespaceSet()) == 0 && t.HiddenNamespaces == 0 }

// NamespacesText describes the namespaces of t for people: "every
// namespace", or the listed names and how many more are hidden.
func (t Token) NamespacesText() string {
	if t.Global() {
		return "every namespace"
	}
	set := t.NamespaceSet()
	parts := slices.Clone(set)
	switch {
	case t.HiddenNamespaces == 1:
		parts = append(parts, "1 namespace you may not see")
	case t.HiddenNamespaces > 1:
		parts = append(parts, fmt.Sprintf("%d namespaces you may not see", t.HiddenNamespaces))
	}
	if len(set) == 1 && t.HiddenNamespaces == 0 {
		return "namespace " + set[0]
	}
	return "namespaces " + strings.Join(parts, ", ")
}

// CreateTokenRequest creates a token bound to Namespaces; none makes a
// global token (global admins only). ExpiresAt, if set, must be in the
// future. User makes a personal token of that user, which carries the
// user's rights narrowed by Namespaces, Scopes and ExpiresAt: global
// admins create them for anyone, users for themselves with a personal
// token, never wider or longer-lived than the token they call with.
type CreateTokenRequest struct {
	Namespaces []string `json:"namespaces,omitempty"`
	// Namespace binds the token to one namespace, as Namespaces with one
	// element; a request with both is refused.
	//
	// Deprecated: use Namespaces.
	Namespace   string     `json:"namespace,omitempty"`
	User        string     `json:"user,omitempty"`
	Scopes      []string   `json:"scopes"`
	Description string     `json:"description,omitempty"`
	ExpiresAt   *time.Time `json:"expires_at,omitempty"`
}

// CreatedToken is the answer of POST RouteTokens: the only time the secret
// is ever shown.
type CreatedToken struct {
	Token  Token  `json:"token"`
	Secret string `json:"secret"`
}

// TokenList is the answer of GET RouteTokens.
type TokenList struct {
	Tokens []Token `json:"tokens"`
}

// Provider summarises a provider in a listing.
type Provider struct {
	Namespace     string    `json:"namespace"`
	Type          string    `json:"type"`
	VersionCount  int       `json:"version_count"`
	LatestVersion string    `json:"latest_version"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// ProviderList is the answer of GET RouteProviders.
type ProviderList struct {
	Providers []Provider `json:"providers"`
}

// ProviderDetail is the answer of GET RouteProvider: versions newest first.
type ProviderDetail struct {
	Namespace string            `json:"namespace"`
	Type      string            `json:"type"`
	Versions  []ProviderVersion `json:"versions"`
}

// ProviderVersion is one published version.
type ProviderVersion struct {
	Namespace     string     `json:"namespace"`
	Type          string     `json:"type"`
	Version       string     `json:"version"`
	Protocols     []string   `json:"protocols"`
	Platforms     []Platform `json:"platforms"`
	SHASumsDigest string     `json:"shasums_digest"`
	KeyID         string     `json:"key_id"`
	PublishedAt   time.Time  `json:"published_at"`
	// Downloads is the sum of the platforms' Downloads.
	Downloads int64 `json:"downloads"`
	// DocsDigest is the SHA-256 of the version's documentation archive
	// (GET RouteProviderDocs) and DocsSize its size; both absent while
	// the version has no documentation.
	DocsDigest string `json:"docs_digest,omitempty"`
	DocsSize   int64  `json:"docs_size,omitempty"`
	// Deprecation is present while the version is deprecated, Revocation
	// while it is revoked (see RouteProviderDeprecation).
	Deprecation *Deprecation `json:"deprecation,omitempty"`
	Revocation  *Revocation  `json:"revocation,omitempty"`
}

// Platform is one package of a provider version.
type Platform struct {
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	Filename string `json:"filename"`
	SHASum   string `json:"shasum"`
	Size     int64  `json:"size"`
	// Downloads counts the providers.v1 download documents of this
	// platform answered (what Terraform and OpenTofu fetch once per
	// installation): the index's count plus what the answering replica
	// has not written to it yet (see docs/api.md).
	Downloads int64 `json:"downloads"`
}

// PublishResult is the answer of a publish: Created is false when the very
// same release was already published (an idempotent retry).
type PublishResult struct {
	Created bool            `json:"created"`
	Version ProviderVersion `json:"version"`
}

// MaxProviderDocsBytes bounds the documentation archive of a provider
// version (PUT RouteProviderDocs).
const MaxProviderDocsBytes = registry.MaxProviderDocsBytes

// ProviderDocsResult is the answer of PUT RouteProviderDocs: 201 with
// Created true when the documentation was stored, 200 with Created false
// when the version has that very archive already (an idempotent retry).
type ProviderDocsResult struct {
	Created   bool   `json:"created"`
	Namespace string `json:"namespace"`
	Type      string `json:"type"`
	Version   string `json:"version"`
	Digest    string `json:"digest"` // SHA-256 of the archive
	Size      int64  `json:"size"`
	// PageCount is the number of pages, Pages the pages: the overview,
	// then resources, data-sources, ephemeral-resources, functions and
	// guides, each ordered by slug.
	PageCount int                `json:"page_count"`
	Pages     []ProviderDocsPage `json:"pages"`
}

// ProviderDocsPage is one page of a provider version's documentation.
type ProviderDocsPage struct {
	Category    string `json:"category"` // overview, resources, data-sources, ephemeral-resources, functions, guides
	Slug        string `json:"slug"`     // "index" for the overview
	Title       string `json:"title"`
	Subcategory string `json:"subcategory,omitempty"`
}
