package handlers

import (
	"fmt"
	"html"
	"html/template"
	"strings"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// trendPoint is one completed scan on the site page's trend chart.
type trendPoint struct {
	At     time.Time
	Scores store.ScanScores
}

// trendSeries are the lines of the chart, in legend order: the interface's four categories.
// Class names colour them from the stylesheet, since the CSP allows no inline styles.
var trendSeries = []struct{ Metric, Label, Class string }{
	{"performance", "Performance", "s-perf"},
	{"accessibility", "Accessibility", "s-a11y"},
	{"bestPractices", "Best practices", "s-bp"},
	{"seo", "SEO", "s-seo"},
}

// Chart geometry in viewBox units; the SVG scales to its container.
const (
	chartW, chartH                               = 640, 220
	chartLeft, chartRight, chartTop, chartBottom = 40, 12, 10, 28
)

// trendSVG draws scans' category scores (0-100) as an inline SVG line chart, oldest scan on the
// left. A score Lighthouse did not give breaks its line instead of dropping to zero. With no
// points it draws nothing and returns "". Every label is a number or a date the function
// formats itself; they are escaped all the same.
func trendSVG(points []trendPoint) template.HTML {
	if len(points) == 0 {
		return ""
	}
	plotW := float64(chartW - chartLeft - chartRight)
	plotH := float64(chartH - chartTop - chartBottom)
	x := func(i int) float64 {
		if len(points) == 1 {
			return chartLeft + plotW/2
		}
		return chartLeft + plotW*float64(i)/float64(len(points)-1)
	}
	y := func(v int) float64 { return chartTop + plotH*(1-float64(v)/100) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="trend" viewBox="0 0 %d %d" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg">`,
		chartW, chartH, html.EscapeString(fmt.Sprintf("Scores of the last %d completed scans, oldest first", len(points))))
	// Grid at the rating bands: 50 and 90 separate poor, needs improvement and good.
	for _, g := range []int{0, 50, 90, 100} {
		fmt.Fprintf(&b, `<line class="grid" x1="%d" y1="%s" x2="%d" y2="%s"/>`, chartLeft, num(y(g)), chartW-chartRight, num(y(g)))
		if g != 100 { // 100 is the top of the chart; its label would crowd 90's
			fmt.Fprintf(&b, `<text class="axis" x="%d" y="%s" text-anchor="end">%d</text>`, chartLeft-6, num(y(g)+4), g)
		}
	}
	// Dates under the first and last points (and the middle one when there are many).
	labels := []int{0}
	if len(points) > 4 {
		labels = append(labels, len(points)/2)
	}
	if len(points) > 1 {
		labels = append(labels, len(points)-1)
	}
	for _, i := range labels {
		anchor := "middle"
		if len(points) > 1 && i == 0 {
			anchor = "start"
		} else if len(points) > 1 && i == len(points)-1 {
			anchor = "end"
		}
		fmt.Fprintf(&b, `<text class="axis" x="%s" y="%d" text-anchor="%s">%s</text>`, num(x(i)), chartH-8, anchor,
			html.EscapeString(points[i].At.UTC().Format("2 Jan")))
	}
	for _, s := range trendSeries {
		var d strings.Builder
		pen := "M"
		for i, p := range points {
			v := analysis.ScanScoreOf(p.Scores, s.Metric)
			if v == nil {
				pen = "M"
				continue
			}
			fmt.Fprintf(&d, "%s%s %s ", pen, num(x(i)), num(y(*v)))
			pen = "L"
		}
		if d.Len() > 0 {
			fmt.Fprintf(&b, `<path class="line %s" d="%s"/>`, s.Class, strings.TrimSpace(d.String()))
		}
		for i, p := range points {
			if v := analysis.ScanScoreOf(p.Scores, s.Metric); v != nil {
				fmt.Fprintf(&b, `<circle class="dot %s" cx="%s" cy="%s" r="3"><title>%s</title></circle>`, s.Class, num(x(i)), num(y(*v)),
					html.EscapeString(fmt.Sprintf("%s %d · %s", s.Label, *v, p.At.UTC().Format("2 Jan 2006 15:04"))))
			}
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// num writes a coordinate with at most one decimal, so the SVG stays small and stable in tests.
func num(f float64) string {
	s := fmt.Sprintf("%.1f", f)
	return strings.TrimSuffix(s, ".0")
}
