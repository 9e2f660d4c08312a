package main

import (
	"testing"

	"trove.dev/trove/internal/config"
)

func TestMemoryLimit(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	for _, tc := range []struct {
		name       string
		env        map[string]string
		cgroup     int64
		cacheBytes int64
		want       int64
	}{
		{"default", nil, 0, config.DefaultCacheBytes, DefaultMemoryLimit},
		{"GOMEMLIMIT wins", map[string]string{"GOMEMLIMIT": "1GiB"}, 64 << 20, config.DefaultCacheBytes, 0},
		{"GOMEMLIMIT off wins too", map[string]string{"GOMEMLIMIT": "off"}, 0, config.DefaultCacheBytes, 0},
		{"a larger cache raises it", nil, 0, config.DefaultCacheBytes + 100<<20, DefaultMemoryLimit + 100<<20},
		{"a smaller cache does not lower it", nil, 0, 1 << 20, DefaultMemoryLimit},
		{"a large cgroup limit changes nothing", nil, 4 << 30, config.DefaultCacheBytes, DefaultMemoryLimit},
		{"a small cgroup limit lowers it", nil, 64 << 20, config.DefaultCacheBytes, 48 << 20},
		{"a tiny cgroup limit keeps a floor", nil, 8 << 20, config.DefaultCacheBytes, minMemoryLimit},
		{"cgroup bounds a large cache", nil, 256 << 20, config.DefaultCacheBytes + 1<<30, 192 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, source := memoryLimit(env(tc.env), tc.cgroup, tc.cacheBytes)
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
