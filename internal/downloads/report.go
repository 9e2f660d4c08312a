package downloads

import (
	"cmp"
	"slices"
	"strings"
	"time"

	goversion "github.com/hashicorp/go-version"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/registry"
)

// ConsumerWindow returns the first day of a window of days days ending
// today (UTC, today included), checking days (1 to
// registry.MaxConsumerDays).
func ConsumerWindow(now time.Time, days int) (since, until string, err error) {
	if days < 1 || days > registry.MaxConsumerDays {
		return "", "", registry.Errorf(registry.Invalid, "days must be between 1 and %d, got %d", registry.MaxConsumerDays, days)
	}
	return registry.DayOf(now.AddDate(0, 0, -(days - 1))), registry.DayOf(now), nil
}

// Report summarizes consumer records (store.Downloads.ConsumerDownloads)
// of the window from since to until for the versions that match
// constraint ("" for all; registry.CheckVersionConstraint first).
func Report(records []registry.ConsumerCount, since, until, constraint string) (apispec.ConsumerReport, error) {
	out := apispec.ConsumerReport{Since: since, Until: until, Versions: constraint,
		Consumers: []apispec.ConsumerUse{}, Clients: []apispec.ClientUse{}, Daily: []apispec.DailyUse{}}
	var match goversion.Constraints
	if constraint != "" {
		if err := registry.CheckVersionConstraint(constraint); err != nil {
			return out, err
		}
		match, _ = goversion.NewConstraint(constraint)
	}
	type use struct {
		apispec.ConsumerUse
		versions, clients map[string]bool
	}
	consumers := map[string]*use{}
	clients := map[apispec.ClientUse]int64{}
	daily := map[apispec.DailyUse]int64{}
	for _, r := range records {
		if r.Day < since || r.Day > until || r.Count <= 0 {
			continue
		}
		if match != nil {
			v, err := goversion.NewVersion(r.Version)
			if err != nil || !match.Check(v) {
				continue
			}
		}
		out.Downloads += r.Count
		u := consumers[r.Consumer]
		if u == nil {
			u = &use{ConsumerUse: apispec.ConsumerUse{Consumer: r.Consumer}, versions: map[string]bool{}, clients: map[string]bool{}}
			consumers[r.Consumer] = u
		}
		u.Downloads += r.Count
		u.LastSeen = max(u.LastSeen, r.Day)
		u.versions[r.Version] = true
		u.clients[strings.TrimSpace(r.Client+" "+r.ClientVersion)] = true
		clients[apispec.ClientUse{Client: r.Client, Version: r.ClientVersion}] += r.Count
		daily[apispec.DailyUse{Day: r.Day, Version: r.Version}] += r.Count
	}
	for _, u := range consumers {
		u.Versions = keys(u.versions)
		registry.SortNewestFirst(u.Versions, func(v string) string { return v })
		u.Clients = slices.Sorted(func(yield func(string) bool) {
			for c := range u.clients {
				if !yield(c) {
					return
				}
			}
		})
		out.Consumers = append(out.Consumers, u.ConsumerUse)
	}
	slices.SortFunc(out.Consumers, func(a, b apispec.ConsumerUse) int {
		return cmp.Or(cmp.Compare(b.Downloads, a.Downloads), strings.Compare(a.Consumer, b.Consumer))
	})
	for c, n := range clients {
		c.Downloads = n
		out.Clients = append(out.Clients, c)
	}
	slices.SortFunc(out.Clients, func(a, b apispec.ClientUse) int {
		return cmp.Or(cmp.Compare(b.Downloads, a.Downloads), strings.Compare(a.Client, b.Client), strings.Compare(a.Version, b.Version))
	})
	for d, n := range daily {
		d.Downloads = n
		out.Daily = append(out.Daily, d)
	}
	slices.SortFunc(out.Daily, func(a, b apispec.DailyUse) int {
		return cmp.Or(strings.Compare(a.Day, b.Day), compareVersions(a.Version, b.Version))
	})
	return out, nil
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// compareVersions orders versions oldest first; ones that do not parse
// (none are stored) by text.
func compareVersions(a, b string) int {
	va, errA := goversion.NewVersion(a)
	vb, errB := goversion.NewVersion(b)
	if errA != nil || errB != nil {
		return strings.Compare(a, b)
	}
	return va.Compare(vb)
}
