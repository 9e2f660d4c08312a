// Package provenance writes and checks the provenance of provider
// releases and module versions: an in-toto Statement v1 whose predicate is
// SLSA Provenance v1, with one subject per archive (its file name and
// sha256 digest), signed
// in a DSSE envelope with an OpenPGP key (a namespace's Trove-managed
// signing key).
//
// The builder of a keyless publish is the CI system: its ID is the OIDC
// issuer, and the build's external parameters are the repository, ref,
// workflow, commit and run the ID token's claims name (CIFromClaims). A
// publish with a user's or a service token's credentials names that
// publisher instead (Identity).
//
// DSSE (the envelope, its pre-authentication encoding and the verification
// of its signatures) is github.com/secure-systems-lab/go-securesystemslib/dsse;
// the signature inside is a binary detached OpenPGP signature over the PAE
// bytes, and the signature's keyid is the key's fingerprint.
package provenance

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/secure-systems-lab/go-securesystemslib/dsse"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/signing"
)

// Media and type URIs of the formats.
const (
	// PayloadType is the DSSE payload type of an in-toto statement.
	PayloadType = "application/vnd.in-toto+json"
	// StatementType is the _type of an in-toto Statement v1.
	StatementType = "https://in-toto.io/Statement/v1"
	// PredicateType is SLSA Provenance v1.
	PredicateType = "https://slsa.dev/provenance/v1"
	// BuildTypeKeyless is the buildType of a release published from CI
	// with a keyless (OIDC) token.
	BuildTypeKeyless = "https://trove.dev/provenance/keyless-publish/v1"
	// BuildTypePublish is the buildType of a release published with a
	// user's or service token's credentials.
	BuildTypePublish = "https://trove.dev/provenance/publish/v1"
)

// MaxEnvelopeBytes bounds an envelope Verify reads: a statement names one
// subject per archive and a few claims, far below it.
const MaxEnvelopeBytes = 1 << 20

// maxClaimLength bounds each claim copied into a statement.
const maxClaimLength = 1024

// Subject is an artifact the statement is about.
type Subject struct {
	Name   string            `json:"name"`
	Digest map[string]string `json:"digest"`
}

// Statement is an in-toto Statement v1 with a SLSA Provenance v1
// predicate.
type Statement struct {
	Type          string     `json:"_type"`
	Subject       []Subject  `json:"subject"`
	PredicateType string     `json:"predicateType"`
	Predicate     Provenance `json:"predicate"`
}

// Provenance is the SLSA Provenance v1 predicate.
type Provenance struct {
	BuildDefinition BuildDefinition `json:"buildDefinition"`
	RunDetails      RunDetails      `json:"runDetails"`
}

// BuildDefinition is SLSA's buildDefinition.
type BuildDefinition struct {
	BuildType          string            `json:"buildType"`
	ExternalParameters map[string]string `json:"externalParameters"`
	InternalParameters map[string]string `json:"internalParameters,omitempty"`
}

// RunDetails is SLSA's runDetails.
type RunDetails struct {
	Builder  Builder  `json:"builder"`
	Metadata Metadata `json:"metadata"`
}

// Builder is SLSA's builder: who ran the build.
type Builder struct {
	ID string `json:"id"`
}

// Metadata is SLSA's run metadata.
type Metadata struct {
	InvocationID string `json:"invocationId,omitempty"`
	FinishedOn   string `json:"finishedOn,omitempty"`
}

// CI is what a keyless publish's ID token says about the build; Issuer
// is the builder ID.
type CI = registry.CIClaims

// CIFromClaims reads the build's claims of an ID token, in GitHub Actions'
// names (repository, ref, workflow_ref or workflow, sha, run_id) or
// GitLab CI's (project_path, ref, ci_config_ref_uri, sha, pipeline_id).
// Claims that are not strings (or numbers, for run IDs) are left out.
func CIFromClaims(issuer string, claims map[string]any) CI {
	first := func(names ...string) string {
		for _, n := range names {
			switch v := claims[n].(type) {
			case string:
				if v != "" {
					return clip(v)
				}
			case json.Number:
				return clip(v.String())
			case float64:
				return clip(fmt.Sprintf("%.0f", v))
			}
		}
		return ""
	}
	return CI{
		Issuer:     clip(issuer),
		Repository: first("repository", "project_path"),
		Ref:        first("ref"),
		Workflow:   first("workflow_ref", "workflow", "ci_config_ref_uri"),
		Commit:     first("sha"),
		RunID:      first("run_id", "pipeline_id"),
	}
}

// clip bounds a claim's length and drops control characters.
func clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) > maxClaimLength {
		s = strings.ToValidUTF8(s[:maxClaimLength], "")
	}
	return s
}

// Identity is the publisher of a release that was not published from CI
// with a keyless token.
type Identity struct {
	User    string // the user of a personal token; empty for a service token
	TokenID string
}

// Release names what was published: a provider release (Type) or a
// module version (Name and System).
type Release struct {
	Namespace, Type, Version string
	// Name and System, when System is set, make it the release of module
	// Namespace/Name/System; Type is then unused.
	Name, System string
	// Archives maps each archive's file name to its hex sha256 digest.
	Archives    map[string]string
	PublishedAt time.Time
}

// TroveBuilderID is the builder ID of a publish without CI claims: the
// Trove that accepted it.
const TroveBuilderID = "https://trove.dev/publish"

// NewKeyless returns the statement of a keyless publish of rel by ci.
func NewKeyless(rel Release, ci CI) Statement {
	ext := map[string]string{
		"repository": ci.Repository, "ref": ci.Ref, "workflow": ci.Workflow,
		"commit": ci.Commit, "version": rel.Version,
	}
	kind, address := rel.address()
	ext[kind] = address
	for k, v := range ext {
		if v == "" {
			delete(ext, k)
		}
	}
	return statement(rel, BuildTypeKeyless, ci.Issuer, ext, ci.RunID)
}

// NewPublish returns the statement of a publish of rel by who.
func NewPublish(rel Release, who Identity) Statement {
	ext := map[string]string{"version": rel.Version, "token": who.TokenID}
	kind, address := rel.address()
	ext[kind] = address
	if who.User != "" {
		ext["user"] = who.User
	}
	return statement(rel, BuildTypePublish, TroveBuilderID, ext, "")
}

// address returns the external parameter that names what rel releases:
// "provider" with namespace/type, or "module" with namespace/name/system.
func (rel Release) address() (kind, address string) {
	if rel.System != "" {
		return "module", rel.Namespace + "/" + rel.Name + "/" + rel.System
	}
	return "provider", rel.Namespace + "/" + rel.Type
}

func statement(rel Release, buildType, builder string, ext map[string]string, run string) Statement {
	s := Statement{Type: StatementType, PredicateType: PredicateType, Subject: []Subject{}}
	for _, name := range slices.Sorted(mapKeys(rel.Archives)) {
		s.Subject = append(s.Subject, Subject{Name: name, Digest: map[string]string{"sha256": rel.Archives[name]}})
	}
	s.Predicate.BuildDefinition = BuildDefinition{BuildType: buildType, ExternalParameters: ext}
	s.Predicate.RunDetails.Builder.ID = builder
	s.Predicate.RunDetails.Metadata.InvocationID = run
	if !rel.PublishedAt.IsZero() {
		s.Predicate.RunDetails.Metadata.FinishedOn = rel.PublishedAt.UTC().Format(time.RFC3339)
	}
	return s
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// SignFunc signs data (the PAE bytes) with an OpenPGP key and returns that
// key and the binary detached signature; signing.Managed.Sign with the
// namespace bound is one.
type SignFunc func(ctx context.Context, data []byte) (registry.SigningKey, []byte, error)

// Sign encodes s and signs it into a DSSE envelope, returned as JSON.
func Sign(ctx context.Context, s Statement, sign SignFunc) ([]byte, registry.SigningKey, error) {
	body, err := json.Marshal(s)
	if err != nil {
		return nil, registry.SigningKey{}, err
	}
	signer := &pgpSigner{sign: sign}
	es, err := dsse.NewEnvelopeSigner(signer)
	if err != nil {
		return nil, registry.SigningKey{}, err
	}
	env, err := es.SignPayload(ctx, PayloadType, body)
	if err != nil {
		return nil, registry.SigningKey{}, err
	}
	// The library asks for the key ID before signing; the key is known
	// only after: name it now.
	for i := range env.Signatures {
		env.Signatures[i].KeyID = signer.key.Fingerprint
	}
	out, err := json.Marshal(env)
	return out, signer.key, err
}

type pgpSigner struct {
	sign SignFunc
	key  registry.SigningKey
}

func (p *pgpSigner) Sign(ctx context.Context, data []byte) ([]byte, error) {
	key, sig, err := p.sign(ctx, data)
	if err != nil {
		return nil, err
	}
	p.key = key
	return sig, nil
}

func (p *pgpSigner) KeyID() (string, error) { return p.key.Fingerprint, nil }

// Verifier is a dsse.Verifier of binary detached OpenPGP signatures by one
// key, judged at Now (zero: the time of the check).
type Verifier struct {
	Key registry.SigningKey
	Now time.Time
}

// Verify checks that sig is a signature of data by v.Key.
func (v Verifier) Verify(_ context.Context, data, sig []byte) error {
	now := v.Now
	if now.IsZero() {
		now = time.Now()
	}
	_, err := signing.VerifyDetachedAt([]registry.SigningKey{v.Key}, data, sig, now)
	return err
}

// KeyID is the key's fingerprint, the keyid of the envelope's signature.
func (v Verifier) KeyID() (string, error) { return v.Key.Fingerprint, nil }

// Public returns nil: an OpenPGP key has no crypto.PublicKey of one type;
// KeyID identifies it.
func (v Verifier) Public() crypto.PublicKey { return nil }

// Verified is a checked envelope.
type Verified struct {
	Statement Statement
	Key       registry.SigningKey // the key whose signature verified
}

// Verify parses envelope (DSSE JSON), checks that one of its signatures
// is by one of keys over the PAE of its payload (dsse.EnvelopeVerifier),
// and that the payload is an in-toto Statement v1 with a SLSA Provenance
// v1 predicate whose subjects are well formed. Keys' expiry and revocation
// are judged at now; zero means now. Errors are registry.Invalid with a
// message for the person checking a release.
func Verify(ctx context.Context, envelope []byte, keys []registry.SigningKey, now time.Time) (Verified, error) {
	if len(envelope) > MaxEnvelopeBytes {
		return Verified{}, registry.Errorf(registry.TooLarge, "the provenance envelope is %d bytes, more than the %d it may have", len(envelope), MaxEnvelopeBytes)
	}
	var env dsse.Envelope
	if err := strictJSON(envelope, &env); err != nil {
		return Verified{}, registry.Errorf(registry.Invalid, "the provenance is not a DSSE envelope (JSON with payloadType, payload, signatures): %v", err)
	}
	if env.PayloadType != PayloadType {
		return Verified{}, registry.Errorf(registry.Invalid, "the envelope's payloadType is %q, not %q", registry.Elide(env.PayloadType), PayloadType)
	}
	if len(env.Signatures) == 0 {
		return Verified{}, registry.Errorf(registry.Invalid, "the provenance envelope has no signatures")
	}
	if len(keys) == 0 {
		return Verified{}, registry.Errorf(registry.Invalid, "no public key to check the provenance's signature with")
	}
	var verifiers []dsse.Verifier
	for _, k := range keys {
		verifiers = append(verifiers, Verifier{Key: k, Now: now})
	}
	ev, err := dsse.NewMultiEnvelopeVerifier(1, verifiers...)
	if err != nil {
		return Verified{}, err
	}
	accepted, body, err := ev.VerifyAndDecode(ctx, &env)
	if err != nil || len(accepted) == 0 {
		ids := make([]string, 0, len(env.Signatures))
		for _, s := range env.Signatures {
			ids = append(ids, registry.Elide(s.KeyID))
		}
		return Verified{}, registry.Errorf(registry.Invalid, "the provenance's signature (keyid %s) does not verify with the given keys: the statement was changed after it was signed, or another key signed it",
			strings.Join(ids, ", "))
	}
	var out Verified
	for _, k := range keys {
		if k.Fingerprint == accepted[0].KeyID {
			out.Key = k
		}
	}
	if err := lenientJSON(body, &out.Statement); err != nil {
		return Verified{}, registry.Errorf(registry.Invalid, "the signed payload is not an in-toto statement: %v", err)
	}
	s := out.Statement
	if s.Type != StatementType || s.PredicateType != PredicateType {
		return Verified{}, registry.Errorf(registry.Invalid, "the signed statement is %q with predicate %q, not an in-toto Statement v1 with SLSA Provenance v1",
			registry.Elide(s.Type), registry.Elide(s.PredicateType))
	}
	if len(s.Subject) == 0 {
		return Verified{}, registry.Errorf(registry.Invalid, "the signed statement names no subjects")
	}
	for _, sub := range s.Subject {
		d := sub.Digest["sha256"]
		if sub.Name == "" || !isSHA256(d) {
			return Verified{}, registry.Errorf(registry.Invalid, "the signed statement has a subject without a name or a sha256 digest (%q)", registry.Elide(sub.Name))
		}
	}
	return out, nil
}

// Digest returns the sha256 digest the statement records for the
// archive name, or "".
func (s Statement) Digest(name string) string {
	for _, sub := range s.Subject {
		if sub.Name == name {
			return sub.Digest["sha256"]
		}
	}
	return ""
}

// CheckArchive says whether the statement names the archive name with
// digest (hex sha256): nil, or an error saying what differs.
func (s Statement) CheckArchive(name, digest string) error {
	want := s.Digest(name)
	switch {
	case want == "":
		return registry.Errorf(registry.Invalid, "the provenance names no archive %s", name)
	case !strings.EqualFold(want, digest):
		return registry.Errorf(registry.Invalid, "%s has sha256 %s but the provenance records %s", name, digest, want)
	}
	return nil
}

func isSHA256(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == 32
}

// strictJSON decodes one JSON value into v, refusing unknown fields and
// trailing data.
func strictJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// lenientJSON decodes one JSON value into v, allowing fields v does
// not have (a later statement may carry more) but no trailing data.
func lenientJSON(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

// Payload returns the statement JSON an envelope carries, unverified: for
// showing what a refused envelope claims.
func Payload(envelope []byte) ([]byte, error) {
	var env dsse.Envelope
	if err := json.Unmarshal(envelope, &env); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(env.Payload)
}

// Kinds of release a statement names in its externalParameters
// (Statement.CheckSubject).
const (
	KindProvider = "provider" // address namespace/type
	KindModule   = "module"   // address namespace/name/system
)

// CheckSubject says whether the statement is about the release kind
// (KindProvider or KindModule) address at version: its externalParameters
// must name that address (namespace, type, name and system compare
// case-insensitively, as the registry protocols do), that version exactly,
// and no release of the other kind. The subjects' digests say which
// bytes the statement covers; this says which release they were
// published as, so that an envelope of acme/widget 1.0.0 is not accepted
// for the same bytes republished as another version or under another
// name. nil, or an Invalid error saying what differs.
func (s Statement) CheckSubject(kind, address, version string) error {
	other := KindModule
	switch kind {
	case KindProvider:
	case KindModule:
		other = KindProvider
	default:
		return registry.Errorf(registry.Internal, "unknown release kind %q", kind)
	}
	ext := s.Predicate.BuildDefinition.ExternalParameters
	got, ok := ext[kind]
	switch {
	case !ok || got == "":
		if o := ext[other]; o != "" {
			return registry.Errorf(registry.Invalid, "the provenance is about %s %s, not %s %s", other, registry.Elide(o), kind, address)
		}
		return registry.Errorf(registry.Invalid, "the provenance names no %s (externalParameters.%s), so it cannot be checked against %s %s", kind, kind, address, version)
	case !strings.EqualFold(got, address):
		return registry.Errorf(registry.Invalid, "the provenance is about %s %s, not %s", kind, registry.Elide(got), address)
	case ext[other] != "":
		return registry.Errorf(registry.Invalid, "the provenance names both %s %s and %s %s", kind, registry.Elide(got), other, registry.Elide(ext[other]))
	case ext["version"] != version:
		return registry.Errorf(registry.Invalid, "the provenance is about %s %s version %q, not version %s", kind, address, registry.Elide(ext["version"]), version)
	}
	return nil
}

// CheckArchiveName says whether name is the file name of an archive of
// the release the statement names, for a check that knows only the
// archive (trove verify, offline): a provider's
// terraform-provider-TYPE_VERSION_OS_ARCH.zip, or a module's
// NAME-SYSTEM-VERSION.tar.gz (or .zip), with the type, name, system and
// version of the statement's externalParameters. The namespace is not in
// the name: the key that signed the statement vouches for it.
func (s Statement) CheckArchiveName(name string) error {
	ext := s.Predicate.BuildDefinition.ExternalParameters
	version := ext["version"]
	if version == "" {
		return registry.Errorf(registry.Invalid, "the provenance names no version (externalParameters.version)")
	}
	if p := ext[KindProvider]; p != "" && ext[KindModule] == "" {
		parts := strings.Split(p, "/")
		if len(parts) != 2 || parts[1] == "" {
			return registry.Errorf(registry.Invalid, "the provenance names provider %q, not namespace/type", registry.Elide(p))
		}
		rest, ok := cutPrefixFold(name, "terraform-provider-"+parts[1]+"_"+version+"_")
		if !ok || !strings.HasSuffix(rest, ".zip") || strings.Count(rest, "_") != 1 {
			return registry.Errorf(registry.Invalid, "%s is no archive of provider %s %s, which the provenance is about (terraform-provider-%s_%s_OS_ARCH.zip)", name, registry.Elide(p), registry.Elide(version), registry.Elide(parts[1]), registry.Elide(version))
		}
		return nil
	}
	if m := ext[KindModule]; m != "" && ext[KindProvider] == "" {
		parts := strings.Split(m, "/")
		if len(parts) != 3 || parts[1] == "" || parts[2] == "" {
			return registry.Errorf(registry.Invalid, "the provenance names module %q, not namespace/name/system", registry.Elide(m))
		}
		base := parts[1] + "-" + parts[2] + "-" + version
		if !strings.EqualFold(name, base+".tar.gz") && !strings.EqualFold(name, base+".zip") {
			return registry.Errorf(registry.Invalid, "%s is no archive of module %s %s, which the provenance is about (%s.tar.gz)", name, registry.Elide(m), registry.Elide(version), registry.Elide(base))
		}
		return nil
	}
	return registry.Errorf(registry.Invalid, "the provenance names neither one provider nor one module (externalParameters.provider, .module)")
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}
