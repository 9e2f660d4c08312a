package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

// Store is what the Worker needs of the index (store.Webhooks).
type Store interface {
	GetWebhook(ctx context.Context, id string) (registry.Webhook, error)
	ClaimDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]registry.WebhookDelivery, error)
	FinishAttempt(ctx context.Context, id, owner string, a registry.WebhookAttempt, next time.Time, state, disable string) error
	PruneWebhookDeliveries(ctx context.Context, before time.Time) (int, error)
}

// Defaults of WorkerOptions.
const (
	DefaultTimeout   = 10 * time.Second
	DefaultPoll      = 5 * time.Second
	DefaultRetention = 30 * 24 * time.Hour
	DefaultBatch     = 10
	// recordBudget bounds the reads and writes around one attempt
	// (reading the webhook, recording the attempt).
	recordBudget = 10 * time.Second
	// leaseMargin is how much longer than the attempts of a claim may
	// take a lease lasts, so that no attempt outlives its lease and no
	// two workers send one delivery at once.
	leaseMargin = 30 * time.Second
)

// WorkerOptions configure NewWorker.
type WorkerOptions struct {
	Store Store
	// Owner names this worker in leases; it must differ between the
	// workers sharing an index (NewID("worker_") if empty).
	Owner string
	// AllowPrivate lets deliveries reach loopback, private and other
	// non-public addresses (for tests and internal receivers); the SSRF
	// guard refuses them otherwise.
	AllowPrivate bool
	// Transport replaces the guarded transport (tests); nil is the
	// default.
	Transport http.RoundTripper
	// Timeout bounds one attempt (DefaultTimeout).
	Timeout time.Duration
	// Backoff schedules retries (DefaultBackoff).
	Backoff Backoff
	// Poll is how often the index is asked for due deliveries
	// (DefaultPoll); Wake asks at once.
	Poll time.Duration
	// Retention is how long finished deliveries are kept
	// (DefaultRetention).
	Retention time.Duration
	// Batch is how many deliveries one claim takes (DefaultBatch).
	Batch int
	// Metrics, if set, gets trove_webhook_deliveries_total{outcome}.
	Metrics prometheus.Registerer
	Logger  *slog.Logger
	Now     func() time.Time
	// Rand returns numbers in [0, 1) for the jitter; nil is math/rand.
	Rand func() float64
	// UserAgent is sent with every delivery ("Trove-Webhook").
	UserAgent string
}

// Worker delivers the due deliveries of the index. Several workers (one
// per replica) may share an index: each delivery is leased to one worker
// for the length of one attempt.
type Worker struct {
	o        WorkerOptions
	client   *http.Client
	wake     chan struct{}
	outcomes *prometheus.CounterVec
}

// Outcomes of an attempt, the values of the metric's label.
const (
	OutcomeSuccess = "success" // 2xx
	OutcomeRetry   = "retry"   // failed, tried again later
	OutcomeFailed  = "failed"  // failed for good
)

// NewWorker returns a Worker.
func NewWorker(o WorkerOptions) (*Worker, error) {
	if o.Owner == "" {
		o.Owner = NewID("worker_")
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Backoff.Attempts <= 0 {
		o.Backoff = DefaultBackoff
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.UserAgent == "" {
		o.UserAgent = "Trove-Webhook"
	}
	tr := o.Transport
	if tr == nil {
		dialer := NewDialer(o.AllowPrivate)
		tr = &http.Transport{
			Proxy:                 nil, // a proxy would connect for us, past the guard
			DialContext:           dialer.DialContext,
			TLSHandshakeTimeout:   o.Timeout,
			ResponseHeaderTimeout: o.Timeout,
			MaxIdleConns:          10,
			IdleConnTimeout:       90 * time.Second,
			ForceAttemptHTTP2:     true,
		}
	}
	w := &Worker{
		o: o,
		client: &http.Client{Transport: tr, Timeout: o.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		wake: make(chan struct{}, 1),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trove_webhook_deliveries_total",
			Help: "Webhook delivery attempts by outcome: success (2xx), retry (failed, tried again later), failed (failed for good).",
		}, []string{"outcome"}),
	}
	for _, l := range []string{OutcomeSuccess, OutcomeRetry, OutcomeFailed} {
		w.outcomes.WithLabelValues(l)
	}
	if o.Metrics != nil {
		if err := o.Metrics.Register(w.outcomes); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// Wake makes Run look for due deliveries at once.
func (w *Worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run delivers due deliveries until ctx ends: every Poll, when woken, and
// at once again while there were some; it prunes finished deliveries
// older than Retention once an hour.
func (w *Worker) Run(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	var pruned time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-w.wake:
		}
		if now := w.o.Now(); now.Sub(pruned) >= time.Hour {
			pruned = now
			if n, err := w.o.Store.PruneWebhookDeliveries(ctx, now.Add(-w.o.Retention)); err != nil {
				w.o.Logger.WarnContext(ctx, "pruning webhook deliveries failed", "err", err)
			} else if n > 0 {
				w.o.Logger.InfoContext(ctx, "pruned webhook deliveries", "deliveries", n)
			}
		}
		n, err := w.RunOnce(ctx)
		if err != nil && ctx.Err() == nil {
			w.o.Logger.WarnContext(ctx, "claiming webhook deliveries failed", "err", err)
		}
		next := w.o.Poll
		if n > 0 {
			next = 0 // there may be more
		}
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(next)
	}
}

// Lease is how long a claim of Batch deliveries holds them: long enough
// for each to be attempted, one after the other, within its timeout.
func (w *Worker) Lease() time.Duration {
	return time.Duration(w.o.Batch)*(w.o.Timeout+recordBudget) + leaseMargin
}

// RunOnce claims up to Batch due deliveries, attempts each (one after the
// other) and returns how many it attempted. A delivery whose attempt
// could no longer finish within the claim's lease is left alone: it is
// claimed again once the lease expired.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	start, lease := w.o.Now(), w.Lease()
	ds, err := w.o.Store.ClaimDeliveries(ctx, w.o.Owner, start, lease, w.o.Batch)
	if err != nil {
		return 0, err
	}
	last := start.Add(lease - leaseMargin - w.o.Timeout - recordBudget) // the latest start of an attempt
	n := 0
	for _, d := range ds {
		if ctx.Err() != nil || w.o.Now().After(last) {
			break
		}
		w.attempt(ctx, d)
		n++
	}
	return n, nil
}

// attempt sends one delivery and records the result.
func (w *Worker) attempt(ctx context.Context, d registry.WebhookDelivery) {
	log := w.o.Logger.With("delivery", d.ID, "webhook", d.WebhookID, "event", d.EventID, "type", d.EventType)
	hook, err := w.o.Store.GetWebhook(ctx, d.WebhookID)
	if err != nil {
		log.WarnContext(ctx, "reading the webhook of a delivery failed", "err", err)
		return // the lease expires and the delivery is claimed again
	}
	start := w.o.Now()
	a := registry.WebhookAttempt{At: start}
	var disable string
	if !hook.Active && d.EventType != registry.EventPing {
		a.Error = "the webhook is inactive: not sent"
	} else {
		a.Status, a.Response, err = w.send(ctx, hook, d, start)
		a.Duration = w.o.Now().Sub(start)
		switch {
		case err != nil:
			a.Error = err.Error()
		case a.Status >= 200 && a.Status < 300:
		case a.Status == http.StatusGone:
			a.Error = "HTTP 410 Gone: the webhook was deactivated"
			disable = "its URL answered 410 Gone at " + start.UTC().Format(time.RFC3339)
		default:
			a.Error = "HTTP " + strconv.Itoa(a.Status)
		}
	}
	var next time.Time
	state, outcome := registry.DeliverySucceeded, OutcomeSuccess
	if a.Error != "" {
		state, outcome = registry.DeliveryFailed, OutcomeFailed
		if delay, ok := w.o.Backoff.Delay(d.Attempts+1, w.o.Rand); ok && disable == "" && hook.Active {
			next, outcome = w.o.Now().Add(delay), OutcomeRetry
		}
	}
	w.outcomes.WithLabelValues(outcome).Inc()
	// Record the attempt even if ctx ended meanwhile.
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordBudget)
	defer cancel()
	if err := w.o.Store.FinishAttempt(fctx, d.ID, w.o.Owner, a, next, state, disable); err != nil {
		log.WarnContext(ctx, "recording a webhook delivery attempt failed", "err", err)
		return
	}
	if a.Error != "" {
		log.InfoContext(ctx, "webhook delivery attempt failed", "attempt", d.Attempts+1, "error", a.Error, "next", next)
	}
}

// send posts the payload, signed at now, and returns the status and the
// answer's first bytes.
func (w *Worker) send(ctx context.Context, hook registry.Webhook, d registry.WebhookDelivery, now time.Time) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, w.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hook.URL, bytes.NewReader(d.Payload))
	if err != nil {
		return 0, "", fmt.Errorf("building the request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", w.o.UserAgent)
	req.Header.Set(apispec.HeaderSignature, Sign(hook.Secret, now, d.Payload))
	req.Header.Set(apispec.HeaderEvent, d.EventID)
	req.Header.Set(apispec.HeaderEventType, d.EventType)
	req.Header.Set(apispec.HeaderDelivery, d.ID)
	resp, err := w.client.Do(req)
	if err != nil {
		var g *GuardError
		if errors.As(err, &g) {
			return 0, "", g
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return 0, "", fmt.Errorf("no answer within %s", w.o.Timeout)
		}
		if inner := errors.Unwrap(err); inner != nil {
			return 0, "", inner // without the "Post URL:" prefix
		}
		return 0, "", err
	}
	defer resp.Body.Close()
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, registry.MaxWebhookResponseExcerpt))
	return resp.StatusCode, registry.Truncate(string(excerpt), registry.MaxWebhookResponseExcerpt), nil
}
