package postgres

import (
	"context"
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
	// is pinged: a dead peer (a network partition rather than a server
	// that closed the connection) is noticed within this plus the ping
	// timeout.
	listenIdleCheck = 15 * time.Second
	listenPing      = 5 * time.Second
	// Backoff between reconnection attempts.
	minReconnectDelay = 100 * time.Millisecond
	maxReconnectDelay = 2 * time.Second
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
// its own (outside the pool). When that connection fails it reports a
// ChangeLost, reconnects with a growing delay (up to two seconds) and
// reports a ChangeAll once listening again, since notifications sent
// meanwhile are lost. A connection that fails silently (a network
// partition) is found out within listenIdleCheck plus listenPing.
func (x *Index) WatchChanges(ctx context.Context, fn func(store.Change)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(x.closing, cancel)
	defer stop()

	delay := minReconnectDelay
	failing := false
	for {
		conn, err := x.listenConn(ctx)
		if err == nil {
			if failing {
				x.log.Info("index change feed: listening again")
			}
			failing, delay = false, minReconnectDelay
			fn(store.Change{Kind: store.ChangeAll})
			err = x.receive(ctx, conn, fn)
			if ctx.Err() == nil && x.closing.Err() == nil {
				fn(store.Change{Kind: store.ChangeLost}) // before the reconnection's ChangeAll
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
		if !failing {
			x.log.Warn("index change feed: connection lost; reconnecting (caches are dropped once it is back)",
				"err", scrub(err.Error(), x.listen.Password))
			failing = true
		}
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
		delay = min(2*delay, maxReconnectDelay)
	}
}

// listenConn opens a connection and starts listening on changeChannel.
func (x *Index) listenConn(ctx context.Context) (*pgx.Conn, error) {
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
	if _, err := conn.Exec(connectCtx, `LISTEN `+changeChannel); err != nil {
		conn.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return conn, nil
}

// receive passes notifications to fn until the connection fails or ctx
// ends. A connection silent for listenIdleCheck is pinged.
func (x *Index) receive(ctx context.Context, conn *pgx.Conn, fn func(store.Change)) error {
	for {
		waitCtx, cancel := context.WithTimeout(ctx, listenIdleCheck)
		n, err := conn.WaitForNotification(waitCtx)
		cancel()
		if err == nil {
			fn(parseChange(n.Payload))
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err) || conn.IsClosed() {
			return err
		}
		pingCtx, cancel := context.WithTimeout(ctx, listenPing)
		err = conn.Ping(pingCtx)
		cancel()
		if err != nil {
			return err
		}
	}
}
