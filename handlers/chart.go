package handlers

import (
	"fmt"
	"html/template"
	"math"
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

// trendSeries are the lines of the scores chart, in legend order (analysis.ScoreSeries).
var trendSeries = analysis.ScoreSeries

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
// against its web.dev bands, each marking the publishes by who published. With no points there
// are none.
func trendCharts(points []trendPoint, publishes []store.Publish) []trendChart {
	if len(points) == 0 {
		return nil
	}
	marks := make([]analysis.ChartMark, len(publishes))
	for i, p := range publishes {
		marks[i] = analysis.ChartMark{At: p.PublishedOn, Label: p.Line()}
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
		{ID: "scores", Label: "Scores", SVG: trendSVG(points, marks...), Legend: trendSeries},
		{ID: "health", Label: "Health", Note: "Health is the mean of the four scores.",
			SVG: lineChart(fmt.Sprintf("Health of the last %d completed scans, oldest first", len(points)), at, analysis.ScoreScale.Titled("Health"),
				[]analysis.ChartLine{{Label: "Health", Class: "s-health", Values: score("health")}}, marks...)},
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
		top = analysis.NiceCeil(top)
		scale := analysis.ChartScale{Title: m.Label, Max: top, Grid: []float64{0, m.Bands.Good, m.Bands.Poor, top}, Format: func(v float64) string { return formatVital(name, v) }}
		charts = append(charts, trendChart{ID: name, Label: m.Label,
			Note: m.Title + " of the slowest page (mobile when scanned). Grid lines mark web.dev's good and poor thresholds.",
			SVG:  lineChart(fmt.Sprintf("%s of the last %d completed scans, oldest first", m.Title, len(points)), at, scale, []analysis.ChartLine{{Label: m.Label, Class: "s-vital", Values: values}}, marks...)})
	}
	return charts
}

// trendSVG draws scans' category scores (0-100), oldest scan on the left, with the chart code the
// MCP trend view shares (analysis.ScoresChart).
func trendSVG(points []trendPoint, marks ...analysis.ChartMark) template.HTML {
	at := make([]time.Time, len(points))
	scores := make([]store.ScanScores, len(points))
	for i, p := range points {
		at[i], scores[i] = p.At, p.Scores
	}
	return template.HTML(analysis.ScoresChart(at, scores, marks...))
}

// lineChart is analysis.LineChart as the site page's templates take it.
func lineChart(label string, at []time.Time, scale analysis.ChartScale, lines []analysis.ChartLine, marks ...analysis.ChartMark) template.HTML {
	return template.HTML(analysis.LineChart(label, at, scale, lines, marks...))
}
