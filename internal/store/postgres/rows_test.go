package postgres

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"trove.dev/trove/internal/store/postgres/pgtest"
	"trove.dev/trove/internal/store/sqlstore"
)

// TestRowReader reads every kind of column the long lists use through
// rowReader, with pgx's default (extended, binary results) protocol and
// with the simple protocol (every result in the text format, decoded by
// pgx's type map), and fails on a column read as what it is not.
func TestRowReader(t *testing.T) {
	server := pgtest.ServerDSN(t)
	want := time.Date(2026, 11, 28, 12, 34, 56, 123456000, time.UTC)
	for _, mode := range []string{"", "simple_protocol"} {
		t.Run("mode="+mode, func(t *testing.T) {
			dsn := server
			if mode != "" {
				sep := "?"
				if strings.Contains(dsn, "?") {
					sep = "&"
				}
				dsn += sep + "default_query_exec_mode=" + mode
			}
			pool, err := pgxpool.New(context.Background(), dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			r := rowReader{pool}
			rows := 0
			err = r.ReadRows(t.Context(), `SELECT $1::int8, NULL::int8, 7::int4, '2026-11-28 12:34:56.123456+00'::timestamptz,
				NULL::timestamptz, 'héllo'::text, ''::text, NULL::text, '{5.0,"6 0"}'::text[], $2::text`,
				[]any{int64(-1) << 40, "x"}, func(row sqlstore.RawRow) error {
					rows++
					if got := row.Int64(0); got != -1<<40 {
						t.Errorf("Int64(0) = %d", got)
					}
					if !row.Null(1) || row.Int64(1) != 0 || row.Null(0) {
						t.Errorf("NULL integer: Null %v, Int64 %d", row.Null(1), row.Int64(1))
					}
					if got := row.Int64(2); got != 7 {
						t.Errorf("Int64(2) = %d", got)
					}
					if got := row.Time(3); !got.Equal(want) || got.Location() != time.UTC {
						t.Errorf("Time(3) = %v, want %v in UTC", got, want)
					}
					if got := row.Time(4); !got.IsZero() {
						t.Errorf("NULL time = %v", got)
					}
					if got := string(row.Text(5)); got != "héllo" {
						t.Errorf("Text(5) = %q", got)
					}
					if row.Null(6) || len(row.Text(6)) != 0 || !row.Null(7) {
						t.Errorf("empty text: Null %v %q; NULL text: Null %v", row.Null(6), row.Text(6), row.Null(7))
					}
					var list []string
					scanner := (dialect{}).ScanStrings(&list).(sql.Scanner)
					if err := scanner.Scan(string(row.Text(8))); err != nil ||
						!slices.Equal(list, []string{"5.0", "6 0"}) {
						t.Errorf("list %q: %q, %v", row.Text(8), list, err)
					}
					if got := string(row.Text(9)); got != "x" {
						t.Errorf("Text(9) = %q", got)
					}
					return nil
				})
			if err != nil || rows != 1 {
				t.Fatalf("ReadRows: %d rows, %v", rows, err)
			}

			for _, bad := range []struct {
				query string
				read  func(sqlstore.RawRow)
			}{
				{`SELECT 'abc'::text`, func(row sqlstore.RawRow) { row.Int64(0) }},
				{`SELECT 'infinity'::timestamptz`, func(row sqlstore.RawRow) { row.Time(0) }},
				{`SELECT 5::int8`, func(row sqlstore.RawRow) { row.Time(0) }},
			} {
				err := r.ReadRows(t.Context(), bad.query, nil, func(row sqlstore.RawRow) error {
					bad.read(row)
					return nil
				})
				if err == nil {
					t.Errorf("%s: read as what it is not without an error", bad.query)
				}
			}
		})
	}
}
