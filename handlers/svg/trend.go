package svg

import (
	"fmt"
	"html/template"
	"math"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// TrendPoint is one completed scan on the site page's trend charts: its scores, and the vitals
// of TrendVitals as a budget for both strategies reads them (worst page, mobile when scanned).
type TrendPoint struct {
	At     time.Time
	Scores store.ScanScores
	Vitals map[string]*float64
}

// TrendSeries are the lines of the scores chart, in legend order (ScoreSeries).
var TrendSeries = ScoreSeries

// TrendVitals are the vitals with a chart of their own, after health's.
var TrendVitals = []string{"lcp", "cls", "tbt"}

// TrendChart is one tab of the site page's trend: an ID for its tab, the tab's label, the chart,
// and the legend (several lines) or a note (one line).
type TrendChart struct {
	ID, Label string
	SVG       template.HTML
	Legend    any
	Note      string
}

// TrendCharts are the site page's trend tabs: the four scores, health, then each of TrendVitals
// against its web.dev bands, each marking the publishes by who published. With no points there
// are none.
func TrendCharts(points []TrendPoint, publishes []store.Publish) []TrendChart {
	if len(points) == 0 {
		return nil
	}
	marks := make([]Mark, len(publishes))
	for i, p := range publishes {
		marks[i] = Mark{At: p.PublishedOn, Label: p.Line()}
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
	charts := []TrendChart{
		{ID: "scores", Label: "Scores", SVG: TrendScores(points, marks...), Legend: TrendSeries},
		{ID: "health", Label: "Health", Note: "Health is the mean of the four scores.",
			SVG: lineHTML(fmt.Sprintf("Health of the last %d completed scans, oldest first", len(points)), at, ScoreScale.Titled("Health"),
				[]Line{{Label: "Health", Class: "s-health", Values: score("health")}}, marks...)},
	}
	for _, name := range TrendVitals {
		m, _ := analysis.Lookup(name)
		values := make([]*float64, len(points))
		top := m.Bands.Poor * 1.25
		for i, p := range points {
			if v := p.Vitals[name]; v != nil {
				values[i], top = v, math.Max(top, *v*1.05)
			}
		}
		top = NiceCeil(top)
		scale := Scale{Title: m.Label, Max: top, Grid: []float64{0, m.Bands.Good, m.Bands.Poor, top}, Format: func(v float64) string { return analysis.FormatValue(name, v) }}
		charts = append(charts, TrendChart{ID: name, Label: m.Label,
			Note: m.Title + " of the slowest page (mobile when scanned). Grid lines mark web.dev's good and poor thresholds.",
			SVG:  lineHTML(fmt.Sprintf("%s of the last %d completed scans, oldest first", m.Title, len(points)), at, scale, []Line{{Label: m.Label, Class: "s-vital", Values: values}}, marks...)})
	}
	return charts
}

// TrendScores draws scans' category scores (0-100), oldest scan on the left, with the chart code the
// MCP trend view shares (ScoresChart).
func TrendScores(points []TrendPoint, marks ...Mark) template.HTML {
	at := make([]time.Time, len(points))
	scores := make([]store.ScanScores, len(points))
	for i, p := range points {
		at[i], scores[i] = p.At, p.Scores
	}
	return template.HTML(ScoresChart(at, scores, marks...))
}

// lineHTML is LineChart as the site page's templates take it.
func lineHTML(label string, at []time.Time, scale Scale, lines []Line, marks ...Mark) template.HTML {
	return template.HTML(LineChart(label, at, scale, lines, marks...))
}
