package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"sync/atomic"

	"sitepulse/store"
)

// tool is one entry of the tool table. Every protocol version reads the same table; the eras
// differ only in how much of it tools/list shows and how a result is wrapped.
type tool struct {
	Name        string
	Title       string
	Description string
	Example     string // a prompt that leads a model to the tool, for the connect guide (/docs/mcp)
	Input       *Schema
	ReadOnly    bool
	// Scope is the OAuth scope a credential needs to call the tool: store.ScopeRead to read,
	// store.ScopeWrite to publish.
	Scope string
	// Action is what the tool does in its site's workspace, for store.Authorize (authorize.go):
	// store.ActRead when empty.
	Action store.Action
	// SelfAuthorizing marks a tool whose one statement checks the caller's role itself
	// (selfAuthorized): generate_client_report.
	SelfAuthorizing bool
	Handler         toolHandler
	// Since is the first protocol era that lists the tool. The nine tools of the interface are
	// in every era; the tools added after it start at 2025-06-18, so a 2025-03-26 session keeps
	// every byte it was recorded with (testdata/session-2025-03-26.golden).
	Since era
	// Task marks the tool whose result becomes a task of the tasks extension (tasks.go) for a
	// 2026-07-28 client that declares it: start_scan.
	Task bool
	// View is the ui:// view (views.go) that draws the tool's result, from 2025-06-18 on.
	View string
}

// toolHandler runs a tool. Output is the Go type of its payload, from which the tool's
// outputSchema is derived (outputSchema): the type the code returns is the schema clients get.
type toolHandler struct {
	run    func(s *Server, ctx context.Context, userID string, a args) (any, error)
	Output reflect.Type
}

// handler makes a toolHandler of a tool method, recording the payload type it returns.
func handler[T any](f func(*Server, context.Context, string, args) (T, error)) toolHandler {
	return toolHandler{
		run: func(s *Server, ctx context.Context, userID string, a args) (any, error) {
			v, err := f(s, ctx, userID, a)
			if err != nil {
				return nil, err
			}
			return v, nil
		},
		Output: reflect.TypeFor[T](),
	}
}

// toolError is a tool failure the model should read: it travels as an isError result, not a
// JSON-RPC error (interface "Errors").
type toolError string

func (e toolError) Error() string { return string(e) }

// Tool failure messages.
const (
	errSiteNotFound = toolError("Site not found or not owned by you")
	errScanNotFound = toolError("Scan not found or not owned by you")
	errNoScanYet    = toolError("No completed scan yet for this site: its first scan has not finished. Try again after the next publish or scan completes.")
)

// Argument schemas shared by several tools.
func siteIDArg() *Schema {
	return &Schema{Type: "string", Format: "uuid", Description: "The site's id (a UUID), as returned by list_sites."}
}

func scanIDArg() *Schema {
	return &Schema{Type: "string", Format: "uuid", Description: "The scan's id (a UUID), as returned by get_latest_scan, get_trend or get_regression_report."}
}

func strategyArg() *Schema {
	return &Schema{Type: "string", Enum: []string{"mobile", "desktop"}, Default: "mobile",
		Description: "Which Lighthouse run to read: the mobile (slow 4G, mid-range phone) or the desktop one. Default mobile."}
}

func object(required []string, props map[string]*Schema) *Schema {
	if props == nil {
		props = map[string]*Schema{}
	}
	return &Schema{Type: "object", Properties: props, Required: required, AdditionalProperties: &no}
}

// tools is the table of every tool the server offers, in the order tools/list shows them.
var tools = []tool{
	{
		Name: "list_sites", Title: "List sites", ReadOnly: true, Scope: store.ScopeRead, Handler: handler((*Server).listSites),
		Example: "Which of my sites is in the worst shape?",
		Description: "Lists the sites of every SitePulse workspace you belong to (your own and your teams'): for each " +
			"its id, name, domain, current health score " +
			"(0-100, the mean of the four Lighthouse category scores of its latest scan; null before the first scan), " +
			"when it was last published, founding (true only for a site SitePulse seeded itself, the demo; false for every site added or imported), and its workspace (id and name). Call this first: every other tool " +
			"takes a siteId from here, or a scanId reached through one. Sites come by name, 100 at a time: " +
			"when there are more, nextCursor is set; pass it as cursor for the next ones. query keeps the sites whose name contains it.",
		Input: object(nil, map[string]*Schema{
			"query":  {Type: "string", MinLength: intp(1), MaxLength: intp(100), Description: "Only the sites whose name contains this, ignoring case, e.g. \"shop\"."},
			"cursor": {Type: "string", Format: "uuid", Description: "The nextCursor of the previous list_sites answer: the sites after it."},
		}),
	},
	{
		Name: "get_latest_scan", Title: "Latest scan of a site", ReadOnly: true, Scope: store.ScopeRead, Handler: handler((*Server).getLatestScan), View: "ui://sitepulse/latest-scan",
		Example: "How is shop.example.com doing, and does it meet its budgets?",
		Description: "Returns the latest completed scan of a site: its scanId, when it completed, how many pages " +
			"it audited (pagesTotal, each page once whatever the strategies), the strategy (mobile, desktop or both), the site-wide scores (health, performance, seo, " +
			"accessibility, bestPractices; 0-100, the mean over every page) and the site's budget thresholds " +
			"(e.g. performance 80 is a minimum score, lcp 2500 a maximum in ms; budget.strategy says per metric " +
			"whether it applies to mobile, desktop or both). Use it for \"how is my site doing\" " +
			"and to get the scanId for get_page_details, get_lcp_elements and generate_client_report.",
		Input: object([]string{"siteId"}, map[string]*Schema{"siteId": siteIDArg()}),
	},
	{
		Name: "get_page_details", Title: "Full audit of one page", ReadOnly: true, Scope: store.ScopeRead, Handler: handler((*Server).getPageDetails),
		Example: "Why is the pricing page slow on mobile?",
		Description: "Returns everything Lighthouse measured for one page of a scan and one strategy: category scores, " +
			"lab Core Web Vitals (lcp, cls, fcp, ttfb, tbt, speedIndex, tti in ms, cls unitless; inp from field data), " +
			"CrUX field data (null when the page has none), opportunities with their estimated savings in ms, " +
			"third-party scripts, failing accessibility, best-practices and SEO audits, the LCP element, the " +
			"elements that shifted, diagnostics and stack-specific advice. Omit pagePath to get the worst-performing " +
			"page (lowest performance score) for the strategy. Use it to explain why a page is slow and what to fix.",
		Input: object([]string{"scanId"}, map[string]*Schema{
			"scanId":   scanIDArg(),
			"pagePath": {Type: "string", MinLength: intp(1), MaxLength: intp(2048), Description: "The page's path, e.g. \"/\" or \"/pricing\". Omit it for the worst-performing page."},
			"strategy": strategyArg(),
		}),
	},
	{
		Name: "get_lcp_elements", Title: "LCP and layout-shift elements", ReadOnly: true, Scope: store.ScopeRead, Handler: handler((*Server).getLCPElements),
		Example: "Which element is the Largest Contentful Paint on each page?",
		Description: "For every page of a scan (one strategy), returns the Largest Contentful Paint time in ms and the " +
			"element that was painted last (CSS selector and HTML snippet), the cumulative layout shift and the " +
			"elements that shifted with their share of it. Use it to find which image, heading or banner makes " +
			"pages slow to show or jumpy.",
		Input: object([]string{"scanId"}, map[string]*Schema{"scanId": scanIDArg(), "strategy": strategyArg()}),
	},
	{
		Name: "get_third_party_scripts", Title: "Third-party script impact", ReadOnly: true, Scope: store.ScopeRead, Handler: handler((*Server).getThirdPartyScripts),
		Example: "Which third-party scripts slow my site down the most?",
		Description: "Aggregates the third-party scripts (analytics, chat widgets, tag managers, fonts...) across the pages " +
			"of the site's latest completed scan (mobile results): per domain the total bytes transferred, the mean " +
			"main-thread blocking time in ms on the pages where it appears, how many pages it is on, and an impact " +
			"score (blocking ms x pages) that orders the list, worst first. Use it to decide which script to remove or defer.",
		Input: object([]string{"siteId"}, map[string]*Schema{"siteId": siteIDArg()}),
	},
	{
		Name: "get_accessibility_issues", Title: "Accessibility issues", ReadOnly: true, Scope: store.ScopeRead, Handler: handler((*Server).getAccessibilityIssues),
		Example: "List the critical accessibility issues on my site.",
		Description: "Lists the failing accessibility audits of the site's latest completed scan, grouped by audit id: " +
			"title, what it means, severity (critical when the audit scored 0, serious below 0.5, moderate below 0.75, " +
			"else minor; from the worst page), how many pages and which paths are affected, most severe first; plus " +
			"the number of pages analysed and the mean accessibility score. Filter with severity.",
		Input: object([]string{"siteId"}, map[string]*Schema{
			"siteId":   siteIDArg(),
			"severity": {Type: "string", Enum: []string{"critical", "serious", "moderate", "minor", "all"}, Default: "all", Description: "Only issues of this severity; default all."},
		}),
	},
	{
		Name: "get_regression_report", Title: "Regressions since the previous scan", ReadOnly: true, Scope: store.ScopeRead, Handler: handler((*Server).getRegressionReport), View: "ui://sitepulse/regressions",
		Example: "Did the last publish make anything slower?",
		Description: "Compares the site's latest completed scan with the one before it, page by page and strategy by " +
			"strategy, and lists what got worse: category scores that dropped by more than 5 points, and Core Web " +
			"Vitals that crossed into a worse web.dev band (LCP 2500/4000 ms, CLS 0.1/0.25, INP 200/500 ms, FCP " +
			"1800/3000 ms, TTFB 800/1800 ms), each with from, to, delta (to - from) and the page. Use it for " +
			"\"why did my site get slower\" after a publish. previousScanId is null when the site has one scan only.",
		Input: object([]string{"siteId"}, map[string]*Schema{"siteId": siteIDArg()}),
	},
	{
		Name: "get_trend", Title: "Score trend", ReadOnly: true, Scope: store.ScopeRead, Handler: handler((*Server).getTrend), View: "ui://sitepulse/trend",
		Example: "Show the performance trend of my site over the last ten scans.",
		Description: "Returns the site's recent completed scans, oldest first, with their category scores and page " +
			"counts, so you can tell whether performance is improving or degrading over time.",
		Input: object([]string{"siteId"}, map[string]*Schema{
			"siteId": siteIDArg(),
			"limit":  {Type: "integer", Minimum: intp(1), Maximum: intp(50), Default: 20, Description: "How many of the most recent scans to return, 1-50; default 20."},
		}),
	},
	{
		Name: "generate_client_report", Title: "Create a shareable client report", ReadOnly: false, Scope: store.ScopeWrite, Action: store.ActReport, SelfAuthorizing: true, Handler: handler((*Server).generateClientReport),
		Example: "Make a report of the latest scan I can send to my client.",
		Description: "Creates a shareable web page of one completed scan (scores, Core Web Vitals of every page with " +
			"their ratings, top opportunities) that anyone with the link can open without logging in, and returns " +
			"its url. Use it when the user wants to send results to a client or colleague. The link stops working " +
			"after expiresInDays days (0: never).",
		Input: object([]string{"scanId"}, map[string]*Schema{
			"scanId":        scanIDArg(),
			"title":         {Type: "string", MinLength: intp(1), MaxLength: intp(200), displayText: true, Description: "The report's heading; default \"<site name> Performance Report\"."},
			"expiresInDays": {Type: "integer", Minimum: intp(0), Maximum: intp(365), Default: 30, Description: "Days until the link expires, 0-365; 0 means it never expires. Default 30."},
		}),
	},
	{
		Name: "start_scan", Title: "Start a scan", ReadOnly: false, Scope: store.ScopeWrite, Action: store.ActScan, Handler: handler((*Server).startScan), Since: era20250618, Task: true,
		Example: "I fixed the hero image: re-audit shop.example.com and tell me whether LCP improved.",
		Description: "Starts a Lighthouse scan of every page of the site now, as the web UI's \"Scan now\" does, and returns " +
			"at once with its scanId and status (queued). A site has at most one scan in flight: while one is queued or " +
			"running, this returns that scan (alreadyRunning true) instead of starting another. A scan takes minutes; " +
			"follow it with get_scan until status is complete (its result is then what get_latest_scan returns) or " +
			"failed (reason says why). Use it after a fix to re-audit, then compare with get_regression_report. " +
			"When the account's daily audits are used up it is an error that says when to retry.",
		Input: object([]string{"siteId"}, map[string]*Schema{
			"siteId": siteIDArg(),
			"strategy": {Type: "string", Enum: []string{"both", "mobile", "desktop"}, Default: "both",
				Description: "Which Lighthouse runs to make: both (default, as \"Scan now\"), mobile only or desktop only."},
		}),
	},
	{
		Name: "get_scan", Title: "Progress of a scan", ReadOnly: true, Scope: store.ScopeRead, Handler: handler((*Server).getScan), Since: era20250618,
		Example: "Is the scan I started finished yet?",
		Description: "Returns one scan of yours, of any status: queued, running (pagesDone of pagesTotal page audits " +
			"done), complete (result is exactly what get_latest_scan returns for this scan) or failed (reason says why). " +
			"Use it to follow a scan start_scan started; poll no more than every few seconds.",
		Input: object([]string{"scanId"}, map[string]*Schema{"scanId": scanIDArg()}),
	},
	{
		Name: "compare_scans", Title: "What changed between two scans", ReadOnly: true, Scope: store.ScopeRead, Handler: handler((*Server).compareScans), Since: era20250618, View: "ui://sitepulse/compare",
		Example: "What changed on the home page between last week's scan and today's?",
		Description: "Compares two completed scans of one site, page by page and strategy by strategy, as the compare page does: " +
			"each metric before and after; the requests added, removed, grown and slower (matched by URL without its query, then " +
			"by host and path); bytes by resource type and party; third parties added and removed; scripts that cost more main-thread " +
			"time; the LCP element and its phases (time to first byte, load delay, load duration, render delay); new layout shifts; " +
			"audits that turned failing; and for each metric that got worse beyond run-to-run noise its cause in one sentence. " +
			"fromScanId is the earlier scan, toScanId the later (get_trend and get_regression_report give scan ids). Narrow it " +
			"with pagePath and strategy. The text is a summary; the structured result has every change and both runs' " +
			"waterfalls and filmstrips.",
		Input: object([]string{"fromScanId", "toScanId"}, map[string]*Schema{
			"fromScanId": {Type: "string", Format: "uuid", Description: "The earlier scan's id (a UUID)."},
			"toScanId":   {Type: "string", Format: "uuid", Description: "The later scan's id (a UUID), of the same site."},
			"pagePath":   {Type: "string", MinLength: intp(1), MaxLength: intp(2048), Description: "Only this page, e.g. \"/\" or \"/pricing\". Omit it for every page both scans audited."},
			"strategy":   {Type: "string", Enum: []string{"mobile", "desktop"}, Description: "Only the mobile or the desktop runs. Omit it for both."},
		}),
	},
	{
		Name: "get_field_data", Title: "Field data: what real users measured", ReadOnly: true, Scope: store.ScopeRead, Handler: handler((*Server).getFieldData), Since: era20250618, View: "ui://sitepulse/field",
		Example: "Do real users feel the slowdown on the pricing page?",
		Description: "Returns what real users measured on a site, beside the lab: the weekly p75 of LCP, INP, CLS, FCP and TTFB from the " +
			"CrUX History API (each point the 28 days before its end, up to 40 weeks; p75 null where CrUX has a gap) and the daily p75 from " +
			"SitePulse's own beacon (with its sample count), by device (phone, desktop), each series with its latest value and web.dev rating; " +
			"the slowest interactions the beacon saw (the element's selector and event type, how often it was the page's INP, the p75 and its " +
			"input delay, processing and presentation phases); and fieldOnly, the regressions the lab cannot see (the beacon's p75 crossed into a " +
			"worse band). Omit pagePath for the whole site (CrUX's origin record, the beacon's site-wide figures); omit device for both. " +
			"hasData is false when the site has no field data at all. Use it to tell whether a lab regression reached real users, and for INP, " +
			"which the lab cannot measure.",
		Input: object([]string{"siteId"}, map[string]*Schema{
			"siteId":   siteIDArg(),
			"pagePath": {Type: "string", MinLength: intp(1), MaxLength: intp(2048), Description: "The page's path, e.g. \"/\" or \"/pricing\". Omit it for the whole site."},
			"device":   {Type: "string", Enum: []string{"phone", "desktop"}, Description: "Only phones or only desktops. Omit it for both."},
		}),
	},
}

// toolCount is how many tools era e lists, in words: the 2025-03-26 message says "nine".
func toolCount(e era) string {
	n := 0
	for _, t := range tools {
		if e >= t.Since {
			n++
		}
	}
	if w, ok := map[int]string{9: "nine", 10: "ten", 11: "eleven", 12: "twelve", 13: "thirteen"}[n]; ok {
		return w
	}
	return strconv.Itoa(n)
}

// toolIndex finds a tool by name.
var toolIndex = func() map[string]*tool {
	m := map[string]*tool{}
	for i := range tools {
		m[tools[i].Name] = &tools[i]
	}
	return m
}()

// ToolDoc is one tool as the connect guide lists it.
type ToolDoc struct{ Name, Title, Example, Scope string }

// ToolDocs lists every tool in tools/list order, for the connect guide.
func ToolDocs() []ToolDoc {
	out := make([]ToolDoc, len(tools))
	for i, t := range tools {
		out[i] = ToolDoc{t.Name, t.Title, t.Example, t.Scope}
	}
	return out
}

// toolIcon is every tool's icon from 2025-11-25 on: a small inline SVG (a gauge), so a client
// fetches nothing to show it.
const toolIcon = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24"><circle cx="12" cy="12" r="10" fill="#0b7a55"/>` +
	`<path d="M6 15a6 6 0 0 1 12 0" fill="none" stroke="#fff" stroke-width="2"/><path d="M12 15l3-5" stroke="#fff" stroke-width="2"/></svg>`

var toolIcons = []map[string]any{{
	"src":      "data:image/svg+xml;base64," + base64.StdEncoding.EncodeToString([]byte(toolIcon)),
	"mimeType": "image/svg+xml",
	"sizes":    []string{"any"},
}}

// toolList is the tools/list view of the table as protocol era e shows it, in the table's
// order: 2025-06-18 adds title and outputSchema, 2025-11-25 adds icons.
func toolList(e era) []map[string]any {
	out := make([]map[string]any, 0, len(tools))
	for _, t := range tools {
		if e < t.Since {
			continue
		}
		m := map[string]any{
			"name":        t.Name,
			"description": t.Description,
			"inputSchema": t.Input,
			"annotations": map[string]any{
				"title":           t.Title,
				"readOnlyHint":    t.ReadOnly,
				"destructiveHint": false,
				"idempotentHint":  t.ReadOnly,
				"openWorldHint":   false,
			},
		}
		if e >= era20250618 {
			m["title"] = t.Title
			m["outputSchema"] = outputSchema(t.Handler.Output)
			if t.View != "" {
				m["_meta"] = map[string]any{"ui": map[string]any{"resourceUri": t.View}}
			}
		}
		if e >= era20251125 {
			m["icons"] = toolIcons
		}
		out = append(out, m)
	}
	return out
}

// args are a tool call's validated arguments.
type args map[string]any

func (a args) str(name, def string) string {
	if v, ok := a[name].(string); ok {
		return v
	}
	return def
}

// strategy is the strategy argument, def when absent; the tool's schema enum has checked it.
func (a args) strategy(def store.Strategy) store.Strategy {
	return store.Strategy(a.str("strategy", string(def)))
}

func (a args) integer(name string, def int) int {
	if v, ok := a[name].(float64); ok {
		return int(v)
	}
	return def
}

// textContent is a text item of a tool result.
type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func text(s string) []any { return []any{textContent{Type: "text", Text: s}} }

// resourceLink is a resource_link item of a tool result (2025-06-18 and later).
type resourceLink struct {
	Type        string `json:"type"`
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}

// linker is a payload that points at a resource: from 2025-06-18 its links follow the text.
type linker interface{ links() []resourceLink }

// legacier is a payload that gained fields after 2025-03-26: legacy is the payload as that era's
// clients were promised it, so a 2025-03-26 session keeps every byte it was recorded with; the
// later eras declare the new fields in their outputSchema.
type legacier interface{ legacy() any }

// summarizer is a payload whose text block is a summary in words rather than its JSON: one
// whose structuredContent carries what a view draws (pictures) and no model should read.
type summarizer interface{ summary() string }

// toolResult is the tools/call result envelope. The 2025-03-26 envelope is content and isError
// only; structuredContent is the payload's JSON again (2025-06-18 and later); resultType and
// _meta are 2026-07-28's.
type toolResult struct {
	ResultType        string          `json:"resultType,omitempty"`
	Content           []any           `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	Meta              map[string]any  `json:"_meta,omitempty"`
}

// callTool validates a tools/call request against the tool's schema and runs it, wrapping the
// payload as era e wants it. pre is params already decoded (parseQuick), or nil.
func (s *Server) callTool(ctx context.Context, userID string, e era, params json.RawMessage, pre *toolCall) (any, *rpcError) {
	var p struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if pre != nil {
		p.Name = &pre.name
	} else if len(params) == 0 || json.Unmarshal(params, &p) != nil || p.Name == nil {
		return nil, &rpcError{Code: CodeInvalidParams, Message: "Invalid arguments: params.name (the tool to call) is required"}
	}
	t, ok := toolIndex[*p.Name]
	if !ok || e < t.Since {
		return nil, &rpcError{Code: CodeInvalidParams, Message: fmt.Sprintf("Invalid arguments: unknown tool %q; tools/list names the %s tools", *p.Name, toolCount(e))}
	}
	if !store.HasScope(store.ScopeFrom(ctx), t.Scope) {
		return nil, &rpcError{Code: CodeInsufficientScope, Message: "Forbidden: " + t.Name + " needs the " + t.Scope + " scope, which this credential lacks; " +
			"authorize again asking for it, or use an API key that may publish reports"}
	}
	// Invalid arguments are a JSON-RPC error up to 2025-06-18 and a tool execution error the
	// model can correct from 2025-11-25, with the same words.
	invalid := func(msg string) (any, *rpcError) {
		if e >= era20251125 {
			return toolResult{Content: text("Invalid arguments: " + msg), IsError: true}, nil
		}
		return nil, &rpcError{Code: CodeInvalidParams, Message: "Invalid arguments: " + msg}
	}
	a := args(nil)
	if pre != nil {
		a = pre.args
	} else {
		a = args{}
		if len(p.Arguments) > 0 && string(p.Arguments) != "null" {
			if p.Arguments[0] != '{' || json.Unmarshal(p.Arguments, &a) != nil {
				return invalid("arguments must be an object")
			}
		}
	}
	if msg := validate(t.Input, a); msg != "" {
		return invalid(msg)
	}
	ctx = context.WithValue(ctx, eraKey{}, e)
	err := s.authorize(ctx, userID, t, a)
	var payload any
	if err == nil {
		payload, err = t.Handler.run(s, ctx, userID, a)
	}
	if te, ok := errors.AsType[toolError](err); ok {
		return toolResult{Content: text(te.Error()), IsError: true}, nil
	}
	if store.Classify(err) == store.ErrUnavailable {
		s.log.Warn("mcp tool: database unavailable", "tool", t.Name, "err", err)
		return nil, errUnavailable
	}
	if err != nil {
		s.log.Error("mcp tool", "tool", t.Name, "err", err)
		return nil, &rpcError{Code: CodeInternal, Message: "Internal error"}
	}
	// A kept payload's result is made of the payload and the era alone when no view data rides
	// along: it is encoded once per era and answered as it is (keptResult).
	k, keep := payload.(resultKeeper)
	keep = keep && e < eraModern && !drawn(ctx, e, t, payload)
	var kept *keptResults
	if keep {
		if kept = k.keptResults(); kept != nil {
			if r := kept.byEra[e].Load(); r != nil {
				return r, nil // a keptResult, boxed when it was kept
			}
		}
	}
	r, rerr := s.result(ctx, userID, e, t, payload)
	if kept != nil && rerr == nil && r.Meta == nil {
		if b, err := marshal(r); err == nil {
			var kr any = keptResult(b)
			kept.byEra[e].Store(kr)
			return kr, nil
		}
	}
	return r, rerr
}

// resultKeeper is a payload kept across calls (latestAnswers) that keeps its calls' encoded
// results too; keptResults is nil when the payload was not kept.
type resultKeeper interface{ keptResults() *keptResults }

// keptResults are the encoded tools/call results of one kept payload, one per legacy era: each
// a keptResult held as an interface value, so that answering it allocates nothing.
type keptResults struct {
	byEra [eraModern]atomic.Value
}

// keptResult is a tools/call result encoded as marshal encodes it. It encodes as itself, and a
// lone response carrying it is written around it (encodeResponse), not encoded again.
type keptResult []byte

func (k keptResult) MarshalJSON() ([]byte, error) { return k, nil }

// drawn says whether tool t's result for this call carries view data (result's _meta): then it
// depends on more than the payload and is never kept.
func drawn(ctx context.Context, e era, t *tool, payload any) bool {
	_, ok := payload.(viewer)
	return ok && e >= era20250618 && t.View != "" && !noViews(ctx)
}

// eraKey carries the era of a tools/call to the tools: fields a 2025-03-26 payload leaves out
// (legacier) are not read for it.
type eraKey struct{}

// typed answers whether the call's era is 2025-06-18 or later: its payload has the fields that
// came after 2025-03-26. A call without an era (a task's result) is.
func typed(ctx context.Context) bool {
	e, ok := ctx.Value(eraKey{}).(era)
	return !ok || e >= era20250618
}

// preEncoded is a payload that may carry its encoding (marshal's), kept from an earlier call.
type preEncoded interface{ encoded() []byte }

// result wraps tool t's payload as era e wants it: the text block, and from 2025-06-18 the
// structuredContent, resource links and what the tool's view draws.
func (s *Server) result(ctx context.Context, userID string, e era, t *tool, payload any) (toolResult, *rpcError) {
	var b []byte
	var err error
	if pe, ok := payload.(preEncoded); ok && pe.encoded() != nil {
		b = pe.encoded()
	} else if b, err = marshal(payload); err != nil {
		s.log.Error("mcp tool encode", "tool", t.Name, "err", err)
		return toolResult{}, &rpcError{Code: CodeInternal, Message: "Internal error"}
	}
	if l, ok := payload.(legacier); ok && e < era20250618 {
		if b, err = marshal(l.legacy()); err != nil {
			s.log.Error("mcp tool encode", "tool", t.Name, "err", err)
			return toolResult{}, &rpcError{Code: CodeInternal, Message: "Internal error"}
		}
	}
	r := toolResult{Content: text(string(b))}
	if e >= era20250618 {
		r.StructuredContent = b
		if sm, ok := payload.(summarizer); ok {
			r.Content = text(sm.summary())
		}
		if l, ok := payload.(linker); ok {
			for _, link := range l.links() {
				r.Content = append(r.Content, link)
			}
		}
		if v, ok := payload.(viewer); ok && drawn(ctx, e, t, payload) {
			data, err := v.viewData(ctx, s, userID)
			if store.Classify(err) == store.ErrUnavailable {
				return toolResult{}, errUnavailable
			}
			if err != nil {
				s.log.Error("mcp tool view", "tool", t.Name, "err", err)
				return toolResult{}, &rpcError{Code: CodeInternal, Message: "Internal error"}
			}
			r.Meta = map[string]any{metaView: data}
		}
	}
	return r, nil
}
