package sqlstore

import (
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoadMigrationsWithGap(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0001_init.sql":  {Data: []byte("a")},
		"m/0002_more.sql":  {Data: []byte("b")},
		"m/0010_later.sql": {Data: []byte("c")},
	}
	ms, err := LoadMigrations(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 || Newest(ms) != 10 || ms[2].Name != "later" {
		t.Fatalf("migrations %+v, newest %d", ms, Newest(ms))
	}
	// A database migrated past the gap gets the migration that fills it.
	fsys["m/0008_filled.sql"] = &fstest.MapFile{Data: []byte("d")}
	ms, err = LoadMigrations(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	pending := Pending(ms, map[int]bool{1: true, 2: true, 10: true})
	if len(pending) != 1 || pending[0].Version != 8 {
		t.Errorf("Pending = %+v, want 0008 alone", pending)
	}
	if p := Pending(ms, map[int]bool{}); len(p) != 4 || p[0].Version != 1 || p[3].Version != 10 {
		t.Errorf("Pending of an empty database = %+v, want all in order", p)
	}
}

func TestLoadMigrationsRefuses(t *testing.T) {
	for name, fsys := range map[string]fstest.MapFS{
		"same version":  {"m/0001_a.sql": {}, "m/0002_b.sql": {}, "m/0002_c.sql": {}},
		"not from 1":    {"m/0002_b.sql": {}},
		"misnamed file": {"m/0001_a.sql": {}, "m/2_b.sql": {}},
	} {
		if _, err := LoadMigrations(fsys, "m"); err == nil || !strings.Contains(err.Error(), "migration") {
			t.Errorf("%s: LoadMigrations = %v, want an error", name, err)
		}
	}
}
