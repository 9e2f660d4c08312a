package web

import (
	"net/http"
	"net/url"

	"trove.dev/trove/internal/protocol/login"
	"trove.dev/trove/internal/registry"
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
// session as the sign-in form does (startSession), audits it and sends
// the browser to next (a path of this site; the home page otherwise).
func (s *Service) StartSession(w http.ResponseWriter, r *http.Request, user registry.User, via, next string) error {
	return s.startSession(w, r, user, via, CleanNext(next))
}
