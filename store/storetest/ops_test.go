package storetest_test

import (
	"testing"
	"time"

	"sitepulse/store"
)

// testReady: a store just opened (and migrated) is ready.
func testReady(t *testing.T, s store.Store) {
	must(t, s.Ready(ctx))
}

// testJobFigures: the live jobs by kind and state, each available figure with its oldest job
// runnable now; completed jobs and jobs scheduled later than now are counted but not aged.
func testJobFigures(t *testing.T, s store.Store) {
	figs, err := s.JobFigures(ctx, t0)
	must(t, err)
	if len(figs) != 0 {
		t.Errorf("an empty queue: %+v", figs)
	}
	_, err = s.EnqueueJob(ctx, noteJob{N: 1}, t0.Add(-time.Hour))
	must(t, err)
	_, err = s.EnqueueJob(ctx, noteJob{N: 2}, t0.Add(-time.Minute))
	must(t, err)
	_, err = s.EnqueueJob(ctx, noteJob{N: 3}, t0.Add(time.Hour)) // not runnable yet
	must(t, err)
	_, err = s.EnqueueJob(ctx, patientJob{}, t0.Add(time.Hour))
	must(t, err)
	done, err := s.EnqueueJob(ctx, patientJob{}, t0.Add(-2*time.Hour))
	must(t, err)
	claimed, err := s.ClaimJob(ctx, "patient", "w", t0, 0)
	must(t, err)
	if claimed.ID != done.ID {
		t.Fatalf("claimed %d, want %d", claimed.ID, done.ID)
	}
	// The oldest note is running now, so the oldest runnable one is a minute old.
	_, err = s.ClaimJob(ctx, "note", "w", t0, 0)
	must(t, err)
	must(t, s.CompleteJob(ctx, claimed.Lease(), t0))
	figs, err = s.JobFigures(ctx, t0)
	must(t, err)
	want := []store.JobFigure{
		{Kind: "note", State: store.JobAvailable, Jobs: 2, OldestRunnable: t0.Add(-time.Minute)},
		{Kind: "note", State: store.JobRunning, Jobs: 1},
		{Kind: "patient", State: store.JobAvailable, Jobs: 1},
	}
	if len(figs) != len(want) {
		t.Fatalf("figures %+v, want %+v", figs, want)
	}
	for i := range want {
		if figs[i].Kind != want[i].Kind || figs[i].State != want[i].State || figs[i].Jobs != want[i].Jobs || !figs[i].OldestRunnable.Equal(want[i].OldestRunnable) {
			t.Errorf("figure %d = %+v, want %+v", i, figs[i], want[i])
		}
	}
}
