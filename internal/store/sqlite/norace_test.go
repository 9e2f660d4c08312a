//go:build !race

package sqlite

// raceEnabled reports whether the race detector is on; it slows SQLite
// (compiled Go) about fifty-fold.
const raceEnabled = false
