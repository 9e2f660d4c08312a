package web

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
)

// Cookies of the UI. The __Host- prefix makes browsers insist on Secure,
// Path=/ and no Domain.
const (
	sessionCookie = "__Host-trove-session"
	signInCookie  = "__Host-trove-sign-in"
)

// maxFormBytes bounds the body of every form of the UI.
const maxFormBytes = 16 << 10

func clearSession(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
}

func randomValue() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// sameOrigin refuses a form posted from another origin: browsers send
// Origin with every POST (and Sec-Fetch-Site); either, when present, must
// say this site: the public URL's scheme, and its host or the one the
// request names. An opaque origin ("null", what a sandboxed frame or a
// page with no-referrer sends; Trove's pages send their origin) is
// another site's. The CSRF token is checked besides.
func (s *Service) sameOrigin(r *http.Request) error {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return errOtherSite
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Scheme != s.opt.PublicURL.Scheme || u.Host != r.Host && u.Host != s.opt.PublicURL.Host {
			return errOtherSite
		}
	}
	return nil
}

// errOtherSite refuses a form that another site sent.
var errOtherSite = registry.Errorf(registry.Forbidden, "This form was sent from another site. Open the page on this registry and send it again.")

// parseForm reads a POSTed form, checks its origin and, for a visitor
// with a session, its CSRF token.
func (s *Service) parseForm(w http.ResponseWriter, r *http.Request, v *visit) (url.Values, error) {
	if err := s.sameOrigin(r); err != nil {
		return nil, err
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		return nil, registry.Errorf(registry.Invalid, "The form could not be read: send it from the page again.")
	}
	if !v.signedIn() {
		return nil, registry.Errorf(registry.Unauthenticated, "Sign in first.")
	}
	want := s.csrfFor("session", v.sessionID)
	if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(want)) != 1 {
		return nil, registry.Errorf(registry.Forbidden, "This form has expired or was not sent by this registry's page. Reload the page and send it again.")
	}
	return r.PostForm, nil
}

type signInData struct {
	CSRF     string
	Next     string
	Username string
	Error    string
	Lifetime string
	SSO      ssoChoices // identity providers (sso.go)
}

// signInForm shows the sign-in form. It binds the form to a random
// cookie (CSRF protection before there is a session).
func (s *Service) signInForm(w http.ResponseWriter, r *http.Request, v *visit) error {
	next := r.URL.Query().Get("next")
	if !cleanPath(next) {
		next = HomePath
	}
	if v.signedIn() {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return nil
	}
	cookie := ""
	if c, err := r.Cookie(signInCookie); err == nil && len(c.Value) == 43 {
		cookie = c.Value
	} else {
		var err error
		if cookie, err = randomValue(); err != nil {
			return registry.Wrap(registry.Internal, err, "reading random bytes")
		}
	}
	http.SetCookie(w, &http.Cookie{Name: signInCookie, Value: cookie, Path: "/", MaxAge: 3600,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	s.render(w, r, v, http.StatusOK, "Sign in", "sign-in", signInData{
		CSRF: s.csrfFor("sign-in", cookie), Next: next, Lifetime: lifetimeText(s.opt.SessionTTL),
		SSO: s.ssoFor(r, next),
	})
	return nil
}

// signIn checks the sign-in form and starts a session: a personal token
// of the user whose secret becomes the session cookie.
func (s *Service) signIn(w http.ResponseWriter, r *http.Request, v *visit) error {
	if err := s.sameOrigin(r); err != nil {
		return err
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		return registry.Errorf(registry.Invalid, "The sign-in form could not be read: open the sign-in page and try again.")
	}
	form := r.PostForm
	c, err := r.Cookie(signInCookie)
	if err != nil || c.Value == "" || subtle.ConstantTimeCompare([]byte(form.Get("csrf")), []byte(s.csrfFor("sign-in", c.Value))) != 1 {
		return registry.Errorf(registry.Forbidden, "The sign-in form expired or was not sent by this registry's page. Open the sign-in page and try again.")
	}
	next := form.Get("next")
	if !cleanPath(next) {
		next = HomePath
	}
	name := form.Get("username")
	user, retry, err := s.opt.Login.SignIn(r, name, form.Get("password"))
	if err != nil {
		status := http.StatusUnauthorized
		switch registry.KindOf(err) {
		case registry.TooLarge:
			status = http.StatusTooManyRequests
			w.Header().Set("Retry-After", strconv.Itoa(int(retry/time.Second)+1))
		case registry.Forbidden:
			status = http.StatusForbidden
		case registry.Unauthenticated:
		default:
			return err
		}
		if len(name) > 64 {
			name = name[:64]
		}
		s.render(w, r, v, status, "Sign in", "sign-in", signInData{
			CSRF: s.csrfFor("sign-in", c.Value), Next: next, Username: name, Error: registry.Message(err),
			Lifetime: lifetimeText(s.opt.SessionTTL), SSO: s.ssoFor(r, next),
		})
		return nil
	}
	http.SetCookie(w, &http.Cookie{Name: signInCookie, Value: "", Path: "/", MaxAge: -1, Secure: true, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	return s.startSession(w, r, user, "", next)
}

// startSession opens a web session for user, who has just signed in
// (the password form, or single sign-on through identity provider via):
// a personal token minted under the sign-in (auth.SignInParent), whose
// secret (auth.SessionPrefix) becomes the session cookie. It lives
// SessionTTL, and never longer than a sign-in's tokens. It audits the
// sign-in and sends the browser to next, a checked path of this site.
func (s *Service) startSession(w http.ResponseWriter, r *http.Request, user registry.User, via, next string) error {
	life := min(s.opt.SessionTTL, s.tokenTTL())
	_, secret, err := s.opt.Operations.OpenSession(r.Context(), operations.Session{User: user, Via: via, Life: life, Addr: r.RemoteAddr})
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: secret, Path: "/", MaxAge: int(life / time.Second),
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

// signOut revokes the session's token and drops the cookie.
func (s *Service) signOut(w http.ResponseWriter, r *http.Request, v *visit) error {
	if !v.signedIn() {
		clearSession(w)
		http.Redirect(w, r, HomePath, http.StatusSeeOther)
		return nil
	}
	if _, err := s.parseForm(w, r, v); err != nil {
		return err
	}
	// The session the page was shown to, as it was read (a session of a
	// user disabled since then still signs out).
	if err := s.opt.Operations.SignOut(r.Context(), operations.Actor{Principal: v.p, Addr: r.RemoteAddr}); err != nil {
		return err
	}
	clearSession(w)
	http.Redirect(w, r, HomePath, http.StatusSeeOther)
	return nil
}

// lifetimeText says a duration for people.
func lifetimeText(d time.Duration) string { return operations.LifetimeText(d) }

// actor returns the signed-in visitor as the operations take it: the
// session's principal read afresh from the index (not the pages' cached
// one, so that a right removed a moment ago on another replica counts)
// and the browser's address for the audit log.
func (s *Service) actor(r *http.Request) (operations.Actor, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return operations.Actor{}, registry.Errorf(registry.Unauthenticated, "Sign in first.")
	}
	p, err := s.opt.Access.Authenticator().AuthenticateSessionNow(r.Context(), c.Value)
	if err != nil {
		return operations.Actor{}, err
	}
	return operations.Actor{Principal: p, Addr: r.RemoteAddr}, nil
}
