package demo

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner"
	"sitepulse/scanner/analysis"
	"sitepulse/scanner/psi"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// The demo site's scans complete offline through the replay that main puts before the real
// auditor: PSI is never called, whatever its state; a user's own site on the demo domain is
// still audited by PSI. Each scan is one step of the pool, in the test's goroutine.
func TestDemoReplay(t *testing.T) {
	runs, err := extractDir(os.DirFS("../../testdata"), "psi")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			st := b.Open(t)
			ctx := context.Background()
			fake := scantest.NewPSI(t, "../../testdata/psi")
			user := store.User{ID: store.NewID(), Email: "demo-owner@example.com", PasswordHash: "x", CreatedAt: time.Now()}
			if err := st.CreateUser(ctx, user); err != nil {
				t.Fatal(err)
			}
			scan := func(name string) (store.Site, store.Scan) {
				t.Helper()
				site := store.Site{ID: store.NewID(), UserID: user.ID, Name: name, Domain: Domain, Pages: scantest.SamplePages(), CreatedAt: time.Now()}
				sc := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: time.Now()}
				for _, err := range []error{st.CreateSite(ctx, site), st.EnqueueScan(ctx, sc, store.KindScan, time.Now())} {
					if err != nil {
						t.Fatal(err)
					}
				}
				return site, sc
			}
			demoSite, demoScan := scan("Demo Site")
			replay := NewReplay(ReplayConfig{Runs: runs, SiteIDs: []string{demoSite.ID}, Domain: Domain, Delay: time.Millisecond})
			pool := scanner.NewPool(scanner.PoolConfig{Store: st, ConfirmRuns: 2,
				Auditor: Replaying(replay, psi.New(psi.Config{Endpoint: fake.Endpoint(), Key: "k"}))})
			run := func(scanID string) store.Scan {
				t.Helper()
				if ran, err := pool.WorkOnce(ctx, store.KindScan); !ran || err != nil {
					t.Fatalf("WorkOnce = %v, %v", ran, err)
				}
				sc, err := st.Scan(ctx, user.ID, scanID)
				if err != nil {
					t.Fatal(err)
				}
				return sc
			}

			sc := run(demoScan.ID)
			if sc.Status != store.StatusComplete || sc.PagesDone != 10 {
				t.Fatalf("demo scan = %s, %d/%d (%s), want complete 10/10", sc.Status, sc.PagesDone, sc.PagesTotal, sc.Error)
			}
			if n := fake.Total(); n != 0 {
				t.Errorf("the demo scan called PSI %d times, want 0", n)
			}
			home, err := st.PageResult(ctx, user.ID, sc.ID, "/", store.StrategyMobile)
			if err != nil || *home.Scores.Performance != 16 || home.PageURL != "https://demo.sitepulse.test/" || home.Runs != 1 {
				t.Errorf("replayed home: %v, %+v", err, home)
			}

			// Another site on the demo domain is no demo: PSI audits it.
			_, own := scan("Mine")
			if sc := run(own.ID); sc.Status != store.StatusComplete {
				t.Errorf("own scan = %s (%s)", sc.Status, sc.Error)
			}
			if n := fake.Calls("/", store.StrategyMobile); n != 1 {
				t.Errorf("PSI audited the other site's home %d times on mobile, want 1", n)
			}
		})
	}
}

func TestReplayServes(t *testing.T) {
	r := NewReplay(ReplayConfig{SiteIDs: []string{"demo"}, Domain: Domain})
	tests := []struct {
		name   string
		replay *Replay
		site   store.Site
		want   bool
	}{
		{"the demo site is replayed", r, store.Site{ID: "demo", Domain: Domain}, true},
		{"the demo site moved to a real domain is audited for real", r, store.Site{ID: "demo", Domain: "example.com"}, false},
		{"another site on the demo domain is not the demo", r, store.Site{ID: "mine", Domain: Domain}, false},
		{"no replay serves nothing", nil, store.Site{ID: "demo", Domain: Domain}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.replay.Serves(tt.site); got != tt.want {
				t.Errorf("Serves = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestDemoScansAlternate: each new scan of the demo site replays the site before or after the
// bad publish, whichever tells a story against the scan before it (issue 37): after the seeded
// scans (before, then after: regressions), the next scan is the recovery, and the one after it
// shows the regressions again, with their causes. Each scan is one step of the pool.
func TestDemoScansAlternate(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			st := b.Open(t)
			ctx := context.Background()
			d, err := Seed(ctx, st, fixtures, time.Now().Add(-time.Hour), 1000)
			if err != nil {
				t.Fatal(err)
			}
			u, _ := st.UserByEmail(ctx, Email)
			after, err := LatestRuns(fixtures)
			if err != nil {
				t.Fatal(err)
			}
			before, err := BeforeRuns(fixtures)
			if err != nil {
				t.Fatal(err)
			}
			replay := NewReplay(ReplayConfig{Runs: after, Before: before, Store: st, SiteIDs: []string{d.SiteID}, Domain: Domain, Delay: time.Millisecond})
			pool := scanner.NewPool(scanner.PoolConfig{Store: st, ConfirmRuns: 2, Auditor: Replaying(replay, noAudits{t})})
			scanNow := func() []store.PageResult {
				t.Helper()
				sc := store.Scan{ID: store.NewID(), SiteID: d.SiteID, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: time.Now()}
				if err := st.EnqueueScan(ctx, sc, store.KindScan, time.Now()); err != nil {
					t.Fatal(err)
				}
				if ran, err := pool.WorkOnce(ctx, store.KindScan); !ran || err != nil {
					t.Fatalf("WorkOnce = %v, %v", ran, err)
				}
				if done, err := st.Scan(ctx, u.ID, sc.ID); err != nil || done.Status != store.StatusComplete {
					t.Fatalf("scan = %+v, %v", done, err)
				}
				results, err := st.PageResults(ctx, u.ID, sc.ID)
				if err != nil {
					t.Fatal(err)
				}
				return results
			}
			seeded, err := st.PageResults(ctx, u.ID, d.LatestScanID)
			if err != nil {
				t.Fatal(err)
			}

			// The recovery: every seeded regression is back where it was before the publish
			// (which also made /pricing more accessible: the recovery undoes that too).
			seededScans, _ := st.CompletedScans(ctx, u.ID, d.SiteID, 2)
			beforePublish, _ := st.PageResults(ctx, u.ID, seededScans[1].ID)
			recovery := scanNow()
			recovered := map[string]bool{}
			for _, r := range analysis.Improvements(seeded, recovery) {
				recovered[r.PagePath+" "+string(r.Strategy)+" "+r.Metric] = true
			}
			for _, r := range analysis.Regressions(beforePublish, seeded) {
				if !recovered[r.PagePath+" "+string(r.Strategy)+" "+r.Metric] {
					t.Errorf("the scan after the seeded regressions does not recover %s %s %s", r.PagePath, r.Strategy, r.Metric)
				}
			}
			if regs := analysis.Regressions(beforePublish, recovery); len(regs) != 0 {
				t.Errorf("the recovery is not the site before the publish: %v", regs)
			}

			regressed := scanNow()
			regs := analysis.Regressions(recovery, regressed)
			seen := map[string]bool{}
			for _, r := range regs {
				seen[r.PagePath+" "+string(r.Strategy)+" "+r.Metric] = true
			}
			for _, want := range []string{"/ mobile performance", "/pricing mobile lcp"} {
				if !seen[want] {
					t.Errorf("the next scan lacks the regression %s: %v", want, regs)
				}
			}
			latest, err := st.LatestCompletedScan(ctx, u.ID, d.SiteID)
			if err != nil {
				t.Fatal(err)
			}
			pairs, err := st.PreviousPairs(ctx, u.ID, latest.ID)
			if err != nil {
				t.Fatal(err)
			}
			changes := analysis.RegressedChanges(pairs.Pairs)
			if len(changes) == 0 {
				t.Fatal("the regressions have no causes")
			}
			for _, c := range changes {
				if !strings.Contains(c.Summary, "widgetly.test") {
					t.Errorf("%s %s: the cause does not name the chat widget: %s", c.PagePath, c.Strategy, c.Summary)
				}
			}
		})
	}
}

// noAudits fails the test: every audit of the demo site is replayed.
type noAudits struct{ t *testing.T }

func (n noAudits) Audit(ctx context.Context, pageURL string, strategy store.Strategy) (store.PageResult, error) {
	n.t.Errorf("audited %s for real", pageURL)
	return store.PageResult{}, errors.New("no audits")
}
