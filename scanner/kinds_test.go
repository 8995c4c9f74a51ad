package scanner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/memory"
	"sitepulse/store/storetest"
)

// tally is a job kind of the tests' own: adding a kind is an args type and a worker function.
type tally struct {
	N int `json:"n"`
}

func (tally) Kind() string { return "tally" }

// A second kind of job runs through the same queue, on two pools with a store each (two
// processes on one Postgres schema; on the memory store, two pools on one store): 100 jobs,
// each run once, none lost. One job fails its first attempt and is retried; one snoozes once.
func TestTwoPoolsShareAKind(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		st := memory.New()
		testTwoPoolsShareAKind(t, st, st)
	})
	t.Run("postgres", func(t *testing.T) {
		st, dsn := storetest.PostgresDSN(t)
		testTwoPoolsShareAKind(t, st, storetest.Open(t, dsn))
	})
}

func testTwoPoolsShareAKind(t *testing.T, st, other store.Store) {
	const jobs = 100

	var mu sync.Mutex
	runs := map[int][]string{} // job number -> pools that completed it
	failed, snoozed := false, false
	done := make(chan struct{}, 2*jobs)
	worker := func(name string) KindWorker {
		return Work(4, func(ctx context.Context, job store.Job, args tally) error {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case args.N == 7 && !failed:
				failed = true
				return errors.New("a passing trouble")
			case args.N == 8 && !snoozed:
				snoozed = true
				return &Snooze{Until: time.Now(), Reason: "not now"}
			}
			runs[args.N] = append(runs[args.N], name)
			done <- struct{}{}
			return nil
		})
	}
	var pools []*Pool
	for i, s := range []store.Store{st, other} {
		name := fmt.Sprintf("pool%d", i+1)
		p := NewPool(PoolConfig{Store: s, WorkerID: name, Kinds: []KindWorker{worker(name)},
			Log: slog.New(slog.DiscardHandler), Poll: 10 * time.Millisecond, Backoff: func(int) time.Duration { return 0 }})
		p.Start()
		t.Cleanup(func() { p.Stop(context.Background()) })
		pools = append(pools, p)
	}
	ids := make([]int64, jobs)
	for n := range jobs {
		j, err := st.EnqueueJob(context.Background(), tally{N: n}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		ids[n] = j.ID
	}

	timeout := time.After(storetest.Timeout())
	for range jobs {
		select {
		case <-done:
		case <-timeout:
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("%d of %d jobs ran in 60 s", len(runs), jobs)
		}
	}
	// Stop waits for the workers to settle their jobs: then every job is complete.
	for _, p := range pools {
		if err := p.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	by := map[string]int{}
	for n := range jobs {
		if len(runs[n]) != 1 {
			t.Errorf("job %d ran on %v, want once", n, runs[n])
		}
		for _, name := range runs[n] {
			by[name]++
		}
	}
	t.Logf("jobs run by pool: %v", by)
	for n, id := range ids {
		j, err := st.Job(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if j.State != store.JobCompleted || n == 7 && j.Attempt-j.Snoozes() != 2 || n == 8 && (j.Snoozes() != 1 || j.Attempt != 2) {
			t.Errorf("job %d = %+v", n, j)
		}
	}
}

// The cleaner deletes the jobs finished more than a week before its step's now, and no other.
func TestCleanOnceDeletesJobsFinishedAWeekAgo(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	p := NewPool(PoolConfig{Store: st, Kinds: []KindWorker{Work(1, func(context.Context, store.Job, tally) error { return nil })}})
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	var ids []int64
	for i, at := range []time.Time{t0, t0.Add(24 * time.Hour)} {
		j, err := st.EnqueueJob(ctx, tally{N: i}, at)
		if err != nil {
			t.Fatal(err)
		}
		p.cfg.Now = func() time.Time { return at }
		if ran, err := p.WorkOnce(ctx, "tally"); !ran || err != nil {
			t.Fatalf("WorkOnce = %v, %v", ran, err)
		}
		ids = append(ids, j.ID)
	}
	n, err := p.CleanOnce(ctx, t0.Add(7*24*time.Hour+time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("CleanOnce = %d, %v; want 1", n, err)
	}
	if _, err := st.Job(ctx, ids[0]); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the job finished 8 days ago: %v, want it deleted", err)
	}
	if _, err := st.Job(ctx, ids[1]); err != nil {
		t.Errorf("the job finished 7 days ago: %v, want it kept", err)
	}
	if _, err := p.WorkOnce(ctx, "nobody"); err == nil {
		t.Error("WorkOnce of a kind with no worker: no error")
	}
}

// A job whose worker died is returned to the queue by the rescuer's step once its lease has
// lapsed, and the next claim runs it.
func TestRescueOnceReturnsADeadWorkersJob(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	ran := 0
	p := NewPool(PoolConfig{Store: st, Lease: time.Minute,
		Kinds: []KindWorker{Work(1, func(context.Context, store.Job, tally) error { ran++; return nil })}})
	t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	j, err := st.EnqueueJob(ctx, tally{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ClaimJob(ctx, "tally", "dead", t0, 0); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		at   time.Time
		want int
	}{{t0.Add(time.Minute), 0}, {t0.Add(time.Minute + time.Second), 1}} {
		p.cfg.Now = func() time.Time { return tt.at }
		if n, err := p.RescueOnce(ctx); n != tt.want || err != nil {
			t.Fatalf("RescueOnce at +%s = %d, %v; want %d", tt.at.Sub(t0), n, err, tt.want)
		}
	}
	if ok, err := p.WorkOnce(ctx, "tally"); !ok || err != nil || ran != 1 {
		t.Fatalf("WorkOnce = %v, %v, ran %d; want the rescued job run once", ok, err, ran)
	}
	if got, _ := st.Job(ctx, j.ID); got.State != store.JobCompleted || got.Attempt != 2 {
		t.Errorf("job = %+v, want completed on its second attempt", got)
	}
}

// The scheduler's step enqueues a due site's scan once; the next step finds nothing due.
func TestScheduleOnceEnqueuesADueSiteOnce(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	user := store.User{ID: store.NewID(), Email: "due@example.com", PasswordHash: "x", CreatedAt: now}
	due := now.Add(-time.Minute)
	site := store.Site{ID: store.NewID(), UserID: user.ID, Name: "Due", Domain: "due.example.com", Schedule: store.ScheduleDaily, NextScanAt: &due, CreatedAt: now}
	if err := st.CreateUser(ctx, user); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSite(ctx, site); err != nil {
		t.Fatal(err)
	}
	p := NewPool(PoolConfig{Store: st, Now: func() time.Time { return now }})
	for i, want := range []int{1, 0} {
		if n, err := p.ScheduleOnce(ctx); n != want || err != nil {
			t.Errorf("step %d: ScheduleOnce = %d, %v; want %d", i+1, n, err, want)
		}
	}
}
