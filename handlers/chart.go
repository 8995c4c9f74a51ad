package handlers

import (
	"fmt"
	"html"
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// trendPoint is one completed scan on the site page's trend charts: its scores, and the vitals
// of trendVitals as a budget for both strategies reads them (worst page, mobile when scanned).
type trendPoint struct {
	At     time.Time
	Scores store.ScanScores
	Vitals map[string]*float64
}

// trendSeries are the lines of the scores chart, in legend order: the interface's four
// categories. Class names colour them from the stylesheet, since the CSP allows no inline styles.
var trendSeries = []struct{ Metric, Label, Class string }{
	{"performance", "Performance", "s-perf"},
	{"accessibility", "Accessibility", "s-a11y"},
	{"bestPractices", "Best practices", "s-bp"},
	{"seo", "SEO", "s-seo"},
}

// trendVitals are the vitals with a chart of their own, after health's.
var trendVitals = []string{"lcp", "cls", "tbt"}

// trendChart is one tab of the site page's trend: an ID for its tab, the tab's label, the chart,
// and the legend (several lines) or a note (one line).
type trendChart struct {
	ID, Label string
	SVG       template.HTML
	Legend    any
	Note      string
}

// trendCharts are the site page's trend tabs: the four scores, health, then each of trendVitals
// against its web.dev bands. With no points there are none.
func trendCharts(points []trendPoint) []trendChart {
	if len(points) == 0 {
		return nil
	}
	at := make([]time.Time, len(points))
	for i, p := range points {
		at[i] = p.At
	}
	score := func(metric string) []*float64 {
		out := make([]*float64, len(points))
		for i, p := range points {
			if v := analysis.ScanScoreOf(p.Scores, metric); v != nil {
				f := float64(*v)
				out[i] = &f
			}
		}
		return out
	}
	charts := []trendChart{
		{ID: "scores", Label: "Scores", SVG: trendSVG(points), Legend: trendSeries},
		{ID: "health", Label: "Health", Note: "Health is the mean of the four scores.",
			SVG: lineChart(fmt.Sprintf("Health of the last %d completed scans, oldest first", len(points)), at, scoreScale.titled("Health"),
				[]chartLine{{Label: "Health", Class: "s-health", Values: score("health")}})},
	}
	for _, name := range trendVitals {
		m, _ := analysis.Lookup(name)
		values := make([]*float64, len(points))
		top := m.Bands.Poor * 1.25
		for i, p := range points {
			if v := p.Vitals[name]; v != nil {
				values[i], top = v, math.Max(top, *v*1.05)
			}
		}
		top = niceCeil(top)
		scale := chartScale{Title: m.Label, Max: top, Grid: []float64{0, m.Bands.Good, m.Bands.Poor, top}, Format: func(v float64) string { return formatVital(name, v) }}
		charts = append(charts, trendChart{ID: name, Label: m.Label,
			Note: m.Title + " of the slowest page (mobile when scanned). Grid lines mark web.dev's good and poor thresholds.",
			SVG:  lineChart(fmt.Sprintf("%s of the last %d completed scans, oldest first", m.Title, len(points)), at, scale, []chartLine{{Label: m.Label, Class: "s-vital", Values: values}})})
	}
	return charts
}

// trendSVG draws scans' category scores (0-100), oldest scan on the left.
func trendSVG(points []trendPoint) template.HTML {
	if len(points) == 0 {
		return ""
	}
	at := make([]time.Time, len(points))
	lines := make([]chartLine, len(trendSeries))
	for i, s := range trendSeries {
		lines[i] = chartLine{Label: s.Label, Class: s.Class, Values: make([]*float64, len(points))}
	}
	for i, p := range points {
		at[i] = p.At
		for j, s := range trendSeries {
			if v := analysis.ScanScoreOf(p.Scores, s.Metric); v != nil {
				f := float64(*v)
				lines[j].Values[i] = &f
			}
		}
	}
	return lineChart(fmt.Sprintf("Scores of the last %d completed scans, oldest first", len(points)), at, scoreScale, lines)
}

// chartLine is one line of a chart: a value per point, nil where there is none.
type chartLine struct {
	Label, Class string
	Values       []*float64
}

// chartScale is a chart's y axis from 0 to Max, titled Title, with grid lines at Grid (in
// ascending order) and values written by Format. A grid line is labelled unless its label would
// crowd the labelled one below it.
type chartScale struct {
	Title  string
	Max    float64
	Grid   []float64
	Format func(float64) string
}

// titled is the scale with another title.
func (c chartScale) titled(title string) chartScale { c.Title = title; return c }

// scoreScale is the axis of 0-100 scores: grid at the rating bands, 50 and 90 separating poor,
// needs improvement and good.
var scoreScale = chartScale{Title: "Score", Max: 100, Grid: []float64{0, 50, 90, 100}, Format: func(v float64) string { return strconv.Itoa(int(v)) }}

// Chart geometry in viewBox units; the SVG scales to its container. The labels are sized for the
// phone stylesheet, whose axis font is chartPhoneFont units high (about 13 px on a 375 px screen;
// the desktop's is smaller): a character takes about 0.6 of it, and tick labels closer than
// chartTickGap would touch.
const (
	chartW, chartH                               = 640, 220
	chartLeft, chartRight, chartTop, chartBottom = 40, 12, 10, 36
	chartPhoneFont                               = 26
	chartTickGap                                 = chartPhoneFont
	chartTitleW                                  = chartPhoneFont + 6 // the rotated y-axis title's column
)

// lineChart draws lines over time as an inline SVG, oldest point on the left. A missing value
// breaks its line instead of dropping to zero; a line with no value at all is not drawn. Every
// label is a number or a date the function formats itself; they are escaped all the same.
func lineChart(label string, at []time.Time, scale chartScale, lines []chartLine) template.HTML {
	plotH := float64(chartH - chartTop - chartBottom)
	y := func(v float64) float64 { return chartTop + plotH*(1-v/scale.Max) }
	// A tick is labelled when it is far enough above the last labelled one; the labels, and the
	// title beside them, need room on the left.
	labelled := make([]bool, len(scale.Grid))
	left, last := chartLeft, math.Inf(1)
	for i, g := range scale.Grid {
		if last-y(g) >= chartTickGap {
			labelled[i], last = true, y(g)
			left = max(left, chartTitleW+8+int(math.Ceil(0.6*chartPhoneFont*float64(len([]rune(scale.Format(g)))))))
		}
	}
	plotW := float64(chartW - left - chartRight)
	x := func(i int) float64 {
		if len(at) == 1 {
			return float64(left) + plotW/2
		}
		return float64(left) + plotW*float64(i)/float64(len(at)-1)
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="trend" viewBox="0 0 %d %d" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`,
		chartW, chartH, html.EscapeString(label))
	for i, g := range scale.Grid {
		fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%s" x2="%d" y2="%s"/>`, left, num(y(g)), chartW-chartRight, num(y(g)))
		if labelled[i] {
			fmt.Fprintf(&b, `<text class="axis" x="%d" y="%s" text-anchor="end">%s</text>`, left-6, num(y(g)+4), html.EscapeString(scale.Format(g)))
		}
	}
	fmt.Fprintf(&b, `<text class="axis-title" transform="translate(%d %s) rotate(-90)" text-anchor="middle">%s</text>`,
		chartPhoneFont-4, num(chartTop+plotH/2), html.EscapeString(scale.Title))
	// Dates under the first and last points (and the middle one when there are many).
	labels := []int{0}
	if len(at) > 4 {
		labels = append(labels, len(at)/2)
	}
	if len(at) > 1 {
		labels = append(labels, len(at)-1)
	}
	for _, i := range labels {
		anchor := "middle"
		if len(at) > 1 && i == 0 {
			anchor = "start"
		} else if len(at) > 1 && i == len(at)-1 {
			anchor = "end"
		}
		fmt.Fprintf(&b, `<text class="axis date" x="%s" y="%d" text-anchor="%s">%s</text>`, num(x(i)), chartH-6, anchor,
			html.EscapeString(at[i].UTC().Format("2 Jan")))
	}
	for _, l := range lines {
		var d strings.Builder
		pen := "M"
		for i, v := range l.Values {
			if v == nil {
				pen = "M"
				continue
			}
			fmt.Fprintf(&d, "%s%s %s ", pen, num(x(i)), num(y(*v)))
			pen = "L"
		}
		if d.Len() > 0 {
			fmt.Fprintf(&b, `<path class="line %s" d="%s"/>`, l.Class, strings.TrimSpace(d.String()))
		}
		for i, v := range l.Values {
			if v != nil {
				fmt.Fprintf(&b, `<circle class="dot %s" cx="%s" cy="%s" r="3"><title>%s</title></circle>`, l.Class, num(x(i)), num(y(*v)),
					html.EscapeString(fmt.Sprintf("%s %s · %s", l.Label, scale.Format(*v), formatTime(at[i]))))
			}
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten, for an axis top people read.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	exp := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*exp >= v {
			return m * exp
		}
	}
	return 10 * exp
}

// num writes a coordinate with at most one decimal, so the SVG stays small and stable in tests.
func num(f float64) string {
	s := fmt.Sprintf("%.1f", f)
	return strings.TrimSuffix(s, ".0")
}
