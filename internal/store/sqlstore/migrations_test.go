package sqlstore

import (
	"testing"
	"testing/fstest"
)

// TestMigrationsWithAGap: migrations developed in parallel take their
// numbers up front, so a release may hold 0009 without 0008, and 0008
// may come later. Each is applied by its version.
func TestMigrationsWithAGap(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0001_init.sql":   {Data: []byte("one")},
		"m/0002_more.sql":   {Data: []byte("two")},
		"m/0004_gap_ok.sql": {Data: []byte("four")},
	}
	ms, err := LoadMigrations(fsys, "m")
	if err != nil {
		t.Fatalf("LoadMigrations with a gap: %v", err)
	}
	if len(ms) != 3 || Newest(ms) != 4 || ms[2].Name != "gap_ok" {
		t.Fatalf("LoadMigrations = %+v (newest %d)", ms, Newest(ms))
	}
	// 0003 is released after 0004 was applied: it is missing, and only it.
	fsys["m/0003_later.sql"] = &fstest.MapFile{Data: []byte("three")}
	if ms, err = LoadMigrations(fsys, "m"); err != nil {
		t.Fatal(err)
	}
	missing := Missing(ms, []int{1, 2, 4})
	if len(missing) != 1 || missing[0].Version != 3 {
		t.Errorf("Missing = %+v, want 0003 only", missing)
	}
	if got := Missing(ms, nil); len(got) != 4 || got[0].Version != 1 || got[3].Version != 4 {
		t.Errorf("Missing of an empty database = %+v, want all four in order", got)
	}
	fsys["m/0003_twice.sql"] = &fstest.MapFile{Data: []byte("again")}
	if _, err := LoadMigrations(fsys, "m"); err == nil {
		t.Error("LoadMigrations accepted two migrations numbered 0003")
	}
}
