package operations

import (
	"context"
	"strings"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// SignInGrant is the token a sign-in grants a command-line client: the
// token of a login.v1 authorization code (`terraform login`, directly
// or through single sign-on) or of an approved device code. The
// entrance (internal/protocol/login) has checked the code; the
// operation applies the token policy and stores the token.
type SignInGrant struct {
	// User signed in; the entrance has checked that the account exists
	// and is not disabled.
	User registry.User
	// TokenID is the token ID the code reserved, so that a replayed code
	// revokes exactly the token it gave.
	TokenID  string
	ClientID string
	Scopes   []registry.Scope
	// Via names the flow in the token's description and audit entry:
	// "login" or "device login".
	Via string
	// Addr is the client's remote address.
	Addr string
	// At is the time of the exchange, on the entrance's clock; zero
	// means now.
	At time.Time
	// Life is how long the token lasts; never longer than SignInTokenTTL
	// (<= 0 means SignInTokenTTL).
	Life time.Duration
}

func (o *Operations) grantTime(g SignInGrant) time.Time {
	if g.At.IsZero() {
		return o.opt.Now()
	}
	return g.At
}

// IssueSignInToken mints the personal token of a sign-in grant under the
// one token policy (auth.Issue under auth.SignInParent: a sign-in grants
// at most the user's rights for at most SignInTokenTTL) and stores it
// with its audit entry in one transaction. A TokenID that is taken
// (a replay of the code stored its revoked token first) is Conflict. It
// returns the token and its secret, shown once to the client.
func (o *Operations) IssueSignInToken(ctx context.Context, g SignInGrant) (registry.Token, string, error) {
	now := o.grantTime(g)
	life := o.opt.SignInTokenTTL
	if g.Life > 0 {
		life = min(g.Life, life)
	}
	t, secret, err := auth.Issue(auth.SignInParent(g.User, o.opt.SignInTokenTTL, now), auth.Request{
		ID: g.TokenID, User: g.User.Name, Scopes: g.Scopes,
		Description: g.Via + " by " + g.ClientID + " from " + Actor{Addr: g.Addr}.source(), ExpiresAt: now.Add(life),
	}, now)
	if err != nil {
		return registry.Token{}, "", err
	}
	scopes := make([]string, len(t.Scopes))
	for i, sc := range t.Scopes {
		scopes[i] = string(sc)
	}
	fx := o.effects(ctx, Actor{Addr: g.Addr}, []registry.AuditEvent{{Action: registry.AuditTokenCreate, Actor: "user:" + g.User.Name, Target: t.ID,
		Details: "personal token of " + g.User.Name + ", " + strings.Join(scopes, ",") + ", issued by " + g.Via + ", expires " + t.ExpiresAt.Format(time.RFC3339)}})
	if err := o.opt.Index.CreateToken(store.WithEffects(ctx, fx), t); err != nil {
		return registry.Token{}, "", err
	}
	o.done(ctx, fx)
	return t, secret, nil
}

// RevokeReplayedSignIn makes sure that the token of grant g, whose code
// was presented a second time (someone else may hold it), is revoked,
// whether or not the first exchange has stored it yet, and audits the
// replay (registry.AuditTokenReplay) with details in the same
// transaction. Only g's User.Name, TokenID, ClientID, Scopes, Addr and At
// are used.
//
// The first exchange stores the token after marking the code used, so a
// replay can arrive in between: then the replay stores a revoked token
// under the token's ID, the first exchange's IssueSignInToken fails with
// Conflict, and no token of the code is ever live. If the first exchange
// stores its token between the two steps here, the ID is taken and it is
// revoked.
func (o *Operations) RevokeReplayedSignIn(ctx context.Context, g SignInGrant, details string) error {
	now := o.grantTime(g).UTC()
	fx := o.effects(ctx, Actor{Addr: g.Addr}, []registry.AuditEvent{{Action: registry.AuditTokenReplay, Actor: "user:" + g.User.Name,
		Target: g.TokenID, Details: details}})
	ctx2 := store.WithEffects(ctx, fx)
	err := o.opt.Index.RevokeToken(ctx2, g.TokenID, now)
	if registry.IsKind(err, registry.NotFound) {
		var hash string
		if _, hash, err = auth.NewToken(); err != nil { // a secret nobody gets
			return err
		}
		err = o.opt.Index.CreateToken(ctx2, registry.Token{
			ID: g.TokenID, Hash: hash, User: g.User.Name, Scopes: g.Scopes,
			Description: "login by " + g.ClientID + ", never issued: its authorization code was replayed",
			CreatedAt:   now, ExpiresAt: now, RevokedAt: now,
		})
		switch {
		case registry.IsKind(err, registry.Conflict): // the first exchange won the race
			err = o.opt.Index.RevokeToken(ctx2, g.TokenID, now)
		case registry.IsKind(err, registry.NotFound): // the user is gone: no token can exist
			err = nil
		}
	}
	if err != nil {
		return err
	}
	o.done(ctx, fx)
	return nil
}
