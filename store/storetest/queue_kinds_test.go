package storetest_test

import (
	"encoding/json"
	"testing"
	"time"

	"sitepulse/store"
)

// noteJob is a job kind of the tests' own, as a package adding a kind would write it.
type noteJob struct {
	ScanID string `json:"scanId,omitempty"`
	N      int    `json:"n"`
}

func (noteJob) Kind() string { return "note" }

// patientJob is a kind that asks for more attempts than MaxAttempts.
type patientJob struct{}

func (patientJob) Kind() string     { return "patient" }
func (patientJob) MaxAttempts() int { return 10 }

// noKind is args that forgot their kind.
type noKind struct{}

func (noKind) Kind() string { return "" }

func testJobKinds(t *testing.T, s store.Store) {
	if _, err := s.EnqueueJob(ctx, noKind{}, t0); err == nil {
		t.Error("a job without a kind was enqueued")
	}
	j, err := s.EnqueueJob(ctx, noteJob{N: 7}, t0)
	must(t, err)
	if j.ID == 0 || j.Kind != "note" || j.State != store.JobAvailable || j.ScanID != "" {
		t.Errorf("enqueued %+v", j)
	}
	_, err = s.ClaimJob(ctx, store.KindScan, "w", t0, 0)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.ClaimJob(ctx, "note", "w", t0.Add(-time.Second), 0)
	wantErr(t, err, store.ErrNotFound)
	got, err := s.ClaimJob(ctx, "note", "w", t0, 0)
	must(t, err)
	var args noteJob
	must(t, json.Unmarshal(got.Args, &args))
	if got.ID != j.ID || got.Attempt != 1 || got.State != store.JobRunning || args.N != 7 || got.ScanID != "" {
		t.Errorf("claimed %+v with args %+v", got, args)
	}

	stale := got.Lease()
	stale.Attempt--
	wantErr(t, s.CompleteJob(ctx, stale, t0), store.ErrLeaseLost)
	must(t, s.CompleteJob(ctx, got.Lease(), t0.Add(time.Second)))
	must(t, s.CompleteJob(ctx, got.Lease(), t0.Add(time.Second))) // finished already: nothing to do
	done, err := s.Job(ctx, j.ID)
	must(t, err)
	if done.State != store.JobCompleted || done.FinalizedAt == nil || !done.FinalizedAt.Equal(t0.Add(time.Second)) {
		t.Errorf("completed job = %+v", done)
	}
	wantErr(t, s.RetryJob(ctx, got.Lease(), t0, "late"), store.ErrLeaseLost)

	// A kind may ask for more attempts; a snooze still spends none of them.
	p, err := s.EnqueueJob(ctx, patientJob{}, t0)
	must(t, err)
	if p.MaxAttempts != 10 || p.Snoozes() != 0 {
		t.Errorf("patient job = %+v, want 10 attempts", p)
	}
	p, err = s.ClaimJob(ctx, "patient", "w", t0, 0)
	must(t, err)
	must(t, s.SnoozeJob(ctx, p.Lease(), t0, "not now"))
	p, err = s.ClaimJob(ctx, "patient", "w", t0, 0)
	must(t, err)
	if p.Attempt != 2 || p.MaxAttempts != 11 || p.Snoozes() != 1 {
		t.Errorf("patient job after a snooze = %+v, want attempt 2 of 11 with 1 snooze", p)
	}

	// Discarding a job of another kind fails no scan.
	d, err := s.EnqueueJob(ctx, noteJob{N: 8}, t0)
	must(t, err)
	d, err = s.ClaimJob(ctx, "note", "w", t0, 0)
	must(t, err)
	must(t, s.DiscardJob(ctx, d.Lease(), "gave up", t0))
	if got, _ := s.Job(ctx, d.ID); got.State != store.JobDiscarded || got.LastError != "gave up" || got.FinalizedAt == nil {
		t.Errorf("discarded job = %+v", got)
	}
}

func testCompleteScanFollowUps(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "site")
	sc := enqueue(t, s, site, t0)
	j, err := s.ClaimJob(ctx, store.KindScan, "w", t0, 0)
	must(t, err)
	if j.ScanID != sc.ID {
		t.Fatalf("scan job = %+v", j)
	}
	var args store.ScanJob
	if err := json.Unmarshal(j.Args, &args); err != nil || args.ScanID != sc.ID {
		t.Errorf("scan job args = %s (%v), want its scan id", j.Args, err)
	}
	must(t, s.StartScan(ctx, j.Lease(), 1, t0))
	perf := 90
	follow := noteJob{ScanID: sc.ID, N: 1}

	stale := j.Lease()
	stale.Attempt++
	wantErr(t, s.CompleteScan(ctx, stale, store.ScanScores{Performance: &perf}, t0, follow), store.ErrLeaseLost)
	_, err = s.ClaimJob(ctx, "note", "w", t0.Add(time.Hour), 0)
	wantErr(t, err, store.ErrNotFound)

	must(t, s.CompleteScan(ctx, j.Lease(), store.ScanScores{Performance: &perf}, t0.Add(time.Minute), follow))

	// A scan enqueued under a kind of its own (one no worker runs, as a test parks it) is still
	// that job's scan, and giving the job up fails it.
	other := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: "both", Trigger: "manual", CreatedAt: t0}
	must(t, s.EnqueueScan(ctx, other, "parked", t0))
	parked, err := s.ClaimJob(ctx, "parked", "w", t0, 0)
	must(t, err)
	if parked.ScanID != other.ID {
		t.Errorf("parked scan job = %+v, want scan %s", parked, other.ID)
	}
	must(t, s.DiscardJob(ctx, parked.Lease(), "parked for good", t0))
	if got, err := s.Scan(ctx, a.ID, other.ID); err != nil || got.Status != store.StatusFailed {
		t.Errorf("parked scan after its job was given up = %+v, %v; want failed", got, err)
	}
	must(t, s.CompleteJob(ctx, j.Lease(), t0.Add(time.Minute))) // its worker finished it: nothing to do
	n, err := s.ClaimJob(ctx, "note", "w", t0.Add(time.Minute), 0)
	must(t, err)
	var got noteJob
	must(t, json.Unmarshal(n.Args, &got))
	if got != follow || n.ScanID != "" {
		t.Errorf("follow-up %+v with args %+v, want %+v", n, got, follow)
	}
	// Giving the follow-up up, by discard or by rescue, leaves its scan complete.
	must(t, s.DiscardJob(ctx, n.Lease(), "smtp down", t0.Add(time.Minute)))
	again, err := s.EnqueueJob(ctx, follow, t0)
	must(t, err)
	for range store.MaxAttempts {
		_, err := s.ClaimJob(ctx, "note", "dead", t0.Add(time.Minute), 0)
		must(t, err)
		_, err = s.RescueJobs(ctx, t0.Add(2*time.Minute), t0.Add(2*time.Minute))
		must(t, err)
	}
	if j, _ := s.Job(ctx, again.ID); j.State != store.JobDiscarded {
		t.Errorf("follow-up after %d rescues = %+v, want discarded", store.MaxAttempts, j)
	}
	done, err := s.Scan(ctx, a.ID, sc.ID)
	must(t, err)
	if done.Status != store.StatusComplete || done.Error != "" {
		t.Errorf("scan = %s (%q) after its follow-up was given up, want complete", done.Status, done.Error)
	}
}

func testCleanJobs(t *testing.T, s store.Store) {
	finish := func(at time.Time, discard bool) store.Job {
		t.Helper()
		j, err := s.EnqueueJob(ctx, noteJob{}, t0)
		must(t, err)
		j, err = s.ClaimJob(ctx, "note", "w", at, 0)
		must(t, err)
		if discard {
			must(t, s.DiscardJob(ctx, j.Lease(), "gave up", at))
		} else {
			must(t, s.CompleteJob(ctx, j.Lease(), at))
		}
		return j
	}
	week := 7 * 24 * time.Hour
	oldest := finish(t0, false)
	older := finish(t0.Add(time.Hour), true)
	recent := finish(t0.Add(week), false)
	waiting, err := s.EnqueueJob(ctx, noteJob{}, t0.Add(-week))
	must(t, err)
	running, err := s.EnqueueJob(ctx, noteJob{}, t0.Add(-week))
	must(t, err)
	if _, err := s.ClaimJob(ctx, "note", "w", t0, 0); err != nil {
		t.Fatal(err)
	}

	cutoff := t0.Add(week - time.Minute)
	n, err := s.CleanJobs(ctx, cutoff, 1)
	must(t, err)
	if n != 1 {
		t.Errorf("cleaned %d with limit 1, want 1", n)
	}
	_, err = s.Job(ctx, oldest.ID)
	wantErr(t, err, store.ErrNotFound)
	n, err = s.CleanJobs(ctx, cutoff, 100)
	must(t, err)
	if n != 1 {
		t.Errorf("cleaned %d more, want 1", n)
	}
	_, err = s.Job(ctx, older.ID)
	wantErr(t, err, store.ErrNotFound)
	for _, id := range []int64{recent.ID, waiting.ID, running.ID} {
		if _, err := s.Job(ctx, id); err != nil {
			t.Errorf("job %d: %v, want it kept", id, err)
		}
	}
}
