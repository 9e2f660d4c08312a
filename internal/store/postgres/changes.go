package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

// changeChannel is the NOTIFY channel of index changes.
const changeChannel = "trove_changes"

// Timing of the LISTEN connection.
const (
	// listenIdleCheck is how long the connection may stay silent before it
	// is probed (a notification sent to itself through the pool): a dead
	// peer (a network partition rather than a server that closed the
	// connection), or one that stopped delivering notifications, is
	// noticed within this plus listenPing, the probe's timeout.
	listenIdleCheck = 15 * time.Second
	listenPing      = 5 * time.Second
	// Backoff between reconnection attempts.
	minReconnectDelay = 100 * time.Millisecond
	maxReconnectDelay = 2 * time.Second
	// probeRetryDelay is the wait before listening again after a probe
	// that did not arrive: notifications that a pooler in transaction
	// mode keeps from the connection stay kept from the next one too.
	probeRetryDelay = 30 * time.Second
)

// changeMessage is the JSON payload of a notification.
type changeMessage struct {
	Kind      string `json:"k"`
	Namespace string `json:"ns,omitempty"`
	Name      string `json:"n,omitempty"`
	System    string `json:"s,omitempty"`
	Host      string `json:"h,omitempty"`
}

// The kinds in payloads; anything else reads as store.ChangeAll.
const (
	kindProvider = "provider"
	kindModule   = "module"
	kindMirrored = "mirrored"
	kindNS       = "namespace"
	kindAccess   = "access"
)

// notification encodes c as a notification payload.
func notification(c store.Change) (string, error) {
	m := changeMessage{Namespace: c.Namespace, Name: c.Name, System: c.System, Host: c.Host}
	switch c.Kind {
	case store.ChangeProvider:
		m.Kind = kindProvider
	case store.ChangeModule:
		m.Kind = kindModule
	case store.ChangeMirrored:
		m.Kind = kindMirrored
	case store.ChangeNamespace:
		m.Kind = kindNS
	case store.ChangeAccess:
		m = changeMessage{Kind: kindAccess}
	default:
		m = changeMessage{Kind: "all"}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", registry.Wrap(registry.Internal, err, "encoding a change notification")
	}
	if len(b) >= 8000 { // PostgreSQL's limit on a payload
		b = []byte(`{"k":"all"}`)
	}
	return string(b), nil
}

// parseChange decodes a notification payload. A payload it does not
// understand (from a newer Trove, say) is a ChangeAll, which is always
// safe.
func parseChange(payload string) store.Change {
	var m changeMessage
	if err := json.Unmarshal([]byte(payload), &m); err != nil {
		return store.Change{Kind: store.ChangeAll}
	}
	switch {
	case m.Kind == kindProvider && m.Namespace != "" && m.Name != "":
		return store.Change{Kind: store.ChangeProvider, Namespace: m.Namespace, Name: m.Name}
	case m.Kind == kindModule && m.Namespace != "" && m.Name != "" && m.System != "":
		return store.Change{Kind: store.ChangeModule, Namespace: m.Namespace, Name: m.Name, System: m.System}
	case m.Kind == kindMirrored && m.Host != "" && m.Namespace != "" && m.Name != "":
		return store.Change{Kind: store.ChangeMirrored, Host: m.Host, Namespace: m.Namespace, Name: m.Name}
	case m.Kind == kindNS && m.Namespace != "":
		return store.Change{Kind: store.ChangeNamespace, Namespace: m.Namespace}
	case m.Kind == kindAccess:
		return store.Change{Kind: store.ChangeAccess}
	}
	return store.Change{Kind: store.ChangeAll}
}

// WatchChanges implements store.ChangeFeed with LISTEN on a connection of
// its own (outside the pool). It reports a ChangeAll only once it has
// proved that notifications reach that connection (probe: one sent
// through the pool arrived), and proves it again whenever the connection
// has been silent for listenIdleCheck. When the connection fails, or a
// probe does not arrive, it reports a ChangeLost, reconnects with a
// growing delay (up to two seconds; probeRetryDelay when notifications
// did not arrive, as behind a pooler in transaction mode) and reports a
// ChangeAll once listening again, since notifications sent meanwhile are
// lost. A connection that fails silently (a network partition) is found
// out within listenIdleCheck plus listenPing.
func (x *Index) WatchChanges(ctx context.Context, fn func(store.Change)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(x.closing, cancel)
	defer stop()

	probe, err := probeChannel()
	if err != nil {
		return err
	}
	delay := minReconnectDelay
	failing := false
	for {
		conn, err := x.listenConn(ctx, probe)
		if err == nil {
			// Changes that arrive before the probe are covered by the
			// ChangeAll that follows it: dropped.
			if err = x.probe(ctx, conn, probe, nil); err == nil {
				if failing {
					x.log.Info("index change feed: listening again")
				}
				failing, delay = false, minReconnectDelay
				fn(store.Change{Kind: store.ChangeAll})
				err = x.receive(ctx, conn, probe, fn)
				if ctx.Err() == nil && x.closing.Err() == nil {
					fn(store.Change{Kind: store.ChangeLost}) // before the reconnection's ChangeAll
				}
			}
			closeCtx, done := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			conn.Close(closeCtx)
			done()
		}
		switch {
		case x.closing.Err() != nil:
			return registry.Errorf(registry.Unavailable, "watching index changes: the index is closed")
		case ctx.Err() != nil:
			return ctx.Err()
		}
		if errors.Is(err, errNotDelivered) {
			if !failing {
				x.log.Warn("index change feed: notifications do not reach the listening connection (a connection pooler in transaction mode?); "+
					"other replicas' changes show up after the caches' 30-second age. Connect in session mode or directly; retrying",
					"retry", probeRetryDelay)
				failing = true
			}
			delay = probeRetryDelay
		} else if !failing {
			x.log.Warn("index change feed: connection lost; reconnecting (caches are dropped once it is back)",
				"err", scrub(err.Error(), x.listen.Password))
			failing = true
		}
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
		delay = min(2*delay, max(delay, maxReconnectDelay))
	}
}

// errNotDelivered is a probe's failure: the notification it sent through
// the pool did not reach the listening connection within listenPing.
var errNotDelivered = errors.New("a notification sent through the pool did not reach the listening connection")

// probeChannel returns a channel name of this feed's own, for its probes:
// not changeChannel, whose unknown payloads every replica would take as
// ChangeAll.
func probeChannel() (string, error) {
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return "", registry.Wrap(registry.Internal, err, "naming the change feed's probe channel")
	}
	return "trove_probe_" + hex.EncodeToString(b), nil
}

// listenConn opens a connection and starts listening on changeChannel and
// on probe.
func (x *Index) listenConn(ctx context.Context, probe string) (*pgx.Conn, error) {
	cfg := x.listen.Copy()
	// A deadline, not a cancel request, ends a wait for notifications; the
	// connection stays usable after it.
	cfg.BuildContextWatcherHandler = func(pc *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.DeadlineContextWatcherHandler{Conn: pc.Conn()}
	}
	connectCtx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout+listenPing)
	defer cancel()
	conn, err := pgx.ConnectConfig(connectCtx, cfg)
	if err != nil {
		return nil, err
	}
	for _, channel := range []string{changeChannel, probe} {
		if _, err := conn.Exec(connectCtx, `LISTEN `+channel); err != nil {
			conn.Close(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	return conn, nil
}

// probe proves that notifications reach conn: it sends one on probe (the
// feed's own channel) through the pool, another session as other
// replicas' notifications come from, and waits listenPing for it, passing
// the changes that arrive meanwhile to fn (nil: dropped). A probe that
// does not arrive is errNotDelivered.
func (x *Index) probe(ctx context.Context, conn *pgx.Conn, probe string, fn func(store.Change)) error {
	pctx, cancel := context.WithTimeout(ctx, listenPing)
	defer cancel()
	if _, err := x.pool.Exec(pctx, `SELECT pg_notify($1, '')`, probe); err != nil {
		return err
	}
	for {
		n, err := conn.WaitForNotification(pctx)
		if err != nil {
			if ctx.Err() == nil && pctx.Err() != nil && !conn.IsClosed() {
				return errNotDelivered
			}
			return err
		}
		if n.Channel == probe {
			return nil
		}
		if fn != nil {
			fn(parseChange(n.Payload))
		}
	}
}

// receive passes notifications to fn until the connection fails, a probe
// does not arrive, or ctx ends. A connection silent for listenIdleCheck
// is probed.
func (x *Index) receive(ctx context.Context, conn *pgx.Conn, probe string, fn func(store.Change)) error {
	for {
		waitCtx, cancel := context.WithTimeout(ctx, listenIdleCheck)
		n, err := conn.WaitForNotification(waitCtx)
		cancel()
		if err == nil {
			if n.Channel != probe { // a probe that arrived late
				fn(parseChange(n.Payload))
			}
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err) || conn.IsClosed() {
			return err
		}
		if err := x.probe(ctx, conn, probe, fn); err != nil {
			return err
		}
	}
}
