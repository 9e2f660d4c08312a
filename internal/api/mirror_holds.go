package api

import (
	"context"
	"net/http"
	"strings"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/mirror"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
)

// MirrorHolds is what the routes of holding mirrored versions back need
// of the provider mirror (*mirror.Mirror): the report of a provider (the
// index announces a decision's change to every cache itself). An
// Options.Mirror without
// it answers those routes 404.
type MirrorHolds interface {
	Holds(ctx context.Context, host, namespace, typ string) (mirror.ProviderHolds, error)
}

// registerMirrorHolds mounts the routes of approvals and denials of
// mirrored versions; global admins only, like the upstreams they refine.
func (h *handler) registerMirrorHolds(route func(string, httpjson.HandlerFunc)) {
	route("GET "+apispec.RouteMirrorProvider, h.getMirrorProvider)
	route("PUT "+apispec.RouteMirrorApproval, h.putMirrorApproval)
	route("DELETE "+apispec.RouteMirrorApproval, h.deleteMirrorApproval)
	route("PUT "+apispec.RouteMirrorDenials, h.putMirrorDenial)
	route("DELETE "+apispec.RouteMirrorDenials, h.deleteMirrorDenial)
	route("GET "+apispec.RouteMirrorProvenance, h.getMirroredProvenance)
}

// getMirroredProvenance answers the provenance an air-gap bundle carried
// with a mirrored version, with the keys that verify it, to whoever may
// read the mirror (auth.Access.MirrorRead).
func (h *handler) getMirroredProvenance(w http.ResponseWriter, r *http.Request) error {
	if err := h.Access.MirrorRead(r); err != nil {
		return err
	}
	p, err := h.Ops.MirroredName(r.PathValue("host"), r.PathValue("namespace"), r.PathValue("type"))
	if err != nil {
		return err
	}
	version := r.PathValue("version")
	if _, err := registry.ParseVersion(version); err != nil {
		return err
	}
	envelope, keys, err := h.Index.MirroredProvenance(r.Context(), p.Host, p.Namespace, p.Type, version)
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, apispec.MirroredProvenance{Envelope: envelope, Keys: bundleKeys(keys)})
}

// mirroredParam checks that the caller is a global admin and returns the
// {host}/{namespace}/{type} path values normalized.
func (h *handler) mirroredParam(r *http.Request) (operations.MirroredProvider, error) {
	return h.Ops.MirroredProvider(actor(r), r.PathValue("host"), r.PathValue("namespace"), r.PathValue("type"))
}

func (h *handler) holds() (MirrorHolds, error) {
	m, ok := h.Mirror.(MirrorHolds)
	if !ok || m == nil {
		return nil, registry.Errorf(registry.NotFound, "this Trove has no provider mirror")
	}
	return m, nil
}

func (h *handler) getMirrorProvider(w http.ResponseWriter, r *http.Request) error {
	p, err := h.mirroredParam(r)
	if err != nil {
		return err
	}
	m, err := h.holds()
	if err != nil {
		return err
	}
	rep, err := m.Holds(r.Context(), p.Host, p.Namespace, p.Type)
	if err != nil {
		return err
	}
	out := apispec.MirrorProvider{Host: p.Host, Namespace: p.Namespace, Type: p.Type, Unreachable: rep.Unreachable,
		Versions: make([]apispec.MirrorVersionStatus, 0, len(rep.Versions)), Decisions: make([]apispec.MirrorDecision, 0, len(rep.Decisions))}
	if rep.Rule != nil {
		doc := ruleDoc(*rep.Rule)
		out.Rule = &doc
	}
	for _, v := range rep.Versions {
		s := apispec.MirrorVersionStatus{Version: v.Version, Status: string(v.Status), Reason: v.Reason, Approved: v.Approved}
		if !v.Since.IsZero() {
			s.Since = timePtr(v.Since.UTC())
		}
		if v.Status == mirror.Held {
			s.Until = timePtr(v.Until.UTC())
		}
		out.Versions = append(out.Versions, s)
	}
	for _, d := range rep.Decisions {
		out.Decisions = append(out.Decisions, decisionDoc(d))
	}
	return httpjson.Write(w, http.StatusOK, out)
}

func decisionDoc(d registry.MirrorDecision) apispec.MirrorDecision {
	return apispec.MirrorDecision{Kind: string(d.Kind), Versions: d.Versions, Reason: d.Reason, CreatedBy: d.CreatedBy, CreatedAt: d.CreatedAt}
}

func (h *handler) putMirrorApproval(w http.ResponseWriter, r *http.Request) error {
	p, err := h.mirroredParam(r)
	if err != nil {
		return err
	}
	var req apispec.MirrorApprovalRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	return h.decide(w, r, p, registry.MirrorApprove, r.PathValue("version"), req.Reason)
}

func (h *handler) putMirrorDenial(w http.ResponseWriter, r *http.Request) error {
	p, err := h.mirroredParam(r)
	if err != nil {
		return err
	}
	var req apispec.MirrorDenialRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	return h.decide(w, r, p, registry.MirrorDeny, strings.TrimSpace(req.Versions), req.Reason)
}

// decide stores an approval or denial (201 when new, 200 when it
// replaced the reason of the same one) by operations.DecideMirror.
func (h *handler) decide(w http.ResponseWriter, r *http.Request, p operations.MirroredProvider, kind registry.MirrorDecisionKind, versions, reason string) error {
	if _, err := h.holds(); err != nil {
		return err
	}
	d, created, err := h.Ops.DecideMirror(r.Context(), actor(r), p, kind, versions, reason)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return httpjson.Write(w, status, decisionDoc(d))
}

func (h *handler) deleteMirrorApproval(w http.ResponseWriter, r *http.Request) error {
	p, err := h.mirroredParam(r)
	if err != nil {
		return err
	}
	return h.undecide(w, r, p, registry.MirrorApprove, r.PathValue("version"))
}

func (h *handler) deleteMirrorDenial(w http.ResponseWriter, r *http.Request) error {
	p, err := h.mirroredParam(r)
	if err != nil {
		return err
	}
	versions := strings.TrimSpace(r.URL.Query().Get(apispec.MirrorDenialVersionsParam))
	if versions == "" {
		return registry.Errorf(registry.Invalid, "name the denial to withdraw with ?%s=<version or constraint>, as it was given", apispec.MirrorDenialVersionsParam)
	}
	if err := registry.VersionConstraintLimit.CheckText(versions); err != nil {
		return err
	}
	return h.undecide(w, r, p, registry.MirrorDeny, versions)
}

// undecide withdraws an approval or denial (operations.WithdrawMirror).
func (h *handler) undecide(w http.ResponseWriter, r *http.Request, p operations.MirroredProvider, kind registry.MirrorDecisionKind, versions string) error {
	if _, err := h.holds(); err != nil {
		return err
	}
	if err := h.Ops.WithdrawMirror(r.Context(), actor(r), p, kind, versions); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
