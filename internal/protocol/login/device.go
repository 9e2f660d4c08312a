package login

import (
	"crypto/rand"
	"net/http"
	"strconv"
	"strings"
	"time"
	"trove.dev/trove/apispec"

	"trove.dev/trove/internal/audit"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/registry"
)

// The device authorization grant (RFC 8628), for a CLI on a machine
// without a browser (over SSH, in a container): `trove login --device`.
//
//  1. The CLI posts client_id to POST /oauth/device and receives a device
//     code (a secret it keeps), a user code (8 letters such as
//     BCDF-GHJK, without vowels or letters read alike), the page to type
//     it into (VerificationPath, served by the web UI), an expiry
//     (DefaultDeviceCodeTTL) and the polling interval.
//  2. Its user opens that page in any browser, signs in (password or
//     single sign-on: the web UI's sign-in), types the code and approves
//     or denies; the page's form is CSRF-protected by the web session.
//     Typing codes is rate limited like password logins (per account and
//     per source address).
//  3. The CLI polls POST /oauth/token with grant_type
//     DeviceGrantType: authorization_pending until a decision,
//     slow_down when it polls faster than the interval, access_denied,
//     expired_token; once approved, a personal token of the approving
//     user, minted by operations.IssueSignInToken as a login.v1 code
//     exchange is. The device code gives one token: a second redemption
//     is refused and revokes the token issued.
//
// Only hashes of both codes are stored (store.DeviceCodes), so that any
// replica can serve any step.

// Paths and identifiers of the device grant.
const (
	// DevicePath is the device authorization endpoint.
	DevicePath = apispec.DeviceAuthorizationPath
	// VerificationPath is the page where people type user codes (the web
	// UI serves it).
	VerificationPath = apispec.DeviceVerificationPath
	// DeviceGrantType is the grant_type of a device code at TokenPath.
	DeviceGrantType = apispec.DeviceGrantType
	// DefaultDeviceCodeTTL is how long a device code waits for a decision.
	DefaultDeviceCodeTTL = 10 * time.Minute
	// DefaultDeviceInterval is the least time between two polls.
	DefaultDeviceInterval = 5 * time.Second
	// Device authorization requests per source address: a burst of 10,
	// then one every 6 s.
	DefaultDeviceBurst = 10
	DefaultDeviceEvery = 6 * time.Second
)

// userCodeAlphabet are the letters of user codes: consonants only (no
// words, no vowels read as digits), without letters read alike.
const userCodeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"

// userCodeLength is the number of letters of a user code (20^8: 34 bits).
const userCodeLength = 8

// newUserCode returns a random user code, formatted XXXX-XXXX.
func newUserCode() (string, error) {
	b := make([]byte, userCodeLength)
	var out strings.Builder
	for i := 0; i < userCodeLength; {
		if _, err := rand.Read(b[:1]); err != nil {
			return "", err
		}
		if b[0] >= 240 { // 240 = 12 * 20: no bias
			continue
		}
		if i == userCodeLength/2 {
			out.WriteByte('-')
		}
		out.WriteByte(userCodeAlphabet[int(b[0])%len(userCodeAlphabet)])
		i++
	}
	return out.String(), nil
}

// NormalizeUserCode returns a typed user code in its stored form (upper
// case, without dashes and spaces), or ok false if it cannot be one.
func NormalizeUserCode(typed string) (code string, ok bool) {
	if len(typed) > 32 {
		return "", false
	}
	var b strings.Builder
	for _, c := range strings.ToUpper(typed) {
		switch {
		case c == '-' || c == ' ':
		case strings.ContainsRune(userCodeAlphabet, c):
			b.WriteRune(c)
		default:
			return "", false
		}
	}
	if b.Len() != userCodeLength {
		return "", false
	}
	return b.String(), true
}

// FormatUserCode writes a normalized user code as XXXX-XXXX.
func FormatUserCode(code string) string {
	if len(code) != userCodeLength {
		return code
	}
	return code[:userCodeLength/2] + "-" + code[userCodeLength/2:]
}

// verificationURL returns the page where people type user codes.
func (s *Service) verificationURL(r *http.Request) string {
	if s.opt.PublicURL != "" {
		return strings.TrimSuffix(s.opt.PublicURL, "/") + VerificationPath
	}
	scheme := "https"
	if r.TLS == nil {
		scheme = "http"
	}
	return scheme + "://" + r.Host + VerificationPath
}

// deviceAuthorize serves POST DevicePath.
func (s *Service) deviceAuthorize(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, &oauthError{Code: "invalid_request", Description: "the request body is not a form"})
		return
	}
	if err := singleValued(r.PostForm); err != nil {
		writeJSON(w, http.StatusBadRequest, err)
		return
	}
	if r.PostForm.Get("client_id") != s.opt.ClientID {
		writeJSON(w, http.StatusUnauthorized, &oauthError{Code: "invalid_client", Description: "unknown client_id: this server only logs in the client " + strconv.Quote(s.opt.ClientID)})
		return
	}
	now := s.opt.Now()
	if ok, wait := s.devices.Take(audit.SourceAddr(r), now); !ok {
		h.Set("Retry-After", strconv.Itoa(int(wait/time.Second)+1))
		writeJSON(w, http.StatusTooManyRequests, &oauthError{Code: "slow_down", Description: "too many device logins from your address: try again in " + waitText(wait)})
		return
	}
	fail := func(err error) {
		s.opt.Logger.ErrorContext(r.Context(), "login: storing a device code failed", "err", err)
		writeJSON(w, http.StatusServiceUnavailable, &oauthError{Code: "temporarily_unavailable", Description: "the registry could not start the login; try again"})
	}
	device, err := randomString(32)
	if err != nil {
		fail(err)
		return
	}
	var userCode string
	for attempt := 0; ; attempt++ {
		if userCode, err = newUserCode(); err != nil {
			fail(err)
			return
		}
		norm, _ := NormalizeUserCode(userCode)
		err = s.opt.Index.CreateDeviceCode(r.Context(), registry.DeviceCode{
			DeviceHash: hashCode(device), UserHash: hashCode(norm), ClientID: s.opt.ClientID,
			CreatedAt: now.UTC(), ExpiresAt: now.Add(s.opt.DeviceCodeTTL).UTC(),
		})
		if err == nil {
			break
		}
		if !registry.IsKind(err, registry.Conflict) || attempt == 3 { // a user code drawn twice: draw again
			fail(err)
			return
		}
	}
	if _, err := s.opt.Index.DeleteDeviceCodes(r.Context(), now.Add(-time.Hour)); err != nil {
		s.opt.Logger.WarnContext(r.Context(), "login: deleting expired device codes failed", "err", err)
	}
	verify := s.verificationURL(r)
	writeJSON(w, http.StatusOK, apispec.DeviceAuthorization{
		DeviceCode: device, UserCode: userCode, VerificationURI: verify, VerificationURIComplete: verify + "?code=" + userCode,
		ExpiresIn: int64(s.opt.DeviceCodeTTL / time.Second), Interval: int64(s.opt.DeviceInterval / time.Second),
	})
}

// deviceToken redeems a device code at the token endpoint.
func (s *Service) deviceToken(r *http.Request) (tokenResponse, error) {
	f := r.PostForm
	if f.Get("client_id") != s.opt.ClientID {
		return tokenResponse{}, &oauthError{status: http.StatusUnauthorized, Code: "invalid_client", Description: "unknown client_id"}
	}
	device := f.Get("device_code")
	if device == "" || len(device) > 128 {
		return tokenResponse{}, &oauthError{status: http.StatusBadRequest, Code: "invalid_request", Description: "device_code is required"}
	}
	now := s.opt.Now()
	d, err := s.opt.Index.PollDeviceCode(r.Context(), hashCode(device), now.UTC())
	if registry.IsKind(err, registry.NotFound) {
		return tokenResponse{}, grantError("the device code is not valid")
	}
	if err != nil {
		return tokenResponse{}, err
	}
	deviceErr := func(code, desc string) error {
		return &oauthError{status: http.StatusBadRequest, Code: code, Description: desc}
	}
	switch {
	case d.ClientID != f.Get("client_id"):
		return tokenResponse{}, grantError("the device code was issued to another client")
	case d.Decision == registry.DeviceApproved && !d.UsedAt.IsZero():
		// A second redemption: someone else may hold the device code.
		c := registry.AuthCode{ClientID: d.ClientID, User: d.User, Scopes: d.Scopes, TokenID: d.TokenID}
		if err := s.revokeIssued(r, c, "a device code was redeemed a second time; the token issued for it was revoked", now); err != nil {
			return tokenResponse{}, err
		}
		return tokenResponse{}, grantError("the device code was used already")
	case d.Decision == registry.DeviceApproved && now.Before(d.ExpiresAt.Add(s.opt.DeviceCodeTTL)):
		// Approved in time: the token, however fast the poll.
	case !now.Before(d.ExpiresAt):
		return tokenResponse{}, deviceErr("expired_token", "the device code expired: run the login command again")
	case d.Decision == registry.DeviceDenied:
		return tokenResponse{}, deviceErr("access_denied", "the login was denied in the browser")
	case !d.LastPollAt.IsZero() && now.Sub(d.LastPollAt) < s.opt.DeviceInterval*4/5: // a margin for the clocks
		return tokenResponse{}, deviceErr("slow_down", "polled faster than every "+strconv.Itoa(int(s.opt.DeviceInterval/time.Second))+" seconds: wait 5 seconds longer between polls")
	default:
		return tokenResponse{}, deviceErr("authorization_pending", "the code has not been approved in the browser yet")
	}
	u, err := s.opt.Index.GetUser(r.Context(), d.User)
	if err != nil && !registry.IsKind(err, registry.NotFound) {
		return tokenResponse{}, err
	}
	if err != nil || u.Disabled {
		return tokenResponse{}, grantError("the user cannot log in")
	}
	return s.mint(r, u, registry.AuthCode{ClientID: d.ClientID, User: d.User, Scopes: d.Scopes, TokenID: d.TokenID}, "device login", now)
}

// DecideDevice records the decision of user, signed in to the web UI, on
// the device login whose user code was typed: approve with access "read"
// or "full", or deny. Typing codes counts against the rate limits of
// password logins. Its errors are safe to show: Invalid for a code that
// is malformed, unknown or expired, Conflict for one decided already,
// TooLarge with retry > 0 when rate limited, Forbidden for a disabled
// user.
func (s *Service) DecideDevice(r *http.Request, user registry.User, typed, access string, approve bool) (retry time.Duration, err error) {
	now := s.opt.Now()
	if ok, wait, limit := s.attempts.Take(strings.ToLower(user.Name), audit.SourceAddr(r), now); !ok {
		who := "this account"
		if limit == "source address" {
			who = "your address"
		}
		return wait, registry.Errorf(registry.TooLarge, "Too many codes typed from %s. Try again in %s.", who, waitText(wait))
	}
	if user.Disabled {
		return 0, registry.Errorf(registry.Forbidden, "This account is disabled. Ask an administrator of this registry.")
	}
	code, ok := NormalizeUserCode(typed)
	if !ok {
		return 0, registry.Errorf(registry.Invalid, "That is not a code of this registry: type the 8 letters the terminal shows, such as BCDF-GHJK.")
	}
	if access != "read" && access != "full" {
		return 0, registry.Errorf(registry.Invalid, "Unknown access level: choose read or full.")
	}
	dec := registry.DeviceDecision{Decision: registry.DeviceDenied, User: user.Name, DecidedAt: now.UTC()}
	if approve {
		dec.Decision = registry.DeviceApproved
		dec.Scopes = []registry.Scope{registry.ScopeRead}
		if access == "full" {
			dec.Scopes = []registry.Scope{registry.ScopeAdmin}
		}
		if dec.TokenID, err = auth.NewID(); err != nil {
			return 0, err
		}
	}
	before, err := s.opt.Index.DecideDeviceCode(r.Context(), hashCode(code), dec)
	switch {
	case registry.IsKind(err, registry.NotFound):
		return 0, registry.Errorf(registry.Invalid, "No login waits for the code %s: check it, or run the login command again (codes expire after %s).", FormatUserCode(code), lifetime(s.opt.DeviceCodeTTL))
	case err != nil:
		return 0, err
	case before.Decision != "":
		return 0, registry.Errorf(registry.Conflict, "The code %s was used already: run the login command again for a new one.", FormatUserCode(code))
	case !now.Before(before.ExpiresAt):
		return 0, registry.Errorf(registry.Invalid, "The code %s expired: run the login command again for a new one.", FormatUserCode(code))
	}
	details := "device login denied"
	if approve {
		details = "device login approved (" + access + " access) for " + before.ClientID
	}
	s.opt.Audit.Record(r.Context(), r, registry.AuditEvent{Action: registry.AuditLoginSuccess, Actor: "user:" + user.Name,
		Target: dec.TokenID, Details: details})
	return 0, nil
}
