package storetest_test

import (
	"sync"
	"testing"
	"time"

	"sitepulse/store"
)

func scheduledSite(t *testing.T, s store.Store, u store.User, name string, schedule store.Schedule, next *time.Time) store.Site {
	t.Helper()
	site := store.Site{ID: store.NewID(), UserID: u.ID, Name: name, Domain: name + ".test", Schedule: schedule, NextScanAt: next, CreatedAt: t0}
	must(t, s.CreateSite(ctx, site))
	return site
}

func tptr(t time.Time) *time.Time { return &t }

func testSiteSchedule(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	plain := newSite(t, s, a, "plain")
	got, err := s.Site(ctx, a.ID, plain.ID)
	must(t, err)
	if got.Schedule != store.ScheduleOff || got.NextScanAt != nil {
		t.Errorf("default schedule = %q next %v, want off and none", got.Schedule, got.NextScanAt)
	}
	got.Schedule, got.NextScanAt = store.ScheduleWeekly, tptr(t0.Add(time.Hour))
	must(t, s.UpdateSite(ctx, got))
	got, err = s.Site(ctx, a.ID, plain.ID)
	must(t, err)
	if got.Schedule != store.ScheduleWeekly || got.NextScanAt == nil || !got.NextScanAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("after update: schedule %q next %v", got.Schedule, got.NextScanAt)
	}
	daily := scheduledSite(t, s, a, "daily", store.ScheduleDaily, tptr(t0))
	sites, err := s.SitesOf(ctx, a.ID)
	must(t, err)
	for _, site := range sites {
		if site.ID == daily.ID && (site.Schedule != store.ScheduleDaily || !site.NextScanAt.Equal(t0)) {
			t.Errorf("listed daily site: %q %v", site.Schedule, site.NextScanAt)
		}
	}
}

func testEnqueueDueScans(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	daily := scheduledSite(t, s, a, "daily", store.ScheduleDaily, tptr(t0.Add(-time.Minute)))
	weekly := scheduledSite(t, s, a, "weekly", store.ScheduleWeekly, tptr(t0))
	later := scheduledSite(t, s, a, "later", store.ScheduleDaily, tptr(t0.Add(time.Hour)))
	busy := scheduledSite(t, s, a, "busy", store.ScheduleDaily, tptr(t0.Add(-time.Hour)))
	newSite(t, s, a, "off")
	inFlight := enqueue(t, s, busy, t0.Add(-2*time.Hour))

	got, err := s.EnqueueDueScans(ctx, t0, 10)
	must(t, err)
	if len(got) != 2 {
		t.Fatalf("enqueued %+v, want the daily and the weekly site's scans", got)
	}
	bySite := map[string]store.Scan{}
	for _, sc := range got {
		bySite[sc.SiteID] = sc
		if sc.Trigger != store.TriggerSchedule || sc.Strategy != store.StrategyBoth || sc.Status != store.StatusQueued {
			t.Errorf("scheduled scan = %+v", sc)
		}
		stored, err := s.Scan(ctx, a.ID, sc.ID)
		must(t, err)
		if stored.Trigger != store.TriggerSchedule || stored.Status != store.StatusQueued {
			t.Errorf("stored scheduled scan = %+v", stored)
		}
	}
	if _, ok := bySite[daily.ID]; !ok {
		t.Error("the daily site got no scan")
	}
	if _, ok := bySite[weekly.ID]; !ok {
		t.Error("the weekly site got no scan")
	}
	for _, c := range []struct {
		site store.Site
		next time.Time
	}{
		{daily, t0.Add(-time.Minute + 24*time.Hour)},
		{weekly, t0.Add(7 * 24 * time.Hour)},
		{later, t0.Add(time.Hour)},
		{busy, t0.Add(-time.Hour + 24*time.Hour)}, // moved though its scan in flight stands in
	} {
		site, err := s.Site(ctx, a.ID, c.site.ID)
		must(t, err)
		if site.NextScanAt == nil || !site.NextScanAt.Equal(c.next) {
			t.Errorf("%s: next scan %v, want %v", site.Name, site.NextScanAt, c.next)
		}
	}
	scans, err := s.ScansOf(ctx, a.ID, busy.ID, 10)
	must(t, err)
	if len(scans) != 1 || scans[0].ID != inFlight.ID {
		t.Errorf("the busy site has scans %v, want only its one in flight", ids(scans))
	}
	again, err := s.EnqueueDueScans(ctx, t0.Add(time.Minute), 10)
	must(t, err)
	if len(again) != 0 {
		t.Errorf("a second pass enqueued %d scans, want 0", len(again))
	}
	// The scheduled scans are runnable on the scan queue at once.
	j, err := s.ClaimJob(ctx, store.KindScan, "w", t0, 0)
	must(t, err)
	if _, ok := bySite[j.ScanID]; !ok && j.ScanID != inFlight.ID {
		t.Errorf("claimed %s", j.ScanID)
	}
}

func testConcurrentSchedulers(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := scheduledSite(t, s, a, "due", store.ScheduleDaily, tptr(t0))
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := s.EnqueueDueScans(ctx, t0.Add(time.Second), 10)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			total += len(got)
			mu.Unlock()
		}()
	}
	wg.Wait()
	scans, err := s.ScansOf(ctx, a.ID, site.ID, 10)
	must(t, err)
	if total != 1 || len(scans) != 1 {
		t.Errorf("%d scans reported and %d stored, want exactly 1", total, len(scans))
	}
	got, err := s.Site(ctx, a.ID, site.ID)
	must(t, err)
	if got.NextScanAt == nil || !got.NextScanAt.Equal(t0.Add(24*time.Hour)) {
		t.Errorf("next scan %v, want a day after it was due", got.NextScanAt)
	}
}

// An edit made from a copy read before the scheduler moved the site ahead must not bring the
// past next scan back: next_scan_at follows s.NextScanAt only when the schedule changes.
func testUpdateSiteKeepsNextScan(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := scheduledSite(t, s, a, "daily", store.ScheduleDaily, tptr(t0.Add(-time.Minute)))
	stale, err := s.Site(ctx, a.ID, site.ID)
	must(t, err)
	_, err = s.EnqueueDueScans(ctx, t0, 10)
	must(t, err)
	moved, err := s.Site(ctx, a.ID, site.ID)
	must(t, err)
	if moved.NextScanAt == nil || !moved.NextScanAt.After(t0) {
		t.Fatalf("the scheduler did not move the site ahead: %v", moved.NextScanAt)
	}
	stale.Name = "renamed"
	must(t, s.UpdateSite(ctx, stale))
	got, err := s.Site(ctx, a.ID, site.ID)
	must(t, err)
	if got.Name != "renamed" || got.NextScanAt == nil || !got.NextScanAt.Equal(*moved.NextScanAt) {
		t.Errorf("after a same-schedule edit: name %q next %v, want renamed and %v", got.Name, got.NextScanAt, moved.NextScanAt)
	}
	got.Schedule, got.NextScanAt = store.ScheduleWeekly, tptr(t0.Add(7*24*time.Hour))
	must(t, s.UpdateSite(ctx, got))
	got, err = s.Site(ctx, a.ID, site.ID)
	must(t, err)
	if got.Schedule != store.ScheduleWeekly || got.NextScanAt == nil || !got.NextScanAt.Equal(t0.Add(7*24*time.Hour)) {
		t.Errorf("after a schedule change: %q next %v, want weekly at %v", got.Schedule, got.NextScanAt, t0.Add(7*24*time.Hour))
	}
	got.Schedule, got.NextScanAt = store.ScheduleOff, nil
	must(t, s.UpdateSite(ctx, got))
	got, err = s.Site(ctx, a.ID, site.ID)
	must(t, err)
	if got.Schedule != store.ScheduleOff || got.NextScanAt != nil {
		t.Errorf("after turning the schedule off: %q next %v", got.Schedule, got.NextScanAt)
	}
}
