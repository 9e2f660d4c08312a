package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"trove.dev/trove/internal/registry"
)

// deviceColumns are the columns scanDeviceCode reads, in its order.
const deviceColumns = `device_hash, user_hash, client_id, created_at, expires_at, last_poll_at,
	decision, user_name, scopes, token_id, decided_at, used_at`

func (x *Index) scanDeviceCode(row interface{ Scan(...any) error }) (registry.DeviceCode, error) {
	var d registry.DeviceCode
	var scopes []string
	err := row.Scan(&d.DeviceHash, &d.UserHash, &d.ClientID, at(&d.CreatedAt), at(&d.ExpiresAt), at(&d.LastPollAt),
		&d.Decision, &d.User, x.d.ScanStrings(&scopes), &d.TokenID, at(&d.DecidedAt), at(&d.UsedAt))
	if errors.Is(err, sql.ErrNoRows) {
		return d, registry.Errorf(registry.NotFound, "no such device code")
	}
	if len(scopes) > 0 {
		d.Scopes = toScopes(scopes)
	}
	return d, err
}

// CreateDeviceCode stores a pending device code; Conflict if one of its
// hashes is taken.
func (x *Index) CreateDeviceCode(ctx context.Context, d registry.DeviceCode) error {
	created, err := x.time(d.CreatedAt, "device code creation time")
	if err != nil {
		return err
	}
	expires, err := x.time(d.ExpiresAt, "device code expiry")
	if err != nil {
		return err
	}
	if d.Decision != "" || !d.UsedAt.IsZero() {
		return registry.Errorf(registry.Invalid, "a new device code is pending and unused")
	}
	return x.write(ctx, "storing a device code", func(ctx context.Context, t tx) error {
		_, err := t.exec(ctx, `INSERT INTO device_codes (device_hash, user_hash, client_id, created_at, expires_at, scopes)
			VALUES ($1, $2, $3, $4, $5, $6)`,
			d.DeviceHash, d.UserHash, d.ClientID, created, expires, x.d.Strings(nil))
		if x.is(err, FailUnique) {
			return registry.Errorf(registry.Conflict, "a device code with the same device or user code exists already")
		}
		return err
	})
}

// DecideDeviceCode records a decision on an undecided, unexpired code and
// returns the code as it was before. The row is locked, so of two
// concurrent calls exactly one decides.
func (x *Index) DecideDeviceCode(ctx context.Context, userHash string, dec registry.DeviceDecision) (registry.DeviceCode, error) {
	when, err := x.time(dec.DecidedAt, "device code decision time")
	if err != nil {
		return registry.DeviceCode{}, err
	}
	if dec.Decision != registry.DeviceApproved && dec.Decision != registry.DeviceDenied {
		return registry.DeviceCode{}, registry.Errorf(registry.Invalid, "a device code is approved or denied")
	}
	scopes, err := scopeStrings(dec.Scopes)
	if err != nil {
		return registry.DeviceCode{}, err
	}
	var d registry.DeviceCode
	err = x.write(ctx, "deciding a device code", func(ctx context.Context, t tx) error {
		var err error
		d, err = x.scanDeviceCode(t.row(ctx, `SELECT `+deviceColumns+` FROM device_codes WHERE user_hash = $1`+x.d.ForUpdate(), userHash))
		if err != nil {
			return err
		}
		if d.Decision != "" || !dec.DecidedAt.Before(d.ExpiresAt) {
			return nil
		}
		if err := userExists(ctx, t, dec.User); err != nil {
			return err
		}
		_, err = t.exec(ctx, `UPDATE device_codes SET decision = $1, user_name = $2, scopes = $3, token_id = $4, decided_at = $5
			WHERE user_hash = $6`, dec.Decision, dec.User, x.d.Strings(scopes), dec.TokenID, when, userHash)
		return err
	})
	if err != nil {
		return registry.DeviceCode{}, err
	}
	return d, nil
}

// PollDeviceCode records a poll and, for an approved code not used yet,
// marks it used; it returns the code as it was before. The row is locked,
// so of two concurrent calls exactly one sees it unused.
func (x *Index) PollDeviceCode(ctx context.Context, deviceHash string, when time.Time) (registry.DeviceCode, error) {
	polled, err := x.time(when, "device code poll time")
	if err != nil {
		return registry.DeviceCode{}, err
	}
	var d registry.DeviceCode
	err = x.write(ctx, "polling a device code", func(ctx context.Context, t tx) error {
		var err error
		d, err = x.scanDeviceCode(t.row(ctx, `SELECT `+deviceColumns+` FROM device_codes WHERE device_hash = $1`+x.d.ForUpdate(), deviceHash))
		if err != nil {
			return err
		}
		if d.Decision == registry.DeviceApproved && d.UsedAt.IsZero() {
			_, err = t.exec(ctx, `UPDATE device_codes SET last_poll_at = $1, used_at = $1 WHERE device_hash = $2`, polled, deviceHash)
		} else {
			_, err = t.exec(ctx, `UPDATE device_codes SET last_poll_at = $1 WHERE device_hash = $2`, polled, deviceHash)
		}
		return err
	})
	if err != nil {
		return registry.DeviceCode{}, err
	}
	return d, nil
}

// DeleteDeviceCodes removes the codes that expired before the given time.
func (x *Index) DeleteDeviceCodes(ctx context.Context, expiredBefore time.Time) (int, error) {
	before, err := x.time(expiredBefore, "device code expiry")
	if err != nil {
		return 0, err
	}
	var n int64
	err = x.write(ctx, "deleting expired device codes", func(ctx context.Context, t tx) error {
		res, err := t.exec(ctx, `DELETE FROM device_codes WHERE expires_at < $1`, before)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}
