package scanner

import (
	"context"
	"os"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// The demo site's scans complete offline through the replay: PSI is never called, whatever its
// state; a user's own site on the demo domain is still audited by PSI.
func TestDemoReplay(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			st := b.Open(t)
			ctx := context.Background()
			fx := DemoFixtures{FS: os.DirFS(".."), Before: "testdata/psi-before", Latest: "testdata/psi"}
			demo, err := SeedDemo(ctx, st, fx, time.Now().Add(-time.Hour), 1000)
			if err != nil {
				t.Fatal(err)
			}
			r := newRig(t, st)
			user := r.user
			demoUser, _ := st.UserByEmail(ctx, DemoEmail)
			demoSite, err := st.Site(ctx, demoUser.ID, demo.SiteID)
			if err != nil {
				t.Fatal(err)
			}
			replay, err := NewReplay(ReplayConfig{Fixtures: fx, SiteIDs: []string{demo.SiteID}, Delay: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			r.pool(func(c *PoolConfig) { c.Replay, c.ConfirmRuns = replay, 2 })

			r.user = demoUser
			sc := r.wait(r.enqueue(demoSite).ID)
			if sc.Status != store.StatusComplete || sc.PagesDone != 10 {
				t.Fatalf("demo scan = %s, %d/%d (%s), want complete 10/10", sc.Status, sc.PagesDone, sc.PagesTotal, sc.Error)
			}
			if n := r.psi.Total(); n != 0 {
				t.Errorf("the demo scan called PSI %d times, want 0", n)
			}
			home, err := st.PageResult(ctx, demoUser.ID, sc.ID, "/", store.StrategyMobile)
			if err != nil || *home.Scores.Performance != 16 || home.PageURL != "https://demo.sitepulse.test/" || home.Runs != 1 {
				t.Errorf("replayed home: %v, %+v", err, home)
			}

			// A stranger's site on the demo domain is no demo: PSI audits it.
			r.user = user
			own := r.addSite("Mine", []string{"/"})
			own.Domain = DemoDomain
			if err := st.UpdateSite(ctx, own); err != nil {
				t.Fatal(err)
			}
			if replay.Serves(own) {
				t.Fatal("the replay serves a user's own site")
			}
			r.wait(r.enqueue(own).ID)
			if n := r.psi.Calls("/", store.StrategyMobile); n != 1 {
				t.Errorf("PSI audited the user's own site's home %d times on mobile, want 1", n)
			}
		})
	}
}

func TestReplayServes(t *testing.T) {
	r := &Replay{cfg: ReplayConfig{SiteIDs: []string{"demo"}}}
	tests := []struct {
		name   string
		replay *Replay
		site   store.Site
		want   bool
	}{
		{"the demo site is replayed", r, store.Site{ID: "demo", Domain: DemoDomain}, true},
		{"the demo site moved to a real domain is audited for real", r, store.Site{ID: "demo", Domain: "example.com"}, false},
		{"another site on the demo domain is not the demo", r, store.Site{ID: "mine", Domain: DemoDomain}, false},
		{"no replay serves nothing", nil, store.Site{ID: "demo", Domain: DemoDomain}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.replay.Serves(tt.site); got != tt.want {
				t.Errorf("Serves = %v, want %v", got, tt.want)
			}
		})
	}
}
