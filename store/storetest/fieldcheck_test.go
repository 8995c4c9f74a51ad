package storetest_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"sitepulse/store"
)

func testEnqueueDueField(t *testing.T, s store.Store) {
	a := newUser(t, s, "field-due@example.com")
	beaconSite := newSite(t, s, a, "field beacon")
	cruxSite := newSite(t, s, a, "field crux")
	quiet := newSite(t, s, a, "field quiet") // no field data: never checked
	old := newSite(t, s, a, "field old")     // beacon days too old to judge
	now := time.Date(2026, 12, 3, 7, 30, 0, 0, time.UTC)
	mustAdd(t, s, store.BeaconBatch{Counts: []store.BeaconCount{
		{SiteID: beaconSite.ID, Day: now.AddDate(0, 0, -1), Device: store.FieldPhone, Metric: "inp", Bin: 40, Count: 1, Kept: 1},
		{SiteID: old.ID, Day: now.AddDate(0, 0, -store.FieldCheckDays-1), Device: store.FieldPhone, Metric: "inp", Bin: 40, Count: 1, Kept: 1}},
		Seen: []store.BeaconSeen{{SiteID: beaconSite.ID, Day: now.AddDate(0, 0, -1), Seen: 1}}})
	p75 := 2500.0
	must(t, s.SaveCrux(ctx, cruxSite.ID, store.CruxRecord{Device: store.FieldPhone, Found: true, Points: []store.FieldPoint{{Source: store.FieldCrUX,
		Device: store.FieldPhone, Metric: "lcp", Start: now.AddDate(0, 0, -30), End: now.AddDate(0, 0, -2), P75: &p75}}}, now))
	// Four processes ask at once: each site with field data gets one job.
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n, err := s.EnqueueDueField(ctx, now, 100)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	if total != 2 {
		t.Fatalf("enqueued %d checks, want 2 (the beacon's site and the CrUX one)", total)
	}
	// Later the same UTC day: nothing more; from the next midnight, again.
	if n, _ := s.EnqueueDueField(ctx, now.Add(16*time.Hour), 100); n != 0 {
		t.Fatalf("%d checks enqueued later the same day", n)
	}
	sites := claimSiteJobs(t, s, store.KindField, a.ID, now, 2)
	if !sites[beaconSite.ID] || !sites[cruxSite.ID] || sites[quiet.ID] || sites[old.ID] {
		t.Errorf("checked %v", sites)
	}
	if n, _ := s.EnqueueDueField(ctx, store.BeaconDay(now).AddDate(0, 0, 1), 100); n != 2 {
		t.Fatalf("the next day %d checks enqueued, want 2", n)
	}
	if n, _ := s.EnqueueDueField(ctx, now, 0); n != 0 {
		t.Fatalf("a limit of 0 enqueued %d", n)
	}
}

// claimSiteJobs claims and completes n jobs of a per-site kind (crux, field) at now, checks each
// is of workspace ws in its args and its row, and answers their sites.
func claimSiteJobs(t *testing.T, s store.Store, kind, ws string, now time.Time, n int) map[string]bool {
	t.Helper()
	sites := map[string]bool{}
	for range n {
		j, err := s.ClaimJob(ctx, kind, "w", now, 0)
		must(t, err)
		var args struct{ SiteID, WorkspaceID string }
		must(t, json.Unmarshal(j.Args, &args))
		if args.WorkspaceID != ws || j.WorkspaceID != ws {
			t.Errorf("job of workspace %q (args %q), want %q", j.WorkspaceID, args.WorkspaceID, ws)
		}
		sites[args.SiteID] = true
		must(t, s.CompleteJob(ctx, j.Lease(), now))
	}
	return sites
}
