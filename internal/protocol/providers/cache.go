package providers

import (
	"strings"

	"trove.dev/trove/internal/downloads"
	"trove.dev/trove/internal/respcache"
)

// provKey names a provider: host is "" for Trove's own, else the
// normalized host name of the upstream registry a mirrored provider comes
// from. Keys are always normalized names: entries are inserted only after
// a request's names validated, so a cache hit on the raw path values
// implies they were valid and normalized.
type provKey struct{ host, ns, typ string }

// clone returns k with its own copies of the strings, so that a cache
// entry never pins the memory of the request it was made for.
func (k provKey) clone() provKey {
	return provKey{host: strings.Clone(k.host), ns: strings.Clone(k.ns), typ: strings.Clone(k.typ)}
}

// docKey names a document of a provider: the zero docKey is the versions
// document, one with os and arch the download document of one platform of
// a version, and those of kind docMirrorIndex and docMirrorVersion (of
// version) the network mirror's documents.
type docKey struct {
	kind              docKind
	version, os, arch string
}

// docKind tells the protocol documents from the network mirror's.
type docKind uint8

const (
	docProtocol docKind = iota
	docMirrorIndex
	docMirrorVersion
)

func (k docKey) clone() docKey {
	return docKey{kind: k.kind, version: strings.Clone(k.version), os: strings.Clone(k.os), arch: strings.Clone(k.arch)}
}

// urls is what a cached download document says about the signed URLs it
// embeds (the zero value for versions documents).
type urls struct {
	// expiry is their expiry (Unix seconds).
	expiry int64
	// private says that the private signer signed them.
	private bool
	// counted remembers the download key last counted for the
	// document (a download document's; nil for the others), so that the
	// next download by the same consumer and client is counted without
	// hashing the key (downloads.Memo).
	counted *downloads.Memo
}

// cache holds the rendered documents of every provider, by provider.
type cache = respcache.Cache[provKey, docKey, urls]

// entry is one rendered document.
type entry = respcache.Entry[urls]

// downloadState returns how a cached download document e that the cache
// does not consider expired may be used by a request for which the
// signer (the private one if private) issues URLs expiring at expiry,
// when e was signed by another signer or for another expiry, at now
// (Unix seconds: the time the request arrived, reqtime.Of, or the clock
// of WithClock; a hit reads no clock of its own). One signed by the
// other signer, or for a later expiry, is not used. One signed in an
// earlier URL window by the same signer is served stale (while one
// background render replaces it) only in the first eighth of the window
// that followed, so that the URLs of a served document always keep at
// least 7/16 of their lifetime; later it is not used.
func downloadState(e *entry, expiry int64, private bool, now int64) respcache.State {
	if e.Value.private != private || e.Value.expiry > expiry {
		return respcache.Expired
	}
	// expiry - e.Value.expiry is a whole number of half lifetimes.
	if left := e.Value.expiry - now; 8*left >= 7*(expiry-e.Value.expiry) {
		return respcache.Stale
	}
	return respcache.Expired
}
