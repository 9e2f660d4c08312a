//go:build race

package markdown

// raceEnabled makes the bounds tests use smaller inputs under the race detector, which
// makes goldmark ten to twenty times slower; the bounds are the same.
const raceEnabled = true
