package store_test

import (
	"reflect"
	"testing"
	"time"

	"sitepulse/store"
)

// testBudgetInputs: one load gives the site's name, latest completed scan, budgets, rules and
// the scan's scores and vitals per page, for the owner only.
func testBudgetInputs(t *testing.T, s store.Store) {
	a, b := newUser(t, s, "a@example.com"), newUser(t, s, "b@example.com")
	site := newSite(t, s, a, "shop")

	in, err := s.BudgetInputs(ctx, a.ID, site.ID)
	must(t, err)
	if in.SiteName != "shop" || in.Scan != nil || len(in.Budgets) != 0 || len(in.Rules) != 0 || len(in.Results) != 0 {
		t.Errorf("site without scans or budgets: %+v", in)
	}
	for name, id := range map[string][2]string{
		"another user's site": {b.ID, site.ID},
		"an unknown site":     {a.ID, store.NewID()},
		"a malformed id":      {a.ID, "not-a-uuid"},
	} {
		if _, err := s.BudgetInputs(ctx, id[0], id[1]); err == nil {
			t.Errorf("%s: no error", name)
		} else {
			wantErr(t, err, store.ErrNotFound)
		}
	}

	completedScan(t, s, site, t0, 70)
	latest := completedScan(t, s, site, t0.Add(time.Hour), 60)
	must(t, s.SetBudgets(ctx, a.ID, site.ID, map[string]float64{"performance": 90, "cls": 0.1}))
	r1 := store.AlertRule{ID: store.NewID(), SiteID: site.ID, Metric: "tbt", Operator: store.OpMax, Threshold: 300, CreatedAt: t0.Add(time.Second)}
	r2 := store.AlertRule{ID: store.NewID(), SiteID: site.ID, Metric: "seo", Operator: store.OpMin, Threshold: 80, CreatedAt: t0}
	must(t, s.AddAlertRule(ctx, a.ID, r1))
	must(t, s.AddAlertRule(ctx, a.ID, r2))

	in, err = s.BudgetInputs(ctx, a.ID, site.ID)
	must(t, err)
	if in.Scan == nil || !reflect.DeepEqual(*in.Scan, latest) {
		t.Errorf("scan = %+v, want %+v", in.Scan, latest)
	}
	if want := map[string]float64{"performance": 90, "cls": 0.1}; !reflect.DeepEqual(in.Budgets, want) {
		t.Errorf("budgets = %v, want %v", in.Budgets, want)
	}
	rules, _ := s.AlertRules(ctx, a.ID, site.ID)
	if !reflect.DeepEqual(in.Rules, rules) {
		t.Errorf("rules = %+v, want %+v", in.Rules, rules)
	}
	full, _ := s.PageResults(ctx, a.ID, latest.ID)
	var want []store.PageResult
	for _, r := range full {
		want = append(want, store.PageResult{ScanID: r.ScanID, PagePath: r.PagePath, Strategy: r.Strategy, Scores: r.Scores, CoreWebVitals: r.CoreWebVitals})
	}
	if !reflect.DeepEqual(in.Results, want) {
		t.Errorf("results = %+v, want %+v", in.Results, want)
	}
}
