package scanner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"time"

	"sitepulse/store"

	"sitepulse/scanner/discover"
	"sitepulse/scanner/notify"
	"sitepulse/scanner/psi"
)

// Queue is what the workers need of the store: the job queue, and a scan's stored results and
// errors read back to score it.
type Queue interface {
	store.Queue
	PageResults(ctx context.Context, userID, scanID string) ([]store.PageResult, error)
	PageErrors(ctx context.Context, userID, scanID string) ([]store.PageError, error)
	// LatestCompletedScan and PageMetrics read the previous scan a page's audit is confirmed
	// against (see confirm).
	LatestCompletedScan(ctx context.Context, userID, siteID string) (store.Scan, error)
	PageMetrics(ctx context.Context, userID, scanID string) ([]store.PageResult, error)
}

// PoolConfig configures the worker pool. Zero values get the defaults noted.
type PoolConfig struct {
	Store   Queue
	Auditor Auditor
	// Replay audits the demo site instead of Auditor (see Replay); nil replays nothing.
	Replay    *Replay
	Discovery discover.Discovery
	Digest    *notify.Digest // e-mails regressions after a scan completes; nil sends none
	// Platform refreshes a connected site's pages before a publish's scan; nil keeps the saved list.
	Platform PageRefresher
	// Quota is USER_DAILY_AUDITS, each account's daily audit budget; nil grants everything.
	Quota *psi.AccountQuota
	Log   *slog.Logger
	// Workers is SCAN_WORKERS: scans audited at once by this process. Default 3.
	Workers int
	// Capacity bounds the audits in flight in this process and shares them fairly between the
	// scans running at once; give the same one to the PSI client so that its 429s adapt it.
	// Default: 64 audits at once, not adapting.
	Capacity *psi.Capacity
	// ConfirmRuns is REGRESSION_CONFIRM_RUNS: re-audits of a page whose audit regressed against
	// the previous completed scan, the median run kept (see confirm). 0 re-audits nothing.
	ConfirmRuns int
	// WorkerID names this process in jobs.locked_by. Default host:pid.
	WorkerID string
	// Wake signals that a job was enqueued (Postgres LISTEN, see postgres.ListenJobs); nil polls only.
	Wake <-chan struct{}
	// Poll is how often the dispatcher looks for runnable jobs without a wake-up. Default 2 s.
	Poll time.Duration
	// Lease is how long a running job may go without a heartbeat before the rescuer returns it
	// to the queue. Default 2 min; heartbeats go on during long PSI calls, so only a dead or
	// stuck process lets a lease lapse.
	Lease time.Duration
	// Heartbeat is how often a running job's lease is refreshed. Default Lease/4.
	Heartbeat time.Duration
	// RescueEvery is how often the rescuer looks for stale jobs. Default Lease/2.
	RescueEvery time.Duration
	// ScheduleEvery is how often the scheduler looks for sites whose scheduled scan is due.
	// Default 1 min.
	ScheduleEvery time.Duration
	// Deadline is SCAN_DEADLINE_SECONDS: a scan not completed this long after it started (or,
	// never started, was created) is failed with a reason, by the rescuer. Default 30 min.
	Deadline time.Duration
	// Backoff is the wait before a failed job's next attempt. Default attempt^4 s ±10%.
	Backoff func(attempt int) time.Duration
	// ReleaseGrace bounds how long Stop waits for cancelled jobs to release their leases. Default 5 s.
	ReleaseGrace time.Duration
	Now          func() time.Time
}

// PageRefresher reads a connected site's current published pages from the platform and saves
// them (platform.Connector).
type PageRefresher interface {
	RefreshPages(ctx context.Context, site store.Site) ([]string, error)
}

// Pool is one dispatcher claiming scan jobs and handing them to Workers goroutines, plus the
// rescuer. Several processes may run pools on one Postgres: claims skip locked rows, and every
// write is made under the job's lease.
type Pool struct {
	cfg      PoolConfig
	stop     chan struct{} // closed by Stop: claim nothing more
	jobsCtx  context.Context
	cancel   context.CancelCauseFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
	replayed *psi.Capacity // the replayed scans' audits: they call nothing, so no rate limit
	// slots are the worker slots free now, by worker number: a scan holds one from its claim
	// to its end, except while it discovers its pages (see scan).
	slots chan int
	// discovering counts each account's scans discovering their pages now, outside a slot.
	discoveringMu sync.Mutex
	discovering   map[string]int
}

// accountDiscoveries is how many scans of one account may discover their pages at once in a
// process; the account's other scans are snoozed meanwhile, so a tenant with many slow
// sitemaps cannot have the queue claimed for them while another tenant's scan waits.
const accountDiscoveries = 2

// errShutdown cancels running jobs when Stop's deadline passes; they release their leases.
var errShutdown = errors.New("the scanner is shutting down")

// errLeaseLost cancels a job whose heartbeat found the lease gone.
var errLeaseLost = fmt.Errorf("heartbeat: %w", store.ErrLeaseLost)

// NewPool returns a pool with cfg's defaults filled in. Start runs it.
func NewPool(cfg PoolConfig) *Pool {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 3
	}
	if cfg.Capacity == nil {
		cfg.Capacity = psi.NewCapacity(psi.CapacityConfig{})
	}
	if cfg.WorkerID == "" {
		host, _ := os.Hostname()
		cfg.WorkerID = fmt.Sprintf("%s:%d", host, os.Getpid())
	}
	if cfg.Poll <= 0 {
		cfg.Poll = 2 * time.Second
	}
	if cfg.Lease <= 0 {
		cfg.Lease = 2 * time.Minute
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = cfg.Lease / 4
	}
	if cfg.RescueEvery <= 0 {
		cfg.RescueEvery = cfg.Lease / 2
	}
	if cfg.ScheduleEvery <= 0 {
		cfg.ScheduleEvery = time.Minute
	}
	if cfg.Deadline <= 0 {
		cfg.Deadline = 30 * time.Minute
	}
	if cfg.Backoff == nil {
		cfg.Backoff = JobBackoff
	}
	if cfg.ReleaseGrace <= 0 {
		cfg.ReleaseGrace = 5 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	p := &Pool{cfg: cfg, stop: make(chan struct{}), replayed: psi.NewCapacity(psi.CapacityConfig{MaxInFlight: cfg.Capacity.MaxInFlight()}),
		slots: make(chan int, cfg.Workers), discovering: map[string]int{}}
	for n := range cfg.Workers {
		p.slots <- n + 1
	}
	p.jobsCtx, p.cancel = context.WithCancelCause(context.Background())
	return p
}

// JobBackoff is the wait before attempt+1 of a failed job: attempt^4 seconds ±10% (1 s, 16 s, 81 s).
func JobBackoff(attempt int) time.Duration {
	d := time.Duration(math.Pow(float64(max(attempt, 1)), 4)) * time.Second
	return jitter(d, 0.1)
}

// Start runs the dispatcher, the rescuer and the scheduler until Stop. The dispatcher claims
// a job whenever a worker slot is free and runs it in a goroutine of its own.
func (p *Pool) Start() {
	p.wg.Add(3)
	go func() {
		defer p.wg.Done()
		p.dispatch()
	}()
	go func() {
		defer p.wg.Done()
		p.scheduler()
	}()
	go func() {
		defer p.wg.Done()
		p.rescuer()
	}()
	p.cfg.Log.Info("scanner started", "workers", p.cfg.Workers, "worker_id", p.cfg.WorkerID,
		"max_inflight", p.cfg.Capacity.MaxInFlight(), "notify", p.cfg.Wake != nil, "poll", p.cfg.Poll)
}

// Stop claims nothing more and waits for running jobs to finish until ctx ends; then it
// cancels them, and each returns its job to the queue (within ReleaseGrace) so another
// worker resumes it. Results already stored are kept.
func (p *Pool) Stop(ctx context.Context) error {
	p.stopOnce.Do(func() { close(p.stop) })
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
		p.cancel(errShutdown)
		return nil
	case <-ctx.Done():
	}
	p.cfg.Log.Warn("scanner: jobs still running at the shutdown deadline; releasing them")
	p.cancel(errShutdown)
	select {
	case <-done:
		return nil
	case <-time.After(p.cfg.ReleaseGrace):
		return errors.New("scanner: workers did not stop; their jobs will be rescued after the lease")
	}
}

// dispatch claims a job whenever a worker slot is free, waking on notifications and on the
// poll. It holds the slot only while it claims: a scan that discovered its pages may be
// waiting for it.
func (p *Pool) dispatch() {
	poll := time.NewTicker(p.cfg.Poll)
	defer poll.Stop()
	for {
		var n int
		select {
		case <-p.stop:
			return
		case n = <-p.slots:
		}
		job, err := p.cfg.Store.ClaimJob(p.jobsCtx, store.QueueScan, p.cfg.WorkerID, p.cfg.Now())
		if err == nil {
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.run(&slot{p: p, n: n, held: true}, job)
			}()
			continue
		}
		p.slots <- n
		switch {
		case errors.Is(err, store.ErrNotFound):
		case store.Classify(err) == store.ErrUnavailable: // a restart: the next poll tries again
			p.cfg.Log.Warn("scanner: claim failed: database unavailable", "err", err)
		default:
			p.cfg.Log.Error("scanner: claim failed", "err", err)
		}
		select {
		case <-p.stop:
			return
		case <-p.cfg.Wake:
		case <-poll.C:
		}
	}
}

// slot is the worker slot a running job holds, which it gives back while it discovers pages.
type slot struct {
	p    *Pool
	n    int // the worker number, for the log
	held bool
}

// release gives the slot back, so the dispatcher can claim another job.
func (s *slot) release() {
	if s.held {
		s.held = false
		s.p.slots <- s.n
	}
}

// take waits for a free slot again, or for ctx to end.
func (s *slot) take(ctx context.Context) error {
	if s.held {
		return nil
	}
	select {
	case s.n = <-s.p.slots:
		s.held = true
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// enterDiscovery counts a scan of the account as discovering, unless accountDiscoveries are
// already; leave undoes it.
func (p *Pool) enterDiscovery(userID string) (leave func(), ok bool) {
	p.discoveringMu.Lock()
	defer p.discoveringMu.Unlock()
	if p.discovering[userID] >= accountDiscoveries {
		return nil, false
	}
	p.discovering[userID]++
	return func() {
		p.discoveringMu.Lock()
		defer p.discoveringMu.Unlock()
		if p.discovering[userID]--; p.discovering[userID] == 0 {
			delete(p.discovering, userID)
		}
	}, true
}

// rescuer returns jobs of dead workers to the queue, or fails their scans on the last attempt,
// and fails the scans past their deadline.
func (p *Pool) rescuer() {
	t := time.NewTicker(p.cfg.RescueEvery)
	defer t.Stop()
	for {
		now := p.cfg.Now()
		n, err := p.cfg.Store.RescueJobs(p.jobsCtx, now.Add(-p.cfg.Lease), now)
		if err != nil {
			p.cfg.Log.Error("scanner: rescue failed", "err", err)
		} else if n > 0 {
			p.cfg.Log.Warn("scanner: rescued stale jobs", "jobs", n)
		}
		p.expireOverdue(p.jobsCtx)
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
	}
}

// run works one job under its lease, with heartbeats, and settles it: done, retried later,
// failed, or released at shutdown.
func (p *Pool) run(s *slot, job store.Job) {
	defer s.release()
	lease := job.Lease()
	attempt := job.Attempt - job.Snoozes() // real attempts: a snooze spends none
	log := p.cfg.Log.With("worker", s.n, "job", job.ID, "scan", job.ScanID, "attempt", attempt)
	ctx, cancel := context.WithCancelCause(p.jobsCtx)
	defer cancel(nil)
	hbDone := make(chan struct{})
	go func() {
		defer close(hbDone)
		t := time.NewTicker(p.cfg.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				err := p.cfg.Store.Heartbeat(ctx, lease, p.cfg.Now())
				if errors.Is(err, store.ErrLeaseLost) {
					cancel(errLeaseLost)
					return
				}
				if err != nil && ctx.Err() == nil {
					log.Warn("scanner: heartbeat failed", "err", err)
				}
			}
		}
	}()
	done, err := p.scan(ctx, log, s, job)
	cancel(nil)
	<-hbDone
	if err == nil {
		if done != nil && p.cfg.Digest != nil {
			dctx, stop := context.WithTimeout(p.jobsCtx, 2*time.Minute)
			defer stop()
			p.cfg.Digest.AfterScan(dctx, done.site, done.scanID, done.results)
		}
		return
	}
	// Settling uses a fresh context: the job's own may be the thing that was cancelled. It
	// outlasts a database restart (whileUnavailable), so the job is not left running until
	// the rescuer's lease lapses.
	settle, stop := context.WithTimeout(context.Background(), p.cfg.Lease/2+10*time.Second)
	defer stop()
	now := p.cfg.Now()
	var unavailable *psi.UnavailableError
	switch {
	case errors.Is(err, store.ErrLeaseLost) || errors.Is(context.Cause(ctx), errLeaseLost):
		// Deleting a site deletes its scans and their jobs, which also ends the lease.
		if _, _, serr := p.cfg.Store.ScanForJob(settle, job.ScanID); errors.Is(serr, store.ErrNotFound) {
			log.Info("scanner: the site was deleted while it was scanned; the scan stopped with it")
			return
		}
		log.Warn("scanner: lease lost; the job belongs to another worker now", "err", err)
	case errors.Is(context.Cause(ctx), errShutdown):
		// Not the job's fault: the attempt is not spent.
		if err := p.cfg.Store.SnoozeJob(settle, lease, now, "released at shutdown"); err != nil {
			log.Warn("scanner: could not release the job; the rescuer will", "err", err)
			return
		}
		log.Info("scanner: job released at shutdown; another worker resumes it")
	case errors.As(err, &unavailable):
		// PSI cannot be used until then: the scan waits without spending an attempt, keeping the
		// pages already stored. The jitter spreads the snoozed scans over a few seconds.
		at := later(unavailable.Until, now).Add(jitter(2500*time.Millisecond, 1))
		if err := p.whileUnavailable(settle, log, "snooze job", func(ctx context.Context) error {
			return p.cfg.Store.SnoozeJob(ctx, lease, at, unavailable.Error()+"; scan snoozed")
		}); err != nil {
			log.Warn("scanner: could not snooze the job; the rescuer will return it", "err", err)
			return
		}
		// What waits: PSI (breaker, daily quota) or this account (its daily audits).
		what := unavailable.What
		if what == "" {
			what = "PSI unavailable"
		}
		log.Warn(fmt.Sprintf("scanner: %s until %s, scan snoozed", what, unavailable.Until.UTC().Format(time.RFC3339)),
			"reason", unavailable.Reason, "resumes_at", at.UTC().Format(time.RFC3339))
	case job.Attempt < job.MaxAttempts:
		wait := p.cfg.Backoff(attempt)
		log.Warn("scanner: attempt failed; retrying", "err", err, "retry_in", wait.Round(time.Millisecond))
		msg := err.Error()
		if err := p.whileUnavailable(settle, log, "retry job", func(ctx context.Context) error {
			return p.cfg.Store.RetryJob(ctx, lease, now.Add(wait), msg)
		}); err != nil {
			log.Warn("scanner: could not schedule the retry", "err", err)
		}
	default:
		reason := fmt.Sprintf("gave up after %d attempts: %v", attempt, err)
		log.Error("scanner: scan failed", "reason", reason)
		if err := p.whileUnavailable(settle, log, "fail scan", func(ctx context.Context) error {
			return p.cfg.Store.FailScan(ctx, lease, reason, now)
		}); err != nil {
			log.Warn("scanner: could not fail the scan", "err", err)
		}
	}
}

// jitter spreads d by ±frac so retries from many workers do not arrive together.
func jitter(d time.Duration, frac float64) time.Duration {
	return time.Duration(float64(d) * (1 - frac + 2*frac*rand.Float64()))
}

// sleepCtx waits d, or less when ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
