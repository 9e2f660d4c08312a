// Package keyless owns keyless publishing: exchanging a CI system's
// OpenID Connect ID token for a short-lived Trove token of one namespace,
// under that namespace's trust policies (registry.TrustPolicy).
//
// An exchange checks, in this order, and stops at the first failure:
//
//  1. the token's size (MaxTokenBytes) and shape: a compact JWS whose
//     header names an asymmetric algorithm (RS*, PS*, ES*, EdDSA; never
//     "none" nor HS*, which would let the issuer's public key act as an
//     HMAC secret: key confusion);
//  2. that some policy of the namespace names the token's (unverified)
//     "iss" exactly: only issuers that an admin wrote into a policy are
//     ever contacted, so a token cannot make Trove fetch from an address
//     of its choosing;
//  3. the signature, with the issuer's keys found through OpenID Connect
//     discovery (github.com/coreos/go-oidc), and the issuer;
//  4. "exp" (required) and "nbf" (if present) with ClockSkew of leeway,
//     and "jti" (required);
//  5. the policies of that issuer, in the order of their creation: the
//     first whose audience the token's "aud" contains and whose
//     conditions its claims match is used;
//  6. that the jti was not exchanged before (store.ReplayGuard, until the
//     token's exp);
//
// and then stores a service token bound to the namespace with the
// policy's scope, expiring after the policy's TokenTTL.
package keyless

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/provenance"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// MaxTokenBytes bounds the ID tokens an exchange reads.
const MaxTokenBytes = registry.MaxIDTokenBytes

// ClockSkew is the leeway of the "exp" and "nbf" checks, for clocks of
// the issuer and of Trove that differ a little.
const ClockSkew = time.Minute

// SigningAlgs are the signature algorithms an ID token may use: the
// asymmetric ones of JOSE.
var SigningAlgs = []string{
	oidc.RS256, oidc.RS384, oidc.RS512, oidc.PS256, oidc.PS384, oidc.PS512,
	oidc.ES256, oidc.ES384, oidc.ES512, oidc.EdDSA,
}

// Defaults of the issuer cache.
const (
	// maxIssuers bounds how many issuers' discovery documents and keys
	// are kept; the least recently used one goes first.
	maxIssuers = 64
	// discoveryTTL is how long a discovery document is used before it is
	// read again (keys are fetched again on an unknown key ID anyway).
	discoveryTTL = time.Hour
	// httpTimeout bounds each request to an issuer.
	httpTimeout = 10 * time.Second
)

// Index is what an exchange needs of the index.
type Index interface {
	store.TrustPolicies
	store.ReplayGuard
	store.Tokens
}

// Options configure an Exchanger.
type Options struct {
	Index Index
	// HTTPClient fetches discovery documents and keys; nil means a client
	// with a 10 s timeout.
	HTTPClient *http.Client
	Now        func() time.Time
}

// Exchanger exchanges ID tokens. It is safe for concurrent use.
type Exchanger struct {
	idx    Index
	client *http.Client
	now    func() time.Time

	mu        sync.Mutex
	providers map[string]*cachedProvider
}

type cachedProvider struct {
	p        *oidc.Provider
	loaded   time.Time
	lastUsed time.Time
}

// New returns an Exchanger.
func New(o Options) *Exchanger {
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Timeout: httpTimeout}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Exchanger{idx: o.Index, client: o.HTTPClient, now: o.Now, providers: map[string]*cachedProvider{}}
}

// Result is what an exchange found out, as far as it got: for the audit
// log of a success or a failure.
type Result struct {
	Issuer  string
	Subject string
	JTI     string
	// Claims are the claims of the token once its signature verified,
	// nil before.
	Claims map[string]any
	// Policy is the policy that matched (zero ID if none did).
	Policy registry.TrustPolicy
	// Token and Secret are the issued token, on success.
	Token  registry.Token
	Secret string
	// Detail says more about a failure than the error shown to the
	// caller, for the namespace's admins (which policy refused what).
	Detail string
}

// Claim returns the string claim name of a verified token, or "".
func (r Result) Claim(name string) string {
	s, _ := r.Claims[name].(string)
	return s
}

// unauthenticated is the error of a refused token.
func unauthenticated(format string, args ...any) error {
	return registry.Errorf(registry.Unauthenticated, format, args...)
}

// Exchange checks raw, an ID token, against the trust policies of
// namespace (normalized) and issues a token. Refusals are
// Unauthenticated (TooLarge for a token over MaxTokenBytes) with a
// message for the pipeline's owner; an issuer that cannot be reached is
// Unavailable.
func (e *Exchanger) Exchange(ctx context.Context, namespace, raw string) (Result, error) {
	var res Result
	raw = strings.TrimSpace(raw) // as a CI variable may end with a line break
	if len(raw) > MaxTokenBytes {
		return res, registry.Errorf(registry.TooLarge, "the ID token is %d bytes, more than the %d an ID token may have", len(raw), MaxTokenBytes)
	}
	alg, claims, err := parseUnverified(raw)
	if err != nil {
		return res, err
	}
	if !slices.Contains(SigningAlgs, alg) {
		return res, unauthenticated("ID tokens signed with %s are refused: want an asymmetric signature (%s)",
			printableAlg(alg), strings.Join(SigningAlgs, ", "))
	}
	iss, _ := claims["iss"].(string)
	if iss == "" {
		return res, unauthenticated("the ID token has no issuer (iss claim)")
	}
	res.Issuer = registry.Elide(iss)
	all, err := e.idx.ListTrustPolicies(ctx, namespace)
	if err != nil {
		return res, err
	}
	var policies []registry.TrustPolicy
	for _, p := range all {
		if p.Issuer == iss {
			policies = append(policies, p)
		}
	}
	if len(policies) == 0 {
		// The same answer for a namespace that does not exist: this
		// endpoint needs no credentials of Trove's.
		return res, unauthenticated("no trust policy of namespace %s trusts ID tokens of issuer %s", namespace, quoteIfNeeded(iss))
	}

	provider, err := e.provider(ctx, iss)
	if err != nil {
		return res, err
	}
	verifier := provider.Verifier(&oidc.Config{
		SkipClientIDCheck:    true, // each policy checks its audience
		SkipExpiryCheck:      true, // checked below with ClockSkew
		SupportedSigningAlgs: SigningAlgs,
	})
	tok, err := verifier.Verify(ctx, raw)
	if err != nil {
		res.Detail = err.Error()
		return res, unauthenticated("the ID token's signature or issuer does not verify with the keys of %s", iss)
	}
	verified := map[string]any{}
	if err := tok.Claims(&verified); err != nil {
		return res, unauthenticated("the ID token's claims are not a JSON object")
	}
	res.Claims, res.Subject = verified, registry.Elide(tok.Subject)
	now := e.now()
	if tok.Expiry.IsZero() {
		return res, unauthenticated("the ID token has no expiry (exp claim)")
	}
	if now.After(tok.Expiry.Add(ClockSkew)) {
		return res, unauthenticated("the ID token expired at %s: request a new one in the job that publishes", tok.Expiry.UTC().Format(time.RFC3339))
	}
	if nbf, ok := numericDate(verified["nbf"]); ok && now.Add(ClockSkew).Before(nbf) {
		return res, unauthenticated("the ID token is not valid before %s", nbf.UTC().Format(time.RFC3339))
	}
	jti, _ := verified["jti"].(string)
	if jti == "" {
		return res, unauthenticated("the ID token has no ID (jti claim): Trove refuses tokens it cannot recognise when they are replayed")
	}
	res.JTI = registry.Elide(jti)

	policy, err := match(namespace, policies, tok.Audience, verified, &res)
	if err != nil {
		return res, err
	}
	res.Policy = policy
	// The effects of the exchange (store.Effects) go with the token, not
	// with the record of its ID token.
	if err := e.idx.UseTokenID(store.WithoutEffects(ctx), iss, jti, tok.Expiry.Add(ClockSkew), now); err != nil {
		if registry.IsKind(err, registry.Conflict) {
			return res, unauthenticated("the ID token %s was exchanged already: every ID token is exchanged once; request a new one", res.JTI)
		}
		return res, err
	}
	if err := e.issue(ctx, namespace, policy, &res); err != nil {
		return res, err
	}
	return res, nil
}

// match returns the first policy whose audience the token has and whose
// conditions its claims match. The error says why none did: the audience
// (not secret: a registry URL), or the first condition the token fails
// of the first policy of the right audience, naming the claim and the
// token's value but not the pattern; res.Detail gets the patterns.
func match(namespace string, policies []registry.TrustPolicy, aud []string, claims map[string]any, res *Result) (registry.TrustPolicy, error) {
	var mismatch string
	var details []string
	var audiences []string
	for _, p := range policies {
		if !slices.Contains(aud, p.Audience) {
			if !slices.Contains(audiences, p.Audience) {
				audiences = append(audiences, p.Audience)
			}
			details = append(details, fmt.Sprintf("%s: audience %s not in the token", p.ID, p.Audience))
			continue
		}
		m := p.MatchClaims(claims)
		if m == "" {
			return p, nil
		}
		if mismatch == "" {
			mismatch = m
		}
		details = append(details, fmt.Sprintf("%s: %s (conditions %s)", p.ID, m, conditionsText(p.Conditions)))
	}
	res.Detail = strings.Join(details, "; ")
	if mismatch == "" {
		return registry.TrustPolicy{}, unauthenticated("the ID token's audience (aud) is %s, but the trust policies of namespace %s for its issuer want %s: "+
			"request the token for that audience (trove publish --oidc-audience, or the aud of a GitLab id_tokens entry)",
			quoteList(aud), namespace, strings.Join(audiences, " or "))
	}
	return registry.TrustPolicy{}, unauthenticated("no trust policy of namespace %s matches the ID token: %s (ask an admin of %s to check its trust policies: trove trust-policy list %s)",
		namespace, mismatch, namespace, namespace)
}

// issue stores the token the exchange hands out.
func (e *Exchanger) issue(ctx context.Context, namespace string, p registry.TrustPolicy, res *Result) error {
	now := e.now()
	t, secret, err := auth.Issue(auth.TrustParent(p, now), auth.Request{
		Namespaces: []string{namespace}, Scopes: []registry.Scope{p.Scope}, Description: description(p, res),
	}, now)
	if err != nil {
		return err
	}
	iss, _ := res.Claims["iss"].(string)
	ci := provenance.CIFromClaims(iss, res.Claims)
	t.CI = &ci // for the provenance of what the token publishes
	res.Token = t
	store.EffectsFrom(ctx).Bound(*res) // the token's audit entry commits with it
	if err := e.idx.CreateToken(ctx, t); err != nil {
		res.Token = registry.Token{}
		return err
	}
	res.Secret = secret
	return nil
}

// description names the policy and the claims that identify the
// pipeline, within the limit of a token's description.
func description(p registry.TrustPolicy, res *Result) string {
	d := "keyless: policy " + p.ID
	for _, name := range []string{"repository", "project_path", "ref", "environment"} {
		if v := res.Claim(name); v != "" {
			d += ", " + name + " " + v
		}
	}
	if d == "keyless: policy "+p.ID && res.Subject != "" {
		d += ", sub " + res.Subject
	}
	d = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, d)
	if len(d) > registry.MaxDescriptionLength {
		d = registry.Elide(d)
	}
	return d
}

// provider returns the issuer's discovery, loaded at most discoveryTTL
// ago, from the cache or the issuer.
func (e *Exchanger) provider(ctx context.Context, issuer string) (*oidc.Provider, error) {
	now := e.now()
	e.mu.Lock()
	c := e.providers[issuer]
	if c != nil && now.Sub(c.loaded) < discoveryTTL {
		c.lastUsed = now
		e.mu.Unlock()
		return c.p, nil
	}
	e.mu.Unlock()
	// The key set keeps the client for later key fetches; the request's
	// context bounds only the discovery.
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, e.client), issuer)
	if err != nil {
		return nil, registry.Wrap(registry.Unavailable, err, "reading the OpenID Connect discovery document of issuer "+issuer+
			" failed; is the issuer URL of the trust policy right?")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.providers) >= maxIssuers {
		var oldest string
		for k, v := range e.providers {
			if oldest == "" || v.lastUsed.Before(e.providers[oldest].lastUsed) {
				oldest = k
			}
		}
		delete(e.providers, oldest)
	}
	e.providers[issuer] = &cachedProvider{p: p, loaded: now, lastUsed: now}
	return p, nil
}

// parseUnverified reads the header's alg and the claims of a compact JWS
// without checking anything else.
func parseUnverified(raw string) (alg string, claims map[string]any, err error) {
	malformed := unauthenticated("the ID token is not a JWT (three base64url parts separated by dots): pass the token the CI system issued, as it is")
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return "", nil, malformed
	}
	var header struct {
		Alg string `json:"alg"`
	}
	h, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || json.Unmarshal(h, &header) != nil {
		return "", nil, malformed
	}
	p, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", nil, malformed
	}
	dec := json.NewDecoder(strings.NewReader(string(p)))
	dec.UseNumber()
	if err := dec.Decode(&claims); err != nil || claims == nil {
		return "", nil, malformed
	}
	return header.Alg, claims, nil
}

// numericDate reads a NumericDate claim.
func numericDate(v any) (time.Time, bool) {
	switch n := v.(type) {
	case float64:
		return time.Unix(int64(n), 0), true
	case json.Number:
		f, err := n.Float64()
		return time.Unix(int64(f), 0), err == nil
	}
	return time.Time{}, false
}

func printableAlg(alg string) string {
	if alg == "" {
		return "no algorithm"
	}
	return quoteIfNeeded(registry.Elide(alg))
}

// quoteIfNeeded quotes s when it holds anything but printable ASCII
// without spaces.
func quoteIfNeeded(s string) string {
	for _, r := range s {
		if r <= ' ' || r >= 0x7f || r == '"' {
			return fmt.Sprintf("%q", registry.Elide(s))
		}
	}
	return registry.Elide(s)
}

func quoteList(values []string) string {
	if len(values) == 0 {
		return "missing"
	}
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = quoteIfNeeded(v)
	}
	return strings.Join(out, ", ")
}

func conditionsText(c map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range c {
			if !yield(k) {
				return
			}
		}
	}) {
		parts = append(parts, k+"="+c[k])
	}
	return strings.Join(parts, ", ")
}
