// Package ciissuer is a stand-in for the OpenID Connect issuer of a CI
// system, for tests of keyless publishing: it publishes a discovery
// document and a JWKS with a real RSA key, and mints ID tokens shaped like
// GitHub Actions' on an endpoint that mimics ACTIONS_ID_TOKEN_REQUEST_URL
// (guarded by a bearer request token). Query parameters choose the claims
// and the hostile variants a verifier must refuse: an unsigned token
// (alg none), an HS256 token keyed with the RSA public key (key
// confusion), a token signed by a key the JWKS does not hold, and a token
// naming another issuer. The trove-ci-issuer command serves it as a
// process; ciissuertest starts that process for tests.
package ciissuer

import (
	"crypto"
	"crypto/hmac"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Paths of the issuer's endpoints.
const (
	DiscoveryPath = "/.well-known/openid-configuration"
	JWKSPath      = "/.well-known/jwks"
	// TokenPath mints a token, as GitHub's ACTIONS_ID_TOKEN_REQUEST_URL:
	// GET with "Authorization: bearer <request token>", answering
	// {"value": "<jwt>"}.
	TokenPath = "/token"
)

// Query parameters of TokenPath.
const (
	ParamAudience    = "audience"    // the aud claim (GitHub's name); absent: https://github.com/<owner>
	ParamRepository  = "repository"  // default acme/infra
	ParamRef         = "ref"         // default refs/tags/v1.0.0
	ParamEnvironment = "environment" // absent by default
	ParamExp         = "exp"         // seconds from now, default 300 (negative: expired)
	ParamNbf         = "nbf"         // seconds from now, default 0
	ParamJTI         = "jti"         // default random; "-" leaves it out
	// ParamMode selects a hostile token: ModeNone, ModeHS256,
	// ModeForeignKey or ModeForeignIssuer.
	ParamMode = "mode"
)

// The hostile modes of ParamMode.
const (
	ModeNone          = "none"           // alg none, no signature
	ModeHS256         = "hs256"          // HMAC-SHA256 keyed with the PEM of the RSA public key
	ModeForeignKey    = "foreign-key"    // RS256 by a key the JWKS does not hold, with the JWKS key's kid
	ModeForeignIssuer = "foreign-issuer" // iss ForeignIssuer, signed with the JWKS key
)

// ForeignIssuer is the iss of ModeForeignIssuer tokens.
const ForeignIssuer = "https://foreign-issuer.example"

// KeyID is the kid of the issuer's published key.
const KeyID = "ci-issuer-key-1"

// Issuer mints tokens. It is safe for concurrent use.
type Issuer struct {
	url          string
	requestToken string
	key, foreign *rsa.PrivateKey
	now          func() time.Time
}

// New returns an issuer whose iss is issuerURL, minting tokens for
// requests carrying requestToken.
func New(issuerURL, requestToken string) (*Issuer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	foreign, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	return &Issuer{url: strings.TrimSuffix(issuerURL, "/"), requestToken: requestToken, key: key, foreign: foreign, now: time.Now}, nil
}

// Handler serves the discovery document, the JWKS and TokenPath.
func (is *Issuer) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+DiscoveryPath, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]any{
			"issuer":                                is.url,
			"jwks_uri":                              is.url + JWKSPath,
			"response_types_supported":              []string{"id_token"},
			"subject_types_supported":               []string{"public", "pairwise"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
			"claims_supported":                      []string{"sub", "aud", "exp", "iat", "iss", "jti", "nbf", "ref", "repository", "environment"},
		})
	})
	mux.HandleFunc("GET "+JWKSPath, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &is.key.PublicKey, KeyID: KeyID, Algorithm: "RS256", Use: "sig"}}})
	})
	mux.HandleFunc("GET "+TokenPath, func(w http.ResponseWriter, r *http.Request) {
		scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "bearer") || tok != is.requestToken {
			http.Error(w, `{"message":"bad request token"}`, http.StatusUnauthorized)
			return
		}
		jwt, err := is.Mint(r.URL.Query())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, map[string]any{"count": len(jwt), "value": jwt})
	})
	return mux
}

// Mint returns a token with GitHub-shaped claims chosen by q (see the
// Param constants).
func (is *Issuer) Mint(q map[string][]string) (string, error) {
	get := func(name, def string) string {
		if v := q[name]; len(v) > 0 {
			return v[0]
		}
		return def
	}
	offset := func(name string, def int) (time.Time, error) {
		n, err := strconv.Atoi(get(name, strconv.Itoa(def)))
		return is.now().Add(time.Duration(n) * time.Second), err
	}
	exp, err := offset(ParamExp, 300)
	if err != nil {
		return "", fmt.Errorf("exp: %v", err)
	}
	nbf, err := offset(ParamNbf, 0)
	if err != nil {
		return "", fmt.Errorf("nbf: %v", err)
	}
	repo := get(ParamRepository, "acme/infra")
	owner, _, _ := strings.Cut(repo, "/")
	ref := get(ParamRef, "refs/tags/v1.0.0")
	refType := "branch"
	if strings.HasPrefix(ref, "refs/tags/") {
		refType = "tag"
	}
	claims := map[string]any{
		"iss":                is.url,
		"aud":                get(ParamAudience, "https://github.com/"+owner),
		"sub":                "repo:" + repo + ":ref:" + ref,
		"repository":         repo,
		"repository_owner":   owner,
		"ref":                ref,
		"ref_type":           refType,
		"workflow":           "release",
		"workflow_ref":       repo + "/.github/workflows/release.yml@" + ref,
		"job_workflow_ref":   repo + "/.github/workflows/release.yml@" + ref,
		"event_name":         "push",
		"actor":              "octocat",
		"run_id":             "1234567890",
		"runner_environment": "github-hosted",
		"iat":                is.now().Unix(),
		"nbf":                nbf.Unix(),
		"exp":                exp.Unix(),
	}
	if env := get(ParamEnvironment, ""); env != "" {
		claims["environment"] = env
		claims["sub"] = "repo:" + repo + ":environment:" + env
	}
	switch jti := get(ParamJTI, ""); jti {
	case "-":
	case "":
		b := make([]byte, 16)
		rand.Read(b)
		claims["jti"] = hex.EncodeToString(b)
	default:
		claims["jti"] = jti
	}
	key := is.key
	switch mode := get(ParamMode, ""); mode {
	case "":
	case ModeForeignIssuer:
		claims["iss"] = ForeignIssuer
	case ModeForeignKey:
		key = is.foreign
	case ModeNone:
		return compact(map[string]any{"alg": "none", "typ": "JWT"}, claims, func([]byte) []byte { return nil })
	case ModeHS256:
		der, err := x509.MarshalPKIXPublicKey(&is.key.PublicKey)
		if err != nil {
			return "", err
		}
		secret := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
		return compact(map[string]any{"alg": "HS256", "typ": "JWT", "kid": KeyID}, claims, func(in []byte) []byte {
			m := hmac.New(sha256.New, secret)
			m.Write(in)
			return m.Sum(nil)
		})
	default:
		return "", fmt.Errorf("unknown mode %q", mode)
	}
	var sigErr error
	jwt, err := compact(map[string]any{"alg": "RS256", "typ": "JWT", "kid": KeyID}, claims, func(in []byte) []byte {
		sum := sha256.Sum256(in)
		sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
		sigErr = err
		return sig
	})
	if sigErr != nil {
		return "", sigErr
	}
	return jwt, err
}

// compact encodes a JWS in compact serialization, signing
// "header.payload" with sign.
func compact(header, claims map[string]any, sign func([]byte) []byte) (string, error) {
	h, err := json.Marshal(header)
	if err != nil {
		return "", err
	}
	p, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	in := enc.EncodeToString(h) + "." + enc.EncodeToString(p)
	return in + "." + enc.EncodeToString(sign([]byte(in))), nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}
