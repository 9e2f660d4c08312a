package server

import (
	"context"

	"trove.dev/trove/internal/store"
)

// followChanges keeps the cached protocol responses in step with changes
// committed through other replicas sharing the index, until ctx ends. It
// does nothing when the index has no change feed (an embedded index has
// a single writer: this process, which invalidates on publish itself);
// responses are then also rendered again after their maximum age.
func (s *Server) followChanges(ctx context.Context) {
	feed, ok := s.opt.Index.(store.ChangeFeed)
	if !ok {
		return
	}
	err := feed.WatchChanges(ctx, s.applyChange)
	if ctx.Err() == nil {
		s.log.Error("the index change feed stopped: other replicas' publishes show up only after the cache's maximum age", "err", err)
	}
}

// applyChange drops the cached responses a change makes stale.
func (s *Server) applyChange(c store.Change) {
	switch c.Kind {
	case store.ChangeProvider:
		s.providers.Invalidate(c.Namespace, c.Name)
	case store.ChangeModule:
		s.modules.Invalidate(c.Namespace, c.Name, c.System)
	default: // changes may have been missed
		s.providers.InvalidateAll()
		s.modules.InvalidateAll()
	}
}
