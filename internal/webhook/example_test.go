package webhook_test

import (
	"context"
	"net/http"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
	"trove.dev/trove/internal/webhook"
)

// Code that changes something adds its event to the effects of the write
// before making it, passes them with the context of the one store call
// that makes the change, and calls Done after it succeeded: the event
// and its deliveries commit in the change's transaction. With the request
// that made it the actor is its caller; background work passes nil and
// an Actor. A nil *Emitter adds nothing.
func ExampleEmitter_Add() {
	var events *webhook.Emitter // the API handler's Options.Events, or app.App.Events
	var r *http.Request         // the request that deletes the version
	var index store.Providers
	ctx := context.Background()

	fx := &store.Effects{}
	events.Add(ctx, fx, r, webhook.Event{Type: registry.EventProviderDeleted, Namespace: "acme", Name: "cloud", Version: "1.2.0"})
	if index != nil {
		if err := index.DeleteProviderVersion(store.WithEffects(ctx, fx), "acme", "cloud", "1.2.0"); err != nil {
			return
		}
	}
	events.Done(ctx, fx) // wakes the local worker
	// Output:
}
