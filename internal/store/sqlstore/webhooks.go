package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store"
)

const webhookColumns = `id, COALESCE(namespace, ''), url, events, secret, active, description, created_at, created_by, disabled_reason`

// nullNamespace stores the namespace "" of a global webhook as NULL.
func nullNamespace(ns string) any {
	if ns == "" {
		return nil
	}
	return ns
}

// CreateWebhook stores w; NotFound if its namespace does not exist,
// Conflict if its ID is taken.
func (x *Index) CreateWebhook(ctx context.Context, w registry.Webhook) error {
	created, err := x.time(w.CreatedAt, "webhook creation time")
	if err != nil {
		return err
	}
	return x.write(ctx, "creating webhook "+w.ID, func(ctx context.Context, t tx) error {
		if w.Namespace != "" {
			if err := namespaceExists(ctx, t, w.Namespace); err != nil {
				return err
			}
		}
		_, err := t.exec(ctx, `INSERT INTO webhooks (id, namespace, url, events, secret, active, description, created_at, created_by, disabled_reason)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			w.ID, nullNamespace(w.Namespace), w.URL, x.d.Strings(nonNil(w.Events)), w.Secret, w.Active, w.Description, created, w.CreatedBy, w.DisabledReason)
		if x.is(err, FailUnique) {
			return registry.Errorf(registry.Conflict, "webhook ID %q is taken", w.ID)
		}
		return err
	})
}

func webhookMissing(id string) error {
	return registry.Errorf(registry.NotFound, "webhook %s not found", id)
}

// GetWebhook returns one webhook, or NotFound.
func (x *Index) GetWebhook(ctx context.Context, id string) (registry.Webhook, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	w, err := x.scanWebhook(x.row(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = $1`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return registry.Webhook{}, webhookMissing(id)
	}
	return w, x.fail(err, "reading webhook "+id)
}

// ListWebhooks returns the webhooks of a namespace ("" for the global
// ones) ordered by CreatedAt then ID.
func (x *Index) ListWebhooks(ctx context.Context, namespace string) ([]registry.Webhook, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	rows, err := x.query(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE COALESCE(namespace, '') = $1 ORDER BY created_at, id`, namespace)
	out, err := collect(rows, err, x.scanWebhook)
	return out, x.fail(err, "listing webhooks")
}

// UpdateWebhook reads the webhook id locked in a write transaction,
// changes it with change and stores it; NotFound if it does not exist.
func (x *Index) UpdateWebhook(ctx context.Context, id string, change func(*registry.Webhook) error) (registry.Webhook, error) {
	var w registry.Webhook
	err := x.write(ctx, "updating webhook "+id, func(ctx context.Context, t tx) error {
		var err error
		w, err = x.scanWebhook(t.row(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = $1`+x.d.ForUpdate(), id))
		if errors.Is(err, sql.ErrNoRows) {
			return webhookMissing(id)
		} else if err != nil {
			return err
		}
		if err := change(&w); err != nil {
			return err
		}
		w.ID = id
		store.EffectsFrom(ctx).Bound(w)
		res, err := t.exec(ctx, `UPDATE webhooks SET url = $1, events = $2, active = $3, description = $4, secret = $5, disabled_reason = $6 WHERE id = $7`,
			w.URL, x.d.Strings(nonNil(w.Events)), w.Active, w.Description, w.Secret, w.DisabledReason, id)
		return affected(res, err, webhookMissing(id))
	})
	if err != nil {
		return registry.Webhook{}, err
	}
	return w, nil
}

// DeleteWebhook removes a webhook with its deliveries; NotFound if it
// does not exist.
func (x *Index) DeleteWebhook(ctx context.Context, id string) error {
	return x.write(ctx, "deleting webhook "+id, func(ctx context.Context, t tx) error {
		// The attempts and deliveries explicitly: SQLite enforces foreign
		// keys only where the connection enables them.
		if _, err := t.exec(ctx, `DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE webhook_id = $1)`, id); err != nil {
			return err
		}
		if _, err := t.exec(ctx, `DELETE FROM webhook_deliveries WHERE webhook_id = $1`, id); err != nil {
			return err
		}
		res, err := t.exec(ctx, `DELETE FROM webhooks WHERE id = $1`, id)
		return affected(res, err, webhookMissing(id))
	})
}

func (x *Index) scanWebhook(s scanner) (registry.Webhook, error) {
	var w registry.Webhook
	err := s.Scan(&w.ID, &w.Namespace, &w.URL, x.d.ScanStrings(&w.Events), &w.Secret, &w.Active, &w.Description,
		at(&w.CreatedAt), &w.CreatedBy, &w.DisabledReason)
	if len(w.Events) == 0 {
		w.Events = nil
	}
	return w, err
}

// insertEvent stores e unless an event of its ID is stored already and
// ifMissing is set.
func (x *Index) insertEvent(ctx context.Context, t tx, e registry.WebhookEvent, when any, ifMissing bool) error {
	if ifMissing {
		ok, err := t.exists(ctx, `SELECT EXISTS (SELECT 1 FROM webhook_events WHERE id = $1)`, e.ID)
		if err != nil || ok {
			return err
		}
	}
	_, err := t.exec(ctx, `INSERT INTO webhook_events (id, type, namespace, occurred_at, payload) VALUES ($1, $2, $3, $4, $5)`,
		e.ID, e.Type, e.Namespace, when, string(e.Payload))
	if x.is(err, FailUnique) {
		return registry.Errorf(registry.Conflict, "event ID %q is taken", e.ID)
	}
	return err
}

func insertDelivery(ctx context.Context, t tx, id, webhookID, eventID string, when any) error {
	_, err := t.exec(ctx, `INSERT INTO webhook_deliveries (id, webhook_id, event_id, state, attempts, next_attempt_at, lease_owner, lease_until, created_at, updated_at)
		VALUES ($1, $2, $3, 'pending', 0, $4, '', NULL, $4, $4)`, id, webhookID, eventID, when)
	return err
}

// EnqueueEvent stores an event with one delivery per active webhook
// that wants it, in one transaction.
func (x *Index) EnqueueEvent(ctx context.Context, e registry.WebhookEvent, newID func() string) (int, error) {
	if _, err := x.time(e.Time, "event time"); err != nil {
		return 0, err
	}
	// Most changes concern no webhook: look outside a write transaction
	// first, so that they take no write lock.
	if ok, err := x.anyWebhook(ctx, e.Namespace); err != nil || !ok {
		return 0, err
	}
	var n int
	err := x.write(ctx, "enqueueing event "+e.ID, func(ctx context.Context, t tx) error {
		var err error
		n, err = x.enqueueEvent(ctx, t, e, newID)
		return err
	})
	return n, err
}

// enqueueEvent stores e in t with one delivery per active webhook that
// wants it (EnqueueEvent, store.Effects), and returns their number; with
// none, e is not stored.
func (x *Index) enqueueEvent(ctx context.Context, t tx, e registry.WebhookEvent, newID func() string) (int, error) {
	when, err := x.time(e.Time, "event time")
	if err != nil {
		return 0, err
	}
	rows, err := t.query(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE active AND (namespace = $1 OR namespace IS NULL) ORDER BY created_at, id`, e.Namespace)
	hooks, err := collect(rows, err, x.scanWebhook)
	if err != nil {
		return 0, err
	}
	var ids []string
	for _, w := range hooks {
		if w.Wants(e.Type) {
			ids = append(ids, w.ID)
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	if err := x.insertEvent(ctx, t, e, when, false); err != nil {
		return 0, err
	}
	for _, id := range ids {
		if err := insertDelivery(ctx, t, newID(), id, e.ID, when); err != nil {
			return 0, err
		}
	}
	return len(ids), nil
}

// anyWebhook reports whether an active webhook of namespace, or a global
// one, exists.
func (x *Index) anyWebhook(ctx context.Context, namespace string) (bool, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	var ok bool
	err := x.row(ctx, `SELECT EXISTS (SELECT 1 FROM webhooks WHERE active AND (namespace = $1 OR namespace IS NULL))`, namespace).Scan(&ok)
	return ok, x.fail(err, "looking for webhooks")
}

// EnqueueDelivery stores e if needed and one delivery of it to one
// webhook.
func (x *Index) EnqueueDelivery(ctx context.Context, webhookID, id string, e registry.WebhookEvent) error {
	when, err := x.time(e.Time, "event time")
	if err != nil {
		return err
	}
	return x.write(ctx, "enqueueing a delivery to webhook "+webhookID, func(ctx context.Context, t tx) error {
		ok, err := t.exists(ctx, `SELECT EXISTS (SELECT 1 FROM webhooks WHERE id = $1)`, webhookID)
		if err != nil {
			return err
		}
		if !ok {
			return webhookMissing(webhookID)
		}
		if err := x.insertEvent(ctx, t, e, when, true); err != nil {
			return err
		}
		err = insertDelivery(ctx, t, id, webhookID, e.ID, when)
		if x.is(err, FailUnique) {
			return registry.Errorf(registry.Conflict, "delivery ID %q is taken", id)
		}
		return err
	})
}

const deliveryColumns = `d.id, d.webhook_id, d.event_id, e.type, d.state, d.attempts, d.next_attempt_at, d.created_at, d.updated_at`

func scanDelivery(s scanner, more ...any) (registry.WebhookDelivery, error) {
	var d registry.WebhookDelivery
	err := s.Scan(append([]any{&d.ID, &d.WebhookID, &d.EventID, &d.EventType, &d.State, &d.Attempts, at(&d.NextAttempt),
		at(&d.CreatedAt), at(&d.UpdatedAt)}, more...)...)
	return d, err
}

func scanDeliveryPayload(s scanner) (registry.WebhookDelivery, error) {
	var payload string
	d, err := scanDelivery(s, &payload)
	d.Payload = []byte(payload)
	return d, err
}

// ClaimDeliveries leases due deliveries to owner. On PostgreSQL the rows
// are selected FOR UPDATE SKIP LOCKED, so concurrent claims take
// different rows; SQLite runs one writer at a time. The UPDATE repeats
// the conditions, so a row leased meanwhile is never taken twice.
func (x *Index) ClaimDeliveries(ctx context.Context, owner string, now time.Time, lease time.Duration, limit int) ([]registry.WebhookDelivery, error) {
	if owner == "" || lease <= 0 || limit <= 0 {
		return nil, registry.Errorf(registry.Invalid, "claiming deliveries: an owner, a lease and a limit are required")
	}
	nowArg, err := x.time(now, "current time")
	if err != nil {
		return nil, err
	}
	until, err := x.time(now.Add(lease), "lease expiry")
	if err != nil {
		return nil, err
	}
	lock := x.d.ForUpdate()
	if lock != "" {
		lock += " SKIP LOCKED"
	}
	var out []registry.WebhookDelivery
	err = x.write(ctx, "claiming webhook deliveries", func(ctx context.Context, t tx) error {
		out = nil
		rows, err := t.query(ctx, `SELECT id FROM webhook_deliveries
			WHERE state = 'pending' AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
			ORDER BY next_attempt_at, id LIMIT $2`+lock, nowArg, limit)
		ids, err := collect(rows, err, func(s scanner) (string, error) {
			var id string
			return id, s.Scan(&id)
		})
		if err != nil {
			return err
		}
		for _, id := range ids {
			res, err := t.exec(ctx, `UPDATE webhook_deliveries SET lease_owner = $1, lease_until = $2
				WHERE id = $3 AND state = 'pending' AND (lease_until IS NULL OR lease_until <= $4)`, owner, until, id, nowArg)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				if err != nil {
					return err
				}
				continue
			}
			d, err := scanDeliveryPayload(t.row(ctx, `SELECT `+deliveryColumns+`, e.payload FROM webhook_deliveries d
				JOIN webhook_events e ON e.id = d.event_id WHERE d.id = $1`, id))
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return nil
	})
	return out, err
}

// FinishAttempt records an attempt of a leased delivery and releases it.
func (x *Index) FinishAttempt(ctx context.Context, id, owner string, a registry.WebhookAttempt, next time.Time, state, disable string) error {
	atArg, err := x.time(a.At, "attempt time")
	if err != nil {
		return err
	}
	nextArg, err := x.optTime(next, "next attempt time")
	if err != nil {
		return err
	}
	if next.IsZero() && state != registry.DeliverySucceeded && state != registry.DeliveryFailed {
		return registry.Errorf(registry.Invalid, "finishing delivery %s: state %q is not a final state", id, state)
	}
	if !next.IsZero() {
		state = registry.DeliveryPending
	}
	return x.write(ctx, "recording an attempt of delivery "+id, func(ctx context.Context, t tx) error {
		var n int
		var webhookID string
		err := t.row(ctx, `SELECT attempts, webhook_id FROM webhook_deliveries WHERE id = $1 AND lease_owner = $2 AND state = 'pending'`+x.d.ForUpdate(),
			id, owner).Scan(&n, &webhookID)
		if errors.Is(err, sql.ErrNoRows) {
			return registry.Errorf(registry.Conflict, "delivery %s is not leased to %s any more", id, owner)
		}
		if err != nil {
			return err
		}
		a.N = n + 1
		if _, err := t.exec(ctx, `INSERT INTO webhook_attempts (delivery_id, n, at, status, duration_ms, error, response) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			id, a.N, atArg, a.Status, a.Duration.Milliseconds(), registry.Truncate(a.Error, registry.MaxWebhookErrorLength),
			registry.Truncate(a.Response, registry.MaxWebhookResponseExcerpt)); err != nil {
			return err
		}
		if _, err := t.exec(ctx, `UPDATE webhook_deliveries SET attempts = $1, state = $2, next_attempt_at = $3, lease_owner = '', lease_until = NULL, updated_at = $4
			WHERE id = $5`, a.N, state, nextArg, atArg, id); err != nil {
			return err
		}
		if disable != "" {
			_, err = t.exec(ctx, `UPDATE webhooks SET active = $1, disabled_reason = $2 WHERE id = $3`, false, disable, webhookID)
		}
		return err
	})
}

// ListWebhookDeliveries returns a webhook's newest deliveries first.
func (x *Index) ListWebhookDeliveries(ctx context.Context, webhookID string, limit int) ([]registry.WebhookDelivery, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	rows, err := x.query(ctx, `SELECT `+deliveryColumns+` FROM webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id
		WHERE d.webhook_id = $1 ORDER BY d.created_at DESC, d.id DESC LIMIT $2`, webhookID, limit)
	out, err := collect(rows, err, func(s scanner) (registry.WebhookDelivery, error) { return scanDelivery(s) })
	return out, x.fail(err, "listing the deliveries of webhook "+webhookID)
}

// GetWebhookDelivery returns one delivery with its attempts and payload.
func (x *Index) GetWebhookDelivery(ctx context.Context, webhookID, id string) (registry.WebhookDelivery, error) {
	ctx, cancel := x.op(ctx)
	defer cancel()
	d, err := scanDeliveryPayload(x.row(ctx, `SELECT `+deliveryColumns+`, e.payload FROM webhook_deliveries d
		JOIN webhook_events e ON e.id = d.event_id WHERE d.webhook_id = $1 AND d.id = $2`, webhookID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return registry.WebhookDelivery{}, registry.Errorf(registry.NotFound, "webhook %s has no delivery %s", webhookID, id)
	}
	if err != nil {
		return d, x.fail(err, "reading delivery "+id)
	}
	rows, err := x.query(ctx, `SELECT n, at, status, duration_ms, error, response FROM webhook_attempts WHERE delivery_id = $1 ORDER BY n`, id)
	d.Log, err = collect(rows, err, func(s scanner) (registry.WebhookAttempt, error) {
		var a registry.WebhookAttempt
		var ms int64
		err := s.Scan(&a.N, at(&a.At), &a.Status, &ms, &a.Error, &a.Response)
		a.Duration = time.Duration(ms) * time.Millisecond
		return a, err
	})
	return d, x.fail(err, "reading the attempts of delivery "+id)
}

// PruneWebhookDeliveries removes finished deliveries last updated before
// before, and the events left without deliveries.
func (x *Index) PruneWebhookDeliveries(ctx context.Context, before time.Time) (int, error) {
	cutoff, err := x.time(before, "prune time")
	if err != nil {
		return 0, err
	}
	var n int64
	err = x.write(ctx, "pruning webhook deliveries", func(ctx context.Context, t tx) error {
		old := `SELECT id FROM webhook_deliveries WHERE state <> 'pending' AND updated_at < $1`
		if _, err := t.exec(ctx, `DELETE FROM webhook_attempts WHERE delivery_id IN (`+old+`)`, cutoff); err != nil {
			return err
		}
		res, err := t.exec(ctx, `DELETE FROM webhook_deliveries WHERE state <> 'pending' AND updated_at < $1`, cutoff)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		_, err = t.exec(ctx, `DELETE FROM webhook_events WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = webhook_events.id)`)
		return err
	})
	return int(n), err
}
