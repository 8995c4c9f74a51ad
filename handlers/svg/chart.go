// Package svg draws SitePulse's pictures as SVG, on the server, from what analysis measured:
// the trend's line charts (the site page's and the MCP trend view's), the waterfall of two runs,
// the LCP phases, and the filmstrips' grid on one time axis. No script draws anything, so they
// show as they are under the strict CSP; they take their colours from the stylesheet (classes,
// no inline style) and scale with their viewBox.
package svg

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// The SVG line chart of the web UI's trend (TrendCharts) and of the MCP trend view (mcp): one
// drawing, computed here, so the chart an agent's user sees in the chat is the site page's.
// Lines and dots carry class names, so each surface colours them from its own stylesheet.

// Line is one line of a chart: a value per point, nil where there is none.
type Line struct {
	Label, Class string
	Values       []*float64
}

// Scale is a chart's y axis from 0 to Max, titled Title, with grid lines at Grid (in
// ascending order) and values written by Format. A grid line is labelled unless its label would
// crowd the labelled one below it.
type Scale struct {
	Title  string
	Max    float64
	Grid   []float64
	Format func(float64) string
}

// Titled is the scale with another title.
func (c Scale) Titled(title string) Scale { c.Title = title; return c }

// ScoreScale is the axis of 0-100 scores, in quarters: evenly spaced labels read as a scale,
// where the rating bands' 0, 50, 90 read as data.
var ScoreScale = Scale{Title: "Score", Max: 100, Grid: []float64{0, 25, 50, 75, 100}, Format: func(v float64) string { return strconv.Itoa(int(v)) }}

// ScoreSeries are the lines of the scores chart, in legend order: the interface's four
// categories, with the class names that colour them.
var ScoreSeries = []struct{ Metric, Label, Class string }{
	{"performance", "Performance", "s-perf"},
	{"accessibility", "Accessibility", "s-a11y"},
	{"bestPractices", "Best practices", "s-bp"},
	{"seo", "SEO", "s-seo"},
}

// Mark is an event marked on a chart's time axis, a publish: a dashed line titled Label.
type Mark struct {
	At    time.Time
	Label string
}

// ScoresChart draws scans' category scores (0-100), oldest scan (first) on the left, with the
// marks; "" for none.
func ScoresChart(at []time.Time, scores []store.ScanScores, marks ...Mark) string {
	if len(at) == 0 {
		return ""
	}
	lines := make([]Line, len(ScoreSeries))
	for i, s := range ScoreSeries {
		lines[i] = Line{Label: s.Label, Class: s.Class, Values: make([]*float64, len(at))}
	}
	for i, sc := range scores {
		for j, s := range ScoreSeries {
			if v := analysis.ScanScoreOf(sc, s.Metric); v != nil {
				f := float64(*v)
				lines[j].Values[i] = &f
			}
		}
	}
	return LineChart(fmt.Sprintf("Scores of the last %d completed scans, oldest first", len(at)), at, ScoreScale, lines, marks...)
}

// Chart geometry in viewBox units; the SVG scales to its container. The labels are sized for the
// phone stylesheet, whose axis font is ChartPhoneFont units high (about 13 px on a 375 px screen;
// the desktop's is smaller): a character takes about 0.6 of it, and tick labels closer than
// ChartTickGap would touch.
const (
	chartW, chartH                               = 640, 300 // tall enough on a phone; the desktop stylesheet caps its height
	chartLeft, chartRight, chartTop, chartBottom = 40, 12, 10, 36
	ChartPhoneFont                               = 26
	ChartTickGap                                 = ChartPhoneFont
	chartTitleW                                  = ChartPhoneFont + 6 // the rotated y-axis title's column
)

// LineChart draws lines over time as an inline SVG, oldest point on the left. A missing value
// breaks its line instead of dropping to zero; a line with no value at all is not drawn. Each
// mark is a dashed line behind the lines, placed in time between the points around it (at the
// right edge when it came after the last); one before the first point is off the chart. Every
// label is escaped.
func LineChart(label string, at []time.Time, scale Scale, lines []Line, marks ...Mark) string {
	plotH := float64(chartH - chartTop - chartBottom)
	y := func(v float64) float64 { return chartTop + plotH*(1-v/scale.Max) }
	// A tick is labelled when it is far enough above the last labelled one; the labels, and the
	// title beside them, need room on the left.
	labelled := make([]bool, len(scale.Grid))
	left, last := chartLeft, math.Inf(1)
	for i, g := range scale.Grid {
		if last-y(g) >= ChartTickGap {
			labelled[i], last = true, y(g)
			left = max(left, chartTitleW+8+int(math.Ceil(0.6*ChartPhoneFont*float64(len([]rune(scale.Format(g)))))))
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
		ChartPhoneFont-4, num(chartTop+plotH/2), html.EscapeString(scale.Title))
	// Dates under the first and last points (and the middle one when there are many).
	labels := []int{0}
	if len(at) > 4 {
		labels = append(labels, len(at)/2)
	}
	if len(at) > 1 {
		labels = append(labels, len(at)-1)
	}
	// Two labelled points of one day are told apart by their times.
	layout := "2 Jan"
	for j := 1; j < len(labels); j++ {
		if a, b := at[labels[j-1]].UTC(), at[labels[j]].UTC(); a.YearDay() == b.YearDay() && a.Year() == b.Year() {
			layout = "2 Jan 15:04"
		}
	}
	for _, i := range labels {
		anchor := "middle"
		if len(at) > 1 && i == 0 {
			anchor = "start"
		} else if len(at) > 1 && i == len(at)-1 {
			anchor = "end"
		}
		fmt.Fprintf(&b, `<text class="axis date" x="%s" y="%d" text-anchor="%s">%s</text>`, num(x(i)), chartH-6, anchor,
			html.EscapeString(at[i].UTC().Format(layout)))
	}
	for _, m := range marks {
		mx, ok := timeX(at, m.At, x)
		if !ok {
			continue
		}
		fmt.Fprintf(&b, `<g class="publish"><line x1="%s" y1="%d" x2="%s" y2="%d"/><path d="M%s %d l5 -8 h-10 z"/><title>%s</title></g>`,
			num(mx), chartTop, num(mx), chartH-chartBottom, num(mx), chartTop, html.EscapeString(m.Label))
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
					html.EscapeString(fmt.Sprintf("%s %s · %s", l.Label, scale.Format(*v), at[i].UTC().Format("2 Jan 2006, 15:04 UTC"))))
			}
		}
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// timeX places t on a chart whose points, at the times at, sit at x(i): between the two points
// around it in proportion to time, at the last point when t is after it; false before the first.
func timeX(at []time.Time, t time.Time, x func(int) float64) (float64, bool) {
	if len(at) == 0 || t.Before(at[0]) {
		return 0, false
	}
	for i := 0; i+1 < len(at); i++ {
		if t.Before(at[i+1]) {
			span := at[i+1].Sub(at[i])
			if span <= 0 {
				return x(i), true
			}
			return x(i) + (x(i+1)-x(i))*float64(t.Sub(at[i]))/float64(span), true
		}
	}
	return x(len(at) - 1), true
}

// NiceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten, for an axis top people read.
func NiceCeil(v float64) float64 {
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
