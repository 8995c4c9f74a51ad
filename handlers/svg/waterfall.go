package svg

import (
	"fmt"
	"html"
	"html/template"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// The pictures of the "What changed" panel (issue 33 item 4), drawn on the server: the
// waterfall of both runs and the LCP phases as SVG, the filmstrips as a grid of <img> on one
// time axis. No script draws anything, so they show as they are under the strict CSP; the SVGs
// take their colours from the stylesheet (classes, no inline style) and scale with their
// viewBox.

// MaxWaterfallRows bounds the waterfall: the requests that explain a change (added, the LCP
// request, render-blocking ones) are always drawn, then the earliest others.
const MaxWaterfallRows = 40

// Waterfall geometry, in viewBox units.
const (
	wfWidth   = 720 // the viewBox's width; bars span all of it
	wfAxis    = 26  // the time axis on top
	wfRow     = 34  // one request: its label, then Before's bar, then After's
	wfBottom  = 8
	wfLabelCh = 90 // characters of a row's label
)

// waterfallRow is one request of the waterfall, as either run or both made it.
type waterfallRow struct {
	analysis.RequestChange
	Added, Removed, LCP, RenderBlocking bool
}

// start is when the row's request started: After's, else Before's.
func (w waterfallRow) start() int {
	if w.After != nil {
		return w.After.StartMs
	}
	return w.Before.StartMs
}

// keep answers whether a row is always drawn.
func (w waterfallRow) keep() bool { return w.Added || w.LCP || w.RenderBlocking }

// waterfallRows picks at most max of both runs' requests (analysis.Requests): every added,
// LCP and render-blocking one first, then the earliest others, in the order they started; and
// how many are left out.
func waterfallRows(reqs []analysis.RequestChange, max int) (rows []waterfallRow, hidden int) {
	all := make([]waterfallRow, len(reqs))
	for i, r := range reqs {
		w := waterfallRow{RequestChange: r, Added: r.Before == nil, Removed: r.After == nil}
		for _, side := range []*store.Request{r.Before, r.After} {
			if side != nil {
				w.LCP = w.LCP || side.LCP
				w.RenderBlocking = w.RenderBlocking || side.RenderBlocking
			}
		}
		all[i] = w
	}
	byStart := func(a, b waterfallRow) int { return a.start() - b.start() }
	slices.SortStableFunc(all, byStart)
	for _, w := range all {
		if w.keep() && len(rows) < max {
			rows = append(rows, w)
		}
	}
	for _, w := range all {
		if !w.keep() && len(rows) < max {
			rows = append(rows, w)
		}
	}
	slices.SortStableFunc(rows, byStart)
	return rows, len(all) - len(rows)
}

// niceStep is a step of a time axis (ms) that cuts span into at most n parts: 1, 2 or 5 times a
// power of ten, at least 100 ms.
func niceStep(span, n int) int {
	for unit := 100; ; unit *= 10 {
		for _, m := range []int{1, 2, 5} {
			if unit*m*n >= span {
				return unit * m
			}
		}
	}
}

// AxisLabel writes a moment of an axis: "0", "500 ms", "1.5 s".
func AxisLabel(ms int) string {
	switch {
	case ms == 0:
		return "0"
	case ms < 1000:
		return strconv.Itoa(ms) + " ms"
	}
	return strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64) + " s"
}

// RequestLabel is how a panel names a request: the path (and query) on the page's own hosts,
// host and path for another's, cut to n characters.
func RequestLabel(raw string, thirdParty bool, n int) string {
	s := raw
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		s = u.EscapedPath()
		if u.RawQuery != "" {
			s += "?" + u.RawQuery
		}
		if thirdParty {
			s = u.Host + s
		}
	}
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}

// Waterfall draws both runs' requests on one time axis: per request its label, Before's bar
// (thin, grey) and After's (an added request's and the LCP request's highlighted), and each
// run's LCP moment (ms; 0 when unknown). It answers the drawing and how many requests it left
// out.
func Waterfall(reqs []analysis.RequestChange, lcpBefore, lcpAfter int) (template.HTML, int) {
	rows, hidden := waterfallRows(reqs, MaxWaterfallRows)
	span := max(lcpBefore, lcpAfter, 1)
	for _, w := range rows {
		for _, side := range []*store.Request{w.Before, w.After} {
			if side != nil {
				span = max(span, side.EndMs)
			}
		}
	}
	step := niceStep(span, 6)
	span = (span + step - 1) / step * step
	x := func(ms int) float64 { return float64(min(max(ms, 0), span)) * wfWidth / float64(span) }
	height := wfAxis + len(rows)*wfRow + wfBottom
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="waterfall" viewBox="0 0 %d %d" role="img" aria-labelledby="wf-t">`, wfWidth, height)
	fmt.Fprintf(&b, `<title id="wf-t">Requests of both runs on one time axis: %d drawn`, len(rows))
	if hidden > 0 {
		fmt.Fprintf(&b, `, %d more left out`, hidden)
	}
	b.WriteString(`. Grey bars are the earlier run, coloured bars the later.</title>`)
	for t := 0; t <= span; t += step {
		anchor := "middle"
		switch t {
		case 0:
			anchor = "start"
		case span:
			anchor = "end"
		}
		fmt.Fprintf(&b, `<line class="wf-grid" x1="%.1f" y1="%d" x2="%.1f" y2="%d"/>`, x(t), wfAxis-6, x(t), height-wfBottom)
		fmt.Fprintf(&b, `<text class="wf-axis" x="%.1f" y="%d" text-anchor="%s">%s</text>`, x(t), wfAxis-10, anchor, AxisLabel(t))
	}
	for i, w := range rows {
		y := wfAxis + i*wfRow
		label := RequestLabel(w.URL, w.ThirdParty, wfLabelCh)
		var notes []string
		switch {
		case w.Added:
			notes = append(notes, "new")
		case w.Removed:
			notes = append(notes, "removed")
		}
		if w.LCP {
			notes = append(notes, "LCP")
		}
		if w.RenderBlocking {
			notes = append(notes, "render-blocking")
		}
		class := "wf-row"
		for _, n := range notes {
			class += " wf-" + strings.ReplaceAll(strings.ToLower(n), "-", "")
		}
		fmt.Fprintf(&b, `<g class="%s"><title>%s</title>`, class, html.EscapeString(rowTitle(w)))
		fmt.Fprintf(&b, `<text class="wf-label" x="0" y="%d">%s`, y+12, html.EscapeString(label))
		if len(notes) > 0 {
			fmt.Fprintf(&b, ` <tspan class="wf-note">%s</tspan>`, strings.Join(notes, " · "))
		}
		b.WriteString(`</text>`)
		if r := w.Before; r != nil {
			fmt.Fprintf(&b, `<rect class="wf-before" x="%.1f" y="%d" width="%.1f" height="6"/>`, x(r.StartMs), y+17, max(x(r.EndMs)-x(r.StartMs), 1.5))
		}
		if r := w.After; r != nil {
			fmt.Fprintf(&b, `<rect class="wf-after" x="%.1f" y="%d" width="%.1f" height="8"/>`, x(r.StartMs), y+24, max(x(r.EndMs)-x(r.StartMs), 1.5))
		}
		b.WriteString(`</g>`)
	}
	for _, m := range []struct {
		ms    int
		class string
	}{{lcpBefore, "wf-lcp-before"}, {lcpAfter, "wf-lcp-after"}} {
		if m.ms > 0 {
			fmt.Fprintf(&b, `<line class="%s" x1="%.1f" y1="%d" x2="%.1f" y2="%d"><title>LCP %s</title></line>`,
				m.class, x(m.ms), wfAxis-4, x(m.ms), height-wfBottom, analysis.FormatValue("lcp", float64(m.ms)))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()), hidden
}

// rowTitle is a waterfall row's tooltip: the URL, then each run's timing and size.
func rowTitle(w waterfallRow) string {
	s := w.URL
	for _, side := range []struct {
		name string
		r    *store.Request
	}{{"before", w.Before}, {"after", w.After}} {
		if r := side.r; r != nil {
			s += fmt.Sprintf("\n%s: %s–%s, %s", side.name, AxisLabel(r.StartMs), AxisLabel(r.EndMs), SizeLabel(r.TransferBytes))
		}
	}
	return s
}

// SizeLabel writes a transfer size: "830 B", "12.4 KB", "1.2 MB".
func SizeLabel(n int64) string {
	switch {
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MB"
	case n >= 1<<10:
		return strconv.FormatFloat(float64(n)/(1<<10), 'f', 1, 64) + " KB"
	}
	return strconv.FormatInt(n, 10) + " B"
}

// PhaseNames label the LCP phases, in store.LCPPhases order.
var PhaseNames = map[string]string{store.PhaseTTFB: "TTFB", store.PhaseLoadDelay: "Load delay",
	store.PhaseLoadDuration: "Load duration", store.PhaseRenderDelay: "Render delay"}

// Phases geometry, in viewBox units.
const (
	phWidth = 480
	phLabel = 64 // "Before", "After"
	phBar   = 24
	phGap   = 12
)

// Phases draws the LCP phases of both runs as two stacked bars on one scale; "" when the
// runs have no phases.
func Phases(phases []analysis.PhaseChange) template.HTML {
	if len(phases) == 0 {
		return ""
	}
	var totals [2]int
	for _, p := range phases {
		totals[0] += max(p.Before, 0)
		totals[1] += max(p.After, 0)
	}
	span := max(totals[0], totals[1], 1)
	room := float64(phWidth - phLabel - 70) // the total's words after the longer bar
	var b strings.Builder
	height := 2*phBar + phGap + 4
	fmt.Fprintf(&b, `<svg class="phases" viewBox="0 0 %d %d" role="img" aria-labelledby="ph-t">`, phWidth, height)
	fmt.Fprintf(&b, `<title id="ph-t">LCP phases before (%s in all) and after (%s)</title>`,
		analysis.FormatValue("lcp", float64(totals[0])), analysis.FormatValue("lcp", float64(totals[1])))
	for i, side := range []string{"Before", "After"} {
		y := 2 + i*(phBar+phGap)
		fmt.Fprintf(&b, `<text class="ph-side" x="0" y="%d">%s</text>`, y+phBar/2+5, side)
		at := float64(phLabel)
		for _, p := range phases {
			v := p.Before
			if i == 1 {
				v = p.After
			}
			if v <= 0 {
				continue
			}
			w := float64(v) * room / float64(span)
			fmt.Fprintf(&b, `<rect class="ph-%s" x="%.1f" y="%d" width="%.1f" height="%d"><title>%s %s</title></rect>`,
				strings.ToLower(p.Phase), at, y, w, phBar, PhaseNames[p.Phase], analysis.FormatValue("lcp", float64(v)))
			at += w
		}
		fmt.Fprintf(&b, `<text class="ph-total" x="%.1f" y="%d">%s</text>`, at+6, y+phBar/2+5, analysis.FormatValue("lcp", float64(totals[i])))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
