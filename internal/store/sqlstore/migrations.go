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
// order of their versions, which must be distinct and at least 1. A gap
// is allowed: migrations developed in parallel take their numbers up
// front, and one may be released before a lower one (see Missing).
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
		if m.Version < 1 || i > 0 && m.Version == ms[i-1].Version {
			return nil, fmt.Errorf("migration %04d_%s: versions must be distinct and start at 1", m.Version, m.Name)
		}
	}
	return ms, nil
}

// Newest is the version of the newest of ms (in order), 0 for none: the
// schema version a build with ms needs.
func Newest(ms []Migration) int {
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}

// Missing returns, in order, the migrations of ms whose versions are not
// among applied (the versions a database records). Every migration is
// applied by its own version, not by counting: a migration whose number
// is below the newest applied one (released after a higher one) is still
// applied, so migrations must not depend on those with higher numbers.
func Missing(ms []Migration, applied []int) []Migration {
	var out []Migration
	for _, m := range ms {
		if !slices.Contains(applied, m.Version) {
			out = append(out, m)
		}
	}
	return out
}
