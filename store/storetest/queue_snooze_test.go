package storetest_test

import (
	"testing"
	"time"

	"sitepulse/store"
)

// A snoozed job (released at shutdown, or PSI unavailable) comes back at its run time under a
// new, higher attempt, so the old lease stays fenced off, and keeps every one of its real
// attempts: the scan fails only after MaxAttempts real failures, by retry or by rescue.
func testSnooze(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	sc := enqueue(t, s, site, t0)
	now := t0
	claim := func(at time.Time) store.Job {
		t.Helper()
		j, err := s.ClaimJob(ctx, store.KindScan, "w", at, 0)
		must(t, err)
		return j
	}

	// Two snoozes between real attempts.
	first := claim(now)
	must(t, s.SnoozeJob(ctx, first.Lease(), now.Add(time.Minute), "PSI unavailable until 12:01"))
	got, _ := s.Job(ctx, first.ID)
	if got.State != store.JobAvailable || got.LastError != "PSI unavailable until 12:01" || got.LockedBy != "" ||
		got.Attempt != 1 || got.MaxAttempts != store.MaxAttempts+1 || got.Snoozes() != 1 {
		t.Errorf("snoozed job = %+v", got)
	}
	_, err := s.ClaimJob(ctx, store.KindScan, "w", now.Add(time.Minute-time.Second), 0)
	wantErr(t, err, store.ErrNotFound)
	now = now.Add(time.Minute)
	second := claim(now)
	if second.ID != first.ID || second.Attempt <= first.Attempt {
		t.Fatalf("reclaimed %+v after %+v: the attempt must grow", second, first)
	}
	// The lease of before the snooze is refused everywhere.
	wantErr(t, s.Heartbeat(ctx, first.Lease(), now), store.ErrLeaseLost)
	wantErr(t, s.SavePageResult(ctx, first.Lease(), store.PageResult{PagePath: "/", Strategy: "mobile", PageURL: "u"}), store.ErrLeaseLost)
	wantErr(t, s.SnoozeJob(ctx, first.Lease(), now, "zombie"), store.ErrLeaseLost)
	wantErr(t, s.RetryJob(ctx, first.Lease(), now, "zombie"), store.ErrLeaseLost)
	wantErr(t, s.FailScan(ctx, first.Lease(), "zombie", now), store.ErrLeaseLost)
	must(t, s.SnoozeJob(ctx, second.Lease(), now, "released at shutdown"))
	wantErr(t, s.SnoozeJob(ctx, second.Lease(), now, "twice"), store.ErrLeaseLost)

	// Now MaxAttempts real failures: retries until the last, which the pool turns into FailScan
	// (Attempt == MaxAttempts), with the snoozes not counted as attempts.
	var j store.Job
	for real := 1; real <= store.MaxAttempts; real++ {
		j = claim(now)
		if spent := j.Attempt - j.Snoozes(); spent != real {
			t.Fatalf("attempt %d with %d snoozes: %d real attempts, want %d", j.Attempt, j.Snoozes(), spent, real)
		}
		if last := j.Attempt >= j.MaxAttempts; last != (real == store.MaxAttempts) {
			t.Fatalf("real attempt %d of %d: last = %v (%+v)", real, store.MaxAttempts, last, j)
		}
		if real < store.MaxAttempts {
			must(t, s.RetryJob(ctx, j.Lease(), now, "PSI 503"))
		}
	}
	must(t, s.FailScan(ctx, j.Lease(), "gave up", now))
	gotScan, _ := s.Scan(ctx, a.ID, sc.ID)
	if gotScan.Status != store.StatusFailed {
		t.Errorf("scan = %+v", gotScan)
	}

	// The rescuer's "last attempt" rule counts real attempts too: a job snoozed once and then
	// rescued MaxAttempts times is discarded on the last rescue only.
	sc2 := enqueue(t, s, newSite(t, s, a, "other"), now)
	j = claim(now)
	must(t, s.SnoozeJob(ctx, j.Lease(), now, "released at shutdown"))
	for real := 1; real <= store.MaxAttempts; real++ {
		claim(now)
		now = now.Add(time.Hour)
		n, err := s.RescueJobs(ctx, now, now)
		must(t, err)
		if n != 1 {
			t.Fatalf("rescued %d", n)
		}
		gotScan, _ = s.Scan(ctx, a.ID, sc2.ID)
		if failed := gotScan.Status == store.StatusFailed; failed != (real == store.MaxAttempts) {
			t.Fatalf("after %d real attempts the scan is %s", real, gotScan.Status)
		}
	}
}
