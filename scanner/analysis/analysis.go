package analysis

import (
	"math"
	"sort"

	"sitepulse/store"
)

// This file is the analysis every surface shares: pure functions of store types, so the MCP
// tools, the budget check, the web UI and the pipeline give the same answers.

// ScoreOf reads a category score of a page result by its interface name.
func ScoreOf(s store.PageScores, metric string) *int {
	return ScanScoreOf(store.ScanScores{Performance: s.Performance, SEO: s.SEO, Accessibility: s.Accessibility, BestPractices: s.BestPractices}, metric)
}

// ScanScoreOf reads a scan score by its interface name, health included.
func ScanScoreOf(s store.ScanScores, metric string) *int {
	if m, ok := byName[metric]; ok && m.score != nil {
		return m.score(s)
	}
	return nil
}

// VitalOf reads a vital of a page result by its interface name.
func VitalOf(v store.Vitals, metric string) *float64 {
	if m, ok := byName[metric]; ok && m.vital != nil {
		return m.vital(v)
	}
	return nil
}

// categories are the four Lighthouse categories in the interface's order.
var categories = func() (out []string) {
	for _, m := range selectMetrics(func(m Metric) bool { return m.Category }) {
		out = append(out, m.Name)
	}
	return out
}()

// ScanScores are a scan's scores: each category the rounded mean over the scan's
// page results of both strategies, ignoring null scores; health the rounded mean of the four.
func ScanScores(results []store.PageResult) store.ScanScores {
	mean := func(metric string) *int {
		sum, n := 0, 0
		for _, r := range results {
			if v := ScoreOf(r.Scores, metric); v != nil {
				sum, n = sum+*v, n+1
			}
		}
		if n == 0 {
			return nil
		}
		v := int(math.Round(float64(sum) / float64(n)))
		return &v
	}
	s := store.ScanScores{Performance: mean("performance"), SEO: mean("seo"), Accessibility: mean("accessibility"), BestPractices: mean("bestPractices")}
	sum, n := 0, 0
	for _, v := range []*int{s.Performance, s.SEO, s.Accessibility, s.BestPractices} {
		if v != nil {
			sum, n = sum+*v, n+1
		}
	}
	if n > 0 {
		h := int(math.Round(float64(sum) / float64(n)))
		s.Health = &h
	}
	return s
}

// Ratings of a vital.
const (
	RatingGood = "good"
	RatingNI   = "needs-improvement"
	RatingPoor = "poor"
)

// VitalRating rates a vital value: good, needs-improvement or poor; "" for a metric without bands.
func VitalRating(metric string, v float64) string {
	if m, ok := byName[metric]; ok {
		return m.Rate(v)
	}
	return ""
}

var ratingRank = map[string]int{RatingGood: 0, RatingNI: 1, RatingPoor: 2}

// ScoreRating rates a 0-100 Lighthouse score the way Lighthouse colours it.
func ScoreRating(score int) string {
	switch {
	case score >= 90:
		return RatingGood
	case score >= 50:
		return RatingNI
	}
	return RatingPoor
}

// Regression is a metric of one page that got worse between two scans.
type Regression struct {
	Metric   string         `json:"metric"`
	From     float64        `json:"from"`
	To       float64        `json:"to"`
	Delta    float64        `json:"delta"`
	PagePath string         `json:"pagePath"`
	Strategy store.Strategy `json:"strategy"`
}

// RegressionThreshold is the score drop that counts as a regression: more than 5 points.
const RegressionThreshold = 5

// Regressions compares two scans page by page, same path and strategy: a category
// score that dropped by more than 5 points, or a vital that moved into a worse web.dev band.
// They come ordered by page path, strategy, then metric (categories first, then vitals).
func Regressions(previous, latest []store.PageResult) []Regression {
	before := map[store.PageKey]store.PageResult{}
	for _, r := range previous {
		before[store.PageKey{PagePath: r.PagePath, Strategy: r.Strategy}] = r
	}
	sorted := append([]store.PageResult(nil), latest...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].PagePath != sorted[j].PagePath {
			return sorted[i].PagePath < sorted[j].PagePath
		}
		return sorted[i].Strategy < sorted[j].Strategy
	})
	out := []Regression{}
	for _, now := range sorted {
		was, ok := before[store.PageKey{PagePath: now.PagePath, Strategy: now.Strategy}]
		if !ok {
			continue
		}
		add := func(metric string, from, to float64) {
			out = append(out, Regression{Metric: metric, From: from, To: to, Delta: round(to-from, 4), PagePath: now.PagePath, Strategy: now.Strategy})
		}
		for _, m := range categories {
			from, to := ScoreOf(was.Scores, m), ScoreOf(now.Scores, m)
			if from != nil && to != nil && *from-*to > RegressionThreshold {
				add(m, float64(*from), float64(*to))
			}
		}
		for _, m := range Metrics {
			if !m.Crossing {
				continue
			}
			from, to := m.vital(was.CoreWebVitals), m.vital(now.CoreWebVitals)
			if from != nil && to != nil && ratingRank[m.Rate(*to)] > ratingRank[m.Rate(*from)] {
				add(m.Name, *from, *to)
			}
		}
	}
	return out
}

// Improvements are the metrics that got better from previous to latest by the rules of
// Regressions read backwards (a score up more than RegressionThreshold points, a vital into a
// better band): a recovery, such as the demo's scan after its regressions.
func Improvements(previous, latest []store.PageResult) []Regression {
	out := Regressions(latest, previous)
	for i, r := range out {
		out[i].From, out[i].To, out[i].Delta = r.To, r.From, -r.Delta
	}
	return out
}

// Violation is a budget or alert rule the scan broke. PagePath and Strategy name the worst page
// for vitals; Strategy names the strategy of a score budget that applies to one.
type Violation struct {
	Metric    string         `json:"metric"`
	Threshold float64        `json:"threshold"`
	Actual    float64        `json:"actual"`
	Operator  string         `json:"operator"`
	PagePath  string         `json:"pagePath,omitempty"`
	Strategy  store.Strategy `json:"strategy,omitempty"`
}

// BudgetMetric answers whether a metric can carry a budget or alert rule, and its default
// operator: min for scores, max for vitals.
func BudgetMetric(metric string) (operator string, ok bool) {
	if m, found := byName[metric]; found && m.Budget {
		return m.Op, true
	}
	return "", false
}

// actual is the value a budget of metric is checked against. For strategy both (or ""): the
// scan's score for scores; for vitals the worst page value, on mobile results when the scan has
// any. For mobile or desktop: the score over that strategy's results, or its worst page.
func actual(scan store.ScanScores, results []store.PageResult, metric string, strategy store.Strategy) (v float64, path string, strat store.Strategy, ok bool) {
	only := strategy
	if only == store.StrategyBoth {
		only = ""
	}
	if op, _ := BudgetMetric(metric); op == store.OpMin {
		if only != "" {
			var mine []store.PageResult
			for _, r := range results {
				if r.Strategy == only {
					mine = append(mine, r)
				}
			}
			scan = ScanScores(mine)
		}
		s := ScanScoreOf(scan, metric)
		if s == nil {
			return 0, "", "", false
		}
		return float64(*s), "", only, true
	}
	// Filter in place rather than copying the results: the budget check runs this per metric
	// on every request.
	if only == "" {
		for i := range results {
			if results[i].Strategy == store.StrategyMobile {
				only = store.StrategyMobile
				break
			}
		}
	}
	for i := range results {
		r := &results[i]
		if only != "" && r.Strategy != only {
			continue
		}
		x := VitalOf(r.CoreWebVitals, metric)
		if x != nil && (!ok || *x > v || *x == v && r.PagePath < path) {
			v, path, strat, ok = *x, r.PagePath, r.Strategy, true
		}
	}
	return v, path, strat, ok
}

// SiteVital is a scan's value of a vital as a budget for both strategies reads it: the worst
// page, on mobile results when the scan has any; nil when no page has it.
func SiteVital(results []store.PageResult, metric string) *float64 {
	v, _, _, ok := actual(store.ScanScores{}, results, metric, store.StrategyBoth)
	if !ok {
		return nil
	}
	return &v
}

// CheckBudgets evaluates a scan against a site's budgets (by metric, with each metric's default
// operator and the budget's strategy) and its alert rules (explicit operators, both strategies).
// A metric the scan has no value for (INP without field data, say) cannot be checked and is not
// a violation. Budgets come first in the order of Metrics, then rules in their order.
func CheckBudgets(scan store.ScanScores, results []store.PageResult, budgets map[string]store.Budget, rules []store.AlertRule) []Violation {
	out := make([]Violation, 0, len(budgets)+len(rules))
	eachCheck(scan, results, budgets, rules, func(c Check) {
		if c.Measured && !c.Pass {
			out = append(out, c.Violation())
		}
	})
	return out
}

// Check is one budget or alert rule judged against a scan, held or not: what CI test reports
// list (one test case each), where CheckBudgets keeps only the broken ones.
type Check struct {
	Metric    string
	Operator  string         // store.OpMin or store.OpMax
	Threshold float64        //
	Strategy  store.Strategy // the budget's strategy (both for an alert rule)
	Rule      bool           // an alert rule rather than a budget
	// Measured is false when the scan has no value to check (INP without field data, a
	// strategy it did not audit): the check was not made, and is not a violation.
	Measured bool
	Actual   float64
	PagePath string         // the worst page, for a vital
	On       store.Strategy // the strategy Actual was measured on, when one
	Pass     bool
}

// Violation is the check as CheckBudgets reports it when broken.
func (c Check) Violation() Violation {
	return Violation{Metric: c.Metric, Threshold: c.Threshold, Actual: c.Actual, Operator: c.Operator, PagePath: c.PagePath, Strategy: c.On}
}

// Checks judges every budget and alert rule of a site against a scan, in CheckBudgets' order.
func Checks(scan store.ScanScores, results []store.PageResult, budgets map[string]store.Budget, rules []store.AlertRule) []Check {
	out := make([]Check, 0, len(budgets)+len(rules))
	eachCheck(scan, results, budgets, rules, func(c Check) { out = append(out, c) })
	return out
}

// eachCheck judges the budgets, in the order of Metrics, then the rules in their order.
func eachCheck(scan store.ScanScores, results []store.PageResult, budgets map[string]store.Budget, rules []store.AlertRule, fn func(Check)) {
	judge := func(c Check) {
		c.Actual, c.PagePath, c.On, c.Measured = actual(scan, results, c.Metric, c.Strategy)
		c.Pass = !c.Measured || !(c.Operator == store.OpMin && c.Actual < c.Threshold || c.Operator == store.OpMax && c.Actual > c.Threshold)
		fn(c)
	}
	for _, m := range Metrics {
		if b, ok := budgets[m.Name]; ok && m.Budget {
			judge(Check{Metric: m.Name, Operator: m.Op, Threshold: b.Threshold, Strategy: b.Strategy})
		}
	}
	for _, r := range rules {
		judge(Check{Metric: r.Metric, Operator: r.Operator, Threshold: r.Threshold, Strategy: store.StrategyBoth, Rule: true})
	}
}

// Severity of an accessibility audit from its score (interface MCP rule 1).
func Severity(score float64) string {
	switch {
	case score == 0:
		return "critical"
	case score < 0.5:
		return "serious"
	case score < 0.75:
		return "moderate"
	}
	return "minor"
}

// Severities in descending order of urgency.
var Severities = []string{"critical", "serious", "moderate", "minor"}

// A11yGroup is one failing accessibility audit across a scan's pages.
type A11yGroup struct {
	ID            string   `json:"id"`
	Title         string   `json:"title"`
	Description   string   `json:"description"`
	Severity      string   `json:"severity"`
	PagesAffected int      `json:"pagesAffected"`
	AffectedPaths []string `json:"affectedPaths"`
	lowest        float64
}

// A11ySummary is get_accessibility_issues' analysis of a scan.
type A11ySummary struct {
	Issues                []A11yGroup `json:"issues"`
	PagesAnalyzed         int         `json:"pagesAnalyzed"`
	AvgAccessibilityScore *int        `json:"avgAccessibilityScore"`
}

// AccessibilityIssues groups a scan's failing accessibility audits by audit id;
// a group's severity comes from its lowest score. severity "all" or "" keeps every group.
// Groups are ordered by severity, then pages affected, then id.
func AccessibilityIssues(results []store.PageResult, severity string) A11ySummary {
	groups := map[string]*A11yGroup{}
	paths := map[string]bool{}
	sum, n := 0, 0
	for _, r := range results {
		paths[r.PagePath] = true
		if r.Scores.Accessibility != nil {
			sum, n = sum+*r.Scores.Accessibility, n+1
		}
		for _, is := range r.AccessibilityIssues {
			if is.Score == nil {
				continue
			}
			g, ok := groups[is.ID]
			if !ok {
				g = &A11yGroup{ID: is.ID, Title: is.Title, Description: is.Description, lowest: *is.Score, AffectedPaths: []string{}}
				groups[is.ID] = g
			}
			g.lowest = min(g.lowest, *is.Score)
			if !contains(g.AffectedPaths, r.PagePath) {
				g.AffectedPaths = append(g.AffectedPaths, r.PagePath)
			}
		}
	}
	out := A11ySummary{Issues: []A11yGroup{}, PagesAnalyzed: len(paths)}
	if n > 0 {
		avg := int(math.Round(float64(sum) / float64(n)))
		out.AvgAccessibilityScore = &avg
	}
	rank := map[string]int{}
	for i, s := range Severities {
		rank[s] = i
	}
	for _, g := range groups {
		g.Severity = Severity(g.lowest)
		g.PagesAffected = len(g.AffectedPaths)
		sort.Strings(g.AffectedPaths)
		if severity == "" || severity == "all" || severity == g.Severity {
			out.Issues = append(out.Issues, *g)
		}
	}
	sort.Slice(out.Issues, func(i, j int) bool {
		a, b := out.Issues[i], out.Issues[j]
		if rank[a.Severity] != rank[b.Severity] {
			return rank[a.Severity] < rank[b.Severity]
		}
		if a.PagesAffected != b.PagesAffected {
			return a.PagesAffected > b.PagesAffected
		}
		return a.ID < b.ID
	})
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// ThirdPartyImpact is one third-party domain across a scan's pages.
type ThirdPartyImpact struct {
	Domain             string  `json:"domain"`
	TotalTransferBytes float64 `json:"totalTransferBytes"`
	AvgBlockingMs      float64 `json:"avgBlockingMs"`
	PagesAffected      int     `json:"pagesAffected"`
	ImpactScore        float64 `json:"impactScore"`
}

// ThirdParties aggregates third-party scripts over a scan: its mobile results, or
// desktop when it has no mobile ones. Transfer is summed, blocking time averaged over the pages
// where the domain appears, impact = average blocking x pages affected, highest impact first.
// It also returns how many pages were analysed.
func ThirdParties(results []store.PageResult) ([]ThirdPartyImpact, int) {
	pool := filterStrategy(results, store.StrategyMobile)
	if len(pool) == 0 {
		pool = filterStrategy(results, store.StrategyDesktop)
	}
	type agg struct {
		bytes, blocking float64
		seen            int
		paths           map[string]bool
	}
	byDomain := map[string]*agg{}
	paths := map[string]bool{}
	for _, r := range pool {
		paths[r.PagePath] = true
		for _, tp := range r.ThirdPartyScripts {
			a, ok := byDomain[tp.Domain]
			if !ok {
				a = &agg{paths: map[string]bool{}}
				byDomain[tp.Domain] = a
			}
			a.bytes += tp.TransferSize
			a.blocking += tp.BlockingTime
			a.seen++
			a.paths[r.PagePath] = true
		}
	}
	out := []ThirdPartyImpact{}
	for d, a := range byDomain {
		avg := round(a.blocking/float64(a.seen), 1)
		out = append(out, ThirdPartyImpact{Domain: d, TotalTransferBytes: a.bytes, AvgBlockingMs: avg,
			PagesAffected: len(a.paths), ImpactScore: round(avg*float64(len(a.paths)), 1)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].ImpactScore != out[j].ImpactScore {
			return out[i].ImpactScore > out[j].ImpactScore
		}
		return out[i].Domain < out[j].Domain
	})
	return out, len(paths)
}

func filterStrategy(results []store.PageResult, strategy store.Strategy) []store.PageResult {
	var out []store.PageResult
	for _, r := range results {
		if r.Strategy == strategy {
			out = append(out, r)
		}
	}
	return out
}

// WorstPage is the page with the lowest performance score for a strategy, ties
// broken by path; pages without a performance score come last. ok is false when the scan has no
// result for the strategy.
func WorstPage(results []store.PageResult, strategy store.Strategy) (store.PageResult, bool) {
	var worst store.PageResult
	found := false
	for _, r := range filterStrategy(results, strategy) {
		if !found || store.WorsePage(r, worst) {
			worst, found = r, true
		}
	}
	return worst, found
}

func round(v float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(v*p) / p
}
