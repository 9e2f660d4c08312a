package gitsource

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"trove.dev/trove/internal/registry"
)

// Webhook headers Trove verifies: GitHub's (and Gitea's, Forgejo's)
// HMAC-SHA256 of the body, GitLab's shared token.
const (
	HeaderGitHubSignature = "X-Hub-Signature-256"
	HeaderGitHubEvent     = "X-GitHub-Event"
	HeaderGitLabToken     = "X-Gitlab-Token"
)

// MaxWebhookBody bounds a push webhook's body.
const MaxWebhookBody = 1 << 20

// Webhook verifies a push webhook for a module's git source and, if it
// verifies, schedules a sync of the source (Trigger) and returns true. A
// GitHub ping is verified but syncs nothing. Every failure, a missing
// source included, is the same Unauthenticated error, so that the route
// tells nothing of which modules have sources. The payload is not
// trusted beyond its signature: the sync reads the tags from the
// repository itself.
func (s *Service) Webhook(ctx context.Context, namespace, name, system string, h http.Header, body []byte) (synced bool, err error) {
	refused := registry.Errorf(registry.Unauthenticated, "the webhook is not signed with this git source's secret: set the secret `trove module source add` printed as the webhook's secret (GitHub: X-Hub-Signature-256; GitLab: the secret token)")
	g, err := s.opt.Index.GetGitSource(ctx, namespace, name, system)
	if err != nil {
		if registry.IsKind(err, registry.NotFound) {
			return false, refused
		}
		return false, err
	}
	creds, err := s.open(g)
	if err != nil {
		return false, err
	}
	if !verify(creds.Webhook, h, body) {
		s.opt.Logger.WarnContext(ctx, "git source webhook refused: bad signature", "namespace", namespace, "name", name, "system", system)
		return false, refused
	}
	if h.Get(HeaderGitHubEvent) == "ping" {
		return false, nil
	}
	s.Trigger(g.Namespace, g.Name, g.System)
	return true, nil
}

// verify reports whether h carries a valid signature of body (GitHub
// shape) or the secret itself (GitLab shape), compared in constant time.
func verify(secret string, h http.Header, body []byte) bool {
	if secret == "" {
		return false
	}
	if sig := h.Get(HeaderGitHubSignature); sig != "" {
		got, ok := strings.CutPrefix(sig, "sha256=")
		if !ok {
			return false
		}
		gotBytes, err := hex.DecodeString(got)
		if err != nil {
			return false
		}
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		return hmac.Equal(gotBytes, mac.Sum(nil))
	}
	if tok := h.Get(HeaderGitLabToken); tok != "" {
		return subtle.ConstantTimeCompare([]byte(tok), []byte(secret)) == 1
	}
	return false
}

// SignGitHub returns the X-Hub-Signature-256 value of body under secret,
// as GitHub sends it (for tests and scripts).
func SignGitHub(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Trigger schedules a sync of a module's git source by Run, without
// waiting; a sync already scheduled is not scheduled twice.
func (s *Service) Trigger(namespace, name, system string) {
	k := key{namespace, name, system}
	s.mu.Lock()
	if s.pending[k] {
		s.mu.Unlock()
		return
	}
	s.pending[k] = true
	s.mu.Unlock()
	select {
	case s.trigger <- k:
	default: // full: the next poll pass picks it up
		s.mu.Lock()
		delete(s.pending, k)
		s.mu.Unlock()
	}
}

// pollEvery is how often Run looks for sources due a poll.
const pollEvery = 30 * time.Second

// Actor names the poller and webhook syncs in the audit log.
const Actor = "git source sync"

// Run syncs triggered sources at once and polls the sources due a poll
// (NextSyncAt passed) every 30 seconds, one sync at a time, until ctx
// ends. A source another replica is syncing (Conflict) is skipped.
func (s *Service) Run(ctx context.Context) {
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	s.pollDue(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case k := <-s.trigger:
			s.mu.Lock()
			delete(s.pending, k)
			s.mu.Unlock()
			s.syncLogged(ctx, k)
		case <-tick.C:
			s.pollDue(ctx)
		}
	}
}

// pollDue syncs every source whose poll is due.
func (s *Service) pollDue(ctx context.Context) {
	all, err := s.opt.Index.ListGitSources(ctx, "")
	if err != nil {
		if ctx.Err() == nil {
			s.opt.Logger.WarnContext(ctx, "listing git sources failed", "err", err)
		}
		return
	}
	now := s.opt.Now()
	for _, g := range all {
		if ctx.Err() != nil {
			return
		}
		if s.interval(g) <= 0 || g.NextSyncAt.IsZero() || g.NextSyncAt.After(now) {
			continue
		}
		s.syncLogged(ctx, key{g.Namespace, g.Name, g.System})
	}
}

// syncLogged syncs one source and logs the outcome.
func (s *Service) syncLogged(ctx context.Context, k key) {
	rep, err := s.Sync(ctx, k.Namespace, k.Name, k.System, Actor)
	attrs := []any{"namespace", k.Namespace, "name", k.Name, "system", k.System}
	switch {
	case registry.IsKind(err, registry.Conflict):
		s.opt.Logger.InfoContext(ctx, "git source sync skipped: another sync is running", attrs...)
	case err != nil:
		if ctx.Err() == nil {
			s.opt.Logger.WarnContext(ctx, "git source sync failed", append(attrs, "err", registry.Message(err))...)
		}
	default:
		s.opt.Logger.InfoContext(ctx, "git source synced", append(attrs, "published", rep.Published, "refused", len(rep.Refused))...)
	}
}
