package analysis

import (
	"encoding/json"
	"reflect"
	"testing"

	"sitepulse/store"
)

func page(path string, strategy store.Strategy, perf, seo, a11y, bp *int, vitals store.Vitals) store.PageResult {
	return store.PageResult{PagePath: path, Strategy: strategy, Scores: store.PageScores{Performance: perf, SEO: seo, Accessibility: a11y, BestPractices: bp}, CoreWebVitals: vitals}
}

func TestScanScores(t *testing.T) {
	tests := []struct {
		name    string
		results []store.PageResult
		want    string
	}{
		{"no results has no scores", nil, `{"health":null,"performance":null,"seo":null,"accessibility":null,"bestPractices":null}`},
		{"one page is its own scores", []store.PageResult{page("/", "mobile", ip(50), ip(90), ip(80), ip(70), store.Vitals{})},
			`{"health":73,"performance":50,"seo":90,"accessibility":80,"bestPractices":70}`},
		{"means are rounded over both strategies", []store.PageResult{
			page("/", "mobile", ip(16), ip(92), ip(82), ip(73), store.Vitals{}),
			page("/", "desktop", ip(43), ip(92), ip(82), ip(77), store.Vitals{}),
			page("/a", "mobile", ip(100), ip(25), ip(28), ip(92), store.Vitals{})},
			`{"health":67,"performance":53,"seo":70,"accessibility":64,"bestPractices":81}`},
		{"null scores are left out of the mean", []store.PageResult{
			page("/", "mobile", nil, ip(90), nil, nil, store.Vitals{}),
			page("/a", "mobile", ip(40), ip(80), nil, nil, store.Vitals{})},
			`{"health":63,"performance":40,"seo":85,"accessibility":null,"bestPractices":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := show(ScanScores(tt.results)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestVitalRating(t *testing.T) {
	tests := []struct {
		metric string
		v      float64
		want   string
	}{
		{"lcp", 2500, "good"}, {"lcp", 2501, "needs-improvement"}, {"lcp", 4000, "needs-improvement"}, {"lcp", 4001, "poor"},
		{"cls", 0.1, "good"}, {"cls", 0.11, "needs-improvement"}, {"cls", 0.26, "poor"},
		{"inp", 200, "good"}, {"inp", 500, "needs-improvement"}, {"inp", 501, "poor"},
		{"fcp", 1800, "good"}, {"fcp", 3001, "poor"}, {"ttfb", 800, "good"}, {"ttfb", 1801, "poor"},
		{"speedIndex", 1, ""},
	}
	for _, tt := range tests {
		if got := VitalRating(tt.metric, tt.v); got != tt.want {
			t.Errorf("VitalRating(%s, %v) = %q, want %q", tt.metric, tt.v, got, tt.want)
		}
	}
}

func TestRegressions(t *testing.T) {
	v := func(lcp, cls float64) store.Vitals { return store.Vitals{LCP: fp(lcp), CLS: fp(cls)} }
	tests := []struct {
		name        string
		before, now []store.PageResult
		want        string
	}{
		{"no previous scan, no regressions", nil, []store.PageResult{page("/", "mobile", ip(10), nil, nil, nil, v(9000, 1))}, `[]`},
		{"a drop of exactly 5 is not a regression",
			[]store.PageResult{page("/", "mobile", ip(90), nil, nil, nil, v(1000, 0))},
			[]store.PageResult{page("/", "mobile", ip(85), nil, nil, nil, v(1000, 0))}, `[]`},
		{"a drop of 6 is",
			[]store.PageResult{page("/", "mobile", ip(90), ip(100), nil, nil, v(1000, 0))},
			[]store.PageResult{page("/", "mobile", ip(84), ip(100), nil, nil, v(1000, 0))},
			`[{"metric":"performance","from":90,"to":84,"delta":-6,"pagePath":"/","strategy":"mobile"}]`},
		{"a vital worse inside its band is not a regression",
			[]store.PageResult{page("/", "mobile", nil, nil, nil, nil, v(2600, 0.11))},
			[]store.PageResult{page("/", "mobile", nil, nil, nil, nil, v(3900, 0.24))}, `[]`},
		{"crossing into a worse band is, for each vital",
			[]store.PageResult{page("/", "mobile", nil, nil, nil, nil, v(2400, 0.05))},
			[]store.PageResult{page("/", "mobile", nil, nil, nil, nil, v(4100, 0.12))},
			`[{"metric":"lcp","from":2400,"to":4100,"delta":1700,"pagePath":"/","strategy":"mobile"},{"metric":"cls","from":0.05,"to":0.12,"delta":0.07,"pagePath":"/","strategy":"mobile"}]`},
		{"improvements are not regressions",
			[]store.PageResult{page("/", "mobile", ip(10), nil, nil, nil, v(9000, 0.5))},
			[]store.PageResult{page("/", "mobile", ip(99), nil, nil, nil, v(900, 0))}, `[]`},
		{"pages compare with the same path and strategy only",
			[]store.PageResult{page("/", "desktop", ip(100), nil, nil, nil, v(500, 0)), page("/old", "mobile", ip(100), nil, nil, nil, v(500, 0))},
			[]store.PageResult{page("/", "mobile", ip(10), nil, nil, nil, v(9000, 1)), page("/new", "mobile", ip(10), nil, nil, nil, v(9000, 1))}, `[]`},
		{"a null score or vital on either side is skipped",
			[]store.PageResult{page("/", "mobile", nil, ip(100), nil, nil, store.Vitals{})},
			[]store.PageResult{page("/", "mobile", ip(1), nil, nil, nil, v(9000, 1))}, `[]`},
		{"regressions are ordered by path, strategy, then metric",
			[]store.PageResult{page("/b", "mobile", ip(90), nil, nil, nil, v(1000, 0)), page("/a", "mobile", ip(90), ip(90), nil, nil, v(1000, 0)), page("/a", "desktop", ip(90), nil, nil, nil, v(1000, 0))},
			[]store.PageResult{page("/b", "mobile", ip(50), nil, nil, nil, v(1000, 0)), page("/a", "mobile", ip(90), ip(80), nil, nil, v(5000, 0)), page("/a", "desktop", ip(70), nil, nil, nil, v(1000, 0))},
			`[{"metric":"performance","from":90,"to":70,"delta":-20,"pagePath":"/a","strategy":"desktop"},{"metric":"seo","from":90,"to":80,"delta":-10,"pagePath":"/a","strategy":"mobile"},{"metric":"lcp","from":1000,"to":5000,"delta":4000,"pagePath":"/a","strategy":"mobile"},{"metric":"performance","from":90,"to":50,"delta":-40,"pagePath":"/b","strategy":"mobile"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := show(Regressions(tt.before, tt.now)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestCheckBudgets(t *testing.T) {
	results := []store.PageResult{
		page("/", "mobile", ip(16), nil, nil, nil, store.Vitals{LCP: fp(8305), CLS: fp(0.39)}),
		page("/b", "mobile", ip(92), nil, nil, nil, store.Vitals{LCP: fp(2654), CLS: fp(0.4)}),
		page("/", "desktop", ip(43), nil, nil, nil, store.Vitals{LCP: fp(9999), CLS: fp(0.9)}),
	}
	tests := []struct {
		name    string
		budgets map[string]store.Budget
		rules   []store.AlertRule
		results []store.PageResult
		want    string
	}{
		{"no budgets, no violations", nil, nil, results, `[]`},
		{"a score under its minimum violates", map[string]store.Budget{"performance": {Threshold: 90}, "health": {Threshold: 10}}, nil, results,
			`[{"metric":"performance","threshold":90,"actual":50,"operator":"min"}]`},
		{"a vital over its maximum violates on the worst mobile page", map[string]store.Budget{"lcp": {Threshold: 2500}, "cls": {Threshold: 0.1}}, nil, results,
			`[{"metric":"lcp","threshold":2500,"actual":8305,"operator":"max","pagePath":"/","strategy":"mobile"},{"metric":"cls","threshold":0.1,"actual":0.4,"operator":"max","pagePath":"/b","strategy":"mobile"}]`},
		{"desktop counts when there is no mobile result", map[string]store.Budget{"lcp": {Threshold: 2500}}, nil, results[2:],
			`[{"metric":"lcp","threshold":2500,"actual":9999,"operator":"max","pagePath":"/","strategy":"desktop"}]`},
		{"budgets that hold give nothing", map[string]store.Budget{"performance": {Threshold: 10}, "lcp": {Threshold: 10000}}, nil, results, `[]`},
		{"a metric without data cannot be checked", map[string]store.Budget{"inp": {Threshold: 1}, "seo": {Threshold: 100}}, nil, results, `[]`},
		{"a mobile score budget is checked against the mobile score", map[string]store.Budget{"performance": {Threshold: 80, Strategy: "mobile"}}, nil, results,
			`[{"metric":"performance","threshold":80,"actual":54,"operator":"min","strategy":"mobile"}]`},
		{"a desktop score budget ignores the mobile results", map[string]store.Budget{"performance": {Threshold: 40, Strategy: "desktop"}, "health": {Threshold: 50, Strategy: "desktop"}}, nil, results,
			`[{"metric":"health","threshold":50,"actual":43,"operator":"min","strategy":"desktop"}]`},
		{"a desktop vital budget is checked on the worst desktop page", map[string]store.Budget{"lcp": {Threshold: 2500, Strategy: "desktop"}}, nil, results,
			`[{"metric":"lcp","threshold":2500,"actual":9999,"operator":"max","pagePath":"/","strategy":"desktop"}]`},
		{"a strategy the scan did not audit cannot be checked", map[string]store.Budget{"performance": {Threshold: 100, Strategy: "mobile"}, "cls": {Threshold: 0, Strategy: "mobile"}}, nil, results[2:], `[]`},
		{"both is today's behaviour", map[string]store.Budget{"performance": {Threshold: 90, Strategy: "both"}}, nil, results,
			`[{"metric":"performance","threshold":90,"actual":50,"operator":"min"}]`},
		{"alert rules use their own operator", nil, []store.AlertRule{{Metric: "tbt", Operator: "max", Threshold: 0}, {Metric: "performance", Operator: "max", Threshold: 40}, {Metric: "lcp", Operator: "min", Threshold: 9000}}, results,
			`[{"metric":"performance","threshold":40,"actual":50,"operator":"max"},{"metric":"lcp","threshold":9000,"actual":8305,"operator":"min","pagePath":"/","strategy":"mobile"}]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := show(CheckBudgets(ScanScores(tt.results), tt.results, tt.budgets, tt.rules)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestSeverity(t *testing.T) {
	for score, want := range map[float64]string{0: "critical", 0.01: "serious", 0.49: "serious", 0.5: "moderate", 0.74: "moderate", 0.75: "minor", 0.99: "minor"} {
		if got := Severity(score); got != want {
			t.Errorf("Severity(%v) = %s, want %s", score, got, want)
		}
	}
}

func ip(v int) *int         { return &v }
func fp(v float64) *float64 { return &v }
func show(p any) string     { b, _ := json.Marshal(p); return string(b) }

func TestWorstPageTies(t *testing.T) {
	tie := []store.PageResult{page("/b", "mobile", ip(50), nil, nil, nil, store.Vitals{}), page("/a", "mobile", ip(50), nil, nil, nil, store.Vitals{}), page("/c", "mobile", nil, nil, nil, nil, store.Vitals{})}
	if w, _ := WorstPage(tie, "mobile"); w.PagePath != "/a" {
		t.Errorf("tie broken to %s", w.PagePath)
	}
	if _, ok := WorstPage(tie, "desktop"); ok {
		t.Error("found a desktop page in a mobile scan")
	}
}

// TestChecks: every budget and rule is judged, held or broken or unmeasured, in CheckBudgets'
// order, and the broken measured ones are exactly CheckBudgets' violations.
func TestChecks(t *testing.T) {
	results := []store.PageResult{
		page("/", "mobile", ip(16), nil, nil, nil, store.Vitals{LCP: fp(8305), CLS: fp(0.05)}),
		page("/b", "mobile", ip(92), nil, nil, nil, store.Vitals{LCP: fp(2654)}),
	}
	budgets := map[string]store.Budget{"performance": {Threshold: 90}, "cls": {Threshold: 0.1}, "inp": {Threshold: 200}, "lcp": {Threshold: 2500, Strategy: "mobile"}}
	rules := []store.AlertRule{{Metric: "seo", Operator: "min", Threshold: 50}, {Metric: "performance", Operator: "max", Threshold: 99}}
	type row struct {
		metric, op string
		rule       bool
		measured   bool
		actual     float64
		path       string
		pass       bool
	}
	var got []row
	checks := Checks(ScanScores(results), results, budgets, rules)
	for _, c := range checks {
		got = append(got, row{c.Metric, c.Operator, c.Rule, c.Measured, c.Actual, c.PagePath, c.Pass})
	}
	want := []row{
		{"performance", "min", false, true, 54, "", false},
		{"lcp", "max", false, true, 8305, "/", false},
		{"cls", "max", false, true, 0.05, "/", true},
		{"inp", "max", false, false, 0, "", true}, // no field data: not checked
		{"seo", "min", true, false, 0, "", true},  // no SEO score: not checked
		{"performance", "max", true, true, 54, "", true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("checks\ngot  %+v\nwant %+v", got, want)
	}
	var broken []Violation
	for _, c := range checks {
		if c.Measured && !c.Pass {
			broken = append(broken, c.Violation())
		}
	}
	if v := CheckBudgets(ScanScores(results), results, budgets, rules); !reflect.DeepEqual(v, broken) {
		t.Errorf("CheckBudgets = %+v, the broken checks %+v", v, broken)
	}
}
