package scanner

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"sitepulse/store"
	"sitepulse/store/memory"
	"sitepulse/store/storetest"
)

// A site whose daily scan is due is scanned by the pool's scheduler, once, and its next scan
// moves a day ahead.
func TestScheduledScan(t *testing.T) {
	onStores(t, storeTest{name: "a due site is scanned once", fn: func(t *testing.T, st store.Store) {
		ctx := context.Background()
		jobs := &jobLog{Store: st, jobs: map[string]int64{}}
		r := newRig(t, jobs)
		due := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)
		r.site.Schedule, r.site.NextScanAt = store.ScheduleDaily, &due
		if err := st.UpdateSite(ctx, r.site); err != nil {
			t.Fatal(err)
		}
		r.pool(func(c *PoolConfig) { c.ScheduleEvery = 20 * time.Millisecond })
		var scans []store.Scan
		storetest.WaitFor(t, "a scheduled scan", func() bool {
			scans, _ = st.ScansOf(ctx, r.user.ID, r.site.ID, 10)
			return len(scans) > 0
		})
		done := r.wait(scans[0].ID)
		if done.Status != store.StatusComplete || done.Trigger != store.TriggerSchedule || done.Strategy != store.StrategyBoth {
			t.Errorf("scheduled scan = %s by %s on %s", done.Status, done.Trigger, done.Strategy)
		}
		passes := jobs.duePasses.Load()
		storetest.WaitFor(t, "three more scheduler passes", func() bool { return jobs.duePasses.Load() >= passes+3 }) // they find nothing due
		if scans, _ = st.ScansOf(ctx, r.user.ID, r.site.ID, 10); len(scans) != 1 {
			t.Errorf("%d scans, want 1", len(scans))
		}
		site, _ := st.Site(ctx, r.user.ID, r.site.ID)
		if site.NextScanAt == nil || !site.NextScanAt.Equal(due.Add(24*time.Hour)) {
			t.Errorf("next scan %v, want %v", site.NextScanAt, due.Add(24*time.Hour))
		}
	}})
}

// The scheduler runs the other kinds' passes (PoolConfig.Schedules: the weekly CrUX refresh)
// at each of its passes, with the pool's time.
func TestSchedulerRunsOtherPasses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		at := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
		var passes []time.Time
		p := NewPool(PoolConfig{Store: memory.New(), Now: func() time.Time { return at }, ScheduleEvery: time.Minute,
			Schedules: []func(context.Context, time.Time) (int, error){func(_ context.Context, now time.Time) (int, error) {
				passes = append(passes, now)
				return 0, nil
			}}})
		p.Start()
		time.Sleep(150 * time.Second) // fake time: the first pass and about two more
		synctest.Wait()
		if err := p.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if len(passes) < 2 || !passes[0].Equal(at) {
			t.Errorf("passes at %v, want one at start and one about each minute, at the pool's time", passes)
		}
	})
}
