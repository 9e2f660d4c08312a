package web

import (
	"net/http"
	"net/url"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/protocol/login"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// ssoChoices is what the sign-in page offers besides the password form:
// a button per identity provider (single sign-on, package sso), and
// whether the password form is shown at all.
type ssoChoices struct {
	Providers   []ssoButton
	NoPasswords bool
}

type ssoButton struct {
	Label string
	Start string // the start path with the page's next
}

// ssoFor returns the sign-in page's choices for a visitor going to next.
func (s *Service) ssoFor(r *http.Request, next string) ssoChoices {
	if s.opt.Login == nil {
		return ssoChoices{}
	}
	c := ssoChoices{NoPasswords: !s.opt.Login.LocalPasswords()}
	for _, p := range s.opt.Login.Providers(r.Context()) {
		c.Providers = append(c.Providers, ssoButton{Label: p.Label,
			Start: login.ProviderStartPath(p.Name) + "?" + url.Values{"next": {next}}.Encode()})
	}
	return c
}

// CleanNext returns next if it is a path of this site a sign-in may
// return to, and the home page otherwise.
func CleanNext(next string) string {
	if !cleanPath(next) {
		return HomePath
	}
	return next
}

// StartSession signs user in to the web UI after a sign-in through the
// identity provider via (package sso checked it): it starts a web
// session as the sign-in form does (a personal token whose secret is the
// session cookie), audits it and sends the browser to next (a path of
// this site; the home page otherwise).
func (s *Service) StartSession(w http.ResponseWriter, r *http.Request, user registry.User, via, next string) error {
	next = CleanNext(next)
	secret, hash, err := auth.NewToken()
	if err != nil {
		return registry.Wrap(registry.Internal, err, "creating a session")
	}
	id, err := auth.NewID()
	if err != nil {
		return registry.Wrap(registry.Internal, err, "creating a session")
	}
	now := s.opt.Now().UTC()
	t := registry.Token{ID: id, Hash: hash, User: user.Name, Scopes: []registry.Scope{registry.ScopeAdmin},
		Description: sessionDescription, CreatedAt: now, ExpiresAt: now.Add(s.opt.SessionTTL)}
	fx := s.opt.Audit.Effects(r, registry.AuditEvent{Action: registry.AuditLoginSuccess, Actor: "user:" + user.Name,
		Target: id, Details: "web session for " + lifetimeText(s.opt.SessionTTL) + " through identity provider " + via})
	if err := s.opt.Index.CreateToken(store.WithEffects(r.Context(), fx), t); err != nil {
		return err
	}
	s.opt.Audit.Done(r.Context(), fx)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: secret, Path: "/", MaxAge: int(s.opt.SessionTTL / time.Second),
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}
