package handlers

import (
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

func TestTrendCharts(t *testing.T) {
	if trendCharts(nil) != nil {
		t.Error("no scans, want no charts")
	}
	f := func(v float64) *float64 { return &v }
	i := func(v int) *int { return &v }
	day := func(d int) time.Time { return time.Date(2026, 11, d, 9, 0, 0, 0, time.UTC) }
	points := []trendPoint{
		{At: day(1), Scores: store.ScanScores{Health: i(82)}, Vitals: map[string]*float64{"lcp": f(3600), "cls": f(0.01)}},
		{At: day(2), Scores: store.ScanScores{Health: i(77)}, Vitals: map[string]*float64{"lcp": f(8305), "cls": f(0.39)}},
	}
	charts := trendCharts(points)
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
		if got := analysis.NiceCeil(in); got != want {
			t.Errorf("analysis.NiceCeil(%v) = %v, want %v", in, got, want)
		}
	}
}
