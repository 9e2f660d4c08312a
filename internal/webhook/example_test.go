package webhook_test

import (
	"context"
	"net/http"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/webhook"
)

// Code that changed something emits its event in one line, after the
// change committed: with the request that made it (the actor is its
// caller), or nil and an Actor for background work. A nil *Emitter emits
// nothing.
func ExampleEmitter_Emit() {
	var events *webhook.Emitter // the API handler's Options.Events, or app.App.Events
	var r *http.Request         // the request that deleted the version
	ctx := context.Background()

	// A provider version deleted through the API:
	events.Emit(ctx, r, webhook.Event{Type: registry.EventProviderDeleted, Namespace: "acme", Name: "cloud", Version: "1.2.0"})
	// A whole module deleted by a retention job (no version, no request):
	events.Emit(ctx, nil, webhook.Event{Type: registry.EventModuleDeleted, Namespace: "acme", Name: "network", System: "aws", Actor: "system"})
	// Output:
}
