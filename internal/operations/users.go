package operations

import (
	"context"
	"strconv"
	"strings"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// ErrPasswordsOff refuses a password set while local passwords are
// switched off (Options.NoLocalPasswords).
var ErrPasswordsOff = registry.Errorf(registry.Forbidden, "local passwords are switched off on this registry (--local-passwords=false): people sign in through an identity provider; use tokens for automation")

// RateLimited is the error of a password check refused for too many
// attempts: try again after Wait. Limit names what was limited ("user",
// "source address").
type RateLimited struct {
	Wait  time.Duration
	Limit string
}

func (e *RateLimited) Error() string {
	return "too many password attempts for this " + e.Limit + ": try again in " + strconv.Itoa(e.Seconds()) + " seconds"
}

// Seconds is Wait in whole seconds, rounded up past the wait.
func (e *RateLimited) Seconds() int { return int(e.Wait/time.Second) + 1 }

// CreateUser creates a local account, for global admins; password ""
// makes one that signs in through an identity provider only.
func (o *Operations) CreateUser(ctx context.Context, a Actor, name, password string, admin bool) (registry.User, error) {
	if err := o.require(a, registry.ScopeAdmin, ""); err != nil {
		return registry.User{}, err
	}
	name, err := registry.ParseUserName(name)
	if err != nil {
		return registry.User{}, err
	}
	u := registry.User{Name: name, Admin: admin, CreatedAt: o.opt.Now().UTC()}
	if password != "" {
		if o.opt.NoLocalPasswords {
			return registry.User{}, ErrPasswordsOff
		}
		if err := registry.CheckPassword(password); err != nil {
			return registry.User{}, err
		}
		if u.PasswordHash, err = auth.HashPassword(password); err != nil {
			return registry.User{}, err
		}
	}
	details := "user"
	if u.Admin {
		details = "global admin"
	}
	fx := o.effects(ctx, a, []registry.AuditEvent{{Action: registry.AuditUserCreate, Target: name, Details: details}})
	if err := o.opt.Index.CreateUser(store.WithEffects(ctx, fx), u); err != nil {
		if registry.IsKind(err, registry.Conflict) {
			return registry.User{}, registry.Errorf(registry.Conflict, "user %q already exists", name)
		}
		return registry.User{}, err
	}
	o.done(ctx, fx)
	return u, nil
}

// UserChange is a change of a user; nil fields stay as they are.
type UserChange struct {
	Admin, Disabled *bool
	Password        *string
	// CurrentPassword proves who changes their own password.
	CurrentPassword *string
}

// UpdateUser changes user name, for global admins and (their password
// only) the user. Only global admins change the admin and disabled
// flags, never their own. Users prove who they are with their current
// password, within the login rate limits (a *RateLimited error beyond
// them), even with a valid token: a stolen token must not be enough to
// take over the account. A change of nothing stores nothing.
func (o *Operations) UpdateUser(ctx context.Context, a Actor, name string, c UserChange) (registry.User, error) {
	name, err := registry.ParseUserName(name)
	if err != nil {
		return registry.User{}, err
	}
	if err := o.RequireSelfOrAdmin(a, name); err != nil {
		return registry.User{}, err
	}
	isAdmin := o.require(a, registry.ScopeAdmin, "") == nil
	self := a.Principal.Token.User == name
	u, err := o.opt.Index.GetUser(ctx, name)
	if err != nil {
		return registry.User{}, err
	}
	var changes []string
	if c.Admin != nil || c.Disabled != nil {
		if !isAdmin {
			return registry.User{}, registry.Errorf(registry.Forbidden, "only global admins change the admin and disabled flags of users")
		}
		if self {
			return registry.User{}, registry.Errorf(registry.Invalid, "you cannot change the admin or disabled flag of your own user: ask another global admin")
		}
		if c.Admin != nil && *c.Admin != u.Admin {
			u.Admin = *c.Admin
			changes = append(changes, "admin="+strconv.FormatBool(u.Admin))
		}
		if c.Disabled != nil && *c.Disabled != u.Disabled {
			u.Disabled = *c.Disabled
			changes = append(changes, "disabled="+strconv.FormatBool(u.Disabled))
		}
	}
	passwordChanged := false
	if c.Password != nil {
		if o.opt.NoLocalPasswords {
			return registry.User{}, ErrPasswordsOff
		}
		if !isAdmin || self {
			if c.CurrentPassword == nil {
				return registry.User{}, registry.Errorf(registry.Forbidden, "changing your own password needs your current password (current_password)")
			}
			failure := registry.AuditEvent{Action: registry.AuditLoginFailure, Actor: a.name(), SourceAddr: a.source(), Target: name}
			if ok, wait, limit := o.opt.Access.Authenticator().PasswordLimiter().Take(name, a.source(), o.opt.Now()); !ok {
				failure.Details = "password change through the API: rate limited (" + limit + ")"
				o.opt.Audit.Record(ctx, nil, failure)
				return registry.User{}, &RateLimited{Wait: wait, Limit: limit}
			}
			if !auth.VerifyPassword(u.PasswordHash, *c.CurrentPassword) {
				failure.Details = "password change through the API: wrong current password"
				o.opt.Audit.Record(ctx, nil, failure)
				return registry.User{}, registry.Errorf(registry.Forbidden, "changing your own password needs your current password (current_password), and it did not match")
			}
		}
		if err := registry.CheckPassword(*c.Password); err != nil {
			return registry.User{}, err
		}
		if u.PasswordHash, err = auth.HashPassword(*c.Password); err != nil {
			return registry.User{}, err
		}
		passwordChanged = true
	}
	if len(changes) == 0 && !passwordChanged {
		return u, nil
	}
	var events []registry.AuditEvent
	if passwordChanged {
		events = append(events, registry.AuditEvent{Action: registry.AuditPasswordChange, Target: name})
	}
	if len(changes) > 0 {
		events = append(events, registry.AuditEvent{Action: registry.AuditUserUpdate, Target: name, Details: strings.Join(changes, ", ")})
	}
	fx := o.effects(ctx, a, events)
	if err := o.opt.Index.UpdateUser(store.WithEffects(ctx, fx), u); err != nil {
		return registry.User{}, err
	}
	o.done(ctx, fx)
	return u, nil
}
