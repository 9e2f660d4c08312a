package web

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/operations"
	"trove.dev/trove/internal/registry"
)

// tokenView is a token as the token pages list it.
type tokenView struct {
	apispec.Token
	Active  bool
	Session bool
	Current bool
}

type tokensData struct {
	CSRF       string
	User       string
	Tokens     []tokenView
	Created    *apispec.CreatedToken
	Notice     string
	Error      string
	Form       tokenForm
	Lifetimes  []lifetimeOption
	Host       string
	TokenVar   string
	Namespaces []string
}

type tokenForm struct {
	Description string
	Access      string
	Days        int
	Namespaces  string
}

type lifetimeOption struct {
	Days  int
	Label string
}

// lifetimes are the expiries the token form offers, up to the longest a
// password login grants.
func (s *Service) lifetimes() []lifetimeOption {
	var out []lifetimeOption
	for _, d := range []int{1, 7, 30, 90, 365} {
		if time.Duration(d)*24*time.Hour <= s.tokenTTL() {
			out = append(out, lifetimeOption{d, plural(d, "day")})
		}
	}
	if len(out) == 0 {
		out = append(out, lifetimeOption{1, "1 day"})
	}
	return out
}

func plural(n int, unit string) string {
	if n == 1 {
		return "1 " + unit
	}
	return strconv.Itoa(n) + " " + unit + "s"
}

func (s *Service) tokenTTL() time.Duration {
	if s.opt.TokenTTL > 0 {
		return s.opt.TokenTTL
	}
	return 30 * 24 * time.Hour
}

func (s *Service) tokensPage(w http.ResponseWriter, r *http.Request, v *visit) error {
	if !v.signedIn() {
		return registry.Errorf(registry.Unauthenticated, "Sign in to manage your tokens.")
	}
	d := tokensData{Form: tokenForm{Access: "read", Days: 30}}
	if id := r.URL.Query().Get("revoked"); id != "" {
		if _, err := registry.ParseTokenID(id); err == nil {
			d.Notice = "Token " + id + " is revoked."
		}
	}
	return s.showTokens(w, r, v, http.StatusOK, d)
}

func (s *Service) showTokens(w http.ResponseWriter, r *http.Request, v *visit, status int, d tokensData) error {
	a, err := s.actor(r)
	if err != nil {
		return err
	}
	ts, err := s.opt.Operations.Tokens(r.Context(), a, "", v.p.User.Name)
	if err != nil {
		return err
	}
	d.CSRF, d.User, d.Lifetimes, d.Host, d.TokenVar = s.csrfFor("session", v.sessionID), v.p.User.Name, s.lifetimes(), s.opt.Host, tokenVariable(s.opt.Host)
	for _, t := range ts {
		d.Tokens = append(d.Tokens, tokenView{Token: s.tokenDoc(r.Context(), a, t), Active: t.Active(v.now),
			Session: t.Description == auth.SessionDescription, Current: t.ID == v.sessionID})
	}
	slices.SortStableFunc(d.Tokens, func(a, b tokenView) int { return b.CreatedAt.Compare(a.CreatedAt) })
	for ns := range v.p.Roles {
		d.Namespaces = append(d.Namespaces, ns)
	}
	slices.Sort(d.Namespaces)
	s.render(w, r, v, status, "Your tokens", "tokens", d)
	return nil
}

// tokenDoc renders t for a as the API does: of its namespaces, only
// those a may read are named, the others counted.
func (s *Service) tokenDoc(ctx context.Context, a operations.Actor, t registry.Token) apispec.Token {
	doc := apispec.Token{ID: t.ID, User: t.User, Scopes: make([]string, len(t.Scopes)), Description: t.Description,
		CreatedAt: t.CreatedAt, ExpiresAt: timePtr(t.ExpiresAt), RevokedAt: timePtr(t.RevokedAt)}
	for i, sc := range t.Scopes {
		doc.Scopes[i] = string(sc)
	}
	doc.Namespaces, doc.HiddenNamespaces = s.opt.Operations.VisibleNamespaces(ctx, a, t)
	if len(doc.Namespaces) == 1 && doc.HiddenNamespaces == 0 {
		doc.Namespace = doc.Namespaces[0]
	}
	return doc
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func (s *Service) createToken(w http.ResponseWriter, r *http.Request, v *visit) error {
	form, err := s.parseForm(w, r, v)
	if err != nil {
		return err
	}
	f := tokenForm{Description: form.Get("description"), Access: form.Get("access"), Namespaces: form.Get("namespaces")}
	f.Days, _ = strconv.Atoi(form.Get("days"))
	fail := func(err error) error {
		return s.showTokens(w, r, v, statusOf(err), tokensData{Form: f, Error: registry.Message(err)})
	}
	scope, err := registry.ParseScope(f.Access)
	if err != nil {
		return fail(err)
	}
	if !slices.ContainsFunc(s.lifetimes(), func(o lifetimeOption) bool { return o.Days == f.Days }) {
		return fail(registry.Errorf(registry.Invalid, "Choose one of the offered lifetimes."))
	}
	req := apispec.CreateTokenRequest{User: v.p.User.Name, Scopes: []string{string(scope)}, Description: f.Description}
	for _, ns := range strings.FieldsFunc(f.Namespaces, func(r rune) bool { return r == ',' || r == ' ' }) {
		req.Namespaces = append(req.Namespaces, ns)
	}
	if err := req.Validate(); err != nil {
		return fail(err)
	}
	a, err := s.actor(r)
	if err != nil {
		return err
	}
	t, secret, err := s.opt.Operations.CreateToken(r.Context(), a, operations.TokenRequest{User: req.User, Namespaces: req.Namespaces,
		Scopes: req.Scopes, Description: req.Description, ExpiresAt: s.opt.Now().Add(time.Duration(f.Days) * 24 * time.Hour).UTC().Truncate(time.Second)})
	if err != nil {
		return fail(err)
	}
	created := apispec.CreatedToken{Token: s.tokenDoc(r.Context(), a, t), Secret: secret}
	v.secret = true
	return s.showTokens(w, r, v, http.StatusOK, tokensData{Created: &created, Form: tokenForm{Access: "read", Days: 30}})
}

// statusOf is the status of a form answered again with an error.
func statusOf(err error) int {
	switch registry.KindOf(err) {
	case registry.Invalid:
		return http.StatusBadRequest
	case registry.Forbidden:
		return http.StatusForbidden
	case registry.NotFound:
		return http.StatusNotFound
	case registry.Conflict:
		return http.StatusConflict
	}
	return http.StatusInternalServerError
}

func (s *Service) revokeToken(w http.ResponseWriter, r *http.Request, v *visit) error {
	if _, err := s.parseForm(w, r, v); err != nil {
		return err
	}
	id, err := registry.ParseTokenID(r.PathValue("id"))
	if err != nil {
		return errNotFound
	}
	a, err := s.actor(r)
	if err != nil {
		return err
	}
	if _, err := s.opt.Operations.RevokeToken(r.Context(), a, id); err != nil {
		return err
	}
	if id == v.sessionID {
		clearSession(w)
		http.Redirect(w, r, HomePath, http.StatusSeeOther)
		return nil
	}
	http.Redirect(w, r, TokensPath+"?revoked="+id, http.StatusSeeOther)
	return nil
}

type settingsData struct {
	CSRF      string
	Namespace registry.Namespace
	Members   []apispec.Membership
	Tokens    []tokenView
	Roles     []string
	Notice    string
	Error     string
}

// namespaceAdmin checks that the visitor administers the namespace; to
// anyone else the page does not exist (Forbidden for members who may read
// it, NotFound for those who may not).
func (s *Service) namespaceAdmin(r *http.Request, v *visit) (registry.Namespace, error) {
	if !v.signedIn() {
		return registry.Namespace{}, registry.Errorf(registry.Unauthenticated, "Sign in to manage a namespace.")
	}
	ns, err := s.canRead(r.Context(), v, r.PathValue("namespace"))
	if err != nil {
		return registry.Namespace{}, err
	}
	if !v.p.Allows(registry.ScopeAdmin, ns, v.now) {
		return registry.Namespace{}, registry.Errorf(registry.Forbidden, "Only admins of namespace %s manage its members and tokens.", ns)
	}
	n, err := s.opt.Index.GetNamespace(r.Context(), ns)
	if err != nil {
		return registry.Namespace{}, err
	}
	return n, nil
}

// namespaceAdminForm is the preamble of every form a namespace's admin
// posts: the namespace (namespaceAdmin), the form with its origin and
// CSRF token checked (parseForm), and the actor the operation is made
// by.
func (s *Service) namespaceAdminForm(w http.ResponseWriter, r *http.Request, v *visit) (registry.Namespace, url.Values, operations.Actor, error) {
	n, err := s.namespaceAdmin(r, v)
	if err != nil {
		return n, nil, operations.Actor{}, err
	}
	form, err := s.parseForm(w, r, v)
	if err != nil {
		return n, nil, operations.Actor{}, err
	}
	a, err := s.actor(r)
	return n, form, a, err
}

func (s *Service) namespaceSettings(w http.ResponseWriter, r *http.Request, v *visit) error {
	n, err := s.namespaceAdmin(r, v)
	if err != nil {
		return err
	}
	d := settingsData{}
	switch q := r.URL.Query(); {
	case q.Get("removed") != "":
		if u, err := registry.ParseUserName(q.Get("removed")); err == nil {
			d.Notice = "User " + u + " is no longer a member."
		}
	case q.Get("revoked") != "":
		if id, err := registry.ParseTokenID(q.Get("revoked")); err == nil {
			d.Notice = "Token " + id + " is revoked."
		}
	case q.Get("set") != "":
		if u, err := registry.ParseUserName(q.Get("set")); err == nil {
			d.Notice = "User " + u + "'s role is saved."
		}
	}
	return s.showSettings(w, r, v, n, http.StatusOK, d)
}

func (s *Service) showSettings(w http.ResponseWriter, r *http.Request, v *visit, n registry.Namespace, status int, d settingsData) error {
	a, err := s.actor(r)
	if err != nil {
		return err
	}
	ms, err := s.opt.Operations.Members(r.Context(), a, n.Name)
	if err != nil {
		return err
	}
	for _, m := range ms {
		d.Members = append(d.Members, apispec.Membership{User: m.User, Namespace: m.Namespace, Role: string(m.Role), CreatedAt: m.CreatedAt})
	}
	ts, err := s.opt.Operations.Tokens(r.Context(), a, n.Name, "")
	if err != nil {
		return err
	}
	for _, t := range ts {
		d.Tokens = append(d.Tokens, tokenView{Token: s.tokenDoc(r.Context(), a, t), Active: t.Active(v.now)})
	}
	d.Namespace, d.CSRF = n, s.csrfFor("session", v.sessionID)
	d.Roles = []string{string(registry.RoleReader), string(registry.RolePublisher), string(registry.RoleAdmin)}
	s.render(w, r, v, status, "Settings of "+n.Name, "settings", d)
	return nil
}

func (s *Service) setMember(w http.ResponseWriter, r *http.Request, v *visit) error {
	n, form, a, err := s.namespaceAdminForm(w, r, v)
	if err != nil {
		return err
	}
	user := form.Get("user")
	if _, err := s.opt.Operations.SetMember(r.Context(), a, n.Name, user, form.Get("role")); err != nil {
		return s.showSettings(w, r, v, n, statusOf(err), settingsData{Error: registry.Message(err)})
	}
	name, _ := registry.ParseUserName(user)
	http.Redirect(w, r, "/namespaces/"+n.Name+"/settings?set="+name, http.StatusSeeOther)
	return nil
}

func (s *Service) removeMember(w http.ResponseWriter, r *http.Request, v *visit) error {
	n, _, a, err := s.namespaceAdminForm(w, r, v)
	if err != nil {
		return err
	}
	user, err := registry.ParseUserName(r.PathValue("user"))
	if err != nil {
		return errNotFound
	}
	if err := s.opt.Operations.RemoveMember(r.Context(), a, n.Name, user); err != nil {
		return s.showSettings(w, r, v, n, statusOf(err), settingsData{Error: registry.Message(err)})
	}
	http.Redirect(w, r, "/namespaces/"+n.Name+"/settings?removed="+user, http.StatusSeeOther)
	return nil
}

func (s *Service) revokeNamespaceToken(w http.ResponseWriter, r *http.Request, v *visit) error {
	n, _, a, err := s.namespaceAdminForm(w, r, v)
	if err != nil {
		return err
	}
	id, err := registry.ParseTokenID(r.PathValue("id"))
	if err != nil {
		return errNotFound
	}
	if _, err := s.opt.Operations.RevokeToken(r.Context(), a, id); err != nil {
		return s.showSettings(w, r, v, n, statusOf(err), settingsData{Error: registry.Message(err)})
	}
	http.Redirect(w, r, "/namespaces/"+n.Name+"/settings?revoked="+id, http.StatusSeeOther)
	return nil
}
