package loadtest

import (
	"time"
)

// Planned returns how long the measured windows of a Run with o last,
// warm-ups included: every row, on Trove and on each of its references,
// every round. It is the least time the run takes; building, seeding,
// fetching the documents and starting the servers come on top
// (SetupAllowance).
func (o Options) Planned() (time.Duration, error) {
	window := func(rounds int, d time.Duration) time.Duration { return time.Duration(rounds) * (o.Warmup + d) }
	short := window(o.Rounds, o.Duration)
	if o.Backend == BackendPostgresS3 {
		// The hot rows (one per provider and the download document), the
		// cold download and cold versions rows against the baseline; the
		// archive through a redirect and through Trove against the
		// baseline and a direct S3 GET.
		pairs := len(o.Spec.Providers) + 1 + 2
		return time.Duration(2*pairs+2*3) * short, nil
	}
	mix := window(o.MixRounds, o.MixDuration)
	if o.UIOnly {
		return 2 * 2 * mix, nil // the UI pages and UI search rows
	}
	sets, err := mixPicks(o.Spec, o.MixDocs, "127.0.0.1:1")
	if err != nil {
		return 0, err
	}
	total := time.Duration(2*len(o.selectSets(sets))) * mix
	if o.PlainHTTP {
		return total, nil // the realistic-mix rows alone
	}
	// The web UI and archive rows are counted even when Rows leaves
	// them out: an allowance, not a schedule.
	if o.UIDocs > 0 && len(o.Spec.Modules) > 0 {
		total += 2 * 2 * mix // the UI pages and UI search rows
	}
	total += 2 * 2 * short // the archive over HTTPS and over plain HTTP
	if o.Single {
		docs := len(o.Spec.Providers) + 1 + 2*min(1, len(o.Spec.Modules))
		total += time.Duration(2*docs) * short
	}
	return total, nil
}

// SetupAllowance returns the time a Run with o is given beyond its
// measured windows: 20 minutes for building trove, fetching every
// document and page of the rows, the cache sweep and the servers' starts
// and stops, and 1 second per 250 seeded versions (seeding 100,000
// versions into /dev/shm takes 100 s on a 2-core machine; this allows
// for a slower disk).
func (o Options) SetupAllowance() time.Duration {
	return 20*time.Minute + time.Duration(o.Spec.TotalVersions/250)*time.Second
}

// Budget returns how long a Run with o may take before it is given up
// when no timeout is set: Planned plus SetupAllowance. A fixed timeout
// is outgrown as rows are added (the default run, 13 rows of 2 x 66 s,
// grew past the 30 minutes it once had).
func (o Options) Budget() (time.Duration, error) {
	planned, err := o.Planned()
	if err != nil {
		return 0, err
	}
	return planned + o.SetupAllowance(), nil
}
