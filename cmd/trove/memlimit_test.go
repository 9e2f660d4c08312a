package main

import "testing"

func TestMemoryLimit(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, tc := range []struct {
		name   string
		env    map[string]string
		cgroup int64
		want   int64
	}{
		{"no cgroup limit: the runtime's", nil, 0, 0},
		{"GOMEMLIMIT wins over a cgroup", map[string]string{"GOMEMLIMIT": "1GiB"}, 64 << 20, 0},
		{"GOMEMLIMIT off wins too", map[string]string{"GOMEMLIMIT": "off"}, 1 << 30, 0},
		{"3/4 of a cgroup limit", nil, 1 << 30, 768 << 20},
		{"3/4 of a small cgroup limit", nil, 64 << 20, 48 << 20},
		{"a tiny cgroup limit keeps a floor", nil, 8 << 20, minMemoryLimit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, source := memoryLimit(env(tc.env), tc.cgroup)
			if got != tc.want || source == "" {
				t.Errorf("memoryLimit = %d (%q), want %d", got, source, tc.want)
			}
		})
	}
}

func TestParseCgroupMax(t *testing.T) {
	for in, want := range map[string]int64{
		"max\n": 0, "": 0, "536870912\n": 512 << 20, "-1": 0, "0": 0, "garbage": 0,
		"9223372036854775807": 0, "99999999999999999999999": 0, " 1048576 ": 1 << 20,
	} {
		if got := parseCgroupMax(in); got != want {
			t.Errorf("parseCgroupMax(%q) = %d, want %d", in, got, want)
		}
	}
}
