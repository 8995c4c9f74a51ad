package scanner

import (
	"context"
	"testing"
	"time"

	"sitepulse/scanner/scantest"
	"sitepulse/store"
)

// The demo site's scans complete offline through the replay: PSI is never called, whatever its
// state; a user's own site on the demo domain is still audited by PSI.
func TestDemoReplay(t *testing.T) {
	onStores(t, storeTest{name: "the demo site replays", fn: func(t *testing.T, st store.Store) {
		ctx := context.Background()
		r := newRig(t, st)
		demoSite := r.addSite("Demo Site", scantest.SamplePages())
		demoSite.Domain = demoDomain
		if err := st.UpdateSite(ctx, demoSite); err != nil {
			t.Fatal(err)
		}
		replay := NewReplay(ReplayConfig{Runs: extractAll(t, allFixtures...), SiteIDs: []string{demoSite.ID}, Domain: demoDomain, Delay: time.Millisecond})
		r.pool(func(c *PoolConfig) { c.Replay, c.ConfirmRuns = replay, 2 })

		sc := r.wait(r.enqueue(demoSite).ID)
		if sc.Status != store.StatusComplete || sc.PagesDone != 10 {
			t.Fatalf("demo scan = %s, %d/%d (%s), want complete 10/10", sc.Status, sc.PagesDone, sc.PagesTotal, sc.Error)
		}
		if n := r.psi.Total(); n != 0 {
			t.Errorf("the demo scan called PSI %d times, want 0", n)
		}
		home, err := st.PageResult(ctx, r.user.ID, sc.ID, "/", store.StrategyMobile)
		if err != nil || *home.Scores.Performance != 16 || home.PageURL != "https://demo.sitepulse.test/" || home.Runs != 1 {
			t.Errorf("replayed home: %v, %+v", err, home)
		}

		// Another site on the demo domain is no demo: PSI audits it. (In practice another
		// account's: an owner's second site on a domain is refused, but not by CreateSite.)
		own := store.Site{ID: store.NewID(), UserID: r.user.ID, Name: "Mine", Domain: demoDomain, Pages: []string{"/"}, CreatedAt: time.Now()}
		if err := st.CreateSite(ctx, own); err != nil {
			t.Fatal(err)
		}
		r.wait(r.enqueue(own).ID)
		if n := r.psi.Calls("/", store.StrategyMobile); n != 1 {
			t.Errorf("PSI audited the other site's home %d times on mobile, want 1", n)
		}
	}})
}

const demoDomain = "demo.sitepulse.test"

func TestReplayServes(t *testing.T) {
	r := NewReplay(ReplayConfig{SiteIDs: []string{"demo"}, Domain: demoDomain})
	tests := []struct {
		name   string
		replay *Replay
		site   store.Site
		want   bool
	}{
		{"the demo site is replayed", r, store.Site{ID: "demo", Domain: demoDomain}, true},
		{"the demo site moved to a real domain is audited for real", r, store.Site{ID: "demo", Domain: "example.com"}, false},
		{"another site on the demo domain is not the demo", r, store.Site{ID: "mine", Domain: demoDomain}, false},
		{"no replay serves nothing", nil, store.Site{ID: "demo", Domain: demoDomain}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.replay.Serves(tt.site); got != tt.want {
				t.Errorf("Serves = %v, want %v", got, tt.want)
			}
		})
	}
}
