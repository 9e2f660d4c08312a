package main

import (
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// minMemoryLimit is the smallest soft limit derived from a cgroup's: below
// it the collector would run nearly all the time.
const minMemoryLimit = 32 << 20

// memoryLimit returns the soft memory limit (runtime/debug.SetMemoryLimit)
// trove serve should set and where it comes from, or 0 to leave the
// runtime's: when the environment sets GOMEMLIMIT (the runtime applied it
// already), and when the process's cgroup has no memory limit (cgroupMax
// 0). Under a cgroup limit it is 3/4 of it, so that the collector works
// harder before the kernel kills the process, instead of letting the heap
// grow to twice the live data (GOGC=100) past the limit.
//
// There is no fixed default: a soft limit below what the caches may hold
// at their budgets makes the collector run almost continuously, and a low
// one measurably raised the CPU per rendered web page (docs/benchmarks.md,
// "Memory with every feature on").
func memoryLimit(getenv func(string) string, cgroupMax int64) (int64, string) {
	if getenv("GOMEMLIMIT") != "" {
		return 0, "GOMEMLIMIT"
	}
	if cgroupMax <= 0 {
		return 0, "none (no cgroup memory limit)"
	}
	return max(cgroupMax/4*3, minMemoryLimit), "3/4 of the cgroup memory limit"
}

// parseCgroupMax parses cgroup v2's memory.max ("max" or a number of
// bytes), returning 0 for no limit or anything unreadable.
func parseCgroupMax(s string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 || n == math.MaxInt64 {
		return 0
	}
	return n
}

// applyMemoryLimit sets the soft memory limit of trove serve (see
// memoryLimit) and logs it at debug level.
func applyMemoryLimit(log *slog.Logger) {
	var cgroupMax int64
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		cgroupMax = parseCgroupMax(string(b))
	}
	limit, source := memoryLimit(os.Getenv, cgroupMax)
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	}
	log.Debug("memory limit", "bytes", debug.SetMemoryLimit(-1), "source", source)
}
