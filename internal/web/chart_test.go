package web

import (
	"testing"

	"trove.dev/trove/apispec"
)

func TestDrawChart(t *testing.T) {
	if c := drawChart(nil, "2026-10-30", "2026-11-28"); c != nil {
		t.Errorf("chart of no downloads = %+v, want none", c)
	}
	daily := []apispec.DailyUse{
		{Day: "2026-11-01", Version: "1.0.0", Downloads: 4},
		{Day: "2026-11-01", Version: "2.0.0", Downloads: 6},
		{Day: "2026-11-28", Version: "2.0.0", Downloads: 2},
		{Day: "2026-11-28", Version: "0.1.0", Downloads: 1},
		{Day: "2026-11-28", Version: "0.2.0", Downloads: 1},
		{Day: "2026-11-28", Version: "0.3.0", Downloads: 1},
		{Day: "2026-11-28", Version: "0.4.0", Downloads: 1},
		{Day: "2026-09-01", Version: "1.0.0", Downloads: 99}, // outside the window: not drawn
	}
	c := drawChart(daily, "2026-10-30", "2026-11-28")
	if c == nil || c.Total != 16 || c.Max != 10 {
		t.Fatalf("chart %+v; want 16 downloads in the window, at most 10 a day", c)
	}
	if len(c.Legend) != 5 || c.Legend[0].Label != "2.0.0" || c.Legend[1].Label != "1.0.0" || c.Legend[4].Label != "other versions" {
		t.Errorf("legend %+v; want 2.0.0, 1.0.0, two more and other versions", c.Legend)
	}
	if len(c.Days) != 2 || c.Days[0].Day != "2026-11-01" || c.Days[0].Counts[0] != 6 || c.Days[0].Counts[1] != 4 ||
		c.Days[1].Counts[4] != 2 {
		t.Errorf("table rows %+v; want 2.0.0 and 1.0.0 on the 1st, two of other versions on the 28th", c.Days)
	}
	if len(c.Bars) != 2+4 {
		t.Errorf("%d bars, want 6 segments (2 on the 1st, 4 on the 28th)", len(c.Bars))
	}
	// The busiest day's segments stack from the bottom to the top.
	if c.Bars[0].Y != "56.0" || c.Bars[0].H != "84.0" || c.Bars[1].Y != "0.0" || c.Bars[1].H != "56.0" {
		t.Errorf("segments of the 1st: %+v %+v; want 6 of 10 at the bottom, 4 of 10 on top", c.Bars[0], c.Bars[1])
	}
	if c := drawChart(daily[len(daily)-1:], "2026-10-30", "2026-11-28"); c != nil {
		t.Errorf("chart of downloads outside the window = %+v, want none", c)
	}
}
