package scanner

import (
	"context"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// A site whose daily scan is due is scanned by the pool's scheduler, once, and its next scan
// moves a day ahead.
func TestScheduledScan(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			st := b.Open(t)
			ctx := context.Background()
			r := newRig(t, st)
			due := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)
			r.site.Schedule, r.site.NextScanAt = store.ScheduleDaily, &due
			if err := st.UpdateSite(ctx, r.site); err != nil {
				t.Fatal(err)
			}
			r.pool(func(c *PoolConfig) { c.ScheduleEvery = 20 * time.Millisecond })
			var scans []store.Scan
			for deadline := time.Now().Add(30 * time.Second); len(scans) == 0; time.Sleep(10 * time.Millisecond) {
				scans, _ = st.ScansOf(ctx, r.user.ID, r.site.ID, 10)
				if time.Now().After(deadline) {
					t.Fatalf("no scheduled scan; logs:\n%s", r.logs.String())
				}
			}
			done := r.wait(scans[0].ID)
			if done.Status != store.StatusComplete || done.Trigger != store.TriggerSchedule || done.Strategy != store.StrategyBoth {
				t.Errorf("scheduled scan = %s by %s on %s", done.Status, done.Trigger, done.Strategy)
			}
			time.Sleep(100 * time.Millisecond) // a few more scheduler passes find nothing due
			if scans, _ = st.ScansOf(ctx, r.user.ID, r.site.ID, 10); len(scans) != 1 {
				t.Errorf("%d scans, want 1", len(scans))
			}
			site, _ := st.Site(ctx, r.user.ID, r.site.ID)
			if site.NextScanAt == nil || !site.NextScanAt.Equal(due.Add(24*time.Hour)) {
				t.Errorf("next scan %v, want %v", site.NextScanAt, due.Add(24*time.Hour))
			}
		})
	}
}
