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
// order of their versions, which must be unique and at least 1. Versions
// may leave gaps: a number reserved by a change on another branch is
// applied when that change arrives, because a database records every
// applied version (see Pending), not just the newest.
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
		if m.Version < 1 || i > 0 && ms[i-1].Version == m.Version {
			return nil, fmt.Errorf("migration %04d_%s: versions must be unique and at least 1", m.Version, m.Name)
		}
	}
	return ms, nil
}

// Pending returns the migrations of ms whose versions are not in
// applied, in order, or an error naming a version of applied that ms
// does not know (the database was migrated by a newer Trove). Every
// missing migration is pending, also one numbered below the newest
// applied: a migration merged after a later-numbered one ran.
func Pending(ms []Migration, applied []int) ([]Migration, error) {
	known := make(map[int]bool, len(ms))
	for _, m := range ms {
		known[m.Version] = true
	}
	done := make(map[int]bool, len(applied))
	for _, v := range applied {
		if !known[v] {
			return nil, fmt.Errorf("the index has schema version %d but this Trove does not know it (it knows versions up to %d): run a newer Trove", v, Newest(ms))
		}
		done[v] = true
	}
	var pending []Migration
	for _, m := range ms {
		if !done[m.Version] {
			pending = append(pending, m)
		}
	}
	return pending, nil
}

// Newest returns the highest version of ms, 0 if there is none.
func Newest(ms []Migration) int {
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}
