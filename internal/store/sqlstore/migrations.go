package sqlstore

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
)

// Migration is one schema step of a backend: a file
// migrations/<version>_<name>.sql. A file never changes once released; a
// schema change is a new file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

var migrationName = regexp.MustCompile(`^([0-9]{4})_([a-z0-9_]+)\.sql$`)

// LoadMigrations returns the migrations in the directory dir of fsys in
// order of their versions, which must be unique and start at 1. A gap is
// allowed (a number reserved by a change not merged yet): the runners
// apply every migration whose version the database has not recorded, in
// order, so a migration that fills a gap later is still applied to a
// database migrated past it. The schema version is the newest version.
func LoadMigrations(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, e := range entries {
		m := migrationName.FindStringSubmatch(e.Name())
		if m == nil {
			return nil, fmt.Errorf("migration file %s is not named NNNN_name.sql", e.Name())
		}
		body, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		v, _ := strconv.Atoi(m[1])
		ms = append(ms, Migration{Version: v, Name: m[2], SQL: string(body)})
	}
	slices.SortFunc(ms, func(a, b Migration) int { return a.Version - b.Version })
	for i, m := range ms {
		switch {
		case i == 0 && m.Version != 1:
			return nil, fmt.Errorf("migration %04d_%s: the first migration has version 1", m.Version, m.Name)
		case i > 0 && m.Version == ms[i-1].Version:
			return nil, fmt.Errorf("migrations %04d_%s and %04d_%s have the same version", m.Version, ms[i-1].Name, m.Version, m.Name)
		}
	}
	return ms, nil
}

// Newest returns the version of the newest of ms, 0 for none: the schema
// version a build with ms needs.
func Newest(ms []Migration) int {
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// Pending returns the migrations of ms whose versions applied does not
// hold, in order.
func Pending(ms []Migration, applied map[int]bool) []Migration {
	var out []Migration
	for _, m := range ms {
		if !applied[m.Version] {
			out = append(out, m)
		}
	}
	return out
}
