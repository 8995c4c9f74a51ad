package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner"
	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// Two processes on one database, both polling for due schedules every second: every site whose
// daily scan comes due gets exactly one scan, and its next scan moves a day ahead.
func TestSystemSchedulesTwoProcesses(t *testing.T) {
	if runAsChild() {
		return
	}
	ctx := context.Background()
	st, dsn := storetest.PostgresDSN(t)
	user := store.User{ID: store.NewID(), Email: "schedule@example.com", PasswordHash: "x", CreatedAt: time.Now()}
	if err := st.CreateUser(ctx, user); err != nil {
		t.Fatal(err)
	}
	var sites []store.Site
	for i := range 30 {
		s := store.Site{ID: store.NewID(), UserID: user.ID, Name: fmt.Sprintf("Site %02d", i), Domain: fmt.Sprintf("site%02d.test", i),
			Pages: []string{"/"}, Schedule: store.ScheduleOff, CreatedAt: time.Now()}
		if err := st.CreateSite(ctx, s); err != nil {
			t.Fatal(err)
		}
		sites = append(sites, s)
	}
	var procs []*child
	for _, name := range []string{"A", "B"} {
		psi := scantest.NewPSI(t, "testdata/psi")
		procs = append(procs, startChild(t, "process "+name, map[string]string{"DATABASE_URL": dsn, "PAGESPEED_API_URL": psi.Endpoint(),
			"SCHEDULE_POLL_SECONDS": "1"}))
	}
	// Both are up: the sites are put on a daily schedule that comes due one every 100 ms over
	// 3 s, so both processes' polls find some due (the store's contract suite races eight
	// schedulers on one site). An edit moves the next scan only when it changes the schedule.
	base := store.Now(time.Now())
	for i := range sites {
		due := base.Add(time.Duration(i) * 100 * time.Millisecond)
		sites[i].Schedule, sites[i].NextScanAt = store.ScheduleDaily, &due
		if err := st.UpdateSite(ctx, sites[i]); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	if !storetest.Eventually(func() bool {
		n = 0
		for _, s := range sites {
			if got, _ := st.Site(ctx, user.ID, s.ID); got.NextScanAt != nil && got.NextScanAt.After(*s.NextScanAt) {
				n++
			}
		}
		return n == len(sites)
	}) {
		t.Fatalf("%d of %d sites were scheduled:\n%s\n%s", n, len(sites), procs[0].log, procs[1].log)
	}
	for _, p := range procs {
		p.stop(t)
	}
	// Nothing more is due: the scheduler's one step on the same database, an hour past any poll
	// the processes could have made, finds no site to scan (each next scan moved a day ahead).
	// This asks the store what a later poll would find, rather than sleeping through two.
	later := time.Now().Add(time.Hour)
	if n, err := scanner.NewPool(scanner.PoolConfig{Store: st, Now: func() time.Time { return later }}).ScheduleOnce(ctx); n != 0 || err != nil {
		t.Errorf("a scheduler pass after both processes found %d sites due (err %v), want none", n, err)
	}
	enqueued := 0
	for _, p := range procs {
		n := strings.Count(p.log.String(), "scheduled scan enqueued")
		t.Logf("%s enqueued %d scheduled scans", p.name, n)
		enqueued += n
	}
	if enqueued != len(sites) {
		t.Errorf("the processes logged %d scheduled scans, want %d", enqueued, len(sites))
	}
	for _, s := range sites {
		scans, err := st.ScansOf(ctx, user.ID, s.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(scans) != 1 || scans[0].Trigger != store.TriggerSchedule {
			t.Errorf("%s: %d scans, want exactly 1 scheduled scan", s.Name, len(scans))
		}
		got, _ := st.Site(ctx, user.ID, s.ID)
		if want := s.NextScanAt.Add(24 * time.Hour); got.NextScanAt == nil || !got.NextScanAt.Equal(want) {
			t.Errorf("%s: next scan %v, want a day after it was due, %v", s.Name, got.NextScanAt, want)
		}
	}
}
