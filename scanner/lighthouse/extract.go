package lighthouse

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"sort"

	"sitepulse/store"
)

// ErrNoResult means a response held no usable Lighthouse result: an error body, a runtime
// error, or no category scores at all. Retrying the same page will not help.
var ErrNoResult = errors.New("no Lighthouse result")

// lhr is the part of a Lighthouse report (LHR) SitePulse reads. It is the same for a PSI
// response's lighthouseResult and the CLI's --output=json.
type lhr struct {
	LighthouseVersion string `json:"lighthouseVersion"`
	RequestedURL      string `json:"requestedUrl"`
	FinalURL          string `json:"finalUrl"`
	FinalDisplayedURL string `json:"finalDisplayedUrl"`
	ConfigSettings    struct {
		FormFactor         string `json:"formFactor"`
		EmulatedFormFactor string `json:"emulatedFormFactor"`
		ThrottlingMethod   string `json:"throttlingMethod"`
		Throttling         struct {
			ThroughputKbps float64 `json:"throughputKbps"`
		} `json:"throttling"`
	} `json:"configSettings"`
	RuntimeError *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"runtimeError"`
	Categories map[string]category `json:"categories"`
	Audits     map[string]audit    `json:"audits"`
	Entities   []struct {
		Name         string   `json:"name"`
		Origins      []string `json:"origins"`
		IsFirstParty bool     `json:"isFirstParty"`
	} `json:"entities"`
	StackPacks []struct {
		ID           string            `json:"id"`
		Title        string            `json:"title"`
		Descriptions map[string]string `json:"descriptions"`
	} `json:"stackPacks"`
}

type category struct {
	Score     *float64   `json:"score"`
	AuditRefs []auditRef `json:"auditRefs"`
}

type auditRef struct {
	ID     string  `json:"id"`
	Weight float64 `json:"weight"`
	Group  string  `json:"group"`
}

type audit struct {
	ID               string             `json:"id"`
	Title            string             `json:"title"`
	Description      json.RawMessage    `json:"description"` // a JSON string: read for the failing audits only (description)
	Score            *float64           `json:"score"`
	ScoreDisplayMode string             `json:"scoreDisplayMode"`
	NumericValue     *float64           `json:"numericValue"`
	DisplayValue     string             `json:"displayValue"`
	MetricSavings    map[string]float64 `json:"metricSavings"`
	Details          json.RawMessage    `json:"details"`
}

// psiResponse is a PageSpeed Insights v5 runPagespeed response.
type psiResponse struct {
	LighthouseResult  *lhr `json:"lighthouseResult"`
	LoadingExperience struct {
		Metrics map[string]struct {
			Percentile *float64 `json:"percentile"`
		} `json:"metrics"`
		OriginFallback bool `json:"origin_fallback"`
	} `json:"loadingExperience"`
	Error *PSIError `json:"error"`
}

type PSIError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Errors  []struct {
		Reason string `json:"reason"`
		Domain string `json:"domain"`
	} `json:"errors"`
}

// ExtractPSI turns a PageSpeed Insights response into a page result: the lab data of its
// Lighthouse report and the page's own CrUX field data.
func ExtractPSI(body []byte) (store.PageResult, error) {
	resp, ok := decodePSI(body)
	if !ok { // what decodePSI does not read as json.Unmarshal would: json.Unmarshal's answer is the rule
		resp = psiResponse{}
		if err := json.Unmarshal(body, &resp); err != nil {
			return store.PageResult{}, fmt.Errorf("%w: response is not JSON: %v", ErrNoResult, err)
		}
	}
	if resp.Error != nil {
		return store.PageResult{}, fmt.Errorf("%w: %s", ErrNoResult, resp.Error.Message)
	}
	if resp.LighthouseResult == nil {
		return store.PageResult{}, fmt.Errorf("%w: response has no lighthouseResult", ErrNoResult)
	}
	r, err := fromLHR(resp.LighthouseResult)
	if err != nil {
		return r, err
	}
	// Field data counts only when it is the page's own: PSI fills loadingExperience with the
	// origin's data (origin_fallback) when the page has too little traffic.
	m := resp.LoadingExperience.Metrics
	if len(m) > 0 && !resp.LoadingExperience.OriginFallback {
		p := func(keys ...string) *float64 {
			for _, k := range keys {
				if v, ok := m[k]; ok && v.Percentile != nil {
					x := *v.Percentile
					return &x
				}
			}
			return nil
		}
		r.Crux = store.Crux{
			LCP:         p("LARGEST_CONTENTFUL_PAINT_MS"),
			CLS:         p("CUMULATIVE_LAYOUT_SHIFT_SCORE"),
			INP:         p("INTERACTION_TO_NEXT_PAINT", "EXPERIMENTAL_INTERACTION_TO_NEXT_PAINT"),
			HasCruxData: true,
		}
		if r.Crux.CLS != nil { // CrUX sends CLS x100 as an integer: 28 means 0.28
			*r.Crux.CLS = round(*r.Crux.CLS/100, 4)
		}
		// Lighthouse navigation runs measure no INP; the field p75 is the page's INP.
		r.CoreWebVitals.INP = r.Crux.INP
	}
	return r, nil
}

// ExtractLighthouse turns a Lighthouse CLI report (--output=json) into a page result. A lab run
// has no field data: crux is empty and inp null.
func ExtractLighthouse(body []byte) (store.PageResult, error) {
	l, ok := decodeLHR(body)
	if !ok {
		l = lhr{}
		if err := json.Unmarshal(body, &l); err != nil {
			return store.PageResult{}, fmt.Errorf("%w: report is not JSON: %v", ErrNoResult, err)
		}
	}
	return fromLHR(&l)
}

// fromLHR extracts everything but field data (see testdata/psi/README.md). Lighthouse 12
// and 13 differ in audit ids; each field falls back by id, so both extract the same way.
func fromLHR(l *lhr) (store.PageResult, error) {
	if l.RuntimeError != nil && l.RuntimeError.Code != "" && l.RuntimeError.Code != "NO_ERROR" {
		return store.PageResult{}, fmt.Errorf("%w: Lighthouse runtime error %s: %s", ErrNoResult, l.RuntimeError.Code, l.RuntimeError.Message)
	}
	r := store.PageResult{
		PageURL:           firstNonEmpty(l.RequestedURL, l.FinalDisplayedURL, l.FinalURL),
		Strategy:          store.Strategy(firstNonEmpty(l.ConfigSettings.FormFactor, l.ConfigSettings.EmulatedFormFactor)),
		LighthouseVersion: l.LighthouseVersion,
		Runs:              1,
		Scores: store.PageScores{
			Performance:   l.categoryScore("performance"),
			SEO:           l.categoryScore("seo"),
			Accessibility: l.categoryScore("accessibility"),
			BestPractices: l.categoryScore("best-practices"),
		},
		CoreWebVitals: store.Vitals{
			LCP:        l.metric("largest-contentful-paint", 0),
			CLS:        l.metric("cumulative-layout-shift", 4),
			FCP:        l.metric("first-contentful-paint", 0),
			TTFB:       cmp.Or(l.metric("server-response-time", 0), l.metric("time-to-first-byte", 0)), // Lighthouse 5's id
			TBT:        l.metric("total-blocking-time", 0),
			SpeedIndex: l.metric("speed-index", 0),
			TTI:        l.metric("interactive", 0),
		},
	}
	s := r.Scores
	if s.Performance == nil && s.SEO == nil && s.Accessibility == nil && s.BestPractices == nil {
		return store.PageResult{}, fmt.Errorf("%w: Lighthouse returned no category scores", ErrNoResult)
	}
	r.PagePath = PathOf(r.PageURL)
	r.Opportunities = l.opportunities()
	r.ThirdPartyScripts = l.thirdParties()
	r.A11yIssues = l.a11yIssues()
	r.AccessibilityIssues = l.issues("accessibility")
	r.BestPracticesIssues = l.issues("best-practices")
	r.SEOIssues = l.issues("seo")
	r.LCPElement = l.lcpElement()
	r.CLSElements = l.clsElements()
	r.Diagnostics = l.diagnostics()
	r.Explain = l.explain()
	r.Images = l.images()
	r.StackPacks = []store.StackPack{}
	for _, sp := range l.StackPacks {
		r.StackPacks = append(r.StackPacks, store.StackPack{ID: sp.ID, Title: sp.Title, Descriptions: sp.Descriptions})
	}
	return r, nil
}

// PathOf is the path of a page URL as SitePulse keys results by it: "/" for the root.
func PathOf(pageURL string) string {
	u, err := url.Parse(pageURL)
	if err != nil || u.Path == "" {
		return "/"
	}
	return u.Path
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func round(v float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(v*p) / p
}

func (l *lhr) categoryScore(id string) *int {
	c, ok := l.Categories[id]
	// Lighthouse scores are 0-1; anything else is not a score a page can be judged by.
	if !ok || c.Score == nil || !(*c.Score >= 0 && *c.Score <= 1) {
		return nil
	}
	v := int(math.Round(*c.Score * 100))
	return &v
}

// metric is an audit's numericValue rounded to places decimals, nil when Lighthouse gave none.
func (l *lhr) metric(id string, places int) *float64 {
	a, ok := l.Audits[id]
	if !ok || a.NumericValue == nil || math.IsNaN(*a.NumericValue) || math.IsInf(*a.NumericValue, 0) {
		return nil
	}
	v := round(*a.NumericValue, places)
	return &v
}

// opportunities lists the performance audits that would save load time, largest saving first.
// Kept: audits outside group "hidden" scoring below 0.9 that are either (a) of details type
// "opportunity", saving overallSavingsMs, or (b) in group "insights", saving the larger of
// their FCP and LCP metricSavings. Savings of 0 are dropped.
func (l *lhr) opportunities() []store.Opportunity {
	out := []store.Opportunity{}
	for _, ref := range l.Categories["performance"].AuditRefs {
		if ref.Group == "hidden" {
			continue
		}
		a, ok := l.Audits[ref.ID]
		if !ok || a.Score == nil || *a.Score >= 0.9 {
			continue
		}
		var savings float64
		var d opportunity
		decodeDetails(a.Details, &d) // its error ignored: no savings
		switch {
		case d.Type == "opportunity" && d.OverallSavingsMs != nil:
			savings = *d.OverallSavingsMs
		case ref.Group == "insights":
			savings = max(a.MetricSavings["FCP"], a.MetricSavings["LCP"])
		default:
			continue
		}
		if savings = math.Round(savings); savings > 0 {
			out = append(out, store.Opportunity{Title: a.Title, SavingsMs: savings})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].SavingsMs > out[j].SavingsMs })
	return out
}

// opportunity is what opportunities reads of an audit's details.
type opportunity struct {
	Type             string   `json:"type"`
	OverallSavingsMs *float64 `json:"overallSavingsMs"`
}

// thirdParties lists each third-party entity's transfer size and blocking time. Lighthouse 12's
// third-party-summary carries a simulated blockingTime; Lighthouse 13's third-parties-insight
// only an observed mainThreadTime, used in its place. The first party is never listed.
func (l *lhr) thirdParties() []store.ThirdParty {
	type item struct {
		Entity         string   `json:"entity"`
		TransferSize   float64  `json:"transferSize"`
		BlockingTime   *float64 `json:"blockingTime"`
		MainThreadTime *float64 `json:"mainThreadTime"`
		SubItems       struct {
			Items []struct {
				URL string `json:"url"`
			} `json:"items"`
		} `json:"subItems"`
	}
	var details struct {
		Items []item `json:"items"`
	}
	source := "third-party-summary"
	if _, ok := l.Audits[source]; !ok {
		source = "third-parties-insight"
	}
	if a, ok := l.Audits[source]; ok {
		decodeDetails(a.Details, &details)
	}
	firstParty := map[string]bool{}
	origins := map[string][]string{}
	for _, e := range l.Entities {
		firstParty[e.Name] = e.IsFirstParty
		origins[e.Name] = e.Origins
	}
	out := []store.ThirdParty{}
	for _, it := range details.Items {
		if it.Entity == "" || firstParty[it.Entity] {
			continue
		}
		domain := ""
		for _, s := range it.SubItems.Items {
			if u, err := url.Parse(s.URL); err == nil && u.Hostname() != "" {
				domain = u.Hostname()
				break
			}
		}
		if domain == "" {
			for _, o := range origins[it.Entity] {
				if u, err := url.Parse(o); err == nil && u.Hostname() != "" {
					domain = u.Hostname()
					break
				}
			}
		}
		if domain == "" {
			domain = it.Entity
		}
		blocking := 0.0
		if it.BlockingTime != nil {
			blocking = *it.BlockingTime
		} else if it.MainThreadTime != nil {
			blocking = *it.MainThreadTime
		}
		out = append(out, store.ThirdParty{Domain: domain, TransferSize: math.Round(it.TransferSize), BlockingTime: math.Round(blocking)})
	}
	return out
}

// a11yIssues are the failing accessibility audits that weigh on the score.
func (l *lhr) a11yIssues() []store.A11yIssue {
	out := []store.A11yIssue{}
	for _, ref := range l.Categories["accessibility"].AuditRefs {
		a, ok := l.Audits[ref.ID]
		if !ok || ref.Weight <= 0 || !failing(a) {
			continue
		}
		out = append(out, store.A11yIssue{ID: ref.ID, Title: a.Title, Score: a.Score})
	}
	return out
}

// issues are a category's failing audits with their explanation, weighted or not.
func (l *lhr) issues(cat string) []store.AuditIssue {
	out := []store.AuditIssue{}
	for _, ref := range l.Categories[cat].AuditRefs {
		a, ok := l.Audits[ref.ID]
		if !ok || !failing(a) {
			continue
		}
		out = append(out, store.AuditIssue{ID: ref.ID, Title: a.Title, Description: a.description(), Score: a.Score, DisplayValue: a.DisplayValue})
	}
	return out
}

// description is the audit's description: a report's 155 audits carry 35 kB of them, and only
// the failing audits' are kept (issues), so the walk keeps them undecoded. Not a string: none.
func (a audit) description() string {
	var s string
	if len(a.Description) > 0 && a.Description[0] == '"' {
		decodeDetails(a.Description, &s)
	}
	return s
}

// failing answers whether an audit scored below 1; audits that are not applicable, manual,
// informative or errored have no verdict and are never failing.
func failing(a audit) bool {
	switch a.ScoreDisplayMode {
	case "notApplicable", "manual", "informative", "error":
		return false
	}
	return a.Score != nil && *a.Score < 1
}

type node struct {
	Type      string `json:"type"`
	Selector  string `json:"selector"`
	Snippet   string `json:"snippet"`
	NodeLabel string `json:"nodeLabel"`
}

// lcpElement is the node Lighthouse measured as the largest contentful paint: Lighthouse 13's
// lcp-breakdown-insight, else Lighthouse 12's largest-contentful-paint-element.
func (l *lhr) lcpElement() *store.Element {
	var insight struct {
		Items []node `json:"items"`
	}
	if a, ok := l.Audits["lcp-breakdown-insight"]; ok && decodeDetails(a.Details, &insight) {
		for _, n := range insight.Items {
			if n.Type == "node" && n.Selector != "" {
				return &store.Element{Selector: n.Selector, Snippet: n.Snippet, NodeLabel: n.NodeLabel}
			}
		}
	}
	var legacy struct {
		Items []struct {
			Node  node `json:"node"` // Lighthouse 6 to 9: one table of the node
			Items []struct {
				Node node `json:"node"`
			} `json:"items"`
		} `json:"items"`
	}
	if a, ok := l.Audits["largest-contentful-paint-element"]; ok && decodeDetails(a.Details, &legacy) {
		for _, group := range legacy.Items {
			if n := group.Node; n.Selector != "" {
				return &store.Element{Selector: n.Selector, Snippet: n.Snippet, NodeLabel: n.NodeLabel}
			}
			for _, it := range group.Items {
				if it.Node.Selector != "" {
					n := it.Node
					return &store.Element{Selector: n.Selector, Snippet: n.Snippet, NodeLabel: n.NodeLabel}
				}
			}
		}
	}
	return nil
}

// clsElements are the nodes that shifted, with their share of CLS (layout-shifts, present in
// Lighthouse 12 and 13).
func (l *lhr) clsElements() []store.CLSElement {
	out := []store.CLSElement{}
	var d struct {
		Items []struct {
			Node  node     `json:"node"`
			Score *float64 `json:"score"`
		} `json:"items"`
	}
	if a, ok := l.Audits["layout-shifts"]; ok && decodeDetails(a.Details, &d) {
		for _, it := range d.Items {
			if it.Node.Selector == "" || it.Score == nil {
				continue
			}
			out = append(out, store.CLSElement{Selector: it.Node.Selector, Snippet: it.Node.Snippet, ClsContribution: round(*it.Score, 4)})
		}
	}
	return out
}

// diagnostics is Lighthouse's page summary: requests, scripts, tasks, byte weight, latencies.
func (l *lhr) diagnostics() map[string]any {
	var d struct {
		Items []map[string]any `json:"items"`
	}
	if a, ok := l.Audits["diagnostics"]; ok && decodeDetails(a.Details, &d) && len(d.Items) > 0 {
		out := map[string]any{}
		for k, v := range d.Items[0] {
			if f, ok := v.(float64); ok {
				v = round(f, 2)
			}
			out[k] = v
		}
		return out
	}
	return nil
}

// BenchmarkIndex is a report's environment.benchmarkIndex: Lighthouse's measure of the CPU
// that ran it (higher is faster), 0 when the report has none. A runner's result keeps it, so
// that a regression seen on a slower machine is said to be so (analysis.SlowerMachine).
func BenchmarkIndex(report []byte) float64 {
	var r struct {
		Environment struct {
			BenchmarkIndex float64 `json:"benchmarkIndex"`
		} `json:"environment"`
	}
	if json.Unmarshal(report, &r) != nil || r.Environment.BenchmarkIndex < 0 || r.Environment.BenchmarkIndex > 1e6 {
		return 0
	}
	return math.Round(r.Environment.BenchmarkIndex*10) / 10
}
