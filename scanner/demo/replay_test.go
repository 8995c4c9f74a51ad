package demo

import (
	"context"
	"os"
	"testing"
	"time"

	"sitepulse/scanner"
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
