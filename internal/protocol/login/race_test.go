package login_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/protocol/login"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/store/sqlite/sqlitetest"
)

// hookIndex lets a test run code inside the token calls of the login
// service, to force an interleaving of two exchanges.
type hookIndex struct {
	store.Index
	// beforeIssue runs before the token of a successful exchange (not
	// revoked) is stored.
	beforeIssue func()
	// afterRevoke runs after RevokeToken with its result.
	afterRevoke func(err error)
}

func (h *hookIndex) CreateToken(ctx context.Context, t registry.Token) error {
	if t.RevokedAt.IsZero() && h.beforeIssue != nil {
		h.beforeIssue()
	}
	return h.Index.CreateToken(ctx, t)
}

func (h *hookIndex) RevokeToken(ctx context.Context, id string, at time.Time) error {
	err := h.Index.RevokeToken(ctx, id, at)
	if h.afterRevoke != nil {
		h.afterRevoke(err)
	}
	return err
}

// TestReplayDuringExchange replays a code while its first exchange is
// between consuming the code and storing the token. Whichever step of
// the replay overlaps the first exchange, no token of the code is left
// live: the first exchange is refused or its token is revoked.
func TestReplayDuringExchange(t *testing.T) {
	for _, tc := range []string{"replay before the token is stored", "token stored during the replay"} {
		t.Run(tc, func(t *testing.T) {
			ctx := context.Background()
			idx := sqlitetest.NewIndex(t)
			if err := idx.CreateUser(ctx, registry.User{Name: "alice", CreatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}
			const code = "a-code-of-alice"
			const tokenID = "tok_0123456789abcdef"
			err := idx.CreateAuthCode(ctx, registry.AuthCode{
				Hash: hex.EncodeToString(sha256Of(code)), ClientID: login.DefaultClientID, RedirectURI: redirectURI, Challenge: challenge(verifier),
				User: "alice", Scopes: []registry.Scope{registry.ScopeRead}, TokenID: tokenID,
				CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Minute),
			})
			if err != nil {
				t.Fatal(err)
			}
			h := &hookIndex{Index: idx}
			svc, err := login.New(ctx, login.Options{Index: h})
			if err != nil {
				t.Fatal(err)
			}
			mux := http.NewServeMux()
			svc.Register(mux)
			srv := httptest.NewServer(mux)
			t.Cleanup(srv.Close)
			post := func() tokenAnswer {
				resp, err := srv.Client().PostForm(srv.URL+login.TokenPath, exchangeForm(code, nil))
				if err != nil {
					t.Error(err)
					return tokenAnswer{}
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				a := tokenAnswer{status: resp.StatusCode, raw: string(body)}
				_ = json.Unmarshal(body, &a)
				return a
			}

			atIssue, proceed, issued := make(chan struct{}), make(chan struct{}), make(chan struct{})
			var once sync.Once
			h.beforeIssue = func() { close(atIssue); <-proceed }
			if tc == "token stored during the replay" {
				// The replay finds no token to revoke; the first exchange
				// stores its token before the replay goes on.
				h.afterRevoke = func(err error) {
					if registry.IsKind(err, registry.NotFound) {
						once.Do(func() { close(proceed); <-issued })
					}
				}
			}
			firstDone := make(chan tokenAnswer)
			go func() {
				a := post()
				close(issued)
				firstDone <- a
			}()
			<-atIssue
			replay := post()
			if tc == "replay before the token is stored" {
				close(proceed)
			}
			first := <-firstDone

			if replay.status != http.StatusBadRequest || replay.Error != "invalid_grant" || replay.Access != "" {
				t.Errorf("replay: %d %s, want invalid_grant", replay.status, replay.raw)
			}
			tokens, err := idx.ListUserTokens(ctx, "alice")
			if err != nil || len(tokens) != 1 || tokens[0].ID != tokenID {
				t.Fatalf("alice's tokens = %+v, %v; want the one token of the code", tokens, err)
			}
			if tokens[0].RevokedAt.IsZero() {
				t.Errorf("the token of a replayed code is live: first exchange %d %s", first.status, first.raw)
			}
			if first.Access != "" {
				stored, err := idx.TokenByHash(ctx, auth.HashToken(first.Access))
				if err != nil || stored.RevokedAt.IsZero() {
					t.Errorf("the first exchange got a token that is not revoked: %+v, %v", stored, err)
				}
			} else if first.Error != "invalid_grant" {
				t.Errorf("first exchange: %d %s, want a revoked token or invalid_grant", first.status, first.raw)
			}
		})
	}
}
