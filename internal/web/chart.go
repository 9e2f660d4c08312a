package web

import (
	"cmp"
	"context"
	"slices"
	"strconv"

	"trove.dev/trove/apispec"
	"trove.dev/trove/internal/downloads"
	"trove.dev/trove/internal/registry"
)

// The downloads chart of provider and module pages: the downloads of each
// day of the last chartDays days (UTC), stacked by version, drawn as SVG
// on the server (no script), with the same figures as a table for screen
// readers.
const (
	chartDays     = 30
	chartVersions = 4 // versions drawn in their own colour; the rest are "other"
	chartWidth    = 600
	chartHeight   = 140
)

// downloadChart is what the chart template draws.
type downloadChart struct {
	// Error, when set, is what the section says instead of the chart: the
	// consumer records could not be read (downloadsUnavailable).
	Error        string
	Since, Until string
	Max          int64
	Total        int64
	Width        int
	Height       int
	Bars         []chartBar
	Legend       []chartSeries
	Days         []chartDay // for the table
}

// chartSeries is a version (or "other") and its colour class.
type chartSeries struct {
	Label string
	Class string
}

// chartBar is one stacked segment.
type chartBar struct {
	X, Y, W, H string
	Class      string
	Title      string
}

// chartDay is a row of the table: a day and its downloads per series.
type chartDay struct {
	Day    string
	Counts []int64
}

// downloadsUnavailable is what a page shows in place of its download
// counts or its chart when they could not be read; the cause is in the
// log.
const downloadsUnavailable = "Download figures are unavailable right now: try again in a moment, or ask an administrator to look at Trove's log if it stays so."

// downloadFigures is what provider and module pages show of their
// downloads (none without a download counter).
type downloadFigures struct {
	// Counts are the download counts of every version; CountsError, when
	// set, says they could not be read (and Counts is empty).
	Counts      []registry.DownloadCount
	CountsError string
	Chart       *downloadChart
}

// downloadFigures reads the download counts (with counts, the counter's
// ProviderDownloads or ModuleDownloads) and the chart of q's page. A
// failure to read either does not fail the page (it is served all the
// same, as the consumers section is): the part that failed says it is
// unavailable, and the cause is logged at warn.
func (s *Service) downloadFigures(ctx context.Context, q registry.ConsumerQuery,
	counts func(context.Context) ([]registry.DownloadCount, error)) downloadFigures {
	var f downloadFigures
	if s.opt.Downloads == nil {
		return f
	}
	var err error
	if f.Counts, err = counts(ctx); err != nil {
		s.downloadsFailed(ctx, "download counts", q, err)
		f.Counts, f.CountsError = nil, downloadsUnavailable
	}
	if f.Chart, err = s.chart(ctx, q); err != nil {
		s.downloadsFailed(ctx, "downloads chart", q, err)
		f.Chart = &downloadChart{Error: downloadsUnavailable}
	}
	return f
}

// downloadsFailed logs that what of q's page could not be read.
func (s *Service) downloadsFailed(ctx context.Context, what string, q registry.ConsumerQuery, err error) {
	s.log.WarnContext(ctx, "web: the page shows no "+what+": reading them failed",
		"namespace", q.Namespace, "name", q.Name, "system", q.System, "err", err)
}

// chart reads the consumer records of q over the last chartDays days
// and draws them; nil when nothing was downloaded (or nothing is
// recorded).
func (s *Service) chart(ctx context.Context, q registry.ConsumerQuery) (*downloadChart, error) {
	since, until, err := downloads.ConsumerWindow(s.opt.Now(), chartDays)
	if err != nil {
		return nil, err
	}
	q.Since = since
	records, err := s.opt.Downloads.ConsumerDownloads(ctx, q)
	if err != nil {
		return nil, err
	}
	report, err := downloads.Report(records, since, until, "")
	if err != nil {
		return nil, err
	}
	return drawChart(report.Daily, since, until), nil
}

// drawChart lays out daily downloads as stacked bars.
func drawChart(daily []apispec.DailyUse, since, until string) *downloadChart {
	if len(daily) == 0 {
		return nil
	}
	byVersion := map[string]int64{}
	for _, d := range daily {
		if d.Day >= since && d.Day <= until {
			byVersion[d.Version] += d.Downloads
		}
	}
	if len(byVersion) == 0 {
		return nil
	}
	versions := make([]string, 0, len(byVersion))
	for v := range byVersion {
		versions = append(versions, v)
	}
	slices.SortFunc(versions, func(a, b string) int { return cmp.Or(cmp.Compare(byVersion[b], byVersion[a]), cmp.Compare(a, b)) })
	series := map[string]int{}
	c := &downloadChart{Since: since, Until: until, Width: chartWidth, Height: chartHeight}
	for i, v := range versions {
		if i == chartVersions && len(versions) > chartVersions+1 {
			c.Legend = append(c.Legend, chartSeries{Label: "other versions", Class: "s" + strconv.Itoa(i)})
			for _, rest := range versions[i:] {
				series[rest] = i
			}
			break
		}
		series[v] = i
		c.Legend = append(c.Legend, chartSeries{Label: v, Class: "s" + strconv.Itoa(i)})
	}
	start, _ := registry.ParseDay(since)
	end, _ := registry.ParseDay(until)
	days := int(end.Sub(start).Hours()/24) + 1
	counts := make([][]int64, days)
	for i := range counts {
		counts[i] = make([]int64, len(c.Legend))
	}
	for _, d := range daily {
		t, err := registry.ParseDay(d.Day)
		if err != nil {
			continue
		}
		if i := int(t.Sub(start).Hours() / 24); i >= 0 && i < days {
			counts[i][series[d.Version]] += d.Downloads
		}
	}
	for i, row := range counts {
		var sum int64
		for _, n := range row {
			sum += n
		}
		c.Total += sum
		c.Max = max(c.Max, sum)
		if sum > 0 {
			c.Days = append(c.Days, chartDay{Day: registry.DayOf(start.AddDate(0, 0, i)), Counts: row})
		}
	}
	barW := float64(chartWidth) / float64(days)
	for i, row := range counts {
		y := float64(chartHeight)
		day := registry.DayOf(start.AddDate(0, 0, i))
		for j, n := range row {
			if n == 0 {
				continue
			}
			h := float64(n) / float64(c.Max) * float64(chartHeight)
			y -= h
			c.Bars = append(c.Bars, chartBar{X: num(float64(i)*barW + 1), Y: num(y), W: num(barW - 2), H: num(h),
				Class: c.Legend[j].Class, Title: day + ": " + strconv.FormatInt(n, 10) + " of " + c.Legend[j].Label})
		}
	}
	return c
}

// num writes a coordinate with one decimal.
func num(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// partial reports whether the page's download figures could not be read
// (partialPage: such a page is not kept in the page cache).
func (d *providerData) partial() bool { return figuresPartial(d.DownloadsError, d.Chart) }

// partial reports whether the page's download figures could not be read
// (partialPage: such a page is not kept in the page cache).
func (d *moduleData) partial() bool { return figuresPartial(d.DownloadsError, d.Chart) }

// figuresPartial reports whether a page's download counts (countsError)
// or chart could not be read.
func figuresPartial(countsError string, chart *downloadChart) bool {
	return countsError != "" || chart != nil && chart.Error != ""
}
