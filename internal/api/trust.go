package api

import (
	"net/http"
	"strconv"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/audit"
	"trove.dev/trove/internal/httpjson"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
)

// Defaults of the exchange's rate limit per source address: a burst of 30
// exchanges, then one every 2 seconds.
const (
	DefaultExchangeBurst = 30
	DefaultExchangeEvery = 2 * time.Second
)

// registerTrust mounts the routes of trust policies (namespace admins)
// and the exchange, which takes no token: mount it with exchange.
func (h *handler) registerTrust(route func(string, httpjson.HandlerFunc), open func(string, httpjson.HandlerFunc)) {
	route("GET "+apispec.RouteTrustPolicies, h.listTrustPolicies)
	route("POST "+apispec.RouteTrustPolicies, h.createTrustPolicy)
	route("GET "+apispec.RouteTrustPolicy, h.getTrustPolicy)
	route("DELETE "+apispec.RouteTrustPolicy, h.deleteTrustPolicy)
	open("POST "+apispec.RouteOIDCExchange, h.exchange)
}

// The rules of trust policies are operations.TrustPolicies,
// TrustPolicy, CreateTrustPolicy and DeleteTrustPolicy: these handlers
// decode, call and encode.

func (h *handler) listTrustPolicies(w http.ResponseWriter, r *http.Request) error {
	ps, err := h.Ops.TrustPolicies(r.Context(), actor(r), r.PathValue("namespace"))
	if err != nil {
		return err
	}
	out := apispec.TrustPolicyList{Policies: make([]apispec.TrustPolicy, 0, len(ps))}
	for _, p := range ps {
		out.Policies = append(out.Policies, trustPolicyDoc(p))
	}
	return httpjson.Write(w, http.StatusOK, out)
}

func (h *handler) createTrustPolicy(w http.ResponseWriter, r *http.Request) error {
	// Rights first, then the body (operations.CreateTrustPolicy checks
	// them again).
	if _, err := h.namespaceParam(r, registry.ScopeAdmin); err != nil {
		return err
	}
	var req apispec.CreateTrustPolicyRequest
	if err := httpjson.Decode(w, r, maxJSONBody, &req); err != nil {
		return err
	}
	ttl := time.Duration(req.TokenTTLSeconds) * time.Second
	if ttl/time.Second != time.Duration(req.TokenTTLSeconds) { // overflowed
		return registry.Errorf(registry.Invalid, "a trust policy's token lifetime is between %s and %s, not %d seconds",
			registry.MinTrustTokenTTL, registry.MaxTrustTokenTTL, req.TokenTTLSeconds)
	}
	p, err := h.Ops.CreateTrustPolicy(r.Context(), actor(r), r.PathValue("namespace"), operations.TrustPolicyRequest{
		Issuer: req.Issuer, Audience: req.Audience, Conditions: req.Conditions, Scope: req.Scope, TokenTTL: ttl, Description: req.Description})
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusCreated, trustPolicyDoc(p))
}

func (h *handler) getTrustPolicy(w http.ResponseWriter, r *http.Request) error {
	p, err := h.Ops.TrustPolicy(r.Context(), actor(r), r.PathValue("namespace"), r.PathValue("policy_id"))
	if err != nil {
		return err
	}
	return httpjson.Write(w, http.StatusOK, trustPolicyDoc(p))
}

func (h *handler) deleteTrustPolicy(w http.ResponseWriter, r *http.Request) error {
	if err := h.Ops.DeleteTrustPolicy(r.Context(), actor(r), r.PathValue("namespace"), r.PathValue("policy_id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// exchange takes a CI system's ID token and answers a token of the
// namespace (package keyless). It needs no token of Trove's, so it is
// rate limited per source address; every outcome is audited, never with
// the ID token itself.
func (h *handler) exchange(w http.ResponseWriter, r *http.Request) error {
	source := audit.SourceAddr(r)
	if ok, wait := h.exchangeLimiter.Take(source, h.Now()); !ok {
		secs := int(wait/time.Second) + 1
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		return httpjson.Write(w, http.StatusTooManyRequests, httpjson.ErrorBody{Errors: []string{
			"too many token exchanges from this address: try again in " + strconv.Itoa(secs) + " seconds"}})
	}
	var req apispec.ExchangeRequest
	if err := httpjson.Decode(w, r, registry.MaxIDTokenBytes+4096, &req); err != nil {
		return err
	}
	// operations.ExchangeIDToken owns the rest: the check, the token and
	// the audit entries of success and failure.
	res, err := h.Ops.ExchangeIDToken(r.Context(), actor(r), req.Namespace, req.Token)
	if err != nil {
		return err
	}
	ns, _ := registry.ParseNamespace(req.Namespace) // valid: the exchange succeeded
	t := res.Token
	scopes := make([]string, len(t.Scopes))
	for i, s := range t.Scopes {
		scopes[i] = string(s)
	}
	return httpjson.Write(w, http.StatusOK, apispec.ExchangeResponse{
		Token: res.Secret, TokenID: t.ID, ExpiresAt: t.ExpiresAt, Namespace: ns, Scopes: scopes, PolicyID: res.Policy.ID,
	})
}

func trustPolicyDoc(p registry.TrustPolicy) apispec.TrustPolicy {
	c := p.Conditions
	if c == nil {
		c = map[string]string{}
	}
	return apispec.TrustPolicy{
		ID: p.ID, Namespace: p.Namespace, Issuer: p.Issuer, Audience: p.Audience, Conditions: c, Scope: string(p.Scope),
		TokenTTLSeconds: int64(p.TokenTTL / time.Second), Description: p.Description, CreatedAt: p.CreatedAt,
	}
}
