package handlers

import (
	"strings"
	"testing"
	"time"

	"sitepulse/store"
)

func TestTrendCharts(t *testing.T) {
	if trendCharts(nil, nil) != nil {
		t.Error("no scans, want no charts")
	}
	f := func(v float64) *float64 { return &v }
	i := func(v int) *int { return &v }
	day := func(d int) time.Time { return time.Date(2026, 11, d, 9, 0, 0, 0, time.UTC) }
	points := []trendPoint{
		{At: day(1), Scores: store.ScanScores{Health: i(82)}, Vitals: map[string]*float64{"lcp": f(3600), "cls": f(0.01)}},
		{At: day(2), Scores: store.ScanScores{Health: i(77)}, Vitals: map[string]*float64{"lcp": f(8305), "cls": f(0.39)}},
	}
	charts := trendCharts(points, nil)
	var ids []string
	for _, c := range charts {
		ids = append(ids, c.ID)
	}
	if got := strings.Join(ids, ","); got != "scores,health,lcp,cls,tbt" {
		t.Fatalf("tabs %s, want scores,health,lcp,cls,tbt", got)
	}
	for _, tt := range []struct {
		chart         int
		name          string
		want, notWant []string
	}{
		{1, "health is a score chart with one line", []string{"Health 82 · 1 Nov 2026, 09:00 UTC", `class="line s-health"`, ">90<"}, nil},
		{2, "LCP has grid lines at web.dev's bands and grows to its worst value", []string{">2.5 s<", ">4.0 s<", "LCP 8.3 s · 2 Nov 2026, 09:00 UTC", ">10.0 s<"}, nil},
		{3, "CLS is written unitless", []string{">0.10<", ">0.25<", "CLS 0.39"}, nil},
		{4, "a vital no scan has draws no line", []string{`aria-label="Total Blocking Time of the last 2 completed scans`}, []string{"<path", "<circle"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := string(charts[tt.chart].SVG)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in\n%s", w, got)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("unexpected %q in\n%s", w, got)
				}
			}
		})
	}
}

func TestNiceCeil(t *testing.T) {
	for in, want := range map[float64]float64{8720: 10000, 5000: 5000, 0.31: 0.5, 0.24: 0.25, 750: 1000, 1900: 2000, 0: 1} {
		if got := niceCeil(in); got != want {
			t.Errorf("niceCeil(%v) = %v, want %v", in, got, want)
		}
	}
}

// TestTrendChartMarksPublishes: each publish is a marker on every trend chart, placed in time
// between the scans around it, named by who published and when, its text escaped.
func TestTrendChartMarksPublishes(t *testing.T) {
	i := func(v int) *int { return &v }
	day := func(d int) time.Time { return time.Date(2026, 11, d, 9, 0, 0, 0, time.UTC) }
	var points []trendPoint
	for d := 1; d <= 3; d++ {
		points = append(points, trendPoint{At: day(d), Scores: store.ScanScores{Health: i(80), Performance: i(80)}, Vitals: map[string]*float64{}})
	}
	publishes := []store.Publish{
		{PublishedBy: "<b>Ana</b>", PublishedOn: day(1).Add(12 * time.Hour)}, // halfway from the first scan to the second
		{PublishedOn: day(3).Add(time.Hour)},                                 // after the last scan: its scan is not done yet
		{PublishedBy: "Old", PublishedOn: day(1).Add(-time.Hour)},            // before the chart: not drawn
	}
	charts := trendCharts(points, publishes)
	for _, c := range charts[:2] { // the score charts: x from 40 to 628, the second scan at 334
		got := string(c.SVG)
		for _, want := range []string{
			`<g class="publish"><line x1="187" y1="10" x2="187" y2="192"/>`, `<title>Published by &lt;b&gt;Ana&lt;/b&gt;, 1 Nov 21:00</title>`,
			`<line x1="628" y1="10" x2="628" y2="192"/>`, `<title>Published 3 Nov 10:00</title>`,
		} {
			if !strings.Contains(got, want) {
				t.Errorf("%s chart lacks %q:\n%s", c.ID, want, got)
			}
		}
		if strings.Contains(got, "Old") || strings.Count(got, `class="publish"`) != 2 {
			t.Errorf("%s chart draws %d markers, want 2:\n%s", c.ID, strings.Count(got, `class="publish"`), got)
		}
	}
	for _, c := range charts[2:] {
		if strings.Count(string(c.SVG), `class="publish"`) != 2 {
			t.Errorf("%s chart lacks the publish markers", c.ID)
		}
	}
}
