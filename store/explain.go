package store

import (
	"net/url"
	"strings"
)

// Explain is what explains one Lighthouse run of a page (DESIGN §14, issue 33): the requests the
// page made, its bytes by type and party, the LCP element and the phases of its time, the
// layout shifts and their culprits, the main thread's time, the costliest scripts, and the
// audits and insights that failed. Every Lighthouse result carries it, from PSI and the local
// backend alike (scanner/lighthouse extracts it); the stores keep it beside the page result,
// written in the same statement, in the compact form EncodeExplain makes, and prune it with the
// page details. analysis.Compare reads two of them to say what changed between two runs.
//
// Times are whole milliseconds since the navigation started, as Lighthouse observed them
// (network-requests, lcp-breakdown-insight); sizes are bytes.
type Explain struct {
	// Requests are the page's requests in the order they started, at most MaxExplainRequests:
	// a page with more keeps its document, its LCP request, its render-blocking requests and
	// then its largest ones.
	Requests []Request `json:"requests"`
	// Totals are the requests and transfer bytes by resource type and party, over every request
	// the page made (also those Requests left out).
	Totals []Total `json:"totals"`
	// LCP is the largest contentful paint: its element and the phases of its time.
	LCP LCP `json:"lcp"`
	// Shifts are the layout shifts Lighthouse attributed CLS to, largest first within each
	// session window (cls-culprits-insight, else layout-shifts).
	Shifts []LayoutShift `json:"shifts"`
	// MainThread is the main thread's time by category (mainthread-work-breakdown), largest
	// first: scriptEvaluation, styleLayout, ...
	MainThread []Work `json:"mainThread"`
	// Scripts are the scripts that cost the main thread most (bootup-time), at most
	// MaxExplainScripts, costliest first.
	Scripts []ScriptCost `json:"scripts"`
	// Entities are the parties the requests came from (Lighthouse's entities: "widgetly.test",
	// "Hotjar", the site itself), with what each cost: the first party first, then the largest,
	// at most MaxExplainEntities.
	Entities []Entity `json:"entities"`
	// Failing are the audits and insights that did not pass (score below 0.9, Lighthouse's own
	// pass mark), of every category, in category order; metrics are not audits and are left
	// out.
	Failing []FailingAudit `json:"failing"`
	// Applied are the weighted audits of the accessibility, best-practices and SEO categories
	// that applied to the page (passed or failed; not those Lighthouse found not applicable),
	// in category order: a category score moves when they change, and a cause names them.
	Applied []AppliedAudit `json:"applied,omitempty"`
	// LastVisualChangeMs is when the page last changed on screen (Lighthouse's
	// observedLastVisualChange), ms after the navigation started; 0 when not reported. Content
	// inserted late shifts the page about then.
	LastVisualChangeMs int `json:"lastVisualChangeMs,omitempty"`
	// ThroughputKbps is the network throughput Lighthouse simulated the lab metrics with (PSI
	// and Lighthouse's default: 1638.4 on mobile, 10240 on desktop); 0 when the metrics are as
	// observed. A request's bytes cost the metrics bytes*8/ThroughputKbps ms, however fast the
	// observed run fetched them.
	ThroughputKbps float64 `json:"throughputKbps,omitempty"`
}

// BytesMs is what n bytes cost the lab metrics of the run in time: their transfer at the
// simulated throughput, 0 when the run was not simulated.
func (e *Explain) BytesMs(n int64) int {
	if e == nil || e.ThroughputKbps <= 0 || n <= 0 {
		return 0
	}
	return int(float64(n) * 8 / e.ThroughputKbps)
}

// AppliedAudit is an audit that counted in a category's score, with its weight there.
type AppliedAudit struct {
	ID       string  `json:"id"`
	Category string  `json:"category"` // Lighthouse's id: accessibility, best-practices, seo
	Weight   float64 `json:"weight"`
}

// Request is one request of a run (Lighthouse's network-requests).
type Request struct {
	URL string `json:"url"`
	// Entity is the party Lighthouse grouped the request under (its entity name).
	Entity     string `json:"entity,omitempty"`
	ThirdParty bool   `json:"thirdParty,omitempty"`
	// Type is Lighthouse's resource type: Document, Stylesheet, Script, Image, Font, Fetch,
	// XHR, Media, Other, ...
	Type     string `json:"type"`
	MIME     string `json:"mime,omitempty"`
	Priority string `json:"priority,omitempty"` // VeryHigh, High, Medium, Low, VeryLow
	Status   int    `json:"status"`
	// TransferBytes went over the network (headers included); ResourceBytes is the body
	// decoded.
	TransferBytes int64 `json:"transferBytes"`
	ResourceBytes int64 `json:"resourceBytes"`
	StartMs       int   `json:"startMs"` // sent
	EndMs         int   `json:"endMs"`   // its last byte arrived
	// RenderBlocking is true when Lighthouse found it blocked the first render; BlockingMs is
	// Lighthouse's estimate of what it cost the first render (the render-blocking insight's
	// wastedMs), 0 when the report has none.
	RenderBlocking bool `json:"renderBlocking,omitempty"`
	BlockingMs     int  `json:"blockingMs,omitempty"`
	// LCP is true for the request of the LCP element's resource (its image).
	LCP bool `json:"lcp,omitempty"`
}

// Host is the request's host name, "" when its URL has none.
func (r Request) Host() string {
	u, err := url.Parse(r.URL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// DurationMs is how long the request took, from sent to its last byte.
func (r Request) DurationMs() int { return max(r.EndMs-r.StartMs, 0) }

// Total is the requests and transfer bytes of one resource type and party.
type Total struct {
	Type          string `json:"type"`
	ThirdParty    bool   `json:"thirdParty,omitempty"`
	Requests      int    `json:"requests"`
	TransferBytes int64  `json:"transferBytes"`
}

// LCP is the largest contentful paint of a run: its element and the four phases of its time
// (web.dev's "Optimize LCP"): the document's first byte, the delay before the LCP resource was
// requested, its load, and the delay until it was rendered. A text LCP has no resource: its load
// delay and duration are 0. Phases are as Lighthouse 13's lcp-breakdown-insight observed them
// (Lighthouse 12: largest-contentful-paint-element's simulated ones).
type LCP struct {
	Element        *Element `json:"element,omitempty"`
	TTFBMs         int      `json:"ttfbMs"`
	LoadDelayMs    int      `json:"loadDelayMs"`
	LoadDurationMs int      `json:"loadDurationMs"`
	RenderDelayMs  int      `json:"renderDelayMs"`
	// Phased is true when Lighthouse broke the LCP into phases at all.
	Phased bool `json:"phased"`
}

// The LCP phases by the names Compare and the surfaces use.
const (
	PhaseTTFB         = "ttfb"
	PhaseLoadDelay    = "loadDelay"
	PhaseLoadDuration = "loadDuration"
	PhaseRenderDelay  = "renderDelay"
)

// LCPPhases are the phase names in the order of time.
var LCPPhases = []string{PhaseTTFB, PhaseLoadDelay, PhaseLoadDuration, PhaseRenderDelay}

// Ms is when the LCP happened, ms after the navigation started: the sum of its phases (the
// moment a filmstrip marks); 0 when Lighthouse gave no phases.
func (l LCP) Ms() int { return l.TTFBMs + l.LoadDelayMs + l.LoadDurationMs + l.RenderDelayMs }

// Phase is the duration of one phase by name (PhaseTTFB, ...); 0 for an unknown name.
func (l LCP) Phase(name string) int {
	switch name {
	case PhaseTTFB:
		return l.TTFBMs
	case PhaseLoadDelay:
		return l.LoadDelayMs
	case PhaseLoadDuration:
		return l.LoadDurationMs
	case PhaseRenderDelay:
		return l.RenderDelayMs
	}
	return 0
}

// LayoutShift is one layout shift Lighthouse counted in CLS: the element that moved, its share of
// CLS, the session window it fell in and the root causes Lighthouse named ("Unsized image
// element", "Web font", "Injected iframe", ...).
type LayoutShift struct {
	Selector string  `json:"selector"`
	Snippet  string  `json:"snippet,omitempty"`
	Score    float64 `json:"score"`
	// Window numbers the session windows (clusters) of shifts from 0, in time order; shifts of
	// one window happened within a second of each other.
	Window int          `json:"window"`
	Causes []ShiftCause `json:"causes,omitempty"`
}

// ShiftCause is a root cause of a layout shift and the element it names.
type ShiftCause struct {
	Cause    string `json:"cause"`
	Selector string `json:"selector,omitempty"`
	Snippet  string `json:"snippet,omitempty"`
}

// Work is the main thread's time in one category (Lighthouse's group id: scriptEvaluation,
// styleLayout, paintCompositeRender, parseHTML, scriptParseCompile, garbageCollection, other).
type Work struct {
	Group string `json:"group"`
	Ms    int    `json:"ms"`
}

// ScriptCost is the main thread's time one script took (bootup-time): in all, evaluating it and
// parsing and compiling it. Its URL is "Unattributable" for time Lighthouse could not assign.
type ScriptCost struct {
	URL         string `json:"url"`
	TotalMs     int    `json:"totalMs"`
	ScriptingMs int    `json:"scriptingMs"`
	ParseMs     int    `json:"parseMs"`
}

// Entity is one party of the page's requests, with its requests, bytes and the main thread's
// time its scripts took (third-parties-insight, Lighthouse 12's third-party-summary).
type Entity struct {
	Name          string `json:"name"`
	ThirdParty    bool   `json:"thirdParty,omitempty"`
	Requests      int    `json:"requests"`
	TransferBytes int64  `json:"transferBytes"`
	MainThreadMs  int    `json:"mainThreadMs"`
}

// FailingAudit is an audit or insight that did not pass, with its score (0-100), the categories
// it counts in (Lighthouse's ids: performance, accessibility, best-practices, seo) and what it
// points at first: up to MaxFailingItems URLs or selectors of its details.
type FailingAudit struct {
	ID         string   `json:"id"`
	Title      string   `json:"title"`
	Score      int      `json:"score"`
	Categories []string `json:"categories"`
	Items      []string `json:"items,omitempty"`
}

// Insight answers whether the audit is one of Lighthouse 13's insights.
func (a FailingAudit) Insight() bool { return strings.HasSuffix(a.ID, "-insight") }

// Bounds of an Explain, so a page with thousands of requests stays small to keep.
const (
	MaxExplainRequests = 300
	MaxExplainEntities = 50
	MaxExplainScripts  = 10
	MaxExplainShifts   = 10
	MaxFailingItems    = 3
	// MaxExplainText bounds a URL, snippet or item kept, in bytes.
	MaxExplainText = 300
)

// Document is the run's main document request (the first Document of the list); ok is false
// when the list has none.
func (e *Explain) Document() (Request, bool) {
	if e == nil {
		return Request{}, false
	}
	for _, r := range e.Requests {
		if r.Type == "Document" {
			return r, true
		}
	}
	return Request{}, false
}

// LCPRequest is the request of the LCP element's resource; ok is false for a text LCP or when
// Lighthouse did not say.
func (e *Explain) LCPRequest() (Request, bool) {
	if e == nil {
		return Request{}, false
	}
	for _, r := range e.Requests {
		if r.LCP {
			return r, true
		}
	}
	return Request{}, false
}

// Failed answers whether the audit or insight of that id failed in the run.
func (e *Explain) Failed(id string) (FailingAudit, bool) {
	if e == nil {
		return FailingAudit{}, false
	}
	for _, a := range e.Failing {
		if a.ID == id {
			return a, true
		}
	}
	return FailingAudit{}, false
}

// Clip cuts s to at most n bytes on a rune boundary, marking the cut with "…".
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("…")
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
