// Package audit records security-relevant events (logins, tokens,
// memberships, publishes, deletions) in the index's audit log, with who
// did it, when and from which network address. Recording is best effort:
// a failure to write the log is logged as an error and does not undo or
// fail the action, which has already happened.
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
func (rec *Recorder) Record(ctx context.Context, r *http.Request, e registry.AuditEvent) {
	if rec == nil {
		return
	}
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
	rec.logger.LogAttrs(ctx, slog.LevelInfo, "audit", slog.String("action", e.Action), slog.String("actor", e.Actor),
		slog.String("source", e.SourceAddr), slog.String("namespace", e.Namespace), slog.String("target", e.Target),
		slog.String("details", e.Details))
	if rec.log == nil {
		return
	}
	// The action has happened: record it even if the client went away.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
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
