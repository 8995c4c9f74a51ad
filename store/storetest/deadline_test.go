package storetest_test

import (
	"testing"
	"time"

	"sitepulse/store"
)

func testPageRuns(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	sc := enqueue(t, s, site, t0)
	j, err := s.ClaimJob(ctx, store.KindScan, "w", t0, 0)
	must(t, err)
	must(t, s.SavePageResult(ctx, j.Lease(), store.PageResult{PagePath: "/", Strategy: "mobile", Runs: 3, Scores: store.PageScores{Performance: ip(50)}}))
	must(t, s.SavePageResult(ctx, j.Lease(), store.PageResult{PagePath: "/", Strategy: "desktop", Scores: store.PageScores{Performance: ip(90)}}))
	for strategy, want := range map[store.Strategy]int{"mobile": 3, "desktop": 1} {
		r, err := s.PageResult(ctx, a.ID, sc.ID, "/", strategy)
		must(t, err)
		if r.Runs != want {
			t.Errorf("%s runs = %d, want %d", strategy, r.Runs, want)
		}
	}
}

func testOverdueScans(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	stuck := newSite(t, s, a, "stuck")
	waiting := newSite(t, s, a, "waiting")
	fresh := newSite(t, s, a, "fresh")
	done := newSite(t, s, a, "done")
	completedScan(t, s, done, t0, 90)

	// Started at t0, then put back with a reason: overdue an hour later.
	old := enqueue(t, s, stuck, t0)
	j, err := s.ClaimJob(ctx, store.KindScan, "w", t0, 0)
	must(t, err)
	must(t, s.StartScan(ctx, j.Lease(), 4, t0))
	must(t, s.RetryJob(ctx, j.Lease(), t0.Add(time.Minute), "PSI request failed: connection refused"))
	// Never started, created at t0+1m: overdue by its creation.
	never := enqueue(t, s, waiting, t0.Add(time.Minute))
	// Created after the deadline's start: not overdue.
	enqueue(t, s, fresh, t0.Add(2*time.Hour))

	got, err := s.OverdueScans(ctx, t0.Add(time.Hour))
	must(t, err)
	if len(got) != 2 || got[0].ID != old.ID || got[1].ID != never.ID {
		t.Fatalf("overdue = %+v, want the started scan then the never-started one", got)
	}
	o := got[0]
	if o.UserID != a.ID || o.LastError != "PSI request failed: connection refused" || o.Status != store.StatusRunning || o.PagesTotal != 4 {
		t.Errorf("overdue scan = %+v", o)
	}
	if got[1].Status != store.StatusQueued || got[1].LastError != "" {
		t.Errorf("never-started scan = %+v", got[1])
	}
}

func testExpireScan(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	sc := enqueue(t, s, site, t0)
	j, err := s.ClaimJob(ctx, store.KindScan, "w", t0, 0)
	must(t, err)
	must(t, s.StartScan(ctx, j.Lease(), 2, t0))
	must(t, s.SavePageResult(ctx, j.Lease(), store.PageResult{PagePath: "/", Strategy: "mobile", Scores: store.PageScores{Performance: ip(50)}}))

	reason := "PageSpeed Insights could not be reached"
	must(t, s.ExpireScan(ctx, sc.ID, reason, t0.Add(time.Hour)))
	got, err := s.Scan(ctx, a.ID, sc.ID)
	must(t, err)
	if got.Status != store.StatusFailed || got.Error != reason || got.CompletedAt == nil || !got.CompletedAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("expired scan = %+v", got)
	}
	if _, err := s.PageResult(ctx, a.ID, sc.ID, "/", "mobile"); err != nil {
		t.Errorf("the stored result was lost: %v", err)
	}
	wantErr(t, s.Heartbeat(ctx, j.Lease(), t0.Add(time.Hour)), store.ErrLeaseLost)
	wantErr(t, s.SavePageResult(ctx, j.Lease(), store.PageResult{PagePath: "/", Strategy: "desktop"}), store.ErrLeaseLost)
	wantErr(t, s.ExpireScan(ctx, sc.ID, "again", t0.Add(2*time.Hour)), store.ErrNotFound)
	over, err := s.OverdueScans(ctx, t0.Add(2*time.Hour))
	must(t, err)
	if len(over) != 0 {
		t.Errorf("still overdue: %+v", over)
	}
	enqueue(t, s, site, t0.Add(time.Hour)) // the site is free for its next scan
}
