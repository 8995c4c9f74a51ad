package svg

import (
	"fmt"
	"html/template"
	"math"
	"sort"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// FieldMetricsShown are the field metrics with a chart, in tab order: the three Core Web Vitals.
var FieldMetricsShown = []string{"inp", "lcp", "cls"}

// LabPoint is one completed scan's lab value of a metric, for the field chart's lab line.
type LabPoint struct {
	At    time.Time
	Value *float64
}

// FieldTrend is what the field chart of one metric on one device draws: CrUX's weekly p75 (at
// the end of each 28-day collection period), the beacon's daily p75 (at the start of each day)
// and the lab's value per scan, on one time axis.
type FieldTrend struct {
	Metric string
	Device store.FieldDevice
	Crux   []store.FieldPoint
	Beacon []store.FieldPoint
	Lab    []LabPoint
}

// FieldLegend are the field chart's lines, in legend order, with the classes that colour them.
var FieldLegend = []LegendItem{
	{"CrUX, weekly p75 (28 days)", "s-crux"},
	{"Beacon, daily p75", "s-beacon"},
	{"Lab, per scan", "s-vital"},
}

// Empty reports whether the trend has no field point with a value (the lab alone is no field trend).
func (t FieldTrend) Empty() bool {
	for _, ps := range [][]store.FieldPoint{t.Crux, t.Beacon} {
		for _, p := range ps {
			if p.P75 != nil {
				return false
			}
		}
	}
	return true
}

// FieldSpan is how far back the field chart reaches from its newest point: thirteen weeks, so
// the beacon's days are wide enough to read beside CrUX's weeks (the data has up to 40 weeks).
const FieldSpan = 91 * 24 * time.Hour

// FieldChart draws the last FieldSpan of a field trend against the metric's web.dev bands
// (shaded), with the marks (the publishes); "" for an empty trend. Gaps (a CrUX "NaN", a beacon
// day without samples) break their line. The axis reaches a little above the highest value, and
// at least a quarter above the good bound so the good band reads as a band.
func FieldChart(t FieldTrend, marks ...Mark) string {
	chart, _ := fieldChart(t, marks...)
	return chart
}

// fieldChart is FieldChart and the legend of the lines it drew.
func fieldChart(t FieldTrend, marks ...Mark) (string, []LegendItem) {
	if t.Empty() {
		return "", nil
	}
	m, _ := analysis.Lookup(t.Metric)
	var newest time.Time
	for _, p := range t.Crux {
		if p.End.After(newest) {
			newest = p.End
		}
	}
	for _, p := range t.Beacon {
		if p.Start.After(newest) {
			newest = p.Start
		}
	}
	since := newest.Add(-FieldSpan)
	var all []time.Time
	top := 0.0
	if m.Bands != nil {
		top = m.Bands.Good * 1.25
	}
	line := func(label, class string, ps []store.FieldPoint, at func(store.FieldPoint) time.Time) Line {
		l := Line{Label: label, Class: class}
		for _, p := range ps {
			if at(p).Before(since) {
				continue
			}
			l.At, l.Values = append(l.At, at(p)), append(l.Values, p.P75)
			all = append(all, at(p))
			if p.P75 != nil {
				top = math.Max(top, *p.P75*1.1)
			}
		}
		return l
	}
	lines := []Line{
		line(FieldLegend[0].Label, FieldLegend[0].Class, t.Crux, func(p store.FieldPoint) time.Time { return p.End }),
		line(FieldLegend[1].Label, FieldLegend[1].Class, t.Beacon, func(p store.FieldPoint) time.Time { return p.Start }),
	}
	// The lab line only over the field's span: scans long before the field began would squeeze it.
	sort.Slice(all, func(i, j int) bool { return all[i].Before(all[j]) })
	lab := Line{Label: FieldLegend[2].Label, Class: FieldLegend[2].Class}
	for _, p := range t.Lab {
		if p.At.Before(all[0]) {
			continue
		}
		lab.At, lab.Values = append(lab.At, p.At), append(lab.Values, p.Value)
		if p.Value != nil {
			top = math.Max(top, *p.Value*1.1)
		}
	}
	if len(lab.At) > 0 {
		lines = append(lines, lab)
		all = append(all, lab.At...)
		sort.Slice(all, func(i, j int) bool { return all[i].Before(all[j]) })
	}
	top = NiceCeil(top)
	grid := []float64{0}
	if m.Bands != nil {
		for _, g := range []float64{m.Bands.Good, m.Bands.Poor} {
			if g < top {
				grid = append(grid, g)
			}
		}
	}
	grid = append(grid, top)
	var legend []LegendItem
	for _, l := range lines {
		for _, v := range l.Values {
			if v != nil {
				legend = append(legend, LegendItem{l.Label, l.Class})
				break
			}
		}
	}
	scale := Scale{Title: m.Label + " p75", Max: top, Grid: grid, Bands: m.Bands, Format: func(v float64) string { return analysis.FormatValue(t.Metric, v) }}
	label := fmt.Sprintf("%s on %s: field p75 (CrUX weekly, beacon daily) beside the lab, the last 13 weeks", m.Title, t.Device)
	return LineChart(label, all, scale, lines, marks...), legend
}

// LegendItem is a line of a chart's legend: its label and the class that colours it.
type LegendItem struct{ Label, Class string }

// FieldCharts are the field trend's tabs, one per metric of FieldMetricsShown with field data,
// each marking the publishes; none when no metric has any.
func FieldCharts(trends []FieldTrend, publishes []store.Publish) []TrendChart {
	marks := make([]Mark, len(publishes))
	for i, p := range publishes {
		marks[i] = Mark{At: p.PublishedOn, Label: p.Line()}
	}
	var out []TrendChart
	for _, t := range trends {
		chart, legend := fieldChart(t, marks...)
		if chart == "" {
			continue
		}
		m, _ := analysis.Lookup(t.Metric)
		out = append(out, TrendChart{ID: "field-" + t.Metric, Label: m.Label, SVG: template.HTML(chart), Legend: legend,
			Note: m.Title + " that real users saw on " + string(t.Device) + "s, beside the lab's mobile runs, over the last 13 weeks. The shading marks web.dev's good, needs-improvement and poor bands."})
	}
	return out
}
