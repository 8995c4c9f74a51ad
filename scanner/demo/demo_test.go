package demo

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

var fixtures = Fixtures{FS: os.DirFS("../.."), Before: "testdata/psi-before", Latest: "testdata/psi"}

func TestSeedDemo(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			st := b.Open(t)
			now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
			d, err := Seed(ctx, st, fixtures, now, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if !d.Created || !strings.HasPrefix(d.APIKey, "svc_") || len(d.Password) < 16 {
				t.Errorf("demo = %+v", d)
			}
			u, err := st.UserByEmail(ctx, Email)
			if err != nil {
				t.Fatal(err)
			}
			if ok, _ := store.CheckPassword(u.PasswordHash, d.Password, 1000); !ok {
				t.Error("printed password does not log in")
			}
			if _, err := st.APIKeyByHash(ctx, store.HashSecret(d.APIKey), now); err != nil {
				t.Errorf("printed key does not work: %v", err)
			}
			site, err := st.Site(ctx, u.ID, d.SiteID)
			if err != nil {
				t.Fatal(err)
			}
			if site.Domain != Domain || site.PlatformSiteID != PlatformID || len(site.Pages) != 5 || site.LastPublished == nil || site.HealthScore == nil {
				t.Errorf("site = %+v", site)
			}
			scans, _ := st.CompletedScans(ctx, u.ID, d.SiteID, 10)
			if len(scans) != 2 || scans[0].ID != d.LatestScanID || scans[0].PagesDone != 10 || scans[0].PagesTotal != 10 {
				t.Fatalf("scans = %+v", scans)
			}
			latest, _ := st.PageResults(ctx, u.ID, scans[0].ID)
			previous, _ := st.PageResults(ctx, u.ID, scans[1].ID)
			regs := analysis.Regressions(previous, latest)
			if len(regs) == 0 {
				t.Fatal("the demo's latest scan has no regressions")
			}
			seen := map[string]bool{}
			for _, r := range regs {
				seen[r.PagePath+" "+string(r.Strategy)+" "+r.Metric] = true
			}
			for _, want := range []string{"/ mobile performance", "/ desktop performance", "/ mobile cls", "/pricing mobile performance", "/pricing mobile lcp", "/pricing mobile ttfb"} {
				if !seen[want] {
					t.Errorf("missing regression %s in %s", want, fmt.Sprint(regs))
				}
			}
			for _, r := range latest {
				if !strings.HasPrefix(r.PageURL, "https://"+Domain+"/") {
					t.Errorf("page url %s", r.PageURL)
				}
			}
			// What the surfaces show of the demo's regressions: their causes, named on the demo's
			// domain, and both sides' screenshots (issue 33).
			pairs, err := st.PreviousPairs(ctx, u.ID, scans[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			changes := analysis.RegressedChanges(pairs.Pairs)
			if len(changes) != 4 {
				t.Fatalf("%d regressed pages explained, want / and /pricing on both strategies", len(changes))
			}
			for _, c := range changes {
				if !strings.Contains(c.Summary, "widgetly.test") || strings.Contains(c.Summary, "127.0.0.1") {
					t.Errorf("%s %s: %s", c.PagePath, c.Strategy, c.Summary)
				}
				for _, sc := range scans {
					if list, _ := st.PageImages(ctx, u.ID, sc.ID, c.PagePath, c.Strategy); len(list) == 0 {
						t.Errorf("%s %s: no screenshot of scan %s", c.PagePath, c.Strategy, sc.ID)
					}
				}
			}
			if lcp, _ := changes[0].CauseOf("lcp"); !strings.Contains(lcp.Sentence, "the LCP image /static/img/hero.jpg arrived") {
				t.Errorf("the demo's LCP cause: %q", lcp.Sentence)
			}
			home, err := st.PageResult(ctx, u.ID, scans[0].ID, "/", store.StrategyMobile)
			if err != nil {
				t.Fatal(err)
			}
			if doc, ok := home.Explain.Document(); !ok || doc.URL != "https://"+Domain+"/" || doc.Entity != Domain || doc.ThirdParty {
				t.Errorf("the demo's document request %+v", doc)
			}
			budgets, _ := st.Budgets(ctx, u.ID, d.SiteID)
			if v := analysis.CheckBudgets(scans[0].Scores, latest, budgets, nil); len(v) == 0 {
				t.Error("the demo budgets all pass; the budget check would show nothing")
			}

			again, err := Seed(ctx, st, fixtures, now.Add(time.Hour), 1000)
			if err != nil {
				t.Fatal(err)
			}
			if again.Created || again.SiteID != d.SiteID || again.APIKey == d.APIKey || again.LatestScanID != d.LatestScanID {
				t.Errorf("second seed = %+v", again)
			}
			if scans, _ := st.CompletedScans(ctx, u.ID, d.SiteID, 10); len(scans) != 2 {
				t.Errorf("second seed added scans: %d", len(scans))
			}
			// Each start hands out one key and revokes the one before; a key the user made stays.
			own, ownHash := store.NewSecret("svc_")
			if err := st.CreateAPIKey(ctx, store.APIKey{ID: store.NewID(), UserID: u.ID, Name: "ci", KeyHash: ownHash, Prefix: own[:12], CreatedAt: now}); err != nil {
				t.Fatal(err)
			}
			third, err := Seed(ctx, st, fixtures, now.Add(2*time.Hour), 1000)
			if err != nil {
				t.Fatal(err)
			}
			keys, _ := st.APIKeys(ctx, u.ID)
			if len(keys) != 2 {
				t.Errorf("%d live keys after three seeds and one own key, want 2", len(keys))
			}
			for _, k := range []string{d.APIKey, again.APIKey} {
				if _, err := st.APIKeyByHash(ctx, store.HashSecret(k), now); err == nil {
					t.Error("an earlier demo key still works")
				}
			}
			for _, k := range []string{third.APIKey, own} {
				if _, err := st.APIKeyByHash(ctx, store.HashSecret(k), now); err != nil {
					t.Errorf("a key that should work: %v", err)
				}
			}
			// The demo queue is never the scan queue.
			if _, err := st.ClaimJob(ctx, store.KindScan, "w", now.Add(48*time.Hour), 0); err == nil {
				t.Error("a demo scan is claimable by the worker pool")
			}
		})
	}
}

func TestDemoCurl(t *testing.T) {
	lines := Curl("http://localhost:8080", Seeded{APIKey: "svc_x", SiteID: "s-1"}, "it's secret")
	if len(lines) != 3 || !strings.Contains(lines[0], "/api/external/budget-check") || !strings.Contains(lines[1], "tools/list") ||
		!strings.Contains(lines[2], `-hmac 'it'\''s secret'`) {
		t.Errorf("lines = %q", lines)
	}
	// The delivery id is made by the shell each time the line runs (the root package's
	// TestDemoWebhookLineWorksEachTimeItIsPasted runs it).
	if !strings.Contains(lines[2], `"_id":"'$(openssl rand -hex 12)'"`) {
		t.Errorf("webhook line has no fresh delivery id: %q", lines[2])
	}
}
