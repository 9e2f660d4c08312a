// Package audit records security-relevant events (logins, tokens,
// memberships, publishes, deletions) in the index's audit log, with who
// did it, when and from which network address. The event of a change is
// committed in the change's own transaction (Add, store.Effects, Done), so
// that neither is kept without the other. Events without a change (a
// failed login) are recorded best effort (Record): a failure to write the
// log is logged as an error and fails nothing.
package audit

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"trove.dev/trove/internal/auth"
	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// Recorder appends events to an audit log.
type Recorder struct {
	log    store.AuditLog
	logger *slog.Logger
	now    func() time.Time
}

// New returns a Recorder writing to log (which may be nil: events are
// then only written to logger) and logging each event to logger.
func New(log store.AuditLog, logger *slog.Logger) *Recorder {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Recorder{log: log, logger: logger, now: time.Now}
}

// Record stores e. It fills what e leaves empty: the time, the actor (the
// Principal of r's context) and the source address (r's remote IP). r may
// be nil for events that have no request.
//
// Record is for events that go with no write (a failed login): the event
// of a change is committed with it instead (Add, then Done).
func (rec *Recorder) Record(ctx context.Context, r *http.Request, e registry.AuditEvent) {
	if rec == nil {
		return
	}
	e = rec.fill(r, e)
	rec.log1(ctx, e)
	rec.append(ctx, e)
}

// Add fills e as Record does and adds it to fx, to be committed with the
// write fx goes with (store.WithEffects). After the write, call Done.
func (rec *Recorder) Add(fx *store.Effects, r *http.Request, e registry.AuditEvent) {
	if rec == nil || fx == nil {
		return
	}
	fx.Audit = append(fx.Audit, rec.fill(r, e))
}

// Effects returns new effects holding events (see Add), for a write that
// records no webhook event.
func (rec *Recorder) Effects(r *http.Request, events ...registry.AuditEvent) *store.Effects {
	fx := &store.Effects{}
	for _, e := range events {
		rec.Add(fx, r, e)
	}
	return fx
}

// Done is called after the write fx went with succeeded: it logs the
// audit events of fx, and appends them to the log, best effort, if that
// write did not take them (an index without effects, or a write that
// changed nothing but is audited all the same).
func (rec *Recorder) Done(ctx context.Context, fx *store.Effects) {
	if rec == nil || fx == nil {
		return
	}
	taken := fx.Taken()
	for _, e := range fx.Audit {
		rec.log1(ctx, e)
		if !taken {
			rec.append(ctx, e)
		}
	}
}

// fill completes e with the time, actor and source address.
func (rec *Recorder) fill(r *http.Request, e registry.AuditEvent) registry.AuditEvent {
	if e.Time.IsZero() {
		e.Time = rec.now().UTC()
	}
	if r != nil {
		if e.Actor == "" {
			e.Actor = auth.FromContext(r.Context()).Actor()
		}
		if e.SourceAddr == "" {
			e.SourceAddr = SourceAddr(r)
		}
	}
	if e.Actor == "" {
		e.Actor = "anonymous"
	}
	return e
}

// log1 writes the log line of e.
func (rec *Recorder) log1(ctx context.Context, e registry.AuditEvent) {
	rec.logger.LogAttrs(ctx, slog.LevelInfo, "audit", slog.String("action", e.Action), slog.String("actor", e.Actor),
		slog.String("source", e.SourceAddr), slog.String("namespace", e.Namespace), slog.String("target", e.Target),
		slog.String("details", e.Details))
}

// append stores e in the log on its own, best effort.
func (rec *Recorder) append(ctx context.Context, e registry.AuditEvent) {
	if rec.log == nil {
		return
	}
	// The action has happened: record it even if the client went away.
	ctx, cancel := context.WithTimeout(store.WithoutEffects(context.WithoutCancel(ctx)), 10*time.Second)
	defer cancel()
	if _, err := rec.log.AppendAudit(ctx, e); err != nil {
		rec.logger.ErrorContext(ctx, "writing the audit log failed", "action", e.Action, "actor", e.Actor, "err", err)
	}
}

// SourceAddr returns the IP address r came from: the host part of its
// RemoteAddr. Trove does not trust X-Forwarded-For; behind a proxy every
// request comes from the proxy's address.
func SourceAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
