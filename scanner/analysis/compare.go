package analysis

import (
	"cmp"
	"net/url"
	"slices"
	"strings"

	"sitepulse/store"
)

// This file is "what changed" between two runs of a page (issue 33, DESIGN §14): Compare is the
// one function the scan page, the compare page, the alerts, the digest, the budget check's answer,
// MCP and the export all call, so they name the same changes and the same cause. causes.go ranks
// the changes into a cause per metric that got worse.

// Run-to-run noise: Lighthouse's lab numbers move on a page nobody touched. Below these bounds a
// change is noise, and Compare neither lists it nor names it as a cause. They were set against
// the fixtures' unchanged pages (testdata/psi-before against testdata/psi: /blog, /about, /fast),
// where requests moved by up to 47 ms, LCP by up to 85 ms (11%) and TBT by up to 28 ms, and
// against Lighthouse's own advice that scores move by several points between runs.
const (
	// NoiseMs and NoiseShare bound a lab timing metric (LCP, FCP, TBT, Speed Index, TTFB): it
	// got worse only when it grew by more than NoiseMs and by more than NoiseShare of its value
	// before.
	NoiseMs    = 100
	NoiseShare = 0.10
	// NoiseCLS is the CLS growth below which layout shifts are noise.
	NoiseCLS = 0.02
	// NoiseScore is the performance score drop below which it is noise: the regression rule's
	// more than 5 points.
	NoiseScore = RegressionThreshold
	// NoiseRequestMs and NoiseRequestShare bound a request's timing: it took longer, or arrived
	// later, only by more than NoiseRequestMs and more than NoiseRequestShare of its duration.
	NoiseRequestMs    = 150
	NoiseRequestShare = 0.25
	// NoiseBytes and NoiseBytesShare bound a request's size (or a type's, or a party's): it grew
	// only by more than NoiseBytes and more than NoiseBytesShare of its size before.
	NoiseBytes      = 2048
	NoiseBytesShare = 0.10
	// NoiseMainThreadMs is the main-thread time (a script's, a third party's) below which a
	// change is noise.
	NoiseMainThreadMs = 50
	// NoiseShift is the share of CLS below which a layout shift is left out of a cause.
	NoiseShift = 0.005
	// NoiseScriptShare bounds the main-thread time of a script whose file did not change (the
	// same URL, the same size within noise): on a busy lab machine every script slows together,
	// and the corpus's unchanged page (testdata/why/unchanged-2) had its inline scripts take 79%
	// longer and a third party's 57%. Such a script took more time only past doubling; a
	// script whose file changed, past NoiseShare.
	NoiseScriptShare = 1.0
)

// Comparison is what changed in one page and strategy between two runs, Before and After (two
// scans' results, the older first). Its lists are empty, not nil, when nothing changed beyond
// noise; every request list is in the order the requests started in the run they are from.
type Comparison struct {
	PagePath string `json:"pagePath"`
	// Machine says the later run was made on a slower machine than the earlier one
	// (SlowerMachine), when it got worse; empty otherwise.
	Machine  string         `json:"machine,omitempty"`
	Strategy store.Strategy `json:"strategy"`
	// Explained is false when either run was stored without what explains it (a result kept
	// before issue 33): then only Metrics are compared, and no cause is named.
	Explained bool `json:"explained"`
	// Metrics are the lab metrics and the performance score before and after.
	Metrics []MetricChange `json:"metrics"`
	// Requests matched by URL, then without its query, then by host and path, then by
	// normalised name (match.go).
	Added   []RequestChange `json:"added"`   // only After made them
	Removed []RequestChange `json:"removed"` // only Before made them
	Grown   []RequestChange `json:"grown"`   // their transfer size grew beyond noise
	Slower  []RequestChange `json:"slower"`  // they took longer beyond noise
	// RenderBlockingAdded are After's render-blocking requests that did not block Before's render.
	RenderBlockingAdded []RequestChange `json:"renderBlockingAdded"`
	// Bytes are the requests and transfer bytes by resource type and party, before and after.
	Bytes []BytesChange `json:"bytes"`
	// ThirdPartiesAdded and ThirdPartiesRemoved are the third parties only one run loaded.
	ThirdPartiesAdded   []PartyChange `json:"thirdPartiesAdded"`
	ThirdPartiesRemoved []PartyChange `json:"thirdPartiesRemoved"`
	// Scripts are the scripts whose main-thread time grew beyond noise (new ones included).
	Scripts []ScriptChange `json:"scripts"`
	LCP     LCPChange      `json:"lcp"`
	// Shifts are the layout shifts of each run and those only After has.
	Shifts ShiftChange `json:"shifts"`
	// TurnedFailing are the audits and insights that passed in Before and fail in After, as
	// After has them.
	TurnedFailing []store.FailingAudit `json:"turnedFailing"`
	// Causes are, for each metric that got worse beyond noise, the changes that explain most of
	// it (causes.go), in the order of Metrics.
	Causes []Cause `json:"causes"`
	// Summary is the causes' sentences together, or NoChangeSentence when no metric got worse
	// and nothing changed.
	Summary string  `json:"summary"`
	host    string  // the host of After's document: the page's own
	docURL  string  // After's document URL
	kbps    float64 // After's simulated throughput (store.Explain.ThroughputKbps)
	// lastVisual is when After's page last changed on screen (store.Explain.LastVisualChangeMs)
	lastVisual int
}

// bytesMs is what n bytes cost After's lab metrics in time (store.Explain.BytesMs).
func (c Comparison) bytesMs(n int64) int {
	return (&store.Explain{ThroughputKbps: c.kbps}).BytesMs(n)
}

// MetricChange is one metric of both runs; Regressed is true when it got worse beyond noise.
type MetricChange struct {
	Metric    string   `json:"metric"`
	Before    *float64 `json:"before"`
	After     *float64 `json:"after"`
	Delta     float64  `json:"delta"` // After - Before; 0 when either is missing
	Regressed bool     `json:"regressed"`
}

// RequestChange is one request of either run or both: the request as each run made it (nil on
// the side that did not), and what moved.
type RequestChange struct {
	URL        string         `json:"url"`
	Entity     string         `json:"entity,omitempty"`
	ThirdParty bool           `json:"thirdParty,omitempty"`
	Type       string         `json:"type"`
	Before     *store.Request `json:"before,omitempty"`
	After      *store.Request `json:"after,omitempty"`
	// BytesDelta is the transfer size After minus Before; EndDelta how much later its last
	// byte arrived; DurationDelta how much longer it took.
	BytesDelta    int64 `json:"bytesDelta"`
	EndDelta      int   `json:"endDelta"`
	DurationDelta int   `json:"durationDelta"`
	// MatchedBy is how After's request was found to be Before's (MatchedURL, ...); "" when
	// only one run made it.
	MatchedBy string `json:"matchedBy,omitempty"`
}

// BytesChange is the requests and transfer bytes of one resource type and party in both runs.
type BytesChange struct {
	Type           string `json:"type"`
	ThirdParty     bool   `json:"thirdParty,omitempty"`
	RequestsBefore int    `json:"requestsBefore"`
	RequestsAfter  int    `json:"requestsAfter"`
	BytesBefore    int64  `json:"bytesBefore"`
	BytesAfter     int64  `json:"bytesAfter"`
}

// PartyChange is a third party one run loaded and the other did not: its requests, bytes, the
// main-thread time its scripts took, and the hosts it was loaded from.
type PartyChange struct {
	Name          string   `json:"name"`
	Hosts         []string `json:"hosts"`
	Requests      int      `json:"requests"`
	TransferBytes int64    `json:"transferBytes"`
	MainThreadMs  int      `json:"mainThreadMs"`
	// CPUMs is the main-thread time of its scripts as bootup-time counts it (simulated CPU
	// slowdown included), what TBT is made of.
	CPUMs int `json:"cpuMs"`
}

// ScriptChange is a script whose main-thread time grew: BeforeMs is 0 for one bootup-time did
// not list before (a new script, or one below its threshold); New is true only for a script
// the earlier run did not load at all.
type ScriptChange struct {
	URL      string `json:"url"`
	BeforeMs int    `json:"beforeMs"`
	AfterMs  int    `json:"afterMs"`
	New      bool   `json:"new,omitempty"`
}

// LCPChange is the largest contentful paint of both runs: its element, its phases and its
// request.
type LCPChange struct {
	ElementBefore  *store.Element `json:"elementBefore,omitempty"`
	ElementAfter   *store.Element `json:"elementAfter,omitempty"`
	ElementChanged bool           `json:"elementChanged"`
	Phases         []PhaseChange  `json:"phases"` // empty when either run has no phases
	// Request is the LCP element's request in either run (nil when neither has one).
	Request *RequestChange `json:"request,omitempty"`
}

// PhaseChange is one LCP phase (store.PhaseTTFB, ...) in both runs, ms.
type PhaseChange struct {
	Phase  string `json:"phase"`
	Before int    `json:"before"`
	After  int    `json:"after"`
	Delta  int    `json:"delta"`
}

// ShiftChange is the layout shifts of both runs, and After's new ones: those no shift of
// Before matches (same element, about the same score).
type ShiftChange struct {
	Before []store.LayoutShift `json:"before"`
	After  []store.LayoutShift `json:"after"`
	New    []store.LayoutShift `json:"new"`
}

// ComparedMetrics are the metrics Compare compares: the performance score, then its metrics in
// the order of Lighthouse's weights (TBT 30%, LCP 25%, CLS 25%, FCP 10%, Speed Index 10%), TTFB,
// which Lighthouse does not weigh, and the other three category scores.
var ComparedMetrics = []string{"performance", "tbt", "lcp", "cls", "fcp", "speedIndex", "ttfb", "accessibility", "bestPractices", "seo"}

// performanceMetrics are the metrics the performance score is made of.
var performanceMetrics = []string{"tbt", "lcp", "cls", "fcp", "speedIndex"}

// lighthouseCategory is the Lighthouse id of a category score (store.FailingAudit.Categories).
var lighthouseCategory = map[string]string{"performance": "performance", "accessibility": "accessibility", "bestPractices": "best-practices", "seo": "seo"}

// Compare says what changed in a page and strategy between two runs, before then after: each
// metric, the requests, bytes, third parties, scripts, LCP, layout shifts and audits, and for each
// metric that got worse beyond noise the cause (causes.go). It is pure: the same two runs give the
// same answer on every surface.
func Compare(before, after store.PageResult) Comparison {
	c := Comparison{PagePath: after.PagePath, Strategy: after.Strategy, Explained: before.Explain != nil && after.Explain != nil,
		Added: []RequestChange{}, Removed: []RequestChange{}, Grown: []RequestChange{}, Slower: []RequestChange{},
		RenderBlockingAdded: []RequestChange{}, Bytes: []BytesChange{}, ThirdPartiesAdded: []PartyChange{}, ThirdPartiesRemoved: []PartyChange{},
		Scripts: []ScriptChange{}, TurnedFailing: []store.FailingAudit{}, Causes: []Cause{},
		LCP: LCPChange{Phases: []PhaseChange{}}, Shifts: ShiftChange{Before: []store.LayoutShift{}, After: []store.LayoutShift{}, New: []store.LayoutShift{}}}
	c.Metrics = compareMetrics(before, after)
	if c.Explained {
		b, a := before.Explain, after.Explain
		if doc, ok := a.Document(); ok {
			c.host, c.docURL = doc.Host(), doc.URL
		}
		c.kbps, c.lastVisual = a.ThroughputKbps, a.LastVisualChangeMs
		m := match(b, a)
		c.compareRequests(b, a, m)
		c.Bytes = compareBytes(b, a)
		c.ThirdPartiesAdded, c.ThirdPartiesRemoved = partiesOnlyIn(a, b), partiesOnlyIn(b, a)
		c.Scripts = compareScripts(b, a)
		c.LCP = compareLCP(b, a, m)
		c.Shifts = compareShifts(b, a)
		for _, f := range a.Failing {
			if _, was := b.Failed(f.ID); !was {
				c.TurnedFailing = append(c.TurnedFailing, f)
			}
		}
	}
	c.Causes = causes(c, before, after)
	c.Summary = summary(c)
	if len(c.Causes) > 0 {
		// A regression seen on a slower runner than the earlier run's says so (docs/runners.md).
		if c.Machine = SlowerMachine(before, after); c.Machine != "" {
			c.Summary += "; " + c.Machine
		}
	}
	return c
}

// compareMetrics compares the metrics of ComparedMetrics.
func compareMetrics(before, after store.PageResult) []MetricChange {
	out := make([]MetricChange, 0, len(ComparedMetrics))
	for _, name := range ComparedMetrics {
		m := MetricChange{Metric: name}
		if _, score := lighthouseCategory[name]; score {
			if b := ScoreOf(before.Scores, name); b != nil {
				v := float64(*b)
				m.Before = &v
			}
			if a := ScoreOf(after.Scores, name); a != nil {
				v := float64(*a)
				m.After = &v
			}
		} else {
			m.Before, m.After = VitalOf(before.CoreWebVitals, name), VitalOf(after.CoreWebVitals, name)
		}
		if m.Before != nil && m.After != nil {
			m.Delta = round(*m.After-*m.Before, 4)
			m.Regressed = worse(name, *m.Before, m.Delta)
		}
		out = append(out, m)
	}
	return out
}

// worse answers whether a metric got worse beyond run-to-run noise: from b by d.
func worse(metric string, b, d float64) bool {
	if _, score := lighthouseCategory[metric]; score {
		return -d > NoiseScore
	}
	if metric == "cls" {
		return d > NoiseCLS
	}
	return d > NoiseMs && d > NoiseShare*b
}

// change is the RequestChange of a request of b (nil when none) and of a (nil when none).
func change(b, a *store.Request) RequestChange {
	r := a
	if r == nil {
		r = b
	}
	ch := RequestChange{URL: r.URL, Entity: r.Entity, ThirdParty: r.ThirdParty, Type: r.Type, Before: b, After: a}
	if b != nil && a != nil {
		ch.BytesDelta, ch.EndDelta, ch.DurationDelta = a.TransferBytes-b.TransferBytes, a.EndMs-b.EndMs, a.DurationMs()-b.DurationMs()
	}
	return ch
}

// grew answers whether a size grew from b to a beyond noise.
func grew(b, a int64) bool {
	return a-b > NoiseBytes && float64(a-b) > NoiseBytesShare*float64(b)
}

// later answers whether a request's time grew by d beyond noise, for a request that took dur.
func later(d, dur int) bool { return d > NoiseRequestMs && float64(d) > NoiseRequestShare*float64(dur) }

// compareRequests fills the request lists; m is match's answer.
func (c *Comparison) compareRequests(b, a *store.Explain, m matching) {
	matched := make([]bool, len(b.Requests))
	for i := range a.Requests {
		ar := &a.Requests[i]
		if m.pair[i] < 0 {
			c.Added = append(c.Added, change(nil, ar))
			if ar.RenderBlocking {
				c.RenderBlockingAdded = append(c.RenderBlockingAdded, change(nil, ar))
			}
			continue
		}
		br := &b.Requests[m.pair[i]]
		matched[m.pair[i]] = true
		ch := change(br, ar)
		ch.MatchedBy = m.by[i]
		if grew(br.TransferBytes, ar.TransferBytes) {
			c.Grown = append(c.Grown, ch)
		}
		if later(ch.DurationDelta, br.DurationMs()) {
			c.Slower = append(c.Slower, ch)
		}
		if ar.RenderBlocking && !br.RenderBlocking {
			c.RenderBlockingAdded = append(c.RenderBlockingAdded, ch)
		}
	}
	for j := range b.Requests {
		if !matched[j] {
			c.Removed = append(c.Removed, change(&b.Requests[j], nil))
		}
	}
}

// compareBytes lines up the totals of both runs by type and party, the larger after first.
func compareBytes(b, a *store.Explain) []BytesChange {
	type key struct {
		typ   string
		third bool
	}
	byKey := map[key]*BytesChange{}
	var order []key
	get := func(t store.Total) *BytesChange {
		k := key{t.Type, t.ThirdParty}
		if byKey[k] == nil {
			byKey[k] = &BytesChange{Type: t.Type, ThirdParty: t.ThirdParty}
			order = append(order, k)
		}
		return byKey[k]
	}
	for _, t := range b.Totals {
		x := get(t)
		x.RequestsBefore, x.BytesBefore = t.Requests, t.TransferBytes
	}
	for _, t := range a.Totals {
		x := get(t)
		x.RequestsAfter, x.BytesAfter = t.Requests, t.TransferBytes
	}
	out := make([]BytesChange, 0, len(order))
	for _, k := range order {
		out = append(out, *byKey[k])
	}
	slices.SortStableFunc(out, func(x, y BytesChange) int {
		if x.ThirdParty != y.ThirdParty {
			if !x.ThirdParty {
				return -1
			}
			return 1
		}
		return cmp.Compare(max(y.BytesAfter, y.BytesBefore), max(x.BytesAfter, x.BytesBefore))
	})
	return out
}

// partiesOnlyIn are the third parties of x that y did not load, the costliest first.
func partiesOnlyIn(x, y *store.Explain) []PartyChange {
	out := []PartyChange{}
	for _, en := range x.Entities {
		if !en.ThirdParty || slices.ContainsFunc(y.Entities, func(o store.Entity) bool { return o.Name == en.Name }) {
			continue
		}
		p := PartyChange{Name: en.Name, Hosts: []string{}, Requests: en.Requests, TransferBytes: en.TransferBytes, MainThreadMs: en.MainThreadMs}
		for _, r := range x.Requests {
			if r.Entity == en.Name {
				if h := r.Host(); h != "" && !slices.Contains(p.Hosts, h) {
					p.Hosts = append(p.Hosts, h)
				}
			}
		}
		for _, s := range x.Scripts {
			if slices.ContainsFunc(x.Requests, func(r store.Request) bool { return r.Entity == en.Name && r.URL == s.URL }) {
				p.CPUMs += s.TotalMs
			}
		}
		out = append(out, p)
	}
	slices.SortStableFunc(out, func(p, q PartyChange) int {
		return cmp.Compare(q.MainThreadMs+int(q.TransferBytes>>10), p.MainThreadMs+int(p.TransferBytes>>10))
	})
	return out
}

// compareScripts are the scripts whose main-thread time grew beyond noise, the most first,
// each matched to Before's as requests are (matchURLs). Time bootup-time could not give a
// script ("Unattributable"; Lighthouse 5's "Other") is no script.
func compareScripts(b, a *store.Explain) []ScriptChange {
	out := []ScriptChange{}
	var bu, au []string
	for _, s := range b.Scripts {
		bu = append(bu, s.URL)
	}
	for _, s := range a.Scripts {
		au = append(au, s.URL)
	}
	m, loaded := matchURLs(bu, au), matchURLs(urlsOf(b.Requests), au)
	for i, s := range a.Scripts {
		if !webURL(s.URL) {
			continue
		}
		was, now := 0, scriptMs(s)
		if m.pair[i] >= 0 {
			was = scriptMs(b.Scripts[m.pair[i]])
		}
		share := NoiseShare
		if j := loaded.pair[i]; j >= 0 && loaded.by[i] == MatchedURL && sameFile(b.Requests[j], a.Requests, s.URL) {
			share = NoiseScriptShare
		}
		if now-was > NoiseMainThreadMs && float64(now-was) > share*float64(was) {
			out = append(out, ScriptChange{URL: s.URL, BeforeMs: was, AfterMs: now, New: m.pair[i] < 0 && loaded.pair[i] < 0})
		}
	}
	slices.SortStableFunc(out, func(x, y ScriptChange) int { return cmp.Compare(y.AfterMs-y.BeforeMs, x.AfterMs-x.BeforeMs) })
	return out
}

// sameFile answers whether After's request of url (in reqs) is b's file unchanged: its size
// within noise.
func sameFile(b store.Request, reqs []store.Request, url string) bool {
	i := slices.IndexFunc(reqs, func(r store.Request) bool { return r.URL == url })
	return i >= 0 && !grew(b.TransferBytes, reqs[i].TransferBytes) && !grew(reqs[i].TransferBytes, b.TransferBytes)
}

// scriptMs is the main-thread time a script's own work took: evaluating, parsing and
// compiling it. bootup-time's total counts also the style, layout and parsing it set off (a
// page's document is charged all its HTML parsing and layout), which a script did not take;
// a report without the split gives the total.
func scriptMs(s store.ScriptCost) int {
	if own := s.ScriptingMs + s.ParseMs; own > 0 {
		return own
	}
	return s.TotalMs
}

// webURL answers whether s is an http or https URL.
func webURL(s string) bool {
	return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")
}

// compareLCP compares the LCP element, phases and resource; m is match's answer. The LCP
// resource of After is Before's by URL (m) when a step matched it; otherwise, when Before's LCP
// had a resource too, it is that one (MatchedLCP): another file for the LCP (an image replaced
// under a new URL, moved to a CSS background) is what the LCP now waits for instead.
func compareLCP(b, a *store.Explain, m matching) LCPChange {
	l := LCPChange{ElementBefore: b.LCP.Element, ElementAfter: a.LCP.Element, Phases: []PhaseChange{}}
	l.ElementChanged = (b.LCP.Element == nil) != (a.LCP.Element == nil) ||
		b.LCP.Element != nil && a.LCP.Element != nil && b.LCP.Element.Selector != a.LCP.Element.Selector
	if b.LCP.Phased && a.LCP.Phased {
		for _, ph := range store.LCPPhases {
			x, y := b.LCP.Phase(ph), a.LCP.Phase(ph)
			l.Phases = append(l.Phases, PhaseChange{Phase: ph, Before: x, After: y, Delta: y - x})
		}
	}
	ai, bi := slices.IndexFunc(a.Requests, func(r store.Request) bool { return r.LCP }), slices.IndexFunc(b.Requests, func(r store.Request) bool { return r.LCP })
	var br, ar *store.Request
	by := ""
	if ai >= 0 {
		ar = &a.Requests[ai]
		if j := m.pair[ai]; j >= 0 {
			br, by = &b.Requests[j], m.by[ai]
		}
	}
	if br == nil && bi >= 0 {
		br = &b.Requests[bi]
		if ar != nil {
			by = MatchedLCP
		}
	}
	if br != nil || ar != nil {
		ch := change(br, ar)
		ch.MatchedBy = by
		l.Request = &ch
	}
	return l
}

// compareShifts finds After's new layout shifts: those no shift of Before matches (the same
// element, the score within NoiseCLS), each shift of Before matching once.
func compareShifts(b, a *store.Explain) ShiftChange {
	s := ShiftChange{Before: b.Shifts, After: a.Shifts, New: []store.LayoutShift{}}
	used := make([]bool, len(b.Shifts))
	for _, x := range a.Shifts {
		found := false
		for j, y := range b.Shifts {
			if !used[j] && y.Selector == x.Selector && x.Score-y.Score <= NoiseCLS {
				used[j], found = true, true
				break
			}
		}
		if !found {
			s.New = append(s.New, x)
		}
	}
	return s
}

// Regressed answers whether a metric got worse beyond noise between the runs.
func (c Comparison) Regressed(metric string) bool {
	for _, m := range c.Metrics {
		if m.Metric == metric {
			return m.Regressed
		}
	}
	return false
}

// CauseOf is the cause of a metric that got worse; ok is false when it did not.
func (c Comparison) CauseOf(metric string) (Cause, bool) {
	for _, x := range c.Causes {
		if x.Metric == metric {
			return x, true
		}
	}
	return Cause{}, false
}

// Changed answers whether anything but the metrics changed beyond noise: a request, a size, a
// timing, the LCP element or its resource, a third party, a script's cost, a layout shift, an
// audit. Only when nothing did is a metric that got worse "likely lab variance".
func (c Comparison) Changed() bool {
	return c.pageChanged() || len(c.TurnedFailing) > 0
}

// pageChanged answers whether the page itself changed beyond noise: its requests, sizes,
// timings, LCP element or resource, third parties, scripts' costs or layout shifts. An audit or
// insight that turned failing is not: a performance insight flips with its metric's noise.
func (c Comparison) pageChanged() bool {
	return len(c.Added)+len(c.Removed)+len(c.Grown)+len(c.Slower)+len(c.RenderBlockingAdded)+len(c.ThirdPartiesAdded)+
		len(c.ThirdPartiesRemoved)+len(c.Scripts)+len(c.Shifts.New) > 0 || c.LCP.ElementChanged ||
		c.LCP.Request != nil && (c.LCP.Request.Before == nil || c.LCP.Request.After == nil || c.LCP.Request.MatchedBy == MatchedLCP)
}

// changedFor answers whether anything changed that may explain metric: the page itself, or
// for a category score an audit of that category that turned failing.
func (c Comparison) changedFor(metric string) bool {
	if c.pageChanged() {
		return true
	}
	cat, score := lighthouseCategory[metric]
	return score && metric != "performance" && slices.ContainsFunc(c.TurnedFailing, func(a store.FailingAudit) bool { return slices.Contains(a.Categories, cat) })
}

// shortURL is how a sentence names a request: its path (and query) on the page's own hosts,
// host and path for a third party's.
func shortURL(r RequestChange) string {
	u, err := url.Parse(r.URL)
	if err != nil {
		return r.URL
	}
	p := u.EscapedPath()
	if u.RawQuery != "" {
		p += "?" + u.RawQuery
	}
	if r.ThirdParty {
		return u.Host + p
	}
	return p
}

// label is how a sentence names what an audit points at: a URL on the page's own host by its
// path, another by host and path, a selector as it is.
func (c Comparison) label(item string) string {
	u, err := url.Parse(item)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return item
	}
	return shortURL(RequestChange{URL: item, ThirdParty: u.Hostname() != c.host})
}

// typeWord is how a sentence names a resource type: "image", "stylesheet", "script".
func typeWord(t string) string {
	switch t {
	case "XHR", "Fetch", "Other", "": // "Other" is Lighthouse's bucket of what it could not type
		return "request"
	}
	return strings.ToLower(t)
}

// PageChange is a page and strategy of a scan that regressed against the previous completed
// scan, by the rule of Regressions (the one the alerts, the digest and the regression report
// use): its regressions, and what changed (Compare).
type PageChange struct {
	Regressions []Regression `json:"regressions"`
	Comparison
}

// RegressedChanges explains a scan's regressions: for each page and strategy of pairs (the scan
// and its previous completed scan, store.Explains.PreviousPairs) with a regression, its
// regressions and Compare, in the order of Regressions. The scan page's panel, the alerts and
// MCP's regression report read it.
func RegressedChanges(pairs []store.RunPair) []PageChange {
	before, after := make([]store.PageResult, len(pairs)), make([]store.PageResult, len(pairs))
	for i, p := range pairs {
		before[i], after[i] = p.Before, p.After
	}
	out := []PageChange{}
	for _, reg := range Regressions(before, after) {
		if n := len(out); n > 0 && out[n-1].PagePath == reg.PagePath && out[n-1].Strategy == reg.Strategy {
			out[n-1].Regressions = append(out[n-1].Regressions, reg)
			continue
		}
		for _, p := range pairs {
			if p.After.PagePath == reg.PagePath && p.After.Strategy == reg.Strategy {
				out = append(out, PageChange{Regressions: []Regression{reg}, Comparison: Compare(p.Before, p.After)})
				break
			}
		}
	}
	return out
}

// Main is the page's cause (its sentence is Sentence's, its Confidence how sure the alerts and
// the digest say it is); ok is false when no metric of the page got worse beyond noise.
func (c PageChange) Main() (Cause, bool) {
	if x, ok := c.CauseOf("performance"); ok {
		return x, true
	}
	for _, r := range c.Regressions {
		if x, ok := c.CauseOf(r.Metric); ok {
			return x, true
		}
	}
	if len(c.Causes) > 0 {
		return c.Causes[0], true
	}
	return Cause{}, false
}

// Sentence is the page's cause in one sentence, what an alert or a digest shows under the page's
// regressions: the performance score's cause when the score regressed (it gathers the heaviest
// reason of each of its metrics), else the cause of its first regression that has one, else of
// any metric that got worse, else what Summary says (no measurable change, or nothing kept to
// explain the runs).
func (c PageChange) Sentence() string {
	if x, ok := c.Main(); ok {
		return x.Sentence
	}
	if !c.Explained {
		return NotExplainedSentence
	}
	return c.Summary
}

// CauseSentence is the sentence that explains one regression of the page (a metric the rule of
// Regressions says got worse): its cause's sentence when Compare found the metric worse beyond
// run-to-run noise; otherwise what is true instead: the runs were kept without what explains
// them, the metric (INP) is field data no lab run measures, or its change is within the noise
// bounds, below which no cause is named. The budget check's answer gives it to each regression.
func (c PageChange) CauseSentence(r Regression) string {
	if x, ok := c.CauseOf(r.Metric); ok {
		return x.Sentence
	}
	head := Label(r.Metric) + " " + FormatDelta(r.Metric, r.Delta) + ": "
	switch {
	case !slices.Contains(ComparedMetrics, r.Metric):
		return head + "field data of real visits (the Chrome UX report), which no lab run explains"
	case !c.Explained:
		return head + NotExplainedSentence
	}
	return head + "within run-to-run noise, so no cause is named"
}

// CompareAll is Compare of every pair (store.Explains.ComparePairs), in the pairs' order: the
// compare page and compare_scans.
func CompareAll(pairs []store.RunPair) []Comparison {
	out := make([]Comparison, len(pairs))
	for i, p := range pairs {
		out[i] = Compare(p.Before, p.After)
	}
	return out
}

// Requests are every request of both runs, matched as Compare matches them: After's in the
// order they started (Before nil for an added one), then Before's that After did not make. The
// waterfall of a comparison draws them; nil when either run has no explain data.
func Requests(before, after *store.Explain) []RequestChange {
	if before == nil || after == nil {
		return nil
	}
	m := match(before, after)
	matched := make([]bool, len(before.Requests))
	out := make([]RequestChange, 0, len(after.Requests))
	for i := range after.Requests {
		var b *store.Request
		if m.pair[i] >= 0 {
			b, matched[m.pair[i]] = &before.Requests[m.pair[i]], true
		}
		ch := change(b, &after.Requests[i])
		ch.MatchedBy = m.by[i]
		out = append(out, ch)
	}
	for j := range before.Requests {
		if !matched[j] {
			out = append(out, change(&before.Requests[j], nil))
		}
	}
	return out
}
