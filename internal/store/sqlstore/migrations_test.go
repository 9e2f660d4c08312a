package sqlstore

import (
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

func TestLoadMigrationsAllowsGaps(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0001_init.sql":       {Data: []byte("a")},
		"m/0002_more.sql":       {Data: []byte("b")},
		"m/0011_identities.sql": {Data: []byte("c")},
	}
	ms, err := LoadMigrations(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 || ms[2].Version != 11 || Newest(ms) != 11 {
		t.Fatalf("LoadMigrations = %+v", ms)
	}
	fsys["m/0011_other.sql"] = &fstest.MapFile{Data: []byte("d")}
	if _, err := LoadMigrations(fsys, "m"); err == nil {
		t.Error("LoadMigrations accepted two migrations of version 11")
	}
}

func TestPending(t *testing.T) {
	ms := []Migration{{Version: 1}, {Version: 2}, {Version: 8}, {Version: 11}}
	versions := func(ms []Migration) []int {
		var vs []int
		for _, m := range ms {
			vs = append(vs, m.Version)
		}
		return vs
	}
	for _, tc := range []struct {
		applied, want []int
	}{
		{nil, []int{1, 2, 8, 11}},
		{[]int{1, 2}, []int{8, 11}},
		// 0008 merged after 0011 ran: it is still applied.
		{[]int{1, 2, 11}, []int{8}},
		{[]int{1, 2, 8, 11}, nil},
	} {
		got, err := Pending(ms, tc.applied)
		if err != nil || !reflect.DeepEqual(versions(got), tc.want) {
			t.Errorf("Pending(%v) = %v, %v; want %v", tc.applied, versions(got), err, tc.want)
		}
	}
	if _, err := Pending(ms, []int{1, 2, 9}); err == nil || !strings.Contains(err.Error(), "run a newer Trove") {
		t.Errorf("Pending with an unknown applied version: %v", err)
	}
}
