package oci

import (
	"crypto/hmac"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/registry"
)

// TokenTTL is the lifetime of the bearer tokens the token endpoint issues
// (shorter when the Trove token they were issued for expires sooner).
const TokenTTL = 5 * time.Minute

// TokenPrefix starts every OCI bearer token. It is not auth.TokenPrefix,
// so the management API and the registry protocols refuse an OCI token
// without a lookup.
const TokenPrefix = "troveoci_"

// tokenPurpose separates the MAC of OCI tokens from every other use of
// the URL-signing key (signedurl.Signer.Sum).
const tokenPurpose = "oci-token-v1"

// Bounds of a token request: the scopes one request may ask for, and
// the length of one scope.
const (
	maxScopes      = 16
	maxScopeLength = 300
	maxTokenLength = 8192
)

// grant is what an OCI bearer token carries: who it was issued to (the
// Trove token's ID), for which service, the repositories it may pull, and
// its lifetime (Unix seconds).
type grant struct {
	Sub   string   `json:"sub"`
	Aud   string   `json:"aud"`
	Repos []string `json:"repos"`
	Iat   int64    `json:"iat"`
	Exp   int64    `json:"exp"`
}

// encodeToken signs g: TokenPrefix, the base64url JSON of g, ".", and
// its MAC.
func (s *Service) encodeToken(g grant) string {
	body, _ := json.Marshal(g)
	payload := base64.RawURLEncoding.EncodeToString(body)
	return TokenPrefix + payload + "." + s.opt.Signer.Sum(tokenPurpose, []byte(payload))
}

// errBadToken is the answer to a forged, malformed or expired OCI token:
// 401 with a challenge, so the client fetches a new one.
var errBadToken = errf(http.StatusUnauthorized, "UNAUTHORIZED", "the bearer token is invalid or expired: fetch a new one from the token endpoint")

// decodeToken verifies a token that starts with TokenPrefix: its MAC,
// its service and its lifetime at now.
func (s *Service) decodeToken(tok string, now time.Time) (grant, error) {
	rest, ok := strings.CutPrefix(tok, TokenPrefix)
	if !ok || len(tok) > maxTokenLength || s.opt.Signer == nil {
		return grant{}, errBadToken
	}
	payload, mac, ok := strings.Cut(rest, ".")
	if !ok || !hmac.Equal([]byte(mac), []byte(s.opt.Signer.Sum(tokenPurpose, []byte(payload)))) {
		return grant{}, errBadToken
	}
	body, err := base64.RawURLEncoding.DecodeString(payload)
	var g grant
	if err != nil || json.Unmarshal(body, &g) != nil || g.Aud != s.host || now.Unix() >= g.Exp {
		return grant{}, errBadToken
	}
	return g, nil
}

// ociToken returns the OCI token r presents (as a Bearer token or as the
// Basic password), "" if it presents none.
func ociToken(r *http.Request) string {
	scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok {
		return ""
	}
	if strings.EqualFold(scheme, "Bearer") && strings.HasPrefix(cred, TokenPrefix) {
		return cred
	}
	if strings.EqualFold(scheme, "Basic") && len(cred) <= 2*maxTokenLength {
		raw, err := base64.StdEncoding.DecodeString(cred)
		if _, pw, _ := strings.Cut(string(raw), ":"); err == nil && strings.HasPrefix(pw, TokenPrefix) {
			return pw
		}
	}
	return ""
}

// now is the Service's clock.
func (s *Service) now() time.Time {
	if s.opt.Now != nil {
		return s.opt.Now()
	}
	return time.Now()
}

// scope is one repository a token request asks to pull.
type scope struct {
	repo string
	pull bool
}

// parseScopes parses the scope parameters of a token request (each may
// hold several scopes separated by spaces): resource type, name and
// actions separated by colons ("repository:acme/widget:pull"). Scopes of
// other resource types are left out (nothing is granted for them); a
// scope that does not have the shape is Invalid.
func parseScopes(vals []string) ([]scope, error) {
	var out []scope
	n := 0
	for _, v := range vals {
		for _, item := range strings.Fields(v) {
			if n++; n > maxScopes {
				return nil, registry.Errorf(registry.Invalid, "too many scopes: at most %d per token request", maxScopes)
			}
			if len(item) > maxScopeLength {
				return nil, registry.Errorf(registry.Invalid, "scope %q is too long", registry.Elide(item))
			}
			typ, rest, ok1 := strings.Cut(item, ":")
			i := strings.LastIndexByte(rest, ':')
			if !ok1 || i <= 0 || typ == "" {
				return nil, registry.Errorf(registry.Invalid, "scope %q is malformed: want repository:<name>:pull", registry.Elide(item))
			}
			name, actions := rest[:i], rest[i+1:]
			if typ != "repository" && !strings.HasPrefix(typ, "repository(") {
				continue // registry:catalog:* and the like: not granted
			}
			sc := scope{repo: name}
			for _, a := range strings.Split(actions, ",") {
				sc.pull = sc.pull || a == "pull" || a == "*"
			}
			out = append(out, sc)
		}
	}
	return out, nil
}

// serveToken is the token endpoint of the Bearer challenge (the Docker
// registry token protocol): Basic credentials with a Trove token as the
// password (or that token as a Bearer token) get a short-lived bearer
// token (TokenTTL) that may pull the requested repositories the Trove
// token may read, and nothing else. Scopes the Trove token may not read
// are left out of the grant, as the protocol wants (the registry then
// refuses the token for them). Anonymous requests are refused: public
// repositories need no token.
func (s *Service) serveToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodPost {
		s.notAllowed(w, r, "GET, HEAD, POST", "use GET or POST")
		return
	}
	if r.Header.Get("Authorization") == "" || s.opt.Guard == nil || s.opt.Signer == nil {
		w.Header().Set("WWW-Authenticate", `Basic realm="trove"`)
		s.writeBasicRefusal(w, r, "credentials needed: a Trove token as the password")
		return
	}
	if ociToken(r) != "" {
		w.Header().Set("WWW-Authenticate", `Basic realm="trove"`)
		s.writeBasicRefusal(w, r, "an OCI bearer token cannot get another: give a Trove token as the password")
		return
	}
	r2, err := asBearer(r)
	var p auth.Principal
	if err == nil {
		p, err = s.opt.Guard.Authenticator().AuthenticateCached(r2)
	}
	if err != nil || p.Anonymous() {
		w.Header().Set("WWW-Authenticate", `Basic realm="trove"`)
		s.writeBasicRefusal(w, r, "the credentials are not valid")
		return
	}
	q := r.URL.Query()
	if r.Method == http.MethodPost {
		if err := r.ParseForm(); err == nil {
			q = r.Form
		}
	}
	if svc := q.Get("service"); svc != "" && svc != s.host {
		s.writeError(w, r, errf(http.StatusBadRequest, "DENIED", "service %q is not this registry's (%s)", registry.Elide(svc), s.host), "")
		return
	}
	scopes, err := parseScopes(q["scope"])
	if err != nil {
		s.writeError(w, r, errf(http.StatusBadRequest, "DENIED", "%s", registry.Message(err)), "")
		return
	}
	now := s.now()
	g := grant{Sub: p.Token.ID, Aud: s.host, Repos: []string{}, Iat: now.Unix(), Exp: now.Add(TokenTTL).Unix()}
	if e := p.Token.ExpiresAt; !e.IsZero() && e.Unix() < g.Exp {
		g.Exp = e.Unix()
	}
	for _, sc := range scopes {
		if !sc.pull || slices.Contains(g.Repos, sc.repo) {
			continue
		}
		key, err := parseRepo(sc.repo)
		if err != nil {
			continue
		}
		var err2 error
		switch {
		case key.kind != 'x':
			_, err2 = s.opt.Guard.ProtocolRead(r2, key.ns)
		case s.opt.Mirror == nil:
			continue
		default:
			err2 = s.opt.Guard.MirrorRead(r2)
		}
		if err2 == nil {
			g.Repos = append(g.Repos, key.String())
		}
	}
	tok := s.encodeToken(g)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"token": tok, "access_token": tok, "expires_in": g.Exp - now.Unix(),
		"issued_at": now.UTC().Format(time.RFC3339),
	})
}

// checkToken decides a request that presents an OCI token for the
// repository key ("" for the base route /v2/): the token must be genuine,
// unexpired, and grant key.
func (s *Service) checkToken(tok, repo string) error {
	g, err := s.decodeToken(tok, s.now())
	if err != nil {
		return err
	}
	if repo != "" && !slices.Contains(g.Repos, repo) {
		return errf(http.StatusUnauthorized, "UNAUTHORIZED", "the bearer token does not grant pull of %s: fetch one for this repository", repo)
	}
	return nil
}

func (s *Service) writeBasicRefusal(w http.ResponseWriter, r *http.Request, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	_ = json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]string{{"code": "UNAUTHORIZED", "message": msg}}})
}
