package postgres

import (
	"context"
	"encoding/binary"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"trove.dev/trove/internal/registry"
	"trove.dev/trove/internal/store/sqlstore"
)

// rowReader is the sqlstore.RowReader on pgx's own rows: each row's
// columns are the bytes pgx received (Rows.RawValues), decoded only when
// asked, where the database/sql adapter made a Go value of every column
// (a string, a boxed integer or time) on every row.
type rowReader struct{ pool *pgxpool.Pool }

// rawFormats asks for integers and times in PostgreSQL's binary format
// (decoded here without allocation), text as it is (its binary format),
// and lists in the text format that the dialect's ScanStrings decodes.
// A column of another type comes in the text format.
var rawFormats = pgx.QueryResultFormatsByOID{
	pgtype.Int8OID:        pgx.BinaryFormatCode,
	pgtype.Int4OID:        pgx.BinaryFormatCode,
	pgtype.Int2OID:        pgx.BinaryFormatCode,
	pgtype.TimestamptzOID: pgx.BinaryFormatCode,
	pgtype.TextOID:        pgx.BinaryFormatCode,
	pgtype.VarcharOID:     pgx.BinaryFormatCode,
	pgtype.TextArrayOID:   pgx.TextFormatCode,
}

func (r rowReader) ReadRows(ctx context.Context, query string, args []any, fn func(sqlstore.RawRow) error) error {
	rows, err := r.pool.Query(ctx, query, append([]any{rawFormats}, args...)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	row := &rawRow{fields: rows.FieldDescriptions()}
	defer row.release()
	for rows.Next() {
		row.values = rows.RawValues()
		if err := fn(row); err != nil {
			return err
		}
		if row.err != nil {
			return row.err
		}
	}
	return rows.Err()
}

// rawRow is the sqlstore.RawRow of rowReader.
type rawRow struct {
	fields []pgconn.FieldDescription
	values [][]byte
	m      *pgtype.Map // from typeMaps, for the formats decoded by pgx
	err    error       // the first failed decoding
}

func (r *rawRow) release() {
	if r.m != nil {
		typeMaps.Put(r.m)
	}
}

// scan decodes column i into dst through pgx's type map.
func (r *rawRow) scan(i int, dst any) {
	if r.m == nil {
		r.m = typeMaps.Get().(*pgtype.Map)
	}
	f := r.fields[i]
	if err := r.m.Scan(f.DataTypeOID, f.Format, r.values[i], dst); err != nil && r.err == nil {
		r.err = registry.Wrap(registry.Internal, err, "decoding column "+f.Name)
	}
}

func (r *rawRow) fail(i int, why string) {
	if r.err == nil {
		r.err = registry.Errorf(registry.Internal, "decoding column %s: %s", r.fields[i].Name, why)
	}
}

func (r *rawRow) Null(i int) bool { return r.values[i] == nil }

func (r *rawRow) Int64(i int) int64 {
	v, f := r.values[i], r.fields[i]
	switch {
	case v == nil:
		return 0
	case f.Format == pgx.BinaryFormatCode && f.DataTypeOID == pgtype.Int8OID && len(v) == 8:
		return int64(binary.BigEndian.Uint64(v))
	case f.Format == pgx.BinaryFormatCode && f.DataTypeOID == pgtype.Int4OID && len(v) == 4:
		return int64(int32(binary.BigEndian.Uint32(v)))
	}
	var n int64
	r.scan(i, &n)
	return n
}

// pgEpochMicros is PostgreSQL's epoch, 2000-01-01 UTC, in Unix microseconds.
const pgEpochMicros = 946_684_800_000_000

func (r *rawRow) Time(i int) time.Time {
	v, f := r.values[i], r.fields[i]
	switch {
	case v == nil:
		return time.Time{}
	case f.Format == pgx.BinaryFormatCode && f.DataTypeOID == pgtype.TimestamptzOID && len(v) == 8:
		us := int64(binary.BigEndian.Uint64(v))
		if us == math.MaxInt64 || us == math.MinInt64 {
			r.fail(i, "an infinite time")
			return time.Time{}
		}
		return time.UnixMicro(us + pgEpochMicros).UTC()
	}
	var t time.Time
	r.scan(i, &t)
	return t.UTC()
}

func (r *rawRow) Text(i int) []byte { return r.values[i] }
