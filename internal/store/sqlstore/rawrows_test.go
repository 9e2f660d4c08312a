package sqlstore

import (
	"database/sql"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// dollarDialect is a Dialect for the reader only: SQLite reads $N
// placeholders as ?N.
type dollarDialect struct{ Dialect }

func (dollarDialect) Rebind(q string) string { return strings.ReplaceAll(q, "$", "?") }

// TestSQLRowReader reads every kind of column the long lists use through
// the database/sql RowReader, and fails on a column read as what it is
// not.
func TestSQLRowReader(t *testing.T) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := sqlRowReader{db, dollarDialect{}}
	want := time.Date(2026, 11, 28, 12, 34, 56, 123456000, time.UTC)
	var got []string
	err = r.ReadRows(t.Context(), `SELECT $1, NULL, $2, 'héllo', '', x'6869' UNION ALL SELECT 2, 3, NULL, 'b', NULL, x''`,
		[]any{int64(-1) << 40, want.UnixMicro()}, func(row RawRow) error {
			got = append(got, strings.Join([]string{
				time.Duration(row.Int64(0)).String(), time.Duration(row.Int64(1)).String(),
				row.Time(2).Format(time.RFC3339Nano), string(row.Text(3)), string(row.Text(4)), string(row.Text(5)),
			}, "|"))
			if row.Null(0) || row.Null(1) != (len(got) == 1) || row.Null(4) != (len(got) == 2) {
				t.Errorf("row %d: Null wrong", len(got))
			}
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	wantRows := []string{
		time.Duration(-1<<40).String() + "|0s|2026-11-28T12:34:56.123456Z|héllo||hi",
		"2ns|3ns|0001-01-01T00:00:00Z|b||",
	}
	if strings.Join(got, "\n") != strings.Join(wantRows, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantRows, "\n"))
	}

	for _, bad := range []struct {
		query string
		read  func(RawRow)
	}{
		{`SELECT 'abc'`, func(row RawRow) { row.Int64(0) }},
		{`SELECT 'abc'`, func(row RawRow) { row.Time(0) }},
		{`SELECT 1.5`, func(row RawRow) { row.Text(0) }},
	} {
		err := r.ReadRows(t.Context(), bad.query, nil, func(row RawRow) error {
			bad.read(row)
			return nil
		})
		if err == nil {
			t.Errorf("%s: read as what it is not without an error", bad.query)
		}
	}
}
