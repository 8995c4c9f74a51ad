package demo

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
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

			// A restart finds the account and resets nothing: random credentials cannot be
			// printed again, and the first ones still work (issue 37).
			again, err := Seed(ctx, st, fixtures, now.Add(time.Hour), 1000)
			if err != nil {
				t.Fatal(err)
			}
			if again.Created || again.SiteID != d.SiteID || again.APIKey != "" || again.Password != "" || again.LatestScanID != d.LatestScanID {
				t.Errorf("second seed = %+v", again)
			}
			if scans, _ := st.CompletedScans(ctx, u.ID, d.SiteID, 10); len(scans) != 2 {
				t.Errorf("second seed added scans: %d", len(scans))
			}
			u, _ = st.UserByEmail(ctx, Email)
			if ok, _ := store.CheckPassword(u.PasswordHash, d.Password, 1000); !ok {
				t.Error("a restart reset the password")
			}
			if _, err := st.APIKeyByHash(ctx, store.HashSecret(d.APIKey), now); err != nil {
				t.Errorf("a restart revoked the key: %v", err)
			}
			// The demo queue is never the scan queue.
			if _, err := st.ClaimJob(ctx, store.KindScan, "w", now.Add(48*time.Hour), 0); err == nil {
				t.Error("a demo scan is claimable by the worker pool")
			}
		})
	}
}

// TestSeedDemoDerivedFromAuthKey: with AUTH_KEY every process derives the same password, key
// and webhook secret, so the lines one prints work against every other and after a restart;
// the demo keys of earlier random credentials are revoked, a key the user made stays.
func TestSeedDemoDerivedFromAuthKey(t *testing.T) {
	authKey := []byte("0123456789abcdef0123456789abcdef")
	c := NewCredentials(authKey)
	if !c.Derived || c != NewCredentials(authKey) || c == NewCredentials([]byte("another key of at least 32 bytes.")) {
		t.Fatalf("derived credentials are not a function of the key: %+v", c)
	}
	if r := NewCredentials(nil); r.Derived || r == NewCredentials(nil) || !strings.HasPrefix(r.APIKey, "svc_") || !strings.HasPrefix(r.WebhookSecret, "whsec_") {
		t.Fatalf("random credentials %+v", r)
	}
	if !strings.HasPrefix(c.APIKey, "svc_") || !strings.HasPrefix(c.WebhookSecret, "whsec_") || len(c.Password) != 20 {
		t.Fatalf("derived credentials %+v", c)
	}
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			st := b.Open(t)
			now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
			first, err := Seed(ctx, st, fixtures, now, 1000) // started once without AUTH_KEY
			if err != nil {
				t.Fatal(err)
			}
			own, ownHash := store.NewSecret("svc_")
			u, _ := st.UserByEmail(ctx, Email)
			if err := st.CreateAPIKey(ctx, store.APIKey{ID: store.NewID(), UserID: u.ID, Name: "ci", KeyHash: ownHash, Prefix: own[:12], CreatedAt: now}); err != nil {
				t.Fatal(err)
			}
			for i := range 2 {
				d, err := SeedWith(ctx, st, fixtures, now.Add(time.Duration(i+1)*time.Hour), 1000, c)
				if err != nil {
					t.Fatal(err)
				}
				if d.Created || d.Password != c.Password || d.APIKey != c.APIKey || d.SiteID != first.SiteID {
					t.Errorf("start %d: %+v", i+1, d)
				}
				u, _ := st.UserByEmail(ctx, Email)
				if ok, _ := store.CheckPassword(u.PasswordHash, c.Password, 1000); !ok {
					t.Errorf("start %d: the derived password does not log in", i+1)
				}
				for _, k := range []string{c.APIKey, own} {
					if _, err := st.APIKeyByHash(ctx, store.HashSecret(k), now); err != nil {
						t.Errorf("start %d: a key that should work: %v", i+1, err)
					}
				}
				if _, err := st.APIKeyByHash(ctx, store.HashSecret(first.APIKey), now); err == nil {
					t.Errorf("start %d: the random demo key of the first start still works", i+1)
				}
				if keys, _ := st.APIKeys(ctx, u.ID); len(keys) != 2 {
					t.Errorf("start %d: %d live keys, want the demo's and the user's", i+1, len(keys))
				}
			}
		})
	}
}

// TestSeedDemoOnManyProcessesAtOnce: processes started together each seed the demo; the first
// creates, the others find, none fails, and there is one account, one site and two scans.
func TestSeedDemoOnManyProcessesAtOnce(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			st := b.Open(t)
			now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
			c := NewCredentials([]byte("0123456789abcdef0123456789abcdef"))
			const n = 4
			seeded := make([]Seeded, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					seeded[i], errs[i] = SeedWith(ctx, st, fixtures, now, 1000, c)
				}()
			}
			wg.Wait()
			created := 0
			for i := range n {
				if errs[i] != nil {
					t.Fatalf("process %d: %v", i, errs[i])
				}
				if seeded[i].Created {
					created++
				}
				if seeded[i].SiteID != seeded[0].SiteID || seeded[i].APIKey != c.APIKey || seeded[i].Password != c.Password {
					t.Errorf("process %d: %+v, process 0: %+v", i, seeded[i], seeded[0])
				}
			}
			if created != 1 {
				t.Errorf("%d processes created the account, want 1", created)
			}
			u, _ := st.UserByEmail(ctx, Email)
			if scans, _ := st.CompletedScans(ctx, u.ID, seeded[0].SiteID, 10); len(scans) != 2 {
				t.Errorf("%d demo scans, want 2", len(scans))
			}
			if keys, _ := st.APIKeys(ctx, u.ID); len(keys) != 1 {
				t.Errorf("%d live keys, want 1", len(keys))
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
	// A key another process made (random, stored hashed) is unknown here: only the webhook line.
	if lines := Curl("http://localhost:8080", Seeded{SiteID: "s-1"}, "whsec_x"); len(lines) != 1 || !strings.Contains(lines[0], "/api/webhooks/platform") {
		t.Errorf("lines without a key = %q", lines)
	}
}
