package login

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"html/template"
	"net/http"
	"strconv"
	"time"
)

// style is the page's only style sheet, allowed by its hash in the
// Content-Security-Policy: the page runs no script and loads nothing.
const style = `
body { font-family: system-ui, sans-serif; max-width: 30rem; margin: 3rem auto; padding: 0 1rem; color: #1b1b1b; }
h1 { font-size: 1.4rem; }
label { display: block; margin: .8rem 0 .2rem; }
input[type=text], input[type=password] { width: 100%; padding: .4rem; box-sizing: border-box; }
fieldset { margin: 1rem 0; border: 1px solid #ccc; }
.error { background: #fdecea; border: 1px solid #e0a0a0; padding: .6rem; }
.note { color: #555; font-size: .9rem; }
button { margin: 1rem .5rem 0 0; padding: .4rem 1.2rem; }
code { background: #f2f2f2; padding: 0 .2rem; }
`

var contentSecurityPolicy = func() string {
	sum := sha256.Sum256([]byte(style))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'; " +
		"frame-ancestors 'none'; base-uri 'none'"
}()

var pages = template.Must(template.New("form").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Log in to Trove</title>
<style>{{.Style}}</style>
</head>
<body>
<h1>Log in to Trove at {{.Host}}</h1>
{{if .Error}}<p class="error" role="alert">{{.Error}}</p>{{end}}
<p>The command-line client <code>{{.ClientID}}</code> on your computer asks for a token to use this registry as you.
After you log in, your browser returns to it at <code>{{.RedirectURI}}</code>.</p>
<form method="post" action="{{.Action}}">
{{range $name, $values := .Params}}{{range $values}}<input type="hidden" name="{{$name}}" value="{{.}}">
{{end}}{{end}}<input type="hidden" name="csrf" value="{{.CSRF}}">
{{if not .NoPasswords}}<label for="username">User name</label>
<input type="text" id="username" name="username" value="{{.Username}}" autocomplete="username" autocapitalize="none" spellcheck="false" maxlength="64" autofocus>
<label for="password">Password</label>
<input type="password" id="password" name="password" autocomplete="current-password" maxlength="512">
{{end}}<fieldset>
<legend>The token may</legend>
<label><input type="radio" name="access" value="read" checked> read the providers and modules you can read (enough for <code>terraform init</code>)</label>
<label><input type="radio" name="access" value="full"> do everything your account may do, including publishing</label>
</fieldset>
<p class="note">The token expires in {{.TokenLifetime}}. You can revoke it at any time with <code>trove token revoke</code>.</p>
{{range .Providers}}<button type="submit" name="action" value="sso" formaction="{{.Start}}" class="sso">Log in with {{.Label}} and allow</button>
{{end}}{{if not .NoPasswords}}<button type="submit" name="action" value="allow">Log in and allow</button>
{{end}}<button type="submit" name="action" value="deny">Deny</button>
</form>
</body>
</html>
{{define "error"}}<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<title>Trove login failed</title>
<style>{{.Style}}</style>
</head>
<body>
<h1>Trove could not start the login</h1>
<p class="error" role="alert">{{.Error}}</p>
<p>Nothing was sent back to the program that opened this page. Return to the terminal and run the login command again.</p>
</body>
</html>
{{end}}`))

type formData struct {
	Style         template.CSS
	Host          string
	Error         string
	ClientID      string
	RedirectURI   string
	Action        string
	Params        map[string][]string
	CSRF          string
	Username      string
	TokenLifetime string
	Providers     []providerButton
	NoPasswords   bool
}

// providerButton is the button of an identity provider on the form.
type providerButton struct {
	Label string
	Start string
}

// setPageHeaders sets the headers of an HTML page that must never be
// cached, framed (also by browsers older than CSP 2), leak its URL to
// another site or run anything.
func setPageHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
}

// formPage renders the login form for a, with an optional error message.
// The caller has set the CSRF cookie (or it came with the request).
func (s *Service) formPage(w http.ResponseWriter, r *http.Request, status int, a authzRequest, message, username string) {
	cookie := ""
	if c, err := r.Cookie(csrfCookie); err == nil {
		cookie = c.Value
	}
	// A cookie set by this very response is not in the request yet.
	for _, sc := range w.Header()["Set-Cookie"] {
		if c, err := http.ParseSetCookie(sc); err == nil && c.Name == csrfCookie {
			cookie = c.Value
		}
	}
	params := a.params()
	data := formData{
		Style: template.CSS(style), Host: r.Host, Error: message, ClientID: a.ClientID, RedirectURI: a.RedirectURI,
		Action: AuthorizePath, Params: params, CSRF: s.csrfToken(cookie), Username: username,
		TokenLifetime: lifetime(s.opt.TokenTTL), NoPasswords: s.opt.NoLocalPasswords,
	}
	if s.opt.Providers != nil {
		for _, p := range s.opt.Providers(r.Context()) {
			data.Providers = append(data.Providers, providerButton{Label: p.Label, Start: ProviderStartPath(p.Name)})
		}
	}
	render(w, status, "form", data)
}

// errorPage renders an error without any way back to the client.
func (s *Service) errorPage(w http.ResponseWriter, r *http.Request, status int, message string) {
	render(w, status, "error", formData{Style: template.CSS(style), Error: message})
}

func render(w http.ResponseWriter, status int, name string, data formData) {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, data); err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	setPageHeaders(w)
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// lifetime says a duration for people: days, hours or minutes.
func lifetime(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return strconv.Itoa(int(d/(24*time.Hour))) + " days"
	case d >= 2*time.Hour:
		return strconv.Itoa(int(d/time.Hour)) + " hours"
	default:
		return strconv.Itoa(max(1, int(d/time.Minute))) + " minutes"
	}
}

// writeJSON writes v as a JSON answer of the token endpoint.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
