package web

import (
	"net/http"
	"net/url"
	"strconv"

	"trove.dev/trove/internal/protocol/login"
	"trove.dev/trove/internal/registry"
)

// The device page (login.VerificationPath): where a person signed in to
// the web UI types the code `trove login --device` shows on a machine
// without a browser, and approves or denies that login. The decision is
// the login service's (login.Service.DecideDevice).

// deviceData is the device page's data.
type deviceData struct {
	CSRF   string
	User   string
	Code   string // the code to prefill, formatted
	Access string
	Error  string
	Done   string // the decision made, "" before
}

// devicePage shows the form; a visitor without a session is sent to the
// sign-in page first, and back here with the code after it.
func (s *Service) devicePage(w http.ResponseWriter, r *http.Request, v *visit) error {
	code := ""
	if c, ok := login.NormalizeUserCode(r.URL.Query().Get("code")); ok {
		code = login.FormatUserCode(c)
	}
	if !v.signedIn() {
		back := login.VerificationPath
		if code != "" {
			back += "?code=" + code
		}
		http.Redirect(w, r, SignInPath+"?next="+url.QueryEscape(back), http.StatusSeeOther)
		return nil
	}
	s.showDevice(w, r, v, http.StatusOK, deviceData{Code: code, Access: "read"})
	return nil
}

func (s *Service) showDevice(w http.ResponseWriter, r *http.Request, v *visit, status int, d deviceData) {
	d.CSRF, d.User = s.csrfFor("session", v.sessionID), v.p.User.Name
	s.render(w, r, v, status, "Log in a device", "device", d)
}

// decideDevice records the approval or denial of the form.
func (s *Service) decideDevice(w http.ResponseWriter, r *http.Request, v *visit) error {
	form, err := s.parseForm(w, r, v)
	if err != nil {
		return err
	}
	access := form.Get("access")
	if access == "" {
		access = "read"
	}
	approve := form.Get("action") == "approve"
	if !approve && form.Get("action") != "deny" {
		return registry.Errorf(registry.Invalid, "Choose Approve or Deny.")
	}
	retry, err := s.opt.Login.DecideDevice(r, v.p.User, form.Get("code"), access, approve)
	if err != nil {
		status := http.StatusBadRequest
		switch {
		case registry.IsKind(err, registry.TooLarge):
			status = http.StatusTooManyRequests
			w.Header().Set("Retry-After", strconv.Itoa(int(retry.Seconds())+1))
		case registry.IsKind(err, registry.Conflict):
			status = http.StatusConflict
		case registry.IsKind(err, registry.Forbidden):
			status = http.StatusForbidden
		case !registry.IsKind(err, registry.Invalid):
			return err
		}
		code := form.Get("code")
		if len(code) > 32 {
			code = ""
		}
		s.showDevice(w, r, v, status, deviceData{Code: code, Access: access, Error: registry.Message(err)})
		return nil
	}
	done := "Denied: the terminal is told so, and gets no token."
	if approve {
		done = "Approved: return to your terminal, where the login completes."
	}
	s.showDevice(w, r, v, http.StatusOK, deviceData{Done: done})
	return nil
}
