// Command oidc-provider is the OpenID Provider of Trove's single sign-on
// end-to-end tests: a real provider built on github.com/zitadel/oidc (a
// certified OpenID Connect library, its op package and the example
// server's storage and login UI), not a mock of one. It lives under
// testdata so that ./... leaves it out; the e2e tests build it once.
//
//	oidc-provider -config provider.json [-listen 127.0.0.1:0]
//
// It listens on loopback and prints
//
//	OpenID provider listening on http://127.0.0.1:<port>
//
// on stdout; that URL is the issuer (discovery at
// <issuer>/.well-known/openid-configuration). The configuration file
// names one client and the users:
//
//	{
//	  "client": {"id": "trove", "secret": "s3cret", "redirect_uris": ["https://localhost:8443/oauth/sso/corp/callback"]},
//	  "users": [{"id": "u1", "username": "alice", "password": "pw", "email": "alice@example.com", "groups": ["platform"]}]
//	}
//
// The client is confidential (client_secret_basic or _post) with a
// secret, public (PKCE only) without one. The file is read again at every
// look-up, so a test changes a user's groups (or adds a user) between two
// sign-ins by rewriting it. The authorization code flow with PKCE S256
// puts sub, preferred_username (scope profile), email (scope email) and
// groups (scope groups) into the ID token.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

// config is the configuration file.
type config struct {
	Client struct {
		ID           string   `json:"id"`
		Secret       string   `json:"secret"`
		RedirectURIs []string `json:"redirect_uris"`
	} `json:"client"`
	Users []user `json:"users"`
}

type user struct {
	ID       string   `json:"id"`
	Username string   `json:"username"`
	Password string   `json:"password"`
	Email    string   `json:"email"`
	Groups   []string `json:"groups"`
}

// scopeGroups asks for the groups claim.
const scopeGroups = "groups"

func main() {
	configFile := flag.String("config", "", "the JSON configuration: client and users (read again at every look-up)")
	listen := flag.String("listen", "127.0.0.1:0", "the loopback address to listen on")
	flag.Parse()
	if *configFile == "" {
		fmt.Fprintln(os.Stderr, "usage: oidc-provider -config provider.json [-listen 127.0.0.1:0]")
		os.Exit(2)
	}
	if err := run(*configFile, *listen); err != nil {
		fmt.Fprintln(os.Stderr, "oidc-provider:", err)
		os.Exit(1)
	}
}

func run(configFile, listen string) error {
	files := &file{path: configFile}
	if _, err := files.read(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	issuer := "http://" + ln.Addr().String()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	st := &store{Storage: storage.NewStorageWithClients(users{files}, map[string]*storage.Client{}), file: files}
	router := exampleop.SetupServer(issuer, st, logger, false)
	srv := &http.Server{Handler: router, ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Printf("OpenID provider listening on %s\n", issuer)
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}

// file reads the configuration file at every look-up.
type file struct {
	path string
	mu   sync.Mutex
}

func (f *file) read() (config, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var c config
	b, err := os.ReadFile(f.path)
	if err != nil {
		return c, err
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%s: %v", f.path, err)
	}
	return c, nil
}

func (f *file) user(match func(user) bool) (user, bool) {
	c, err := f.read()
	if err != nil {
		slog.Error("reading the configuration", "err", err)
		return user{}, false
	}
	i := slices.IndexFunc(c.Users, match)
	if i < 0 {
		return user{}, false
	}
	return c.Users[i], true
}

// users is the example storage's user store over the file.
type users struct{ f *file }

func (u users) get(match func(user) bool) *storage.User {
	x, ok := u.f.user(match)
	if !ok {
		return nil
	}
	return &storage.User{ID: x.ID, Username: x.Username, Password: x.Password, Email: x.Email, EmailVerified: x.Email != "",
		FirstName: x.Username, LastName: "Test", PreferredLanguage: language.English}
}

func (u users) GetUserByID(id string) *storage.User {
	return u.get(func(x user) bool { return x.ID == id })
}

func (u users) GetUserByUsername(name string) *storage.User {
	return u.get(func(x user) bool { return x.Username == name })
}

func (u users) ExampleClientID() string { return "service" }

// store is the example's in-memory storage with this program's client
// and the groups claim.
type store struct {
	*storage.Storage
	file *file
}

func (s *store) client() (*client, error) {
	c, err := s.file.read()
	if err != nil {
		return nil, err
	}
	return &client{id: c.Client.ID, secret: c.Client.Secret, redirectURIs: c.Client.RedirectURIs}, nil
}

// GetClientByClientID returns the configured client.
func (s *store) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	c, err := s.client()
	if err != nil {
		return nil, err
	}
	if c.id != id {
		return nil, fmt.Errorf("client not found")
	}
	return c, nil
}

// AuthorizeClientIDSecret checks the configured client's secret.
func (s *store) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	c, err := s.client()
	if err != nil {
		return err
	}
	if c.id != id || c.secret == "" || c.secret != secret {
		return fmt.Errorf("invalid client or secret")
	}
	return nil
}

// SetUserinfoFromRequest adds the groups claim to the example's claims
// of the ID token.
func (s *store) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, info, req, scopes); err != nil {
		return err
	}
	if slices.Contains(scopes, scopeGroups) {
		u, _ := s.file.user(func(x user) bool { return x.ID == req.GetSubject() })
		info.AppendClaims("groups", append([]string{}, u.Groups...))
	}
	return nil
}

// client is the one client: a web application, confidential with a
// secret, public (PKCE only) without one. Its ID tokens carry the
// profile, email and groups claims (as Keycloak's and Entra ID's do).
type client struct {
	id, secret   string
	redirectURIs []string
}

func (c *client) GetID() string                    { return c.id }
func (c *client) RedirectURIs() []string           { return c.redirectURIs }
func (c *client) PostLogoutRedirectURIs() []string { return nil }
func (c *client) ApplicationType() op.ApplicationType {
	return op.ApplicationTypeWeb
}

func (c *client) AuthMethod() oidc.AuthMethod {
	if c.secret == "" {
		return oidc.AuthMethodNone
	}
	return oidc.AuthMethodBasic
}

func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}

func (c *client) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeCode}
}

func (c *client) LoginURL(id string) string            { return "/login/username?authRequestID=" + id }
func (c *client) AccessTokenType() op.AccessTokenType  { return op.AccessTokenTypeBearer }
func (c *client) IDTokenLifetime() time.Duration       { return 10 * time.Minute }
func (c *client) DevMode() bool                        { return false }
func (c *client) IsScopeAllowed(scope string) bool     { return scope == scopeGroups }
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return true }
func (c *client) ClockSkew() time.Duration             { return 0 }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}

func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
