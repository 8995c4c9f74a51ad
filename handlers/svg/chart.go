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

// Line is one line of a chart: a value per point, nil where there is none. At, when set, places
// the line's values at times of its own (a weekly series beside a daily one on one axis); else
// they are at the chart's times.
type Line struct {
	Label, Class string
	Values       []*float64
	At           []time.Time
}

// Scale is a chart's y axis from 0 to Max, titled Title, with grid lines at Grid (in
// ascending order) and values written by Format. A grid line is labelled unless its label would
// crowd the labelled one below it.
type Scale struct {
	Title  string
	Max    float64
	Grid   []float64
	Format func(float64) string
	// Bands, when set, shades the web.dev bands behind the lines: good, needs improvement, poor.
	Bands *analysis.Bands
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
	chartW, chartH                               = 640, 300       // tall enough on a phone; the desktop stylesheet caps its height
	chartLeft, chartRight, chartTop, chartBottom = 40, 12, 20, 36 // the top tick's label, on its line, needs 20 at the phone size
	ChartPhoneFont                               = 26
	ChartTickGap                                 = ChartPhoneFont
	chartTitleW                                  = ChartPhoneFont + 6 // the rotated y-axis title's column
)

// LineChart draws lines over time as an inline SVG, oldest point on the left, each point placed
// by its time (two scans a day apart and the next a week later are drawn so). Dates are written
// under round times a step apart (dateTicks), else under the first and last points. A missing
// value breaks its line instead of dropping to zero; a line with no value at all is not drawn.
// Each mark is a dashed line behind the lines, at its time (at the right edge when it came after
// the last point); one before the first point is off the chart. Every label is escaped.
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
	first, span := at[0], at[len(at)-1].Sub(at[0])
	xAt := func(t time.Time) float64 {
		if span <= 0 {
			return float64(left) + plotW/2
		}
		return float64(left) + plotW*float64(t.Sub(first))/float64(span)
	}
	x := func(i int) float64 { return xAt(at[i]) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="trend" viewBox="0 0 %d %d" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`,
		chartW, chartH, html.EscapeString(label))
	if bd := scale.Bands; bd != nil {
		top := func(v float64) float64 { return y(math.Min(v, scale.Max)) }
		for _, band := range []struct {
			class    string
			from, to float64
		}{{"band-good", 0, bd.Good}, {"band-ni", bd.Good, bd.Poor}, {"band-poor", bd.Poor, scale.Max}} {
			if band.from >= scale.Max {
				continue
			}
			fmt.Fprintf(&b, `<rect class="band %s" x="%d" y="%s" width="%d" height="%s"/>`, band.class, left, num(top(band.to)),
				chartW-chartRight-left, num(top(band.from)-top(band.to)))
		}
	}
	for i, g := range scale.Grid {
		fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%s" x2="%d" y2="%s"/>`, left, num(y(g)), chartW-chartRight, num(y(g)))
		if labelled[i] {
			fmt.Fprintf(&b, `<text class="axis" x="%d" y="%s" text-anchor="end">%s</text>`, left-6, num(y(g)+4), html.EscapeString(scale.Format(g)))
		}
	}
	fmt.Fprintf(&b, `<text class="axis-title" transform="translate(%d %s) rotate(-90)" text-anchor="middle">%s</text>`,
		ChartPhoneFont-4, num(chartTop+plotH/2), html.EscapeString(scale.Title))
	ticks := dateTicks(at[0], at[len(at)-1], plotW)
	if len(ticks) < 2 { // a short span: the first and last points' dates, their times when one day has both
		layout := "2 Jan"
		if a, b := at[0].UTC(), at[len(at)-1].UTC(); span > 0 && a.YearDay() == b.YearDay() && a.Year() == b.Year() {
			layout = "2 Jan 15:04"
		}
		ticks = []dateTick{{at[0], at[0].UTC().Format(layout)}}
		if span > 0 {
			ticks = append(ticks, dateTick{at[len(at)-1], at[len(at)-1].UTC().Format(layout)})
		}
	}
	bottom := chartH - chartBottom
	for _, t := range ticks {
		// Centred under its time, kept inside the drawing.
		tx, half := xAt(t.At), 0.3*ChartPhoneFont*float64(len([]rune(t.Text)))
		cx := min(max(tx, half), chartW-half)
		fmt.Fprintf(&b, `<line class="grid" x1="%s" y1="%d" x2="%s" y2="%d"/>`, num(tx), bottom, num(tx), bottom+5)
		fmt.Fprintf(&b, `<text class="axis date" x="%s" y="%d" text-anchor="middle">%s</text>`, num(cx), chartH-6, html.EscapeString(t.Text))
	}
	for _, m := range marks {
		if m.At.Before(first) {
			continue
		}
		mx := xAt(m.At)
		if m.At.After(at[len(at)-1]) {
			mx = x(len(at) - 1)
		}
		fmt.Fprintf(&b, `<g class="publish"><line x1="%s" y1="%d" x2="%s" y2="%d"/><path d="M%s %d l5 -8 h-10 z"/><title>%s</title></g>`,
			num(mx), chartTop, num(mx), chartH-chartBottom, num(mx), chartTop, html.EscapeString(m.Label))
	}
	for _, l := range lines {
		x, at := x, at
		if l.At != nil {
			x, at = func(i int) float64 { return xAt(l.At[i]) }, l.At
		}
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

// tickSteps are the steps between the dates under a chart, finest first, with how each writes
// its time ("" for hours: see dateTicks): hours, days, weeks (7 days from a Monday), months.
var tickSteps = []struct {
	step   time.Duration // 0: months
	months int
	layout string
}{
	{time.Hour, 0, ""}, {2 * time.Hour, 0, ""}, {3 * time.Hour, 0, ""}, {6 * time.Hour, 0, ""}, {12 * time.Hour, 0, ""},
	{24 * time.Hour, 0, "2 Jan"}, {48 * time.Hour, 0, "2 Jan"}, {7 * 24 * time.Hour, 0, "2 Jan"}, {14 * 24 * time.Hour, 0, "2 Jan"},
	{0, 1, "Jan 2006"}, {0, 2, "Jan 2006"}, {0, 3, "Jan 2006"}, {0, 6, "Jan 2006"}, {0, 12, "2006"},
}

// dateTick is a time written under a chart.
type dateTick struct {
	At   time.Time
	Text string
}

// dateTicks are the round times from t0 to t1 (UTC hours, midnights, Mondays, firsts of months)
// written under a chart width units wide: the finest step whose labels fit at the phone size
// with a gap between them. Hours are written "15:04" and midnights by their day ("2 Jan"); when
// no midnight falls in the span the first hour says its day too. None when no round time falls
// in the span.
func dateTicks(t0, t1 time.Time, width float64) []dateTick {
	t0, t1 = t0.UTC(), t1.UTC()
	for _, s := range tickSteps {
		var at []time.Time
		if s.months == 0 {
			t := t0.Truncate(s.step) // the zero time is a Monday midnight, UTC
			if t.Before(t0) {
				t = t.Add(s.step)
			}
			for ; !t.After(t1) && len(at) <= 60; t = t.Add(s.step) {
				at = append(at, t)
			}
		} else {
			m := (int(t0.Month()) - 1) / s.months * s.months
			t := time.Date(t0.Year(), time.Month(m+1), 1, 0, 0, 0, 0, time.UTC)
			if t.Before(t0) {
				t = t.AddDate(0, s.months, 0)
			}
			for ; !t.After(t1) && len(at) <= 60; t = t.AddDate(0, s.months, 0) {
				at = append(at, t)
			}
		}
		if !fits(len(at), shortestLabel(s.layout), width) { // too many even at their shortest: skip writing them
			continue
		}
		ticks, widest, midnight := make([]dateTick, len(at)), 0, false
		for i, t := range at {
			text := t.Format(s.layout)
			if s.layout == "" {
				text = t.Format("15:04")
				if t.Hour() == 0 {
					text, midnight = t.Format("2 Jan"), true
				}
			}
			ticks[i] = dateTick{t, text}
		}
		if s.layout == "" && !midnight && len(ticks) > 0 {
			ticks[0].Text = ticks[0].At.Format("2 Jan 15:04")
		}
		for _, t := range ticks {
			widest = max(widest, len([]rune(t.Text)))
		}
		if fits(len(ticks), widest, width) {
			return ticks
		}
	}
	return nil
}

// fits answers whether n labels of runes characters fit under a chart width units wide at the
// phone size, with a gap between them.
func fits(n, runes int, width float64) bool {
	return float64(n)*(0.6*ChartPhoneFont*float64(runes)+ChartTickGap) <= width+ChartTickGap
}

// shortestLabel is the fewest characters a tick of layout is written in: "15:04" (or "2 Jan")
// for hours, "2 Jan", "Jan 2006", "2006".
func shortestLabel(layout string) int {
	if layout == "" {
		return len("15:04")
	}
	return len(layout)
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

// num writes a coordinate with at most one decimal, so the SVG stays small and stable in tests:
// what fmt's %.1f writes (strconv's 'f' with one decimal), ".0" left out.
func num(f float64) string {
	var buf [32]byte
	b := strconv.AppendFloat(buf[:0], f, 'f', 1, 64)
	if n := len(b); n >= 2 && b[n-2] == '.' && b[n-1] == '0' {
		b = b[:n-2]
	}
	return string(b)
}
