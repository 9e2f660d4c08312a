package api

import (
	"context"
	"net/http"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/webhook"
)

// effects returns what the write r makes commits with it
// (store.Effects): the audit entry a and the webhook events evs. Pass
// them to the one store call that makes the change
// (store.WithEffects), then call done.
func (h *handler) effects(r *http.Request, a registry.AuditEvent, evs ...webhook.Event) *store.Effects {
	fx := &store.Effects{}
	h.Audit.Add(fx, r, a)
	for _, ev := range evs {
		h.Events.Add(r.Context(), fx, r, ev)
	}
	return fx
}

// done completes the effects of a write that succeeded: it logs the
// audit entries and wakes the webhook worker (see audit.Recorder.Done and
// webhook.Emitter.Done).
func (h *handler) done(ctx context.Context, fx *store.Effects) {
	h.Audit.Done(ctx, fx)
	h.Events.Done(ctx, fx)
}
