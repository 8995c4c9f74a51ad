package analysis

import (
	"cmp"
	"fmt"
	"html"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"sitepulse/store"
)

// Cause is why one metric got worse between two runs: the one or two changes (Reasons) that
// explain most of it, ranked, and the sentence every surface shows, of the shape "LCP +1.2 s,
// mostly resource load duration: the LCP image /static/img/hero.jpg arrived 1.1 s later; new
// third party widgetly.test: 3 requests, 138 KB, 1.0 s of main-thread work". With no change beyond noise
// it names none and says so: "... : no request, size or timing changed beyond run-to-run noise:
// likely lab variance".
type Cause struct {
	Metric string  `json:"metric"`
	Delta  float64 `json:"delta"` // After - Before, in the metric's unit
	// Phase is, for LCP, the phase that grew most (store.PhaseTTFB, ...); "" when none grew
	// beyond noise or the runs have no phases.
	Phase    string   `json:"phase,omitempty"`
	Reasons  []Reason `json:"reasons"`
	Sentence string   `json:"sentence"`
	// Confidence is how sure the cause is, from the share of the metric's change its reasons
	// account for (confidenceOf): ConfidenceHigh, ConfidenceMedium or ConfidenceLow; "" when it
	// names no change.
	Confidence string `json:"confidence,omitempty"`
}

// Confidence levels of a cause.
const (
	ConfidenceHigh   = "high"
	ConfidenceMedium = "medium"
	ConfidenceLow    = "low"
)

// confidenceOf is how sure a cause is: high when its reasons account for at least 60% of the
// metric's change, medium from 30%, low below, and low when it names only the largest change
// because nothing explains the metric. A category score's cause (audits turned failing)
// is high: the score is those audits. The performance score's is its heaviest metric's.
func confidenceOf(cause Cause, metricCauses []Cause) string {
	if len(cause.Reasons) == 0 {
		return ""
	}
	if cause.Reasons[0].Kind == ReasonLargestChange { // only what changed most, no cause
		return ConfidenceLow
	}
	switch cause.Metric {
	case "accessibility", "bestPractices", "seo":
		return ConfidenceHigh
	case "performance":
		for _, x := range metricCauses {
			if x.Confidence != "" && slices.ContainsFunc(x.Reasons, func(r Reason) bool { return r.Text == cause.Reasons[0].Text }) {
				return x.Confidence
			}
		}
		return ConfidenceLow
	}
	explained := 0.0
	for _, r := range cause.Reasons {
		explained += r.Weight
	}
	switch share := explained / math.Abs(cause.Delta); {
	case cause.Delta == 0:
		return ConfidenceLow
	case share >= 0.6:
		return ConfidenceHigh
	case share >= 0.3:
		return ConfidenceMedium
	}
	return ConfidenceLow
}

// Reason is one change named as (part of) a cause, with how much of the metric's change it
// explains (Weight, in the metric's unit: ms, CLS) and the words for it.
type Reason struct {
	Kind   string  `json:"kind"`
	Weight float64 `json:"weight"`
	Text   string  `json:"text"`
	// What it names: a request's URL, a third party, an element.
	URL      string `json:"url,omitempty"`
	Party    string `json:"party,omitempty"`
	Selector string `json:"selector,omitempty"`
	phase    string // the LCP phase it explains, "" when none in particular
}

// Reason kinds.
const (
	ReasonDocumentSlower       = "documentSlower"       // the page's document took longer to arrive
	ReasonLCPRequestLater      = "lcpRequestLater"      // the LCP element's resource arrived later
	ReasonLCPRequestDelayed    = "lcpRequestDelayed"    // the LCP element's resource was requested later
	ReasonLCPElementChanged    = "lcpElementChanged"    // another element is the LCP
	ReasonThirdPartyAdded      = "thirdPartyAdded"      // a new third party
	ReasonRenderBlockingAdded  = "renderBlockingAdded"  // a request newly blocks the first render
	ReasonRenderBlockingSlower = "renderBlockingSlower" // a render-blocking request took longer
	ReasonScriptCost           = "scriptCost"           // a script takes more main-thread time
	ReasonUnsizedImage         = "unsizedImage"         // an image without width and height shifted content
	ReasonLateContent          = "lateContent"          // content inserted later shifted the page
	ReasonLayoutShift          = "layoutShift"          // a shift with another root cause (a web font, an iframe)
	ReasonAuditFailing         = "auditFailing"         // an audit of the category turned failing
	ReasonAuditsApply          = "auditsApply"          // the audits that apply to the category changed
	ReasonLCPResourceReplaced  = "lcpResourceReplaced"  // the LCP element's resource is another file
	ReasonLCPResourceNew       = "lcpResourceNew"       // the LCP now waits for a resource it did not
	ReasonRequestGrown         = "requestGrown"         // a request the metric waits for grew
	ReasonLargestChange        = "largestChange"        // the largest change, when none explains the metric
)

// NoChangeSentence is said when a metric got worse but nothing measurable changed, or when
// nothing changed at all.
const NoChangeSentence = "no request, size or timing changed beyond run-to-run noise: likely lab variance"

// NotExplainedSentence is said of a metric that got worse when a run was stored without what
// explains it.
const NotExplainedSentence = "what explains the earlier run was not kept, so no cause can be named"

// NoRegressionSentence is a comparison's summary when something changed but no metric got
// worse beyond noise.
const NoRegressionSentence = "no metric got worse beyond run-to-run noise"

// MaxReasons is how many changes a cause names.
const MaxReasons = 2

// phaseWords name the LCP phases in a sentence.
var phaseWords = map[string]string{store.PhaseTTFB: "time to first byte", store.PhaseLoadDelay: "resource load delay",
	store.PhaseLoadDuration: "resource load duration", store.PhaseRenderDelay: "element render delay"}

// causes names, for each metric of c that got worse, the changes that explain most of it.
func causes(c Comparison, before, after store.PageResult) []Cause {
	out := []Cause{}
	var perf *MetricChange
	for i, m := range c.Metrics {
		if !m.Regressed {
			continue
		}
		if m.Metric == "performance" {
			perf = &c.Metrics[i]
			continue
		}
		cause := Cause{Metric: m.Metric, Delta: m.Delta, Reasons: []Reason{}}
		if c.Explained {
			var pool []Reason
			pool, cause.Phase = candidates(c, m.Metric, before, after)
			cause.Reasons = rank(pool, cause.Phase)
			if len(cause.Reasons) == 0 && c.changedFor(m.Metric) { // never "lab variance" while something changed
				cause.Reasons = []Reason{largestChange(c, m.Metric)}
			}
		}
		cause.Sentence = sentence(c, cause)
		cause.Confidence = confidenceOf(cause, nil)
		out = append(out, cause)
	}
	if perf != nil { // the score is made of the metrics: their causes, the heaviest metric first
		cause := Cause{Metric: "performance", Delta: perf.Delta, Reasons: []Reason{}}
		byImpact := slices.Clone(out)
		slices.SortStableFunc(byImpact, func(x, y Cause) int {
			return cmp.Compare(scoreImpact(y, after.Strategy), scoreImpact(x, after.Strategy))
		})
		for _, x := range byImpact {
			if !slices.Contains(performanceMetrics, x.Metric) {
				continue
			}
			for _, r := range x.Reasons[:min(1, len(x.Reasons))] {
				if !slices.ContainsFunc(cause.Reasons, func(o Reason) bool { return o.Text == r.Text }) && len(cause.Reasons) < MaxReasons {
					cause.Reasons = append(cause.Reasons, r)
				}
			}
		}
		cause.Sentence = sentence(c, cause)
		cause.Confidence = confidenceOf(cause, out)
		out = append([]Cause{cause}, out...)
	}
	return out
}

// scoreControl are Lighthouse 10-13's weights of the performance metrics and the medians of
// their scoring curves (mobile, desktop): a metric's change weighs in the score about as its
// weight times the change over its median.
var scoreControl = map[string]struct{ weight, mobile, desktop float64 }{
	"fcp": {0.10, 3000, 1600}, "speedIndex": {0.10, 5800, 2300}, "lcp": {0.25, 4000, 2400},
	"tbt": {0.30, 600, 350}, "cls": {0.25, 0.25, 0.25},
}

// scoreImpact is how much a metric's change weighs in the performance score (scoreControl).
func scoreImpact(x Cause, strategy store.Strategy) float64 {
	ctl, ok := scoreControl[x.Metric]
	if !ok {
		return 0
	}
	median := ctl.mobile
	if strategy == "desktop" {
		median = ctl.desktop
	}
	return ctl.weight * x.Delta / median
}

// rank orders a metric's candidate reasons, the largest share of the change first, and keeps
// MaxReasons; for LCP, the first is the best one explaining the phase that grew most.
func rank(pool []Reason, phase string) []Reason {
	pool = slices.DeleteFunc(pool, func(r Reason) bool { return r.Weight <= 0 })
	slices.SortStableFunc(pool, func(a, b Reason) int { return cmp.Compare(b.Weight, a.Weight) })
	if phase != "" {
		if i := slices.IndexFunc(pool, func(r Reason) bool { return r.phase == phase }); i > 0 {
			r := pool[i]
			pool = append([]Reason{r}, slices.Delete(pool, i, i+1)...)
		}
	}
	out := []Reason{}
	for _, r := range pool {
		if !slices.ContainsFunc(out, func(o Reason) bool { return o.Text == r.Text }) {
			out = append(out, r)
		}
		if len(out) == MaxReasons {
			break
		}
	}
	return out
}

// candidates are the changes that may explain a metric getting worse, each weighed, and for LCP
// the phase that grew most.
func candidates(c Comparison, metric string, before, after store.PageResult) (pool []Reason, phase string) {
	switch metric {
	case "ttfb":
		pool = documentSlower(c, before, after)
	case "fcp":
		pool = slices.Concat(documentSlower(c, before, after), renderBlocking(c), grownRequests(c))
	case "tbt":
		pool = slices.Concat(thirdParties(c, true, -1), scriptCosts(c))
	case "cls":
		pool = layoutShifts(c)
	case "lcp":
		best := 0
		for _, p := range c.LCP.Phases {
			if p.Delta > NoiseMs && p.Delta > best {
				best, phase = p.Delta, p.Phase
			}
		}
		moment := -1 // when the LCP happened in After, when its phases say
		if after.Explain.LCP.Phased {
			moment = after.Explain.LCP.Ms()
		}
		pool = slices.Concat(documentSlower(c, before, after), lcpRequest(c), renderBlocking(c), grownRequests(c), thirdParties(c, false, moment), scriptCosts(c))
	case "speedIndex":
		pool = slices.Concat(documentSlower(c, before, after), renderBlocking(c), grownRequests(c), lcpRequest(c), thirdParties(c, false, -1), scriptCosts(c))
	case "accessibility", "bestPractices", "seo":
		pool = slices.Concat(turnedFailing(c, lighthouseCategory[metric]), auditsApply(before.Explain, after.Explain, lighthouseCategory[metric]))
	}
	return pool, phase
}

// turnedFailing: the audits of a category that passed before and fail now, the worst first,
// each with what it points at first.
func turnedFailing(c Comparison, category string) []Reason {
	var out []Reason
	for _, a := range c.TurnedFailing {
		if !slices.Contains(a.Categories, category) {
			continue
		}
		text := a.ID + " now fails (" + strings.TrimSuffix(strings.ReplaceAll(a.Title, "`", ""), ".")
		if len(a.Items) > 0 {
			text += ": " + c.label(a.Items[0])
		}
		out = append(out, Reason{Kind: ReasonAuditFailing, Weight: float64(101 - a.Score), Text: text + ")"})
	}
	return out
}

// auditsApply: passing audits of a category that no longer apply (Lighthouse found what they
// check gone: the ARIA attributes of a removed widget), so the audits that still fail weigh
// more in its score; weighed by the points that cost, as Lighthouse scores a category (the
// weighted share of the audits that apply and pass).
func auditsApply(b, a *store.Explain, category string) []Reason {
	now := map[string]bool{}
	for _, x := range a.Applied {
		if x.Category == category {
			now[x.ID] = true
		}
	}
	if len(now) == 0 {
		return nil // not kept for After (a result stored before they were)
	}
	var total, passing, gone float64
	var ids []string
	for _, x := range b.Applied {
		if x.Category != category {
			continue
		}
		f, failed := b.Failed(x.ID)
		failed = failed && slices.Contains(f.Categories, category)
		total += x.Weight
		if !failed {
			passing += x.Weight
		}
		if !now[x.ID] && !failed {
			ids = append(ids, x.ID)
			gone += x.Weight
		}
	}
	if len(ids) == 0 || total-gone <= 0 {
		return nil
	}
	points := 100 * (passing/total - (passing-gone)/(total-gone))
	verb := " no longer apply ("
	if len(ids) == 1 {
		verb = " no longer applies ("
	}
	text := plural(len(ids), "passing audit") + verb + strings.Join(ids, ", ") + "), so those that fail weigh more"
	return []Reason{{Kind: ReasonAuditsApply, Weight: round(points, 1), Text: text}}
}

// documentSlower: the page's document took longer, with the server response time of both runs.
func documentSlower(c Comparison, before, after store.PageResult) []Reason {
	for _, r := range c.Slower {
		if r.Type != "Document" || r.Before == nil || r.After == nil {
			continue
		}
		text := "the document " + shortURL(r) + " took " + formatMs(float64(r.DurationDelta)) + " longer to arrive"
		if b, a := before.CoreWebVitals.TTFB, after.CoreWebVitals.TTFB; b != nil && a != nil {
			text += " (server response " + formatMs(*b) + " → " + formatMs(*a) + ")"
		}
		return []Reason{{Kind: ReasonDocumentSlower, Weight: float64(r.DurationDelta), Text: text, URL: r.URL, phase: store.PhaseTTFB}}
	}
	return nil
}

// lcpRequest: the LCP element's resource is another file (matched through the element:
// compareLCP), arrived later, was requested later, or is new; or the LCP is another element.
// The resource is weighed by how much later its last byte arrived, and named with how much
// heavier it is.
func lcpRequest(c Comparison) []Reason {
	var out []Reason
	r := c.LCP.Request
	switch {
	case r != nil && r.Before != nil && r.After != nil && r.MatchedBy == MatchedLCP:
		text := "the LCP " + typeWord(r.Type) + " is now " + shortURL(*r) + " (was " + shortURL(change(nil, r.Before)) + ")"
		if grew(r.Before.TransferBytes, r.After.TransferBytes) {
			text += ", " + formatKB(r.BytesDelta) + " heavier"
		}
		if later(r.EndDelta, r.Before.DurationMs()) {
			text += ", arriving " + formatMs(float64(r.EndDelta)) + " later"
		}
		out = append(out, Reason{Kind: ReasonLCPResourceReplaced, Weight: float64(max(r.EndDelta, c.bytesMs(r.BytesDelta), 0)), Text: text, URL: r.URL, phase: store.PhaseLoadDuration})
	case r != nil && r.Before != nil && r.After != nil:
		what := "the LCP " + typeWord(r.Type) + " " + shortURL(*r)
		if r.MatchedBy == MatchedName {
			what += " (was " + shortURL(change(nil, r.Before)) + ")"
		}
		// It arrived later because it took longer or grew; merely starting later with the rest
		// of the page (a busy lab machine parses slower) is no change of its own.
		late := later(r.EndDelta, r.Before.DurationMs()) && later(r.DurationDelta, r.Before.DurationMs())
		heavier := grew(r.Before.TransferBytes, r.After.TransferBytes)
		switch {
		case late:
			text := what + " arrived " + formatMs(float64(r.EndDelta)) + " later"
			if heavier {
				text += ", " + formatKB(r.BytesDelta) + " larger"
			}
			out = append(out, Reason{Kind: ReasonLCPRequestLater, Weight: float64(max(r.EndDelta, c.bytesMs(r.BytesDelta))), Text: text, URL: r.URL, phase: store.PhaseLoadDuration})
		case heavier:
			out = append(out, Reason{Kind: ReasonLCPRequestLater, Weight: float64(c.bytesMs(r.BytesDelta)), Text: what + " is " + formatKB(r.BytesDelta) + " larger",
				URL: r.URL, phase: store.PhaseLoadDuration})
		}
		if d := r.After.StartMs - r.Before.StartMs; later(d, r.Before.DurationMs()) && c.pageChanged() {
			out = append(out, Reason{Kind: ReasonLCPRequestDelayed, Weight: float64(d), Text: what + " was requested " + formatMs(float64(d)) + " later",
				URL: r.URL, phase: store.PhaseLoadDelay})
		}
	case r != nil && r.After != nil:
		text := "the LCP now waits for the " + typeWord(r.Type) + " " + shortURL(*r) + " (" + formatKB(r.After.TransferBytes) + ", arriving at " + formatMs(float64(r.After.EndMs)) + ")"
		out = append(out, Reason{Kind: ReasonLCPResourceNew, Weight: float64(max(r.After.DurationMs(), c.bytesMs(r.After.TransferBytes))), Text: text, URL: r.URL, phase: store.PhaseLoadDuration})
	}
	if c.LCP.ElementChanged && c.LCP.ElementAfter != nil {
		text := "the LCP element is now " + c.LCP.ElementAfter.Selector
		if c.LCP.ElementBefore != nil {
			text += " (was " + c.LCP.ElementBefore.Selector + ")"
		}
		weight := 0.0
		if r != nil && r.After != nil {
			weight = float64(r.After.DurationMs())
		}
		out = append(out, Reason{Kind: ReasonLCPElementChanged, Weight: max(weight, NoiseMs+1), Text: text, Selector: c.LCP.ElementAfter.Selector})
	}
	return out
}

// grownRequests: requests the first render or the LCP waits for (render-blocking ones, the
// LCP resource) that grew beyond noise, a renamed one with its old name, weighed by how much
// later they arrived.
func grownRequests(c Comparison) []Reason {
	var out []Reason
	for _, r := range c.Grown {
		if !r.After.RenderBlocking || r.Before.RenderBlocking != r.After.RenderBlocking {
			continue // the LCP resource is lcpRequest's; a newly blocking one renderBlocking's
		}
		text := "the render-blocking " + typeWord(r.Type) + " " + shortURL(r)
		if r.MatchedBy == MatchedName {
			text += " (was " + shortURL(change(nil, r.Before)) + ")"
		}
		text += " grew by " + formatKB(r.BytesDelta)
		if later(r.EndDelta, r.Before.DurationMs()) {
			text += ", arriving " + formatMs(float64(r.EndDelta)) + " later"
		}
		out = append(out, Reason{Kind: ReasonRequestGrown, Weight: float64(max(r.EndDelta, c.bytesMs(r.BytesDelta), 1)), Text: text, URL: r.URL, Party: party(r), phase: store.PhaseRenderDelay})
	}
	return out
}

// renderBlocking: requests that newly block the first render, by how long they took, and
// render-blocking ones that took longer.
func renderBlocking(c Comparison) []Reason {
	var out []Reason
	for _, r := range c.RenderBlockingAdded {
		text := "new render-blocking " + typeWord(r.Type) + " " + shortURL(r)
		if r.ThirdParty && r.Entity != "" {
			text += " (third party " + r.Entity + ")"
		}
		out = append(out, Reason{Kind: ReasonRenderBlockingAdded, Weight: float64(blockingMs(c, r)), Text: text, URL: r.URL, Party: party(r),
			phase: store.PhaseRenderDelay})
	}
	for _, r := range c.Slower {
		if r.Type != "Document" && r.After.RenderBlocking {
			out = append(out, Reason{Kind: ReasonRenderBlockingSlower, Weight: float64(r.DurationDelta),
				Text: "the render-blocking " + typeWord(r.Type) + " " + shortURL(r) + " took " + formatMs(float64(r.DurationDelta)) + " longer",
				URL:  r.URL, phase: store.PhaseRenderDelay})
		}
	}
	return out
}

// blockingMs is what a newly render-blocking request cost the first render: Lighthouse's own
// estimate (the insight's wastedMs) where the report has one, else how long it took, or its
// bytes at the simulated throughput, the larger.
func blockingMs(c Comparison, r RequestChange) int {
	if r.After.BlockingMs > 0 {
		return r.After.BlockingMs
	}
	return max(r.After.DurationMs(), c.bytesMs(r.After.TransferBytes))
}

func party(r RequestChange) string {
	if r.ThirdParty {
		return r.Entity
	}
	return ""
}

// thirdParties: the new third parties, weighed by the main-thread time of their scripts (cpu: as
// TBT counts it, bootup-time's; else as observed). A party none of whose requests started before
// moment (ms, when not -1) cannot have delayed what happened then.
func thirdParties(c Comparison, cpu bool, moment int) []Reason {
	var out []Reason
	for _, p := range c.ThirdPartiesAdded {
		if moment >= 0 && !slices.ContainsFunc(c.Added, func(r RequestChange) bool { return r.Entity == p.Name && r.After.StartMs < moment }) {
			continue
		}
		observed := p.MainThreadMs
		if observed < NoiseMainThreadMs && p.CPUMs > observed { // its time not attributed to it: bootup-time's
			observed = p.CPUMs
		}
		weight := float64(observed)
		if cpu && p.CPUMs > 0 {
			weight = float64(p.CPUMs)
		}
		text := "new third party " + p.Name + ": " + plural(p.Requests, "request") + ", " + formatKB(p.TransferBytes)
		if observed >= NoiseMainThreadMs {
			text += ", " + formatMs(float64(observed)) + " of main-thread work"
		}
		out = append(out, Reason{Kind: ReasonThirdPartyAdded, Weight: weight, Text: text, Party: p.Name, phase: store.PhaseRenderDelay})
	}
	return out
}

// scriptCosts: scripts of the page's own or of known parties that take more main-thread time
// (a new third party's scripts are that party's reason).
func scriptCosts(c Comparison) []Reason {
	var out []Reason
	for _, s := range c.Scripts {
		newParty := slices.ContainsFunc(c.Added, func(r RequestChange) bool {
			return r.URL == s.URL && slices.ContainsFunc(c.ThirdPartiesAdded, func(p PartyChange) bool { return p.Name == r.Entity })
		})
		if newParty {
			continue
		}
		name := "the script " + c.label(s.URL)
		if s.URL == c.docURL { // bootup-time counts a page's inline scripts as its document's
			name = "the page's inline scripts"
		}
		text := name + " take " + formatMs(float64(s.AfterMs-s.BeforeMs)) + " more main-thread time"
		if s.New {
			text = "the new " + strings.TrimPrefix(name, "the ") + " take " + formatMs(float64(s.AfterMs)) + " of main-thread time"
		}
		if s.URL != c.docURL {
			text = strings.Replace(text, " take ", " takes ", 1)
		}
		out = append(out, Reason{Kind: ReasonScriptCost, Weight: float64(s.AfterMs - s.BeforeMs), Text: text, URL: s.URL, phase: store.PhaseRenderDelay})
	}
	return out
}

// largestChange is the largest change of the comparison, named when none of a metric's own
// candidates explains it: the one that cost most time (for CLS, the largest new shift), then
// most bytes. It weighs nothing: it is no cause of the metric, only what changed most.
func largestChange(c Comparison, metric string) Reason {
	type candidate struct {
		ms    float64 // the time it cost (for CLS, a shift's score)
		bytes int64
		r     Reason
	}
	var all []candidate
	add := func(ms float64, bytes int64, text, url string) {
		if metric == "cls" {
			ms = 0 // time is not CLS's unit
		}
		all = append(all, candidate{ms, bytes, Reason{Kind: ReasonLargestChange, Text: text, URL: url}})
	}
	for _, r := range c.Slower {
		add(float64(r.DurationDelta), 0, "the "+typeWord(r.Type)+" "+shortURL(r)+" took "+formatMs(float64(r.DurationDelta))+" longer", r.URL)
	}
	for _, r := range c.Added {
		add(float64(r.After.DurationMs()), r.After.TransferBytes, "the new "+typeWord(r.Type)+" "+shortURL(r)+" ("+formatKB(r.After.TransferBytes)+")", r.URL)
	}
	for _, r := range c.Grown {
		text := "the " + typeWord(r.Type) + " " + shortURL(r)
		if r.MatchedBy == MatchedName {
			text += " (was " + shortURL(change(nil, r.Before)) + ")"
		}
		add(float64(max(r.EndDelta, 0)), r.BytesDelta, text+" grew by "+formatKB(r.BytesDelta), r.URL)
	}
	for _, r := range c.Removed {
		add(0, r.Before.TransferBytes, "the "+typeWord(r.Type)+" "+shortURL(r)+" is no longer loaded ("+formatKB(r.Before.TransferBytes)+")", r.URL)
	}
	for _, s := range c.Scripts {
		add(float64(s.AfterMs-s.BeforeMs), 0, c.label(s.URL)+" takes "+formatMs(float64(s.AfterMs-s.BeforeMs))+" more main-thread time", s.URL)
	}
	for _, p := range c.ThirdPartiesRemoved {
		add(0, p.TransferBytes, "the third party "+p.Name+" is no longer loaded ("+plural(p.Requests, "request")+", "+formatKB(p.TransferBytes)+")", "")
	}
	if c.LCP.ElementChanged && c.LCP.ElementAfter != nil {
		add(0, 0, "the LCP element is now "+c.LCP.ElementAfter.Selector, "")
	}
	for _, a := range c.TurnedFailing {
		add(0, 0, a.ID+" now fails", "")
	}
	// A layout shift costs CLS, not time: for CLS (whose candidates cost no time) it ranks by
	// its score.
	for _, s := range c.Shifts.New {
		cost := 0.0
		if metric == "cls" {
			cost = s.Score
		}
		all = append(all, candidate{cost, 0, Reason{Kind: ReasonLargestChange, Text: "a new layout shift of " + s.Selector + " (" + formatCLS(s.Score) + ")", Selector: s.Selector}})
	}
	if len(all) == 0 {
		return Reason{Kind: ReasonLargestChange, Text: "the third parties loaded changed"}
	}
	best := slices.MaxFunc(all, func(x, y candidate) int { return cmp.Or(cmp.Compare(x.ms, y.ms), cmp.Compare(x.bytes, y.bytes)) })
	r := best.r
	r.Text = "no change explains it; the largest: " + r.Text
	return r
}

// unsizedCause answers whether a layout shift's root cause is an image without a size
// (Lighthouse 13: "Unsized image element"; 12: "Media element lacking an explicit size").
func unsizedCause(cause string) bool {
	c := strings.ToLower(cause)
	return strings.Contains(c, "unsized") || strings.Contains(c, "explicit size")
}

// layoutShifts: After's new layout shifts by what caused them. An unsized image shifts the
// content after it once, when its size becomes known: a second shift of the same element, or a
// shift of an element that contains the image (whose position the image's size cannot move), is
// not the image's doing but content inserted later (a late banner, an injected widget), though
// Lighthouse names the image for it too.
func layoutShifts(c Comparison) []Reason {
	type group struct {
		reason  Reason
		shifted []string
	}
	var groups []*group
	add := func(kind, key, text, selector string, s store.LayoutShift) {
		for _, g := range groups {
			if g.reason.Kind == kind && g.reason.Selector == key {
				g.reason.Weight += s.Score
				g.shifted = append(g.shifted, fmt.Sprintf("%s (%s)", s.Selector, formatCLS(s.Score)))
				return
			}
		}
		groups = append(groups, &group{reason: Reason{Kind: kind, Weight: s.Score, Text: text, Selector: selector},
			shifted: []string{fmt.Sprintf("%s (%s)", s.Selector, formatCLS(s.Score))}})
	}
	used := map[[2]string]bool{} // image, shifted element
	for _, s := range c.Shifts.New {
		if s.Score < NoiseShift {
			continue
		}
		explained := false
		for _, cause := range s.Causes {
			if !unsizedCause(cause.Cause) {
				add(ReasonLayoutShift, cause.Cause+" "+cause.Selector, strings.ToLower(cause.Cause)+" "+cause.Selector, cause.Selector, s)
				explained = true
				break
			}
			k := [2]string{cause.Selector, s.Selector}
			if strings.HasPrefix(cause.Selector, s.Selector+" ") || used[k] {
				continue
			}
			used[k] = true
			text := "unsized image " + cause.Selector
			if src := srcOf(cause.Snippet); src != "" {
				text += " (" + src + ")"
			}
			add(ReasonUnsizedImage, cause.Selector, text, cause.Selector, s)
			explained = true
			break
		}
		if !explained {
			add(ReasonLateContent, "", "content inserted later", "", s)
		}
	}
	var out []Reason
	for _, g := range groups {
		r := g.reason
		r.Weight = round(r.Weight, 4)
		r.Text += " shifted " + strings.Join(g.shifted, ", ")
		if r.Kind == ReasonLateContent {
			if ins, ok := c.inserter(); ok {
				r.Text += ", after the new " + typeWord(ins.Type) + " " + shortURL(ins)
				if ins.ThirdParty && ins.Entity != "" {
					r.Text += " (third party " + ins.Entity + ")"
				}
				r.Text += " ran"
				r.URL, r.Party = ins.URL, party(ins)
			}
		}
		if r.Kind == ReasonUnsizedImage {
			if a, ok := failing(c.TurnedFailing, "unsized-images"); ok && len(a.Items) > 0 {
				var paths []string
				for _, it := range a.Items {
					paths = append(paths, c.label(it))
				}
				r.Text += "; images without width and height: " + strings.Join(paths, ", ")
			}
		}
		out = append(out, r)
	}
	return out
}

// inserter is the new script most likely to have inserted content late, when Lighthouse names
// no culprit for the shift: of After's added scripts whose last byte arrived before the page
// last changed on screen (when the late content shifted it), a new third party's first, then
// the latest to arrive. ok is false when no script was added.
func (c Comparison) inserter() (RequestChange, bool) {
	var best RequestChange
	found := false
	for _, r := range c.Added {
		if r.Type != "Script" || c.lastVisual > 0 && r.After.EndMs > c.lastVisual {
			continue
		}
		newParty := r.ThirdParty && slices.ContainsFunc(c.ThirdPartiesAdded, func(p PartyChange) bool { return p.Name == r.Entity })
		bestNew := found && best.ThirdParty && slices.ContainsFunc(c.ThirdPartiesAdded, func(p PartyChange) bool { return p.Name == best.Entity })
		if !found || newParty && !bestNew || newParty == bestNew && r.After.EndMs > best.After.EndMs {
			best, found = r, true
		}
	}
	return best, found
}

func failing(list []store.FailingAudit, id string) (store.FailingAudit, bool) {
	for _, a := range list {
		if a.ID == id {
			return a, true
		}
	}
	return store.FailingAudit{}, false
}

var srcAttr = regexp.MustCompile(`\ssrc="([^"]+)"`)

// srcOf is the src attribute of an element's snippet (its entities decoded: "&amp;" in a
// query), "" when it has none.
func srcOf(snippet string) string {
	if m := srcAttr.FindStringSubmatch(snippet); m != nil {
		return html.UnescapeString(m[1])
	}
	return ""
}

// sentence is a cause in words: "<Metric> <delta>[, mostly <phase>]: <reason>; <reason>".
func sentence(c Comparison, cause Cause) string {
	head := Label(cause.Metric) + " " + FormatDelta(cause.Metric, cause.Delta)
	if cause.Metric == "performance" {
		var worse []string
		for _, m := range c.Metrics {
			if m.Regressed && slices.Contains(performanceMetrics, m.Metric) {
				worse = append(worse, Label(m.Metric)+" "+FormatDelta(m.Metric, m.Delta))
			}
		}
		if len(worse) > 0 {
			head += " (" + strings.Join(worse, ", ") + ")"
		}
	}
	if cause.Phase != "" && len(cause.Reasons) > 0 && cause.Reasons[0].phase == cause.Phase {
		head += ", mostly " + phaseWords[cause.Phase]
	}
	switch {
	case !c.Explained:
		return head + ": " + NotExplainedSentence
	case len(cause.Reasons) == 0:
		return head + ": " + NoChangeSentence
	}
	texts := make([]string, len(cause.Reasons))
	for i, r := range cause.Reasons {
		texts[i] = r.Text
	}
	return head + ": " + strings.Join(texts, "; ") + partShare(cause)
}

// PartShare is the share of a metric's change below which a cause's sentence says how much of
// it the named changes explain.
const PartShare = 0.6

// partShare is ", which explains about 40% of it" for a cause whose reasons explain only part
// of a timing metric's or CLS's change ("together about ..." for two); "" when they explain
// most of it, or when the metric is a score, whose reasons are not in its unit.
func partShare(cause Cause) string {
	if _, score := lighthouseCategory[cause.Metric]; score || cause.Delta == 0 || cause.Reasons[0].Kind == ReasonLargestChange {
		return ""
	}
	explained := 0.0
	for _, r := range cause.Reasons {
		explained += r.Weight
	}
	share := explained / math.Abs(cause.Delta)
	if share >= PartShare {
		return ""
	}
	words := "under 10%"
	if pct := math.Round(share*10) * 10; pct >= 10 {
		words = "about " + strconv.Itoa(int(pct)) + "%"
	}
	if len(cause.Reasons) > 1 {
		return " (together " + strings.TrimPrefix(words, "about ") + " of it)"
	}
	return ", which explains " + words + " of it"
}

// summary is the causes' sentences together, or what is true when there is none.
func summary(c Comparison) string {
	if len(c.Causes) == 0 {
		if c.Changed() {
			return NoRegressionSentence
		}
		return NoChangeSentence
	}
	s := make([]string, len(c.Causes))
	for i, x := range c.Causes {
		s[i] = x.Sentence
	}
	return strings.Join(s, ". ")
}

// FormatValue writes a metric's value the way people read it: "2.5 s", "830 ms", CLS "0.39", a
// score "87".
func FormatValue(metric string, v float64) string {
	m, _ := Lookup(metric)
	switch {
	case m.Kind == Score:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	case m.Kind == Vital && m.Unit == "":
		return formatCLS(v)
	}
	return formatMs(v)
}

// BudgetValue writes a budget's, a rule's or a regression's value in its metric's unit: a
// score as given ("87", "87.5"), a vital as FormatValue does.
func BudgetValue(metric string, v float64) string {
	if op, _ := BudgetMetric(metric); op == store.OpMin {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return FormatValue(metric, v)
}

// FormatDelta writes a change of a metric with its sign: "+1.2 s", "+810 ms", "+0.39", "-33".
func FormatDelta(metric string, d float64) string {
	sign := "+"
	if d < 0 {
		sign, d = "-", -d
	}
	return sign + FormatValue(metric, d)
}

// FormatMs writes a duration in milliseconds the way people read it: "830 ms", "3.0 s".
func FormatMs(v float64) string { return formatMs(v) }

func formatMs(v float64) string {
	if math.Abs(v) >= 1000 {
		return strconv.FormatFloat(v/1000, 'f', 1, 64) + " s"
	}
	return strconv.FormatFloat(math.Round(v), 'f', 0, 64) + " ms"
}

func formatCLS(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// formatKB writes a size in kilobytes (1,024 bytes), at least 1 KB; from 1,000 KB in
// megabytes, "1.9 MB".
func formatKB(b int64) string {
	if kb := math.Round(math.Abs(float64(b)) / 1024); kb >= 1000 {
		return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) + " MB"
	}
	return strconv.FormatInt(max(int64(math.Round(float64(b)/1024)), 1), 10) + " KB"
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}
