package scanner

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/storetest"

	"sitepulse/scanner/psi"
)

// jobLog records the jobs a store hands out, so a test can read a scan's job.
type jobLog struct {
	store.Store
	mu        sync.Mutex
	jobs      map[string]int64 // scan id -> job id
	claims    atomic.Int32     // ClaimJob calls answered, a job or none
	duePasses atomic.Int32     // EnqueueDueScans calls answered: scheduler passes
}

func (j *jobLog) EnqueueDueScans(ctx context.Context, now time.Time, limit int) ([]store.Scan, error) {
	defer j.duePasses.Add(1)
	return j.Store.EnqueueDueScans(ctx, now, limit)
}

func (j *jobLog) ClaimJob(ctx context.Context, queue, workerID string, now time.Time, perWorkspace int) (store.Job, error) {
	job, err := j.Store.ClaimJob(ctx, queue, workerID, now, perWorkspace)
	defer j.claims.Add(1)
	if err == nil {
		j.mu.Lock()
		j.jobs[job.ScanID] = job.ID
		j.mu.Unlock()
	}
	return job, err
}

// job reads the job of a scan, once it was claimed.
func (j *jobLog) job(t testing.TB, scanID string) (store.Job, bool) {
	t.Helper()
	j.mu.Lock()
	id, ok := j.jobs[scanID]
	j.mu.Unlock()
	if !ok {
		return store.Job{}, false
	}
	job, err := j.Store.Job(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return job, true
}

// breakerRig is a rig whose pool audits through a PSI client with a breaker, on a clock the
// test moves. Its lease is long, so moving the clock never makes the rescuer take a job.
type breakerRig struct {
	*rig
	jobs  *jobLog
	clock *scantest.Clock
	psi   *psi.Client
}

const breakerOpenFor = time.Minute

func newBreakerRig(t *testing.T, st store.Store, start time.Time, daily int) *breakerRig {
	jobs := &jobLog{Store: st, jobs: map[string]int64{}}
	r := &breakerRig{rig: newRig(t, jobs), jobs: jobs, clock: scantest.NewClock(start)}
	log := slog.New(slog.NewTextHandler(r.logs, nil))
	cfg := psi.Config{Endpoint: r.rig.psi.Endpoint(), Client: r.rig.psi.Client(), Key: testKey, Timeout: 2 * time.Second, Attempts: 2,
		Backoff: time.Millisecond, QuotaBackoff: time.Millisecond, Now: r.clock.Now, Log: log,
		Breaker: psi.NewBreaker(psi.BreakerConfig{Failures: 3, OpenFor: breakerOpenFor, Now: r.clock.Now, Log: log})}
	if daily > 0 {
		cfg.Daily = psi.NewDailyCounter(daily)
	}
	r.psi = psi.New(cfg)
	r.pool(func(c *PoolConfig) {
		c.Auditor, c.Now, c.Lease, c.Heartbeat, c.Capacity = r.psi, r.clock.Now, time.Hour, 50*time.Millisecond, psi.NewCapacity(psi.CapacityConfig{MaxInFlight: 1})
		c.Deadline = 100 * 365 * 24 * time.Hour // the clock starts years ahead and jumps: no scan deadline here
	})
	return r
}

// waitSnoozed waits until the scan's job is back in the queue after a snooze, and returns it.
func (r *breakerRig) waitSnoozed(scanID string, snoozes int) store.Job {
	r.t.Helper()
	var j store.Job
	snoozed := storetest.Eventually(func() bool {
		var ok bool
		j, ok = r.jobs.job(r.t, scanID)
		return ok && j.State == store.JobAvailable && j.Snoozes() == snoozes
	})
	if !snoozed {
		r.t.Fatalf("the scan's job was not snoozed %d times after %s; logs:\n%s", snoozes, storetest.Timeout(), r.logs.String())
	}
	return j
}

// checkSnoozed checks a job snoozed until the breaker's reopen time: not before it, a few
// seconds of jitter after at most, its attempt not spent, the reason kept.
func (r *breakerRig) checkSnoozed(j store.Job, until time.Time, wantReason string) {
	r.t.Helper()
	if j.RunAt.Before(until) || j.RunAt.After(until.Add(5*time.Second)) {
		r.t.Errorf("job runs again at %v, want %v plus at most 5 s", j.RunAt, until)
	}
	if spent := j.Attempt - j.Snoozes(); spent != 0 {
		r.t.Errorf("job = attempt %d with %d snoozes: %d attempts spent, want 0", j.Attempt, j.Snoozes(), spent)
	}
	if !strings.Contains(j.LastError, "PSI unavailable until") || !strings.Contains(j.LastError, wantReason) ||
		!strings.Contains(j.LastError, "scan snoozed") {
		r.t.Errorf("job reason = %q, want PSI unavailable with %q", j.LastError, wantReason)
	}
}

func TestBreakerPipeline(t *testing.T) {
	onStores(t,
		storeTest{name: "a 403 opens the breaker, snoozes the scan, and one probe after T lets it complete", fn: testBreakerKeyRejected},
		storeTest{name: "N audits failing with 500s open the breaker; pages already failed keep their errors", fn: testBreakerServerErrors},
		storeTest{name: "the daily limit reached snoozes the scan until the quota resets", fn: testBreakerDailyLimit},
		storeTest{name: "Lighthouse runtime errors never open the breaker", fn: testBreakerRuntimeErrors},
	)
}

func testBreakerKeyRejected(t *testing.T, st store.Store) {
	ctx := context.Background()
	start := time.Now().Add(time.Second).UTC().Truncate(time.Millisecond) // jobs enqueued now are runnable on the test's clock
	r := newBreakerRig(t, st, start, 0)
	r.rig.psi.FailAll(scantest.Fault{Status: 403, Body: scantest.ForbiddenBody})
	sc := r.enqueue(r.site)

	j := r.waitSnoozed(sc.ID, 1)
	r.checkSnoozed(j, start.Add(breakerOpenFor), "PSI rejected the API key")
	if n := r.rig.psi.Total(); n != 1 {
		t.Errorf("%d PSI calls, want 1: a 403 opens the breaker at once", n)
	}
	got, _ := st.Scan(ctx, r.user.ID, sc.ID)
	_, errs := r.results(sc.ID)
	if got.Status != store.StatusRunning || got.PagesDone != 0 || len(errs) != 0 {
		t.Errorf("snoozed scan = %s, %d done, %d page errors; want running, 0, 0 (nothing was audited)", got.Status, got.PagesDone, len(errs))
	}
	logs := r.logs.String()
	for _, want := range []string{"level=ERROR", "PageSpeed Insights API is not enabled", "PSI unavailable until " + start.Add(breakerOpenFor).Format(time.RFC3339) + ", scan snoozed"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
	if strings.Contains(logs, testKey) {
		t.Error("the logs print the API key")
	}

	// While open no audit calls PSI: a scan claimed now is snoozed before it even starts.
	other := r.addSite("Other", []string{"/", "/fast"})
	sc2 := r.enqueue(other)
	r.checkSnoozed(r.waitSnoozed(sc2.ID, 1), start.Add(breakerOpenFor), "PSI rejected the API key")
	if n := r.rig.psi.Total(); n != 1 {
		t.Errorf("%d PSI calls while open, want still 1", n)
	}
	if got, _ := st.Scan(ctx, r.user.ID, sc2.ID); got.Status != store.StatusQueued {
		t.Errorf("scan snoozed before it started is %s, want queued", got.Status)
	}

	// The key is fixed; after T (and the snooze's jitter) one probe goes, succeeds, and closes
	// the breaker: both scans complete with every page, on their first real attempt.
	r.rig.psi.Heal()
	r.clock.Advance(breakerOpenFor + 6*time.Second)
	for _, want := range []struct {
		id    string
		pages int
	}{{sc.ID, 10}, {sc2.ID, 4}} {
		done := r.wait(want.id)
		results, errs := r.results(want.id)
		if done.Status != store.StatusComplete || len(results) != want.pages || len(errs) != 0 {
			t.Errorf("scan = %s with %d results and %d errors, want complete with %d and 0", done.Status, len(results), len(errs), want.pages)
		}
		j, _ := r.jobs.job(t, want.id)
		if spent := j.Attempt - j.Snoozes(); j.State != store.JobCompleted || spent != 1 {
			t.Errorf("job = %s after %d real attempts, want completed after 1", j.State, spent)
		}
	}
	if n := r.rig.psi.Total(); n != 1+10+4 {
		t.Errorf("%d PSI calls, want 15: the 403, then each audit once", n)
	}
	if !strings.Contains(r.logs.String(), "PSI breaker closed") {
		t.Error("logs lack the breaker closing")
	}
}

func testBreakerServerErrors(t *testing.T, st store.Store) {
	start := time.Now().Add(time.Second).UTC().Truncate(time.Millisecond)
	r := newBreakerRig(t, st, start, 0)
	r.rig.psi.FailAll(scantest.Fault{Status: 500, Body: scantest.ServerErrorBody})
	sc := r.enqueue(r.site)
	j := r.waitSnoozed(sc.ID, 1)
	r.checkSnoozed(j, start.Add(breakerOpenFor), "3 audits in a row failed")
	if n := r.rig.psi.Total(); n != 3*2 {
		t.Errorf("%d PSI calls, want 6: 3 audits of 2 calls, then none", n)
	}
	// The first two audits failed before the breaker opened: they are the pages' errors. The
	// third opened it: its page was not recorded and is audited after the probe.
	_, errs := r.results(sc.ID)
	if len(errs) != 2 {
		t.Errorf("%d page errors, want 2", len(errs))
	}
	r.rig.psi.Heal()
	r.clock.Advance(breakerOpenFor + 6*time.Second)
	done := r.wait(sc.ID)
	results, errs := r.results(sc.ID)
	if done.Status != store.StatusComplete || done.PagesDone != 10 || len(results) != 8 || len(errs) != 2 {
		t.Errorf("scan = %s %d/10 with %d results and %d errors, want complete 10/10, 8 and 2", done.Status, done.PagesDone, len(results), len(errs))
	}
}

func testBreakerDailyLimit(t *testing.T, st store.Store) {
	// A fixed "now" in the future, so jobs enqueued now are runnable: 12:00 UTC, 04:00 in Los
	// Angeles; the quota day ends at the next midnight there, 08:00 UTC the next day.
	start := time.Date(2040, 1, 15, 12, 0, 0, 0, time.UTC)
	reset := time.Date(2040, 1, 16, 8, 0, 0, 0, time.UTC)
	r := newBreakerRig(t, st, start, 6)
	sc := r.enqueue(r.site)
	j := r.waitSnoozed(sc.ID, 1)
	r.checkSnoozed(j, reset, "PSI_DAILY_LIMIT of 6 calls reached")
	results, errs := r.results(sc.ID)
	if n := r.rig.psi.Total(); n != 6 || len(results) != 6 || len(errs) != 0 {
		t.Errorf("%d PSI calls, %d results, %d errors on the first day; want 6, 6, 0", n, len(results), len(errs))
	}
	// One second before the reset nothing runs; at the reset (plus jitter) the scan resumes.
	r.clock.Advance(reset.Sub(start) - time.Second)
	if err := r.psi.Unavailable(); err == nil {
		t.Error("PSI available a second before the quota resets")
	}
	r.clock.Advance(6 * time.Second)
	done := r.wait(sc.ID)
	results, _ = r.results(sc.ID)
	if done.Status != store.StatusComplete || len(results) != 10 || r.rig.psi.Total() != 10 {
		t.Errorf("scan = %s with %d results after %d calls, want complete with 10 after 10", done.Status, len(results), r.rig.psi.Total())
	}
}

func testBreakerRuntimeErrors(t *testing.T, st store.Store) {
	r := newBreakerRig(t, st, time.Now().Add(time.Second).UTC().Truncate(time.Millisecond), 0)
	r.rig.psi.FailAll(scantest.Fault{Status: 400, Body: scantest.FailedDocumentBody})
	sc := r.wait(r.enqueue(r.site).ID)
	_, errs := r.results(sc.ID)
	if sc.Status != store.StatusFailed || len(errs) != 10 || r.rig.psi.Total() != 10 {
		t.Errorf("scan = %s with %d page errors after %d calls; want failed, 10, 10 (each page's own verdict)", sc.Status, len(errs), r.rig.psi.Total())
	}
	if err := r.psi.Unavailable(); err != nil {
		t.Errorf("breaker open after Lighthouse runtime errors: %v", err)
	}
	if strings.Contains(r.logs.String(), "PSI breaker open") {
		t.Errorf("the breaker opened:\n%s", r.logs.String())
	}
}
