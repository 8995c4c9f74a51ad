package store_test

import (
	"reflect"
	"sync"
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

// testBudgetInputsByKey: the key and the inputs in one call; an unknown or revoked key finds
// nobody, another user's site finds the caller but no site, and the key's use is recorded.
func testBudgetInputsByKey(t *testing.T, s store.Store) {
	a, b := newUser(t, s, "a@example.com"), newUser(t, s, "b@example.com")
	site := newSite(t, s, a, "shop")
	other := newSite(t, s, b, "other")
	latest := completedScan(t, s, site, t0, 70)
	must(t, s.SetBudgets(ctx, a.ID, site.ID, map[string]float64{"performance": 90}))
	secret, hash := store.NewSecret("svc_")
	k := store.APIKey{ID: store.NewID(), UserID: a.ID, Name: "ci", KeyHash: hash, Prefix: secret[:12], CreatedAt: t0}
	must(t, s.CreateAPIKey(ctx, k))

	in, err := s.BudgetInputsByKey(ctx, hash, site.ID, t0.Add(time.Hour))
	must(t, err)
	byUser, _ := s.BudgetInputs(ctx, a.ID, site.ID)
	if in.UserID != a.ID || !reflect.DeepEqual(in, byUser) || in.Scan == nil || in.Scan.ID != latest.ID {
		t.Errorf("by key %+v\nby user %+v", in, byUser)
	}
	keys, _ := s.APIKeys(ctx, a.ID)
	if keys[0].LastUsedAt == nil || !keys[0].LastUsedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("key use not recorded: %+v", keys[0])
	}

	for name, siteID := range map[string]string{"another user's site": other.ID, "an unknown site": store.NewID(), "a malformed id": "x"} {
		in, err := s.BudgetInputsByKey(ctx, hash, siteID, t0)
		wantErr(t, err, store.ErrNotFound)
		if in.UserID != a.ID || in.SiteName != "" {
			t.Errorf("%s: %+v", name, in)
		}
	}
	in, err = s.BudgetInputsByKey(ctx, store.HashSecret("svc_unknown"), site.ID, t0)
	wantErr(t, err, store.ErrNotFound)
	if in.UserID != "" {
		t.Errorf("unknown key found user %s", in.UserID)
	}
	must(t, s.RevokeAPIKey(ctx, a.ID, k.ID, t0))
	in, err = s.BudgetInputsByKey(ctx, hash, site.ID, t0)
	wantErr(t, err, store.ErrNotFound)
	if in.UserID != "" || in.SiteName != "" {
		t.Errorf("revoked key: %+v", in)
	}
}

// testConcurrentKeyUse: many requests of one key crossing the minute together all authenticate
// (through both lookups), and the use is recorded.
func testConcurrentKeyUse(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "shop")
	secret, hash := store.NewSecret("svc_")
	must(t, s.CreateAPIKey(ctx, store.APIKey{ID: store.NewID(), UserID: a.ID, Name: "ci", KeyHash: hash, Prefix: secret[:12], CreatedAt: t0}))
	at := t0.Add(time.Hour)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := 0; i < 20; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := s.APIKeyByHash(ctx, hash, at)
			errs <- err
		}()
		go func() {
			defer wg.Done()
			_, err := s.BudgetInputsByKey(ctx, hash, site.ID, at)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		must(t, err)
	}
	keys, _ := s.APIKeys(ctx, a.ID)
	if keys[0].LastUsedAt == nil || !keys[0].LastUsedAt.Equal(at) {
		t.Errorf("last used = %v, want %v", keys[0].LastUsedAt, at)
	}
}
