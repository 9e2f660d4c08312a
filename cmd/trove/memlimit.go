package main

import (
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"trove.dev/trove/internal/config"
)

// DefaultMemoryLimit is the soft memory limit (runtime/debug.SetMemoryLimit)
// trove serve sets when neither GOMEMLIMIT nor a smaller cgroup limit says
// otherwise, with --cache-bytes at its default. Without a limit the Go
// garbage collector lets the heap grow to twice what is live (GOGC=100):
// after a mirror-like sweep and the web UI rows the caches hold some
// 60 MiB, and the process grew to 175 MiB resident. With the limit the
// collector runs more often instead once the heap nears it, and returns
// freed memory to the system sooner. Trove's request paths allocate little
// (a cached document costs 4 allocations, BenchmarkServeDefaults), so the
// extra collections cost little CPU; see docs/benchmarks.md.
const DefaultMemoryLimit = 80 << 20

// minMemoryLimit is the smallest limit derived from a cgroup's: below it
// the collector would run nearly all the time.
const minMemoryLimit = 32 << 20

// memoryLimit returns the soft memory limit trove serve should set and a
// description of where it comes from, or 0 when the environment sets
// GOMEMLIMIT (the runtime applied it already). cgroupMax is the memory
// limit of the process's cgroup in bytes (0: none); a larger --cache-bytes
// than the default raises the limit by the difference.
func memoryLimit(getenv func(string) string, cgroupMax, cacheBytes int64) (int64, string) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, "GOMEMLIMIT"
	}
	limit, source := int64(DefaultMemoryLimit), "default"
	if extra := cacheBytes - config.DefaultCacheBytes; extra > 0 {
		limit, source = limit+extra, "default raised by --cache-bytes"
	}
	if cgroupMax > 0 {
		if c := max(cgroupMax/4*3, minMemoryLimit); c < limit {
			limit, source = c, "3/4 of the cgroup memory limit"
		}
	}
	return limit, source
}

// parseCgroupMax parses cgroup v2's memory.max ("max" or a number of
// bytes), returning 0 for no limit or anything unreadable.
func parseCgroupMax(s string) int64 {
	s = strings.TrimSpace(s)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n == math.MaxInt64 {
		return 0
	}
	return n
}

// applyMemoryLimit sets the soft memory limit of trove serve (see
// memoryLimit) and logs it.
func applyMemoryLimit(cfg config.Config, log *slog.Logger) {
	var cgroupMax int64
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		cgroupMax = parseCgroupMax(string(b))
	}
	limit, source := memoryLimit(os.Getenv, cgroupMax, cfg.CacheBytes)
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	log.Debug("memory limit", "bytes", debug.SetMemoryLimit(-1), "source", source)
}
