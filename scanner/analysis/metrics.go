package analysis

import "sitepulse/store"

// Kind tells a 0-100 Lighthouse category score from a measured vital.
type Kind int

const (
	Score Kind = iota // a 0-100 category score, higher is better
	Vital             // a measurement (ms, or unitless for CLS), lower is better
)

// Bands are a vital's web.dev rating: the upper bounds of "good" and of "needs improvement".
type Bands struct{ Good, Poor float64 }

// Metric is everything SitePulse knows about one metric: how the interface names it, how it is
// judged and how people read it. Metrics is the one list of them.
type Metric struct {
	Name  string // the interface's name: "performance", "lcp"
	Kind  Kind
	Op    string // the direction a budget holds it to: store.OpMin for scores, store.OpMax for vitals
	Unit  string // "score", "ms", or "" (CLS)
	Label string // the short label the UI shows
	Title string // the full name, as web.dev writes it
	Bands *Bands // web.dev (TBT: Lighthouse) rating bands; nil when the metric has none
	// Field is true for a CrUX field value (real users, p75), not a lab measurement.
	Field bool
	// Category is true for the four Lighthouse categories, scored on every page (health is
	// a scan's score only, the mean of the four).
	Category bool
	// Budget is true when a budget or alert rule may name the metric.
	Budget bool
	// Crossing is true when moving into a worse band counts as a regression (the Core Web
	// Vitals and their diagnostics; scores regress by points instead).
	Crossing bool

	score func(store.ScanScores) *int // scores: the scan's value
	vital func(store.Vitals) *float64 // vitals: a page's value
}

// Metrics in the interface's order: health and the four categories, then the vitals.
var Metrics = []Metric{
	{Name: "health", Kind: Score, Op: store.OpMin, Unit: "score", Label: "Health", Title: "Health", Budget: true,
		score: func(s store.ScanScores) *int { return s.Health }},
	{Name: "performance", Kind: Score, Category: true, Op: store.OpMin, Unit: "score", Label: "Performance", Title: "Performance", Budget: true,
		score: func(s store.ScanScores) *int { return s.Performance }},
	{Name: "seo", Kind: Score, Category: true, Op: store.OpMin, Unit: "score", Label: "SEO", Title: "SEO", Budget: true,
		score: func(s store.ScanScores) *int { return s.SEO }},
	{Name: "accessibility", Kind: Score, Category: true, Op: store.OpMin, Unit: "score", Label: "Accessibility", Title: "Accessibility", Budget: true,
		score: func(s store.ScanScores) *int { return s.Accessibility }},
	{Name: "bestPractices", Kind: Score, Category: true, Op: store.OpMin, Unit: "score", Label: "Best practices", Title: "Best practices", Budget: true,
		score: func(s store.ScanScores) *int { return s.BestPractices }},
	{Name: "lcp", Kind: Vital, Op: store.OpMax, Unit: "ms", Label: "LCP", Title: "Largest Contentful Paint",
		Bands: &Bands{2500, 4000}, Budget: true, Crossing: true, vital: func(v store.Vitals) *float64 { return v.LCP }},
	{Name: "cls", Kind: Vital, Op: store.OpMax, Unit: "", Label: "CLS", Title: "Cumulative Layout Shift",
		Bands: &Bands{0.1, 0.25}, Budget: true, Crossing: true, vital: func(v store.Vitals) *float64 { return v.CLS }},
	{Name: "inp", Kind: Vital, Op: store.OpMax, Unit: "ms", Label: "INP", Title: "Interaction to Next Paint", Field: true,
		Bands: &Bands{200, 500}, Budget: true, Crossing: true, vital: func(v store.Vitals) *float64 { return v.INP }},
	{Name: "fcp", Kind: Vital, Op: store.OpMax, Unit: "ms", Label: "FCP", Title: "First Contentful Paint",
		Bands: &Bands{1800, 3000}, Budget: true, Crossing: true, vital: func(v store.Vitals) *float64 { return v.FCP }},
	{Name: "ttfb", Kind: Vital, Op: store.OpMax, Unit: "ms", Label: "TTFB", Title: "Time to First Byte",
		Bands: &Bands{800, 1800}, Budget: true, Crossing: true, vital: func(v store.Vitals) *float64 { return v.TTFB }},
	{Name: "tbt", Kind: Vital, Op: store.OpMax, Unit: "ms", Label: "TBT", Title: "Total Blocking Time",
		Bands: &Bands{200, 600}, Budget: true, vital: func(v store.Vitals) *float64 { return v.TBT }},
	{Name: "speedIndex", Kind: Vital, Op: store.OpMax, Unit: "ms", Label: "Speed Index", Title: "Speed Index",
		vital: func(v store.Vitals) *float64 { return v.SpeedIndex }},
	{Name: "tti", Kind: Vital, Op: store.OpMax, Unit: "ms", Label: "Time to Interactive", Title: "Time to Interactive",
		vital: func(v store.Vitals) *float64 { return v.TTI }},
}

var byName = func() map[string]*Metric {
	m := make(map[string]*Metric, len(Metrics))
	for i := range Metrics {
		m[Metrics[i].Name] = &Metrics[i]
	}
	return m
}()

// Lookup finds a metric by its interface name.
func Lookup(name string) (Metric, bool) {
	if m, ok := byName[name]; ok {
		return *m, true
	}
	return Metric{}, false
}

// Label is a metric's short label, or its name when it has none.
func Label(name string) string {
	if m, ok := byName[name]; ok {
		return m.Label
	}
	return name
}

// BudgetMetrics are the metrics a budget or alert rule may name, scores first.
func BudgetMetrics() []Metric { return selectMetrics(func(m Metric) bool { return m.Budget }) }

// BudgetVitals are the vitals a budget may name: the vitals the UI and the report show per page.
func BudgetVitals() []Metric {
	return selectMetrics(func(m Metric) bool { return m.Budget && m.Kind == Vital })
}

func selectMetrics(keep func(Metric) bool) []Metric {
	var out []Metric
	for _, m := range Metrics {
		if keep(m) {
			out = append(out, m)
		}
	}
	return out
}

// Rate rates a value of the metric: good, needs-improvement or poor; "" when it has no bands.
func (m Metric) Rate(v float64) string {
	switch {
	case m.Bands == nil:
		return ""
	case v <= m.Bands.Good:
		return RatingGood
	case v <= m.Bands.Poor:
		return RatingNI
	}
	return RatingPoor
}
