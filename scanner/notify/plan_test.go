package notify

import (
	"context"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// completeScan runs a scan of site through the queue with the results given.
func completeScan(t *testing.T, st store.Store, site store.Site, at time.Time, trigger string, results ...store.PageResult) store.Scan {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	sc := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyMobile, Trigger: trigger, CreatedAt: at}
	must(st.EnqueueScan(ctx, sc, store.KindScan, at))
	j, err := st.ClaimJob(ctx, store.KindScan, "w", at, 0)
	must(err)
	must(st.StartScan(ctx, j.Lease(), len(results), at))
	for _, r := range results {
		r.PageURL = "https://shop.example" + r.PagePath
		must(st.SavePageResult(ctx, j.Lease(), r))
	}
	perf := *results[0].Scores.Performance
	must(st.CompleteScan(ctx, j.Lease(), store.ScanScores{Performance: &perf, Health: &perf}, at.Add(time.Minute)))
	got, err := st.Scan(ctx, site.UserID, sc.ID)
	must(err)
	return got
}

// TestPlanFromTheStore: a finished scan's alerts are planned from what the store holds: a
// confirmed regression with the publish that started the scan, budgets broken once over three
// scans, and channels filtered by event and site.
func TestPlanFromTheStore(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			st := b.Open(t)
			r := newAlertRig(t, st)
			other := store.Site{ID: store.NewID(), UserID: r.user.ID, WorkspaceID: r.user.ID, Name: "Blog", Domain: "blog.example", CreatedAt: now}
			if err := st.CreateSite(ctx, other); err != nil {
				t.Fatal(err)
			}
			// A channel for the other site only, and one for failures only: neither hears of Shop's regression.
			for _, c := range []store.Channel{
				{ID: store.NewID(), WorkspaceID: r.user.ID, Kind: KindSlack, Name: "blog", URLSealed: "x", Events: []string{store.EventRegressionConfirmed}, SiteIDs: []string{other.ID}, CreatedAt: now},
				{ID: store.NewID(), WorkspaceID: r.user.ID, Kind: KindSlack, Name: "failures", URLSealed: "x", Events: []string{store.EventScanFailed}, CreatedAt: now},
			} {
				if err := st.CreateChannel(ctx, r.user.ID, c); err != nil {
					t.Fatal(err)
				}
			}
			if err := st.SetBudgets(ctx, r.user.ID, r.site.ID, map[string]store.Budget{"performance": {Threshold: 80}}); err != nil {
				t.Fatal(err)
			}
			p := &Planner{Store: st, BaseURL: "https://sitepulse.example.com", Now: func() time.Time { return now }}
			plan := func(sc store.Scan) map[string]int {
				t.Helper()
				ds, err := p.Plan(ctx, r.site, sc)
				if err != nil {
					t.Fatal(err)
				}
				out := map[string]int{}
				for _, d := range ds {
					out[d.Event.Type]++
					if d.Event.Type == store.EventRegressionConfirmed && (d.Event.Scan.PublishedBy == nil || *d.Event.Scan.PublishedBy != "Ana" ||
						!strings.HasSuffix(d.Event.Scan.URL, "/sites/"+r.site.ID+"/scans/"+sc.ID)) {
						t.Errorf("event scan = %+v, want Ana's publish and the scan page", d.Event.Scan)
					}
				}
				return out
			}
			first := completeScan(t, st, r.site, now, store.TriggerManual, result("/", "mobile", 92, 1200))
			if got := plan(first); len(got) != 0 {
				t.Errorf("first scan planned %v, want nothing", got)
			}
			second := completeScan(t, st, r.site, now.Add(time.Hour), store.TriggerWebhook, result("/", "mobile", 60, 5200))
			if err := st.RecordPublish(ctx, store.Publish{ID: store.NewID(), SiteID: r.site.ID, PublishedBy: "Ana", PublishedOn: now.Add(59 * time.Minute), ScanID: second.ID}); err != nil {
				t.Fatal(err)
			}
			if got := plan(second); got[store.EventRegressionConfirmed] != 4 || got[store.EventBudgetBroken] != 4 || len(got) != 2 {
				t.Errorf("second scan planned %v, want regression.confirmed and budget.broken to the 4 channels of every event and site", got)
			}
			third := completeScan(t, st, r.site, now.Add(2*time.Hour), store.TriggerSchedule, result("/", "mobile", 61, 5100))
			if got := plan(third); len(got) != 0 {
				t.Errorf("third scan, budgets still broken, planned %v, want nothing", got)
			}
			fourth := completeScan(t, st, r.site, now.Add(3*time.Hour), store.TriggerSchedule, result("/", "mobile", 95, 1100))
			if got := plan(fourth); got[store.EventBudgetRecovered] != 4 || len(got) != 1 {
				t.Errorf("fourth scan planned %v, want budget.recovered to 4 channels", got)
			}
		})
	}
}

// TestPlanRoutesToTheSiteWorkspace: a site's events go to the channels of the site's workspace,
// named in the event, never to another workspace of the same member.
func TestPlanRoutesToTheSiteWorkspace(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			st := b.Open(t)
			r := newAlertRig(t, st) // four channels in the user's personal workspace
			team := store.Workspace{ID: store.NewID(), Name: "Agency", CreatedAt: now}
			if err := st.CreateWorkspace(ctx, team, r.user.ID, 10); err != nil {
				t.Fatal(err)
			}
			site := store.Site{ID: store.NewID(), UserID: r.user.ID, WorkspaceID: team.ID, Name: "Client", Domain: "client.example", CreatedAt: now}
			if err := st.CreateSite(ctx, site); err != nil {
				t.Fatal(err)
			}
			ch := store.Channel{ID: store.NewID(), WorkspaceID: team.ID, Kind: KindSlack, Name: "agency", URLSealed: "x", Events: []string{store.EventRegressionConfirmed}, CreatedAt: now}
			if err := st.CreateChannel(ctx, r.user.ID, ch); err != nil {
				t.Fatal(err)
			}
			p := &Planner{Store: st, BaseURL: "https://sitepulse.example.com", Now: func() time.Time { return now }}
			completeScan(t, st, site, now, store.TriggerManual, result("/", "mobile", 92, 1200))
			sc := completeScan(t, st, site, now.Add(time.Hour), store.TriggerManual, result("/", "mobile", 60, 5200))
			ds, err := p.Plan(ctx, site, sc)
			if err != nil {
				t.Fatal(err)
			}
			if len(ds) != 1 || ds[0].ChannelID != ch.ID || ds[0].WorkspaceID != team.ID || ds[0].Event.Workspace != (EventRef{ID: team.ID, Name: "Agency"}) {
				t.Errorf("dispatches = %+v, want one to the Agency workspace's channel, naming it", ds)
			}
		})
	}
}
