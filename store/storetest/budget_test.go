package storetest_test

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// testBudgetInputs: one load gives the site's name, latest completed scan, budgets, rules and
// the scan's scores and vitals per page, for the owner only.
func testBudgetInputs(t *testing.T, s store.Store) {
	a, b := newUser(t, s, "a@example.com"), newUser(t, s, "b@example.com")
	site := newSite(t, s, a, "shop")

	in, err := s.BudgetInputs(ctx, a.ID, site.ID)
	must(t, err)
	if in.SiteName != "shop" || in.SiteDomain != "shop.test" || in.Scan != nil || len(in.Budgets) != 0 || len(in.Rules) != 0 || len(in.Results) != 0 {
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
	must(t, s.SetBudgets(ctx, a.ID, site.ID, map[string]store.Budget{"performance": {Threshold: 90, Strategy: store.StrategyDesktop}, "cls": {Threshold: 0.1}}))
	r1 := store.AlertRule{ID: store.NewID(), SiteID: site.ID, Metric: "tbt", Operator: store.OpMax, Threshold: 300, CreatedAt: t0.Add(time.Second)}
	r2 := store.AlertRule{ID: store.NewID(), SiteID: site.ID, Metric: "seo", Operator: store.OpMin, Threshold: 80, CreatedAt: t0}
	must(t, s.AddAlertRule(ctx, a.ID, r1))
	must(t, s.AddAlertRule(ctx, a.ID, r2))

	in, err = s.BudgetInputs(ctx, a.ID, site.ID)
	must(t, err)
	if in.Scan == nil || !reflect.DeepEqual(*in.Scan, latest) {
		t.Errorf("scan = %+v, want %+v", in.Scan, latest)
	}
	if want := map[string]store.Budget{"performance": {Threshold: 90, Strategy: store.StrategyDesktop}, "cls": {Threshold: 0.1, Strategy: store.StrategyBoth}}; !reflect.DeepEqual(in.Budgets, want) {
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
	must(t, s.SetBudgets(ctx, a.ID, site.ID, map[string]store.Budget{"performance": {Threshold: 90}}))
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

// testBudgetInputsFollowChanges: a budget check sees every change to what it reads at once,
// however often the site was checked before (the Postgres store keeps what it read).
func testBudgetInputsFollowChanges(t *testing.T, s store.Store) { budgetInputsFollow(t, s, s) }

// budgetInputsFollow checks through reader while writer changes the site: the same store, or
// two processes on one database.
func budgetInputsFollow(t *testing.T, reader, writer store.Store) {
	a := newUser(t, writer, "a@example.com")
	site := newSite(t, writer, a, "shop")
	secret, hash := store.NewSecret("svc_")
	must(t, writer.CreateAPIKey(ctx, store.APIKey{ID: store.NewID(), UserID: a.ID, Name: "ci", KeyHash: hash, Prefix: secret[:12], CreatedAt: t0}))
	first := completedScan(t, writer, site, t0, 70)
	must(t, writer.SetBudgets(ctx, a.ID, site.ID, map[string]store.Budget{"performance": {Threshold: 90}}))

	// check reads twice through each lookup, so the second read of each may come from what
	// the first kept, and hands the by-key read to want.
	check := func(step string, want func(in store.BudgetInputs) string) {
		t.Helper()
		for i := 0; i < 2; i++ {
			in, err := reader.BudgetInputsByKey(ctx, hash, site.ID, t0)
			must(t, err)
			if problem := want(in); problem != "" {
				t.Errorf("%s, by key, read %d: %s", step, i+1, problem)
			}
			byUser, err := reader.BudgetInputs(ctx, a.ID, site.ID)
			must(t, err)
			byUser.UserID = in.UserID
			if !reflect.DeepEqual(byUser, in) {
				t.Errorf("%s, read %d: by user %+v, by key %+v", step, i+1, byUser, in)
			}
		}
	}
	check("first read", func(in store.BudgetInputs) string {
		if in.SiteName != "shop" || in.Scan == nil || in.Scan.ID != first.ID || in.Budgets["performance"].Threshold != 90 {
			return "got " + fmt.Sprintf("%+v", in)
		}
		return ""
	})

	site.Name = "shop renamed"
	must(t, writer.UpdateSite(ctx, site))
	check("after a rename", func(in store.BudgetInputs) string {
		return unless(in.SiteName == "shop renamed" && in.SiteDomain == "shop.test", "site %q %q", in.SiteName, in.SiteDomain)
	})
	site.Domain = "shop2.example"
	must(t, writer.UpdateSite(ctx, site))
	check("after a new domain", func(in store.BudgetInputs) string {
		return unless(in.SiteDomain == "shop2.example", "site domain %q", in.SiteDomain)
	})

	must(t, writer.SetBudgets(ctx, a.ID, site.ID, map[string]store.Budget{"performance": {Threshold: 50}, "lcp": {Threshold: 2500, Strategy: store.StrategyMobile}}))
	check("after new budgets", func(in store.BudgetInputs) string {
		want := map[string]store.Budget{"performance": {Threshold: 50, Strategy: store.StrategyBoth}, "lcp": {Threshold: 2500, Strategy: store.StrategyMobile}}
		return unless(reflect.DeepEqual(in.Budgets, want), "budgets %v, want %v", in.Budgets, want)
	})

	rule := store.AlertRule{ID: store.NewID(), SiteID: site.ID, Metric: "seo", Operator: store.OpMin, Threshold: 80, CreatedAt: t0}
	must(t, writer.AddAlertRule(ctx, a.ID, rule))
	check("after a new alert rule", func(in store.BudgetInputs) string {
		return unless(len(in.Rules) == 1 && in.Rules[0].ID == rule.ID, "rules %+v", in.Rules)
	})
	rule.Threshold = 85
	must(t, writer.UpdateAlertRule(ctx, a.ID, rule))
	check("after changing the rule", func(in store.BudgetInputs) string {
		return unless(len(in.Rules) == 1 && in.Rules[0].Threshold == 85, "rules %+v", in.Rules)
	})
	must(t, writer.DeleteAlertRule(ctx, a.ID, site.ID, rule.ID))
	check("after deleting the rule", func(in store.BudgetInputs) string {
		return unless(len(in.Rules) == 0, "rules %+v", in.Rules)
	})

	// A scan that is queued or running changes nothing; its completion changes the scan and
	// its results.
	enqueue(t, writer, site, t0.Add(time.Hour))
	check("with a scan queued", func(in store.BudgetInputs) string {
		return unless(in.Scan != nil && in.Scan.ID == first.ID, "scan %+v", in.Scan)
	})
	j, err := writer.ClaimJob(ctx, store.KindScan, "w", t0.Add(time.Hour), 0)
	must(t, err)
	must(t, writer.StartScan(ctx, j.Lease(), 1, t0.Add(time.Hour)))
	must(t, writer.SavePageResult(ctx, j.Lease(), store.PageResult{PagePath: "/", PageURL: "https://x.test/", Strategy: "desktop",
		Scores: store.PageScores{Performance: ip(40)}}))
	must(t, writer.CompleteScan(ctx, j.Lease(), store.ScanScores{Health: ip(40), Performance: ip(40)}, t0.Add(2*time.Hour)))
	check("after a scan completes", func(in store.BudgetInputs) string {
		if in.Scan == nil || in.Scan.ID != j.ScanID || *in.Scan.Scores.Performance != 40 {
			return fmt.Sprintf("scan %+v, want %s", in.Scan, j.ScanID)
		}
		return unless(len(in.Results) == 1 && in.Results[0].Strategy == "desktop" && *in.Results[0].Scores.Performance == 40,
			"results %+v", in.Results)
	})

	must(t, writer.DeleteSite(ctx, a.ID, site.ID))
	for i := 0; i < 2; i++ {
		in, err := reader.BudgetInputsByKey(ctx, hash, site.ID, t0)
		wantErr(t, err, store.ErrNotFound)
		if in.UserID != a.ID || in.SiteName != "" {
			t.Errorf("deleted site, read %d: %+v", i+1, in)
		}
		_, err = reader.BudgetInputs(ctx, a.ID, site.ID)
		wantErr(t, err, store.ErrNotFound)
	}
}

// unless is "" when ok, else the message.
func unless(ok bool, format string, args ...any) string {
	if ok {
		return ""
	}
	return fmt.Sprintf(format, args...)
}

// Two processes on one database: one keeps checking a site's budgets while the other changes
// the site, its budgets, rules and scans; every check sees every change at once.
func TestPostgresBudgetInputsFollowOtherProcess(t *testing.T) {
	reader, dsn := storetest.PostgresDSN(t)
	budgetInputsFollow(t, reader, storetest.Open(t, dsn))
}
