// Package webhook sends Trove's events to the webhooks subscribed to
// them (docs/webhooks.md): the Emitter turns a change into an event
// that the change's own index transaction stores with one outbox row per
// subscribed webhook (Emitter.Add, store.Effects), and the Worker of
// every replica claims due rows with a lease, sends them signed (Sign),
// records each attempt and schedules retries with backoff (Backoff).
//
// An event is committed with its change or not at all: no crash between
// the two can lose it. Once committed, it survives restarts and is
// delivered by whichever replica claims it.
package webhook

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/protocol/discovery"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// Event is a change to announce: what Emit needs to know.
type Event struct {
	// Type is one of registry.EventTypes (registry.EventProviderDeleted,
	// ...): the kind of subject is its prefix.
	Type      string
	Namespace string
	// Name is the provider type or the module name.
	Name string
	// System is the module's target system; "" for a provider.
	System string
	// Version is the version changed; "" for a whole provider or module.
	Version string
	// Reason and Link of a deprecation or revocation.
	Reason, Link string
	// Host is the upstream registry of a mirror event (mirror.*), whose
	// Namespace is "" (global webhooks only hear it): MirrorNamespace and
	// Name are the mirrored provider's namespace and type there.
	Host, MirrorNamespace string
	// Actor who made the change; "" takes the caller of Emit's request,
	// or "system" without one.
	Actor string
}

// Enqueuer stores an event with its deliveries (store.Webhooks).
type Enqueuer interface {
	EnqueueEvent(ctx context.Context, e registry.WebhookEvent, newID func() string) (int, error)
}

// Emitter turns events into payloads and enqueues their deliveries. A nil
// *Emitter emits nothing, so code can call Emit unconditionally.
type Emitter struct {
	store  Enqueuer
	public *url.URL
	log    *slog.Logger
	now    func() time.Time
	wake   func()
}

// EmitterOptions configure NewEmitter.
type EmitterOptions struct {
	Store Enqueuer
	// PublicURL is the origin of the links in payloads and the host of
	// source addresses.
	PublicURL *url.URL
	Logger    *slog.Logger
	// Wake, if set, is called after deliveries were enqueued (the local
	// Worker's Wake), so that they leave at once.
	Wake func()
	Now  func() time.Time
}

// NewEmitter returns an Emitter.
func NewEmitter(o EmitterOptions) *Emitter {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.PublicURL == nil {
		o.PublicURL = &url.URL{}
	}
	return &Emitter{store: o.Store, public: o.PublicURL, log: o.Logger, now: o.Now, wake: o.Wake}
}

// Emit enqueues the deliveries of ev for every webhook that wants it, on
// their own, after the change (with the request that made it, nil for
// none: the actor is then ev.Actor or "system"). Like the audit log it is
// best effort: a failure is logged, never returned. The event of a write
// is committed with it instead (Add, then Done).
func (e *Emitter) Emit(ctx context.Context, r *http.Request, ev Event) {
	if e == nil || e.store == nil {
		return
	}
	we, ok := e.event(ctx, r, ev)
	if ok {
		e.enqueue(ctx, we)
	}
}

// Add adds the event ev, made by the request r (nil for none), to fx, to
// be committed with the write fx goes with (store.WithEffects): its ID,
// time and payload are fixed now. After the write, call Done.
func (e *Emitter) Add(ctx context.Context, fx *store.Effects, r *http.Request, ev Event) {
	if e == nil || e.store == nil || fx == nil {
		return
	}
	we, ok := e.event(ctx, r, ev)
	if !ok {
		return
	}
	fx.Events = append(fx.Events, we)
	if fx.NewID == nil {
		fx.NewID = func() string { return NewID("dl_") }
	}
}

// Done is called after the write fx went with succeeded: it wakes the
// local Worker for the deliveries that write enqueued, or, if it did not
// take fx (an index without effects), enqueues the events now, best
// effort.
func (e *Emitter) Done(ctx context.Context, fx *store.Effects) {
	if e == nil || e.store == nil || fx == nil {
		return
	}
	if fx.Taken() {
		if fx.Deliveries() > 0 {
			e.Wake()
		}
		return
	}
	for _, we := range fx.Events {
		e.enqueue(ctx, we)
	}
}

// event returns the stored form of ev.
func (e *Emitter) event(ctx context.Context, r *http.Request, ev Event) (registry.WebhookEvent, bool) {
	if ev.Actor == "" && r != nil {
		ev.Actor = auth.FromContext(r.Context()).Actor()
	}
	if ev.Actor == "" {
		ev.Actor = "system"
	}
	p := e.Payload(ev, NewID("ev_"), e.now())
	body, err := json.Marshal(p)
	if err != nil {
		e.log.ErrorContext(ctx, "encoding a webhook event failed", "type", ev.Type, "err", err)
		return registry.WebhookEvent{}, false
	}
	return registry.WebhookEvent{ID: p.ID, Type: p.Type, Namespace: p.Namespace, Time: p.Time, Payload: body}, true
}

// enqueue stores we with its deliveries on its own, best effort.
func (e *Emitter) enqueue(ctx context.Context, we registry.WebhookEvent) {
	// The change has happened: enqueue even if the client went away.
	ctx, cancel := context.WithTimeout(store.WithoutEffects(context.WithoutCancel(ctx)), 10*time.Second)
	defer cancel()
	n, err := e.store.EnqueueEvent(ctx, we, func() string { return NewID("dl_") })
	if err != nil {
		var p apispec.WebhookPayload
		_ = json.Unmarshal(we.Payload, &p)
		e.log.ErrorContext(ctx, "enqueueing a webhook event failed: it is not delivered", "event", we.ID, "type", we.Type,
			"namespace", we.Namespace, "subject", p.Subject.Address, "version", p.Version, "err", err)
		return
	}
	if n > 0 && e.wake != nil {
		e.wake()
	}
}

// Wake makes the local Worker look for due deliveries at once (after a
// test event or a redelivery was enqueued).
func (e *Emitter) Wake() {
	if e != nil && e.wake != nil {
		e.wake()
	}
}

// Payload returns the JSON document of ev, with the event ID id, at t.
func (e *Emitter) Payload(ev Event, id string, t time.Time) apispec.WebhookPayload {
	p := apispec.WebhookPayload{
		ID: id, Type: ev.Type, Time: t.UTC().Truncate(time.Microsecond), Namespace: ev.Namespace, Version: ev.Version,
		Actor: ev.Actor, Reason: ev.Reason, Link: ev.Link,
	}
	// The address users write in their sources: trove.localhost for a
	// public URL on localhost or an IP address, as the banner says.
	host := discovery.RegistryHost(e.public.String())
	origin := strings.TrimSuffix(e.public.String(), "/")
	switch {
	case strings.HasPrefix(ev.Type, "provider."):
		p.Subject = apispec.WebhookEventSubject{Kind: "provider", Name: ev.Name, Address: host + "/" + ev.Namespace + "/" + ev.Name}
		ui := "/providers/" + ev.Namespace + "/" + ev.Name
		api := "/api/v1/namespaces/" + ev.Namespace + "/providers/" + ev.Name
		if ev.Version != "" {
			ui += "/" + ev.Version
			api += "/versions/" + ev.Version
		}
		if !strings.HasSuffix(ev.Type, ".deleted") {
			p.URLs = apispec.WebhookEventURLs{UI: origin + ui, API: origin + api}
		}
	case strings.HasPrefix(ev.Type, "mirror."):
		p.Subject = apispec.WebhookEventSubject{Kind: "mirrored_provider", Name: ev.Name, Address: ev.Host + "/" + ev.MirrorNamespace + "/" + ev.Name}
		p.URLs = apispec.WebhookEventURLs{API: origin + "/api/v1/mirror/providers/" + ev.Host + "/" + ev.MirrorNamespace + "/" + ev.Name}
	case strings.HasPrefix(ev.Type, "module."):
		path := ev.Namespace + "/" + ev.Name + "/" + ev.System
		p.Subject = apispec.WebhookEventSubject{Kind: "module", Name: ev.Name, System: ev.System, Address: host + "/" + path}
		ui := "/modules/" + path
		api := "/api/v1/namespaces/" + ev.Namespace + "/modules/" + ev.Name + "/" + ev.System
		if ev.Version != "" {
			ui += "/" + ev.Version
			api += "/versions/" + ev.Version
		}
		if !strings.HasSuffix(ev.Type, ".deleted") {
			p.URLs = apispec.WebhookEventURLs{UI: origin + ui, API: origin + api}
		}
	}
	return p
}

// NewID returns prefix and 16 random lower-case hex digits.
func NewID(prefix string) string {
	b := make([]byte, 8)
	rand.Read(b) // never fails (crypto/rand)
	return prefix + hex.EncodeToString(b)
}
