package mcp

import (
	"context"
	_ "embed"
	"encoding/json"
	"strings"
	"time"

	"sitepulse/handlers/svg"
	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// The MCP Apps views (extension io.modelcontextprotocol/ui): four ui:// resources, each one
// self-contained HTML page that a host renders in a sandboxed iframe beside the answer and hands
// the tool's result. They are listed from 2025-06-18 on (the first version with
// structuredContent, which they draw); a 2025-03-26 session sees none of this.

const (
	extUI        = "io.modelcontextprotocol/ui"
	viewMimeType = "text/html;profile=mcp-app"
	// metaView is the tool result's _meta key for what a view draws beyond the payload (the
	// payload's JSON is the interface's, the same bytes the text block carries): the latest
	// scan's pages and failures, the trend's chart drawn by the web UI's code.
	metaView = "io.sitepulse/view"
)

var (
	//go:embed views/bridge.js
	viewBridge string
	//go:embed views/view.css
	viewCSS string
	//go:embed views/latest.html
	viewLatest string
	//go:embed views/trend.html
	viewTrend string
	//go:embed views/regressions.html
	viewRegressions string
	//go:embed views/compare.html
	viewCompare string
	//go:embed views/field.html
	viewField string
)

// view is one ui:// resource.
type view struct {
	URI, Name, Title, Description string
	HTML                          string // the page, the shared style and host script inlined
}

// page inlines the shared stylesheet and host script into a view's page: one file the host
// loads whole, with nothing to fetch.
func page(body string) string {
	r := strings.NewReplacer("/*STYLE*/", viewCSS, "/*BRIDGE*/", viewBridge)
	return r.Replace(body)
}

var views = []view{
	{URI: "ui://sitepulse/latest-scan", Name: "latest-scan", Title: "Latest scan",
		Description: "The latest scan of a site: scores per page and strategy, Core Web Vitals against the site's budgets, failed pages with their reason.",
		HTML:        page(viewLatest)},
	{URI: "ui://sitepulse/trend", Name: "trend", Title: "Score trend",
		Description: "A site's category scores over its recent scans, drawn as the web UI draws them.",
		HTML:        page(viewTrend)},
	{URI: "ui://sitepulse/regressions", Name: "regressions", Title: "Regressions",
		Description: "What got worse between a site's last two scans, by how much, and on which page.",
		HTML:        page(viewRegressions)},
	{URI: "ui://sitepulse/compare", Name: "compare", Title: "What changed",
		Description: "What changed between two scans of a site per page and strategy: the causes, both runs' filmstrips on one time axis with the LCP marked, a waterfall of both runs, the LCP phases and the requests added, removed and grown.",
		HTML:        page(viewCompare)},
	{URI: "ui://sitepulse/field", Name: "field", Title: "Field data",
		Description: "What real users measured on a site: CrUX's weekly p75 and the beacon's daily p75 of INP, LCP and CLS against web.dev's bands, the field-only regressions and the slowest interactions.",
		HTML:        page(viewField)},
}

// viewResourceMeta is every view's _meta.ui: no external origin at all (an empty csp: no
// connect, resource, frame or base-uri domain), drawn with a border.
var viewResourceMeta = map[string]any{"ui": map[string]any{"csp": map[string]any{}, "prefersBorder": true}}

// uiCapabilities are the server capabilities from 2025-06-18 on: tools, the views as resources,
// and the extensions (tasks only for 2026-07-28, whose requests can declare it).
func uiCapabilities(modern bool) map[string]any {
	ext := map[string]any{extUI: map[string]any{"mimeTypes": []string{viewMimeType}}}
	if modern {
		ext[extTasks] = map[string]any{}
	}
	return map[string]any{"tools": map[string]any{}, "resources": map[string]any{}, "extensions": ext}
}

func resourceList() map[string]any {
	out := make([]map[string]any, len(views))
	for i, v := range views {
		out[i] = map[string]any{"uri": v.URI, "name": v.Name, "title": v.Title, "description": v.Description,
			"mimeType": viewMimeType, "_meta": viewResourceMeta}
	}
	return map[string]any{"resources": out}
}

// readResource answers resources/read; an unknown uri is -32002 up to 2025-11-25 and -32602 in
// 2026-07-28, with the uri in data either way.
func readResource(e era, params json.RawMessage) (map[string]any, *rpcError) {
	var p struct {
		URI string `json:"uri"`
	}
	json.Unmarshal(params, &p)
	for _, v := range views {
		if v.URI == p.URI {
			return map[string]any{"contents": []map[string]any{{"uri": v.URI, "mimeType": viewMimeType, "text": v.HTML, "_meta": viewResourceMeta}}}, nil
		}
	}
	code := CodeResourceNotFound
	if e == eraModern {
		code = CodeInvalidParams
	}
	return nil, &rpcError{Code: code, Message: "Resource not found", Data: map[string]string{"uri": p.URI}}
}

// CodeResourceNotFound is the legacy eras' error for resources/read of an unknown uri.
const CodeResourceNotFound = -32002

// noViewsKey marks the context of a 2026-07-28 request whose client did not declare the ui
// extension: it cannot draw a view, so its results go without the view's data (for a site of
// many pages, most of a get_latest_scan answer's bytes).
type noViewsKey struct{}

func noViews(ctx context.Context) bool { return ctx.Value(noViewsKey{}) != nil }

// viewer is a payload a view draws: viewData is what the view needs beyond the payload, for the
// result's _meta (metaView); nil when the payload is all.
type viewer interface {
	viewData(ctx context.Context, s *Server, userID string) (any, error)
}

// latestView is what the latest-scan view draws beyond get_latest_scan's payload.
type latestView struct {
	Pages  []viewPage        `json:"pages"`
	Failed []store.PageError `json:"failed"`
	Vitals []viewVital       `json:"vitals"`
}

type viewPage struct {
	PagePath string              `json:"pagePath"`
	PageURL  string              `json:"pageUrl"`
	Strategy store.Strategy      `json:"strategy"`
	Scores   store.PageScores    `json:"scores"`
	Vitals   map[string]*float64 `json:"vitals"`
}

// viewVital names a budget vital for the view's columns: its label, unit and web.dev bands.
type viewVital struct {
	Name  string  `json:"name"`
	Label string  `json:"label"`
	Unit  string  `json:"unit"`
	Good  float64 `json:"good"`
	Poor  float64 `json:"poor"`
}

func (l latestScan) viewData(ctx context.Context, s *Server, userID string) (any, error) {
	// The scan is the caller's (get_latest_scan found it through the owner-scoped budget
	// inputs) and complete: its metrics come from the server's cache when they are there.
	results, err := s.pageMetrics(ctx, userID, store.Scan{ID: l.ScanID, Status: store.StatusComplete})
	if err != nil {
		return nil, err
	}
	failed, err := s.scans.PageErrors(ctx, userID, l.ScanID)
	if err != nil {
		return nil, err
	}
	v := latestView{Pages: make([]viewPage, 0, len(results)), Failed: make([]store.PageError, 0, len(failed))}
	for _, m := range analysis.BudgetVitals() {
		vv := viewVital{Name: m.Name, Label: m.Label, Unit: m.Unit}
		if m.Bands != nil {
			vv.Good, vv.Poor = m.Bands.Good, m.Bands.Poor
		}
		v.Vitals = append(v.Vitals, vv)
	}
	for _, r := range results {
		p := viewPage{PagePath: r.PagePath, PageURL: r.PageURL, Strategy: r.Strategy, Scores: r.Scores, Vitals: map[string]*float64{}}
		for _, m := range v.Vitals {
			p.Vitals[m.Name] = analysis.VitalOf(r.CoreWebVitals, m.Name)
		}
		v.Pages = append(v.Pages, p)
	}
	for _, f := range failed {
		if f.Strategy != analysis.DiscoveryNote {
			v.Failed = append(v.Failed, f)
		}
	}
	return v, nil
}

// trendView is the trend's chart, drawn by the web UI's code (svg.ScoresChart) with the
// publishes marked: an SVG whose every label the chart code formats and escapes itself.
type trendView struct {
	Chart  string                                  `json:"chart"`
	Series []struct{ Metric, Label, Class string } `json:"series"`
}

func (t trendResult) viewData(context.Context, *Server, string) (any, error) {
	at := make([]time.Time, 0, len(t.Scans))
	scores := make([]store.ScanScores, 0, len(t.Scans))
	for _, sc := range t.Scans {
		if sc.CompletedAt == nil {
			continue
		}
		when, err := time.Parse(time.RFC3339, *sc.CompletedAt)
		if err != nil {
			return nil, err
		}
		at = append(at, when)
		scores = append(scores, store.ScanScores{Performance: sc.Performance, SEO: sc.SEO, Accessibility: sc.Accessibility, BestPractices: sc.BestPractices})
	}
	// The publishes are marked as the site page marks them: a dashed line titled with who published.
	marks := make([]svg.Mark, 0, len(t.Publishes))
	for _, p := range t.Publishes {
		when, err := time.Parse(time.RFC3339, p.PublishedAt)
		if err != nil {
			return nil, err
		}
		pub := store.Publish{PublishedOn: when}
		if p.PublishedBy != nil {
			pub.PublishedBy = *p.PublishedBy
		}
		marks = append(marks, svg.Mark{At: when, Label: pub.Line()})
	}
	return trendView{Chart: svg.ScoresChart(at, scores, marks...), Series: svg.ScoreSeries}, nil
}
