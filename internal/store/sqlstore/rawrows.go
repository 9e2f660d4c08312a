package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"trove.dev/trove/internal/registry"
)

// RawRow is the current row of a statement a RowReader reads: its
// columns as the driver received them, decoded only when asked, so that
// reading a row allocates nothing per column. A RawRow and the bytes it
// returns are valid only until the callback that received it returns.
//
// A column that cannot be decoded as asked (an integer read as a time)
// yields the zero value and makes the RowReader fail after the callback.
type RawRow interface {
	// Null reports whether column i is NULL.
	Null(i int) bool
	// Int64 returns integer column i, 0 for NULL.
	Int64(i int) int64
	// Time returns time column i in UTC, the zero time for NULL.
	Time(i int) time.Time
	// Text returns the bytes of column i: a text column's text, or the
	// encoding of another type (a list column, for Dialect.ScanStrings);
	// empty for NULL.
	Text(i int) []byte
}

// RowReader runs a read and hands every row of its result to fn, without
// database/sql's Go value per column (see RawRow), stopping at fn's first
// error. query is written with $N placeholders. ListProviderVersions reads
// through it, the only list that can reach tens of thousands of rows.
type RowReader interface {
	ReadRows(ctx context.Context, query string, args []any, fn func(RawRow) error) error
}

// sqlRowReader is the RowReader over database/sql: each column's driver
// value is kept as received (no conversion), and a text column held as a
// string is copied into a buffer reused from row to row.
type sqlRowReader struct {
	db *sql.DB
	d  Dialect
}

func (r sqlRowReader) ReadRows(ctx context.Context, query string, args []any, fn func(RawRow) error) error {
	rows, err := r.db.QueryContext(ctx, r.d.Rebind(query), args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	row := &sqlRow{cols: make([]sqlValue, len(cols))}
	targets := make([]any, len(cols))
	for i := range row.cols {
		targets[i] = &row.cols[i]
	}
	for rows.Next() {
		if err := rows.Scan(targets...); err != nil {
			return err
		}
		if err := fn(row); err != nil {
			return err
		}
		if row.err != nil {
			return row.err
		}
	}
	return rows.Err()
}

// sqlValue receives one column's driver value (a sql.Scanner is handed
// the value unconverted).
type sqlValue struct {
	src any
	buf []byte // a string's bytes
}

func (v *sqlValue) Scan(src any) error {
	v.src = src
	return nil
}

// sqlRow is the RawRow of sqlRowReader.
type sqlRow struct {
	cols []sqlValue
	err  error // the first failed decoding
}

func (r *sqlRow) fail(i int, want string) {
	if r.err == nil {
		r.err = registry.Errorf(registry.Internal, "column %d holds a %T, not %s", i, r.cols[i].src, want)
	}
}

func (r *sqlRow) Null(i int) bool { return r.cols[i].src == nil }

func (r *sqlRow) Int64(i int) int64 {
	switch v := r.cols[i].src.(type) {
	case nil:
		return 0
	case int64:
		return v
	}
	r.fail(i, "an integer")
	return 0
}

func (r *sqlRow) Time(i int) time.Time {
	var t time.Time
	if err := at(&t).Scan(r.cols[i].src); err != nil {
		r.fail(i, "a time")
	}
	return t
}

func (r *sqlRow) Text(i int) []byte {
	c := &r.cols[i]
	switch v := c.src.(type) {
	case nil:
		return nil
	case []byte:
		return v
	case string:
		c.buf = append(c.buf[:0], v...)
		return c.buf
	}
	r.fail(i, "text")
	return nil
}

// rowText gives the text columns of one or more rows strings that share
// one allocation: add records where each goes, flush makes the one string
// and assigns each its part. The destinations must not move before the
// flush.
type rowText struct {
	buf   []byte
	parts []textPart
}

// textPart is where a text of a rowText goes: buf[start:end] to *dst.
type textPart struct {
	dst        *string
	start, end int32
}

// add assigns text to *dst at the next flush.
func (t *rowText) add(dst *string, text []byte) {
	if len(text) == 0 {
		*dst = ""
		return
	}
	if len(t.buf)+len(text) > textBatch && len(t.buf) > 0 {
		t.flush() // strings of at most textBatch bytes (a size class) where the texts allow
	}
	start := len(t.buf)
	t.buf = append(t.buf, text...)
	t.parts = append(t.parts, textPart{dst, int32(start), int32(len(t.buf))})
}

// flush assigns the texts added since the last flush.
func (t *rowText) flush() {
	if len(t.parts) == 0 {
		return
	}
	s := string(t.buf)
	for _, p := range t.parts {
		*p.dst = s[p.start:p.end]
	}
	clear(t.parts) // no pointers kept
	t.buf, t.parts = t.buf[:0], t.parts[:0]
}

// internBytes is intern for the bytes of a string: no allocation when
// the string was seen before.
func (s *stringInterner) internBytes(b []byte) string {
	if got, ok := (*s)[string(b)]; ok {
		return got
	}
	return s.intern(string(b))
}

// decode returns the list that encoded (a list column's bytes, see
// RawRow.Text) holds, decoding each distinct encoding once.
func (l *listInterner) decode(d Dialect, encoded []byte) ([]string, error) {
	if got, ok := l.seen[string(encoded)]; ok {
		return got, nil
	}
	key := string(encoded)
	var list []string
	if err := d.ScanStrings(&list).(sql.Scanner).Scan(key); err != nil {
		return nil, fmt.Errorf("decoding a list column: %w", err)
	}
	if l.seen == nil {
		l.seen = map[string][]string{}
	}
	list = slices.Clip(list)
	l.seen[key] = list
	return list, nil
}
