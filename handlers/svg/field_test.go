package svg

import (
	"strings"
	"testing"
	"time"

	"sitepulse/store"
)

func TestFieldChartDrawsBothSourcesAgainstTheBands(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	day := func(d int) time.Time { return time.Date(2026, 11, d, 0, 0, 0, 0, time.UTC) }
	trend := FieldTrend{Metric: "inp", Device: store.FieldPhone,
		Crux:   []store.FieldPoint{{End: day(7), P75: f(180)}, {End: day(14), P75: nil}, {End: day(21), P75: f(260)}},
		Beacon: []store.FieldPoint{{Start: day(18), P75: f(170)}, {Start: day(19), P75: f(420)}, {Start: day(20), P75: f(630)}},
		Lab:    []LabPoint{{At: day(1).Add(-48 * time.Hour), Value: f(999)}, {At: day(19), Value: nil}},
	}
	publish := store.Publish{PublishedBy: "Ana <script>", PublishedOn: day(18).Add(15 * time.Hour)}
	charts := FieldCharts([]FieldTrend{trend, {Metric: "lcp", Device: store.FieldPhone}}, []store.Publish{publish})
	if len(charts) != 1 || charts[0].ID != "field-inp" {
		t.Fatalf("charts %+v, want the INP one only (LCP has no field data)", charts)
	}
	got := string(charts[0].SVG)
	for _, w := range []string{
		`class="band band-good"`, `class="band band-ni"`, `class="band band-poor"`, // the three bands
		`class="line s-crux" d="M`, `class="line s-beacon" d="M`, // both series
		"CrUX, weekly p75 (28 days) 260 ms · 21 Nov 2026", "Beacon, daily p75 420 ms · 19 Nov 2026",
		">200 ms<", ">500 ms<", `<g class="publish">`, "Ana &lt;script&gt;",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in\n%s", w, got)
		}
	}
	if strings.Count(got, `class="line s-crux"`) != 1 || strings.Count(got, "M") < 3 {
		t.Errorf("the CrUX gap should break its line into two runs:\n%s", got)
	}
	if strings.Contains(got, "999") {
		t.Error("a lab scan before the field began is drawn")
	}
	if strings.Contains(got, "777") {
		t.Error("a CrUX period older than 13 weeks is drawn")
	}
	if legend := charts[0].Legend.([]LegendItem); len(legend) != 2 {
		t.Errorf("legend %v: the lab line has no value, so it is not in the legend", legend)
	}
	if FieldChart(FieldTrend{Metric: "inp", Lab: []LabPoint{{At: day(1), Value: f(1)}}}) != "" {
		t.Error("a trend without field points should draw nothing")
	}
}
