package scanner

import (
	"context"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/psi"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// The key's day shared (issue 44), through the pipeline on the fake clock: an account that
// audited early and a hog have spent the day down to the newcomers' reserve; the early
// account's scan is snoozed, not failed, and its wait (what the scan page, the API's
// `waiting` and the event stream show) names the limit met and when it lifts; a newcomer's
// first scan completes from the reserve meanwhile.
func TestSharedDayPipeline(t *testing.T) {
	onStores(t, storeTest{name: "past its share an early account's scan waits naming the limit; a newcomer's first scan completes", fn: func(t *testing.T, st store.Store) {
		jobs := &jobLog{Store: st, jobs: map[string]int64{}}
		r := newRig(t, jobs) // five pages, ten audits
		newcomer := r.secondTenant("Newcomer", []string{"/", "/fast"})
		// Stopped a minute ahead: the scans enqueued now are due, and their deadline (counted from
		// their real start) is far.
		clock := scantest.NewClock(time.Now().Add(time.Minute))
		midnight := clock.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
		// A day of 30 audits shared past 10, 12 kept for newcomers, a first scan being 4 audits.
		q := psi.NewAccountQuota(store.AuditLimits{Workspace: 100, Account: 100, Day: 30, Mark: 10, Reserve: 12, Newcomer: 4}, jobs, nil)
		if err := q.Take(r.user.ID, clock.Now(), false); err != nil { // its personal workspace: it audited at dawn
			t.Fatal(err)
		}
		hog := r.secondTenant("Hog", []string{"/"})
		for i := 0; q.Take(hog.user.ID, clock.Now(), false) == nil; i++ { // to the mark, then its share of (30-12-10)/2
			if i == 30 {
				t.Fatal("the hog took the whole day")
			}
		}
		r.pool(func(c *PoolConfig) {
			c.Quota, c.Now = q, clock.Now
			c.Capacity = psi.NewCapacity(psi.CapacityConfig{MaxInFlight: 1})
		})
		early := r.enqueue(r.site)
		if sc := newcomer.wait(newcomer.enqueue(newcomer.site).ID); sc.Status != store.StatusComplete {
			t.Errorf("the newcomer's first scan: %s (%s), want complete from the reserve", sc.Status, sc.Error)
		}
		var j store.Job
		if !storetest.Eventually(func() bool {
			var ok bool
			j, ok = jobs.job(t, early.ID)
			return ok && j.State == store.JobAvailable && j.Snoozes() > 0
		}) {
			t.Fatalf("the early account's scan was not snoozed; logs:\n%s", r.logs.String())
		}
		lifts := "until " + midnight.Format("2 Jan 2006, 15:04 UTC")
		named := func(s string) bool {
			return strings.Contains(s, lifts) && (strings.Contains(s, psi.ShareMark) || strings.Contains(s, psi.ReserveMark))
		}
		if !named(j.LastError) || j.Attempt-j.Snoozes() != 0 || j.RunAt.Before(midnight) {
			t.Errorf("job: %q, run at %s after %d attempts and %d snoozes; want the limit named, %s, no attempt spent", j.LastError, j.RunAt, j.Attempt, j.Snoozes(), lifts)
		}
		w, err := jobs.ScanWait(context.Background(), r.user.ID, early.ID)
		if err != nil || !named(w.Reason) {
			t.Errorf("the scan's wait: %+v, %v; want the limit and %s", w, err, lifts)
		}
		t.Logf("the early account's scan waits: %s", w.Reason)
		if got, _ := jobs.Scan(context.Background(), r.user.ID, early.ID); got.Status == store.StatusFailed {
			t.Errorf("the early account's scan failed (%s): a budget's wait is a snooze", got.Error)
		}
	}})
}
