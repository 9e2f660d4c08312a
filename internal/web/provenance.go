package web

import (
	"context"

	"trove.dev/trove/internal/provenance"
	"trove.dev/trove/internal/registry"
)

// provenanceData is what a provider or module page says of a version's provenance
// (docs/provenance.md): who built it, checked against the namespace's
// keys as `trove verify` checks it.
type provenanceData struct {
	// Verified reports a signature by one of the namespace's keys (of an
	// Imported version: one of the keys its bundle carried); Error says
	// why not.
	Verified bool
	// Imported reports provenance an air-gap bundle carried (a module
	// version it brought, a mirrored provider version): signed by the
	// exporting Trove's key, verified with the keys the bundle carried.
	Imported bool
	// Version is the version the statement is about, shown where a page
	// lists several (the mirror's).
	Version string
	Error   string
	KeyID   string
	// Keyless reports a build from CI (a keyless publish); otherwise the
	// statement names the publisher's token and user.
	Keyless                                 bool
	Builder, Repository, Ref, Workflow      string
	Commit, Run, User, Token, Finished, API string
}

// provenanceOf reads and checks the provenance of a provider version;
// nil for a version published without one.
func (s *Service) provenanceOf(ctx context.Context, ns, typ, version string, keys []registry.SigningKey) (*provenanceData, error) {
	envelope, err := s.opt.Index.ProviderProvenance(ctx, ns, typ, version)
	return s.checkProvenance(ctx, envelope, err, "/api/v1/namespaces/"+ns+"/providers/"+typ+"/versions/"+version+"/provenance", keys)
}

// moduleProvenanceOf reads and checks the provenance of a module version
// against keys, or against the keys a bundle import stored with it; nil
// for a version published without one.
func (s *Service) moduleProvenanceOf(ctx context.Context, ns, name, system, version string, keys []registry.SigningKey) (*provenanceData, error) {
	envelope, err := s.opt.Index.ModuleProvenance(ctx, ns, name, system, version)
	if err == nil {
		// A version an air-gap bundle brought is verified with the keys
		// the bundle carried (the exporting Trove's), not the namespace's.
		imported, kerr := s.opt.Index.ModuleProvenanceKeys(ctx, ns, name, system, version)
		switch {
		case kerr == nil:
			d, err := s.checkProvenance(ctx, envelope, nil, "/api/v1/namespaces/"+ns+"/modules/"+name+"/"+system+"/versions/"+version+"/provenance", imported)
			if d != nil {
				d.Imported = true
			}
			return d, err
		case !registry.IsKind(kerr, registry.NotFound):
			return nil, kerr
		}
	}
	return s.checkProvenance(ctx, envelope, err, "/api/v1/namespaces/"+ns+"/modules/"+name+"/"+system+"/versions/"+version+"/provenance", keys)
}

// mirroredProvenanceOf reads and checks the provenance an air-gap bundle
// carried with a mirrored provider version, against the keys it carried
// with it; nil for a version without one (what the mirror fetched from
// upstream).
func (s *Service) mirroredProvenanceOf(ctx context.Context, host, ns, typ, version string) (*provenanceData, error) {
	envelope, keys, err := s.opt.Index.MirroredProvenance(ctx, host, ns, typ, version)
	d, err := s.checkProvenance(ctx, envelope, err, "/api/v1/mirror/providers/"+host+"/"+ns+"/"+typ+"/versions/"+version+"/provenance", keys)
	if d != nil {
		d.Imported, d.Version = true, version
	}
	return d, err
}

// checkProvenance checks envelope, read with error readErr, against keys;
// api is where the API serves it. nil when the version has none
// (NotFound).
func (s *Service) checkProvenance(ctx context.Context, envelope []byte, readErr error, api string, keys []registry.SigningKey) (*provenanceData, error) {
	if registry.IsKind(readErr, registry.NotFound) {
		return nil, nil
	} else if readErr != nil {
		return nil, readErr
	}
	d := &provenanceData{API: api}
	v, err := provenance.Verify(ctx, envelope, keys, s.opt.Now())
	if err != nil {
		d.Error = registry.Message(err)
		return d, nil
	}
	st := v.Statement
	ext := st.Predicate.BuildDefinition.ExternalParameters
	d.Verified, d.KeyID = true, v.Key.KeyID
	d.Keyless = st.Predicate.BuildDefinition.BuildType == provenance.BuildTypeKeyless
	d.Builder = st.Predicate.RunDetails.Builder.ID
	d.Repository, d.Ref, d.Workflow, d.Commit = ext["repository"], ext["ref"], ext["workflow"], ext["commit"]
	d.User, d.Token = ext["user"], ext["token"]
	d.Run = st.Predicate.RunDetails.Metadata.InvocationID
	d.Finished = st.Predicate.RunDetails.Metadata.FinishedOn
	return d, nil
}
