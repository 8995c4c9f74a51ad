package lighthouse

import (
	"cmp"
	"encoding/json"
	"math"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"

	"sitepulse/store"
)

// explain extracts what explains the run (store.Explain, issue 33) from a Lighthouse report:
// the one function PSI's responses and the local backend's reports both go through (fromLHR).
// Lighthouse 12 and 13 name some audits differently; each part falls back by audit id.
func (l *lhr) explain() *store.Explain {
	e := &store.Explain{Requests: []store.Request{}, Totals: []store.Total{}, Shifts: []store.LayoutShift{},
		MainThread: []store.Work{}, Scripts: []store.ScriptCost{}, Entities: []store.Entity{}, Failing: []store.FailingAudit{}}
	e.LCP = l.lcpPhases()
	e.LCP.Element = l.lcpElement()
	l.requests(e)
	e.Shifts = l.shifts()
	e.MainThread = l.mainThread()
	e.Scripts = l.scripts()
	e.Failing = l.failing()
	e.Applied = l.applied()
	e.LastVisualChangeMs = l.lastVisualChange()
	e.ThroughputKbps = l.throughput()
	return e
}

// Lighthouse's default simulated throughput (its constants.throttling): mobileSlow4G for
// mobile, desktopDense4G for desktop. PSI runs with them and does not say so.
const (
	mobileKbps  = 1638.4
	desktopKbps = 10240
)

// throughput is the network throughput Lighthouse simulated the lab metrics with: the
// report's own when it says, the default of its form factor when it does not (PSI, which always
// simulates); 0 when it throttled the real network (devtools) or not at all (provided), and its
// observed timings are the metrics' own.
func (l *lhr) throughput() float64 {
	c := l.ConfigSettings
	switch {
	case c.ThrottlingMethod == "devtools" || c.ThrottlingMethod == "provided":
		return 0
	case c.Throttling.ThroughputKbps > 0:
		return c.Throttling.ThroughputKbps
	case firstNonEmpty(c.FormFactor, c.EmulatedFormFactor) == "desktop":
		return desktopKbps
	}
	return mobileKbps
}

// details decodes an audit's details into v; false when the audit is missing or its details do
// not decode.
func (l *lhr) details(id string, v any) bool {
	a, ok := l.Audits[id]
	return ok && len(a.Details) > 0 && decodeDetails(a.Details, v)
}

func ms(v float64) int {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return int(math.Round(v))
}

// requests fills the request list, the totals by type and party and the entities.
func (l *lhr) requests(e *store.Explain) {
	var d struct {
		Items []struct {
			URL                string   `json:"url"`
			Entity             string   `json:"entity"`
			ResourceType       string   `json:"resourceType"`
			MimeType           string   `json:"mimeType"`
			Priority           string   `json:"priority"`
			StatusCode         float64  `json:"statusCode"`
			TransferSize       float64  `json:"transferSize"`
			ResourceSize       float64  `json:"resourceSize"`
			NetworkRequestTime *float64 `json:"networkRequestTime"`
			StartTime          *float64 `json:"startTime"` // Lighthouse 10 and earlier
			NetworkEndTime     *float64 `json:"networkEndTime"`
			EndTime            *float64 `json:"endTime"`
		} `json:"items"`
	}
	l.details("network-requests", &d)
	firstParty := map[string]bool{}
	for _, en := range l.Entities {
		firstParty[en.Name] = en.IsFirstParty
	}
	pageHost := ""
	if u, err := url.Parse(firstNonEmpty(l.FinalDisplayedURL, l.FinalURL, l.RequestedURL)); err == nil {
		pageHost = u.Hostname()
	}
	blocking := l.renderBlocking()
	lcpURL := l.lcpURL()
	entities := map[string]*store.Entity{}
	totals := map[store.Total]*store.Total{}
	var all []store.Request
	for _, it := range d.Items {
		if it.URL == "" || strings.HasPrefix(it.URL, "data:") {
			continue // an inline resource is no request
		}
		r := store.Request{URL: store.Clip(it.URL, store.MaxExplainText), Entity: it.Entity, Type: cmp.Or(it.ResourceType, "Other"),
			MIME: it.MimeType, Priority: it.Priority, Status: int(it.StatusCode),
			TransferBytes: int64(math.Round(it.TransferSize)), ResourceBytes: int64(math.Round(it.ResourceSize)),
			BlockingMs: blocking[it.URL]}
		_, r.RenderBlocking = blocking[it.URL]
		if t := cmp.Or(it.NetworkRequestTime, it.StartTime); t != nil {
			r.StartMs = ms(*t)
		}
		if t := cmp.Or(it.NetworkEndTime, it.EndTime); t != nil {
			r.EndMs = ms(*t)
		}
		if fp, known := firstParty[it.Entity]; known {
			r.ThirdParty = !fp
		} else {
			r.ThirdParty = r.Host() != pageHost
		}
		r.Entity = store.Clip(r.Entity, store.MaxExplainText)
		all = append(all, r)
		key := store.Total{Type: r.Type, ThirdParty: r.ThirdParty}
		if totals[key] == nil {
			totals[key] = &store.Total{Type: r.Type, ThirdParty: r.ThirdParty}
		}
		totals[key].Requests++
		totals[key].TransferBytes += r.TransferBytes
		name := store.Clip(cmp.Or(r.Entity, r.Host()), store.MaxExplainText)
		if entities[name] == nil {
			entities[name] = &store.Entity{Name: name, ThirdParty: r.ThirdParty}
		}
		entities[name].Requests++
		entities[name].TransferBytes += r.TransferBytes
	}
	// The LCP request: named by Lighthouse 12, else the LCP element's src, else the image whose
	// last byte arrived when the LCP's load phase ended.
	lcp := -1
	for i, r := range all {
		if lcpURL != "" && r.URL == lcpURL {
			lcp = i
			break
		}
	}
	if lcp < 0 && e.LCP.LoadDurationMs > 0 {
		end := e.LCP.Ms() - e.LCP.RenderDelayMs
		best := 0
		for i, r := range all {
			if d := abs(r.EndMs - end); r.Type == "Image" && d <= max(20, end/50) && (lcp < 0 || d < best) {
				lcp, best = i, d
			}
		}
	}
	if lcp >= 0 {
		all[lcp].LCP = true
	}
	e.Requests = keepRequests(all)
	for _, t := range totals {
		e.Totals = append(e.Totals, *t)
	}
	sort.Slice(e.Totals, func(i, j int) bool {
		a, b := e.Totals[i], e.Totals[j]
		if a.ThirdParty != b.ThirdParty {
			return !a.ThirdParty
		}
		if a.TransferBytes != b.TransferBytes {
			return a.TransferBytes > b.TransferBytes
		}
		return a.Type < b.Type
	})
	for name, ms := range l.entityMainThread() {
		if en := entities[store.Clip(name, store.MaxExplainText)]; en != nil {
			en.MainThreadMs = ms
		}
	}
	for _, en := range entities {
		e.Entities = append(e.Entities, *en)
	}
	sort.Slice(e.Entities, func(i, j int) bool {
		a, b := e.Entities[i], e.Entities[j]
		if a.ThirdParty != b.ThirdParty {
			return !a.ThirdParty
		}
		if a.TransferBytes != b.TransferBytes {
			return a.TransferBytes > b.TransferBytes
		}
		return a.Name < b.Name
	})
	if len(e.Entities) > store.MaxExplainEntities {
		e.Entities = e.Entities[:store.MaxExplainEntities]
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// keepRequests bounds the list to MaxExplainRequests: the document, the LCP request and the
// render-blocking ones first, then the largest, back in the order they started.
func keepRequests(all []store.Request) []store.Request {
	sort.SliceStable(all, func(i, j int) bool { return all[i].StartMs < all[j].StartMs })
	if len(all) <= store.MaxExplainRequests {
		return all
	}
	idx := make([]int, len(all))
	for i := range idx {
		idx[i] = i
	}
	rank := func(r store.Request) int {
		switch {
		case r.Type == "Document" || r.LCP:
			return 0
		case r.RenderBlocking:
			return 1
		}
		return 2
	}
	sort.SliceStable(idx, func(a, b int) bool {
		ra, rb := all[idx[a]], all[idx[b]]
		if rank(ra) != rank(rb) {
			return rank(ra) < rank(rb)
		}
		return ra.TransferBytes > rb.TransferBytes
	})
	idx = idx[:store.MaxExplainRequests]
	slices.Sort(idx)
	out := make([]store.Request, 0, len(idx))
	for _, i := range idx {
		out = append(out, all[i])
	}
	return out
}

// renderBlocking are the render-blocking requests by URL, with what Lighthouse estimates each
// cost the first render (wastedMs): Lighthouse 13's render-blocking-insight, Lighthouse 5 to
// 12's render-blocking-resources.
func (l *lhr) renderBlocking() map[string]int {
	var d struct {
		Items []struct {
			URL      string  `json:"url"`
			WastedMs float64 `json:"wastedMs"`
		} `json:"items"`
	}
	if !l.details("render-blocking-insight", &d) {
		l.details("render-blocking-resources", &d)
	}
	out := map[string]int{}
	for _, it := range d.Items {
		out[it.URL] = ms(it.WastedMs)
	}
	return out
}

// srcAttr is an element's src attribute; backgroundURL the url() of an inline style's
// background image.
var (
	srcAttr       = regexp.MustCompile(`\ssrc="([^"]+)"`)
	backgroundURL = regexp.MustCompile(`background(?:-image)?\s*:[^;"]*url\(\s*(?:&quot;|['"])?([^'")&]+)`)
)

// lcpURL is the URL of the LCP element's resource when the report says it: Lighthouse 12's
// prioritize-lcp-image or Lighthouse 6 to 10's preload-lcp-image names it; else the element's src attribute, or its inline style's
// background image, resolved against the page. (A background image set by a stylesheet is
// found by its timing: requests.)
func (l *lhr) lcpURL() string {
	var d struct {
		DebugData struct {
			InitiatorPath []struct {
				URL string `json:"url"`
			} `json:"initiatorPath"`
		} `json:"debugData"`
	}
	if l.details("prioritize-lcp-image", &d) && len(d.DebugData.InitiatorPath) > 0 {
		return d.DebugData.InitiatorPath[0].URL
	}
	var preload struct { // Lighthouse 6 to 10 name the LCP image in preload-lcp-image's table
		Items []struct {
			URL string `json:"url"`
		} `json:"items"`
	}
	if l.details("preload-lcp-image", &preload) && len(preload.Items) > 0 && preload.Items[0].URL != "" {
		return preload.Items[0].URL
	}
	el := l.lcpElement()
	if el == nil {
		return ""
	}
	m := srcAttr.FindStringSubmatch(el.Snippet)
	if m == nil {
		m = backgroundURL.FindStringSubmatch(el.Snippet)
	}
	if m == nil {
		return ""
	}
	base, err := url.Parse(firstNonEmpty(l.FinalDisplayedURL, l.FinalURL, l.RequestedURL))
	if err != nil {
		return ""
	}
	ref, err := url.Parse(strings.ReplaceAll(m[1], "&amp;", "&"))
	if err != nil {
		return ""
	}
	return base.ResolveReference(ref).String()
}

// lcpPhases are the LCP's phases: Lighthouse 13's lcp-breakdown-insight (observed), else
// Lighthouse 12's largest-contentful-paint-element (simulated).
func (l *lhr) lcpPhases() store.LCP {
	var out store.LCP
	var insight struct {
		Items []struct {
			Type  string `json:"type"`
			Items []struct {
				Subpart  string  `json:"subpart"`
				Duration float64 `json:"duration"`
			} `json:"items"`
		} `json:"items"`
	}
	if l.details("lcp-breakdown-insight", &insight) {
		for _, t := range insight.Items {
			if t.Type != "table" {
				continue
			}
			for _, p := range t.Items {
				switch p.Subpart {
				case "timeToFirstByte":
					out.TTFBMs, out.Phased = ms(p.Duration), true
				case "resourceLoadDelay":
					out.LoadDelayMs, out.Phased = ms(p.Duration), true
				case "resourceLoadDuration":
					out.LoadDurationMs, out.Phased = ms(p.Duration), true
				case "elementRenderDelay":
					out.RenderDelayMs, out.Phased = ms(p.Duration), true
				}
			}
		}
		if out.Phased {
			return out
		}
	}
	var legacy struct {
		Items []struct {
			Type  string `json:"type"`
			Items []struct {
				Phase  string  `json:"phase"`
				Timing float64 `json:"timing"`
			} `json:"items"`
		} `json:"items"`
	}
	if l.details("largest-contentful-paint-element", &legacy) {
		for _, t := range legacy.Items {
			for _, p := range t.Items {
				switch p.Phase {
				case "TTFB":
					out.TTFBMs, out.Phased = ms(p.Timing), true
				case "Load Delay":
					out.LoadDelayMs, out.Phased = ms(p.Timing), true
				case "Load Time":
					out.LoadDurationMs, out.Phased = ms(p.Timing), true
				case "Render Delay":
					out.RenderDelayMs, out.Phased = ms(p.Timing), true
				}
			}
		}
	}
	return out
}

// shiftTable is a table of layout shifts as cls-culprits-insight and layout-shifts write it.
type shiftTable struct {
	Type  string `json:"type"`
	Items []struct {
		Node     node     `json:"node"`
		Score    *float64 `json:"score"`
		SubItems struct {
			Items []struct {
				Extra node   `json:"extra"`
				Cause string `json:"cause"`
			} `json:"items"`
		} `json:"subItems"`
	} `json:"items"`
}

// shifts are the layout shifts and their root causes: Lighthouse 13's cls-culprits-insight,
// one table per session window; else layout-shifts (Lighthouse 12 and 13), one table of all.
func (l *lhr) shifts() []store.LayoutShift {
	var windows []shiftTable
	var insight struct {
		Items []shiftTable `json:"items"`
	}
	if l.details("cls-culprits-insight", &insight) {
		for _, t := range insight.Items {
			if t.Type == "table" {
				windows = append(windows, t)
			}
		}
	} else {
		var t shiftTable
		if l.details("layout-shifts", &t) {
			windows = append(windows, t)
		}
	}
	out := []store.LayoutShift{}
	for w, t := range windows {
		for _, it := range t.Items {
			if it.Node.Type != "node" || it.Node.Selector == "" || it.Score == nil {
				continue // the window's "Total" row
			}
			s := store.LayoutShift{Selector: store.Clip(it.Node.Selector, store.MaxExplainText), Snippet: store.Clip(it.Node.Snippet, store.MaxExplainText),
				Score: round(*it.Score, 4), Window: w}
			for _, c := range it.SubItems.Items {
				if c.Cause == "" {
					continue
				}
				s.Causes = append(s.Causes, store.ShiftCause{Cause: c.Cause, Selector: store.Clip(c.Extra.Selector, store.MaxExplainText),
					Snippet: store.Clip(c.Extra.Snippet, store.MaxExplainText)})
			}
			out = append(out, s)
			if len(out) == store.MaxExplainShifts {
				return out
			}
		}
	}
	return out
}

// mainThread is mainthread-work-breakdown: the main thread's time by category.
func (l *lhr) mainThread() []store.Work {
	var d struct {
		Items []struct {
			Group    string  `json:"group"`
			Duration float64 `json:"duration"`
		} `json:"items"`
	}
	l.details("mainthread-work-breakdown", &d)
	out := []store.Work{}
	for _, it := range d.Items {
		if it.Group != "" {
			out = append(out, store.Work{Group: it.Group, Ms: ms(it.Duration)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Ms > out[j].Ms })
	return out
}

// scripts are bootup-time's costliest scripts.
func (l *lhr) scripts() []store.ScriptCost {
	var d struct {
		Items []struct {
			URL                string  `json:"url"`
			Total              float64 `json:"total"`
			Scripting          float64 `json:"scripting"`
			ScriptParseCompile float64 `json:"scriptParseCompile"`
		} `json:"items"`
	}
	l.details("bootup-time", &d)
	out := []store.ScriptCost{}
	for _, it := range d.Items {
		if it.URL != "" {
			out = append(out, store.ScriptCost{URL: store.Clip(it.URL, store.MaxExplainText), TotalMs: ms(it.Total),
				ScriptingMs: ms(it.Scripting), ParseMs: ms(it.ScriptParseCompile)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].TotalMs > out[j].TotalMs })
	if len(out) > store.MaxExplainScripts {
		out = out[:store.MaxExplainScripts]
	}
	return out
}

// entityMainThread is each entity's main-thread time: Lighthouse 13's third-parties-insight, else
// Lighthouse 12's third-party-summary (both carry mainThreadTime).
func (l *lhr) entityMainThread() map[string]int {
	var d struct {
		Items []struct {
			Entity         string  `json:"entity"`
			MainThreadTime float64 `json:"mainThreadTime"`
		} `json:"items"`
	}
	if !l.details("third-parties-insight", &d) {
		l.details("third-party-summary", &d)
	}
	out := map[string]int{}
	for _, it := range d.Items {
		out[it.Entity] = ms(it.MainThreadTime)
	}
	return out
}

// passMark is the score from which Lighthouse counts an audit as passed (its report's
// PASS_THRESHOLD).
const passMark = 0.9

// failing lists the audits and insights of every category that scored below the pass mark,
// once each, in category order. Metrics (group "metrics") and hidden audits are not audits a
// person acts on; audits without a verdict (not applicable, manual, informative) never fail.
func (l *lhr) failing() []store.FailingAudit {
	out := []store.FailingAudit{}
	seen := map[string]int{}
	for _, cat := range []string{"performance", "accessibility", "best-practices", "seo"} {
		for _, ref := range l.Categories[cat].AuditRefs {
			a, ok := l.Audits[ref.ID]
			if !ok || ref.Group == "metrics" || ref.Group == "hidden" || a.Score == nil || *a.Score >= passMark {
				continue
			}
			switch a.ScoreDisplayMode {
			case "notApplicable", "manual", "informative", "error":
				continue
			}
			if i, dup := seen[ref.ID]; dup { // an audit of two categories (image-alt: accessibility, seo)
				out[i].Categories = append(out[i].Categories, cat)
				continue
			}
			seen[ref.ID] = len(out)
			out = append(out, store.FailingAudit{ID: ref.ID, Title: store.Clip(a.Title, store.MaxExplainText),
				Score: int(math.Round(*a.Score * 100)), Categories: []string{cat}, Items: itemLabels(a.Details)})
		}
	}
	return out
}

// appliedCategories are the categories whose applied audits Explain keeps: the performance
// score is made of metrics, not of its audits.
var appliedCategories = []string{"accessibility", "best-practices", "seo"}

// applied lists the weighted audits of appliedCategories that applied to the page: those with
// a score, binary or numeric.
func (l *lhr) applied() []store.AppliedAudit {
	out := []store.AppliedAudit{}
	for _, cat := range appliedCategories {
		for _, ref := range l.Categories[cat].AuditRefs {
			a, ok := l.Audits[ref.ID]
			if !ok || ref.Weight <= 0 || a.Score == nil || (a.ScoreDisplayMode != "binary" && a.ScoreDisplayMode != "numeric" && a.ScoreDisplayMode != "metricSavings") {
				continue
			}
			out = append(out, store.AppliedAudit{ID: ref.ID, Category: cat, Weight: ref.Weight})
		}
	}
	return out
}

// lastVisualChange is the metrics audit's observedLastVisualChange, ms.
func (l *lhr) lastVisualChange() int {
	var d struct {
		Items []struct {
			LastVisualChange float64 `json:"observedLastVisualChange"`
		} `json:"items"`
	}
	if !l.details("metrics", &d) || len(d.Items) == 0 {
		return 0
	}
	return ms(d.Items[0].LastVisualChange)
}

// itemLabels names what an audit's details point at first: up to store.MaxFailingItems URLs or
// selectors, from its table or from the first table of a list. It decodes only the items it
// reads: a failing audit's table may hold hundreds.
func itemLabels(raw json.RawMessage) []string {
	var d typedItems
	if !decodeDetails(raw, &d) || len(d.Items) == 0 || d.Items[0] != '[' {
		return nil
	}
	items := d.Items
	if d.Type == "list" { // the first table of the list
		items = nil
		failed := false
		elements(d.Items, func(e []byte) bool {
			var t typedItems
			if !decodeDetails(e, &t) {
				failed = true
				return false
			}
			if t.Type == "table" && len(t.Items) > 0 && t.Items[0] == '[' {
				items = t.Items
				return false
			}
			return true
		})
		if items == nil || failed {
			return nil
		}
	}
	var out []string
	elements(items, func(e []byte) bool {
		var it labelled
		if !decodeDetails(e, &it) {
			return false
		}
		if label := it.label(); label != "" && !slices.Contains(out, label) {
			out = append(out, store.Clip(label, store.MaxExplainText))
		}
		return len(out) < store.MaxFailingItems
	})
	return out
}

// typedItems is the type and the items, undecoded, of an audit's details or of a table of a list.
type typedItems struct {
	Type  string          `json:"type"`
	Items json.RawMessage `json:"items"`
}

// labelled is what itemLabels reads of an item.
type labelled struct {
	URL            any  `json:"url"`
	Node           node `json:"node"`
	SourceLocation struct {
		URL string `json:"url"`
	} `json:"sourceLocation"`
}

// label is what names a failing item: its URL when it is a string, else its element's selector,
// else its source's URL.
func (it labelled) label() string {
	u, _ := it.URL.(string)
	return firstNonEmpty(u, it.Node.Selector, it.SourceLocation.URL)
}
