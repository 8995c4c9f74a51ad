package scanner

import (
	"context"
	"testing"
	"time"

	"sitepulse/scanner/psi"
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
			// The pool's loops, one step at a time: the scheduler's, then the scan worker's.
			p := NewPool(PoolConfig{Store: st, Auditor: psi.New(psi.Config{Endpoint: r.psi.Endpoint(), Client: r.psi.Client(), Key: "k"})})
			if n, err := p.ScheduleOnce(ctx); n != 1 || err != nil {
				t.Fatalf("ScheduleOnce = %d, %v; want 1 scan", n, err)
			}
			scans, err := st.ScansOf(ctx, r.user.ID, r.site.ID, 10)
			if err != nil || len(scans) != 1 {
				t.Fatalf("scans %+v, %v; want 1", scans, err)
			}
			if ran, err := p.WorkOnce(ctx, store.KindScan); !ran || err != nil {
				t.Fatalf("WorkOnce = %v, %v", ran, err)
			}
			done, err := st.Scan(ctx, r.user.ID, scans[0].ID)
			if err != nil || done.Status != store.StatusComplete || done.Trigger != store.TriggerSchedule || done.Strategy != store.StrategyBoth {
				t.Errorf("scheduled scan = %s by %s on %s (%v)", done.Status, done.Trigger, done.Strategy, err)
			}
			// More passes find nothing due.
			if n, err := p.ScheduleOnce(ctx); n != 0 || err != nil {
				t.Errorf("ScheduleOnce again = %d, %v; want 0", n, err)
			}
			site, _ := st.Site(ctx, r.user.ID, r.site.ID)
			if site.NextScanAt == nil || !site.NextScanAt.Equal(due.Add(24*time.Hour)) {
				t.Errorf("next scan %v, want %v", site.NextScanAt, due.Add(24*time.Hour))
			}
		})
	}
}
