package scanner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"sitepulse/scanner/discover"
	"sitepulse/scanner/psi"
	"sitepulse/store"
)

// Store is what the pool needs of the store: the job queue's claims and settlements
// (store.Jobs), a scan's records written under its lease (store.ScanRecords), and a scan's
// stored results and errors read back to score it.
type Store interface {
	ClaimJob(ctx context.Context, kind, workerID string, now time.Time, perWorkspace int) (store.Job, error)
	Heartbeat(ctx context.Context, l store.Lease, now time.Time) error
	CompleteJob(ctx context.Context, l store.Lease, now time.Time) error
	DiscardJob(ctx context.Context, l store.Lease, reason string, now time.Time) error
	RetryJob(ctx context.Context, l store.Lease, runAt time.Time, reason string) error
	SnoozeJob(ctx context.Context, l store.Lease, runAt time.Time, reason string) error
	RescueJobs(ctx context.Context, staleBefore, now time.Time) (int, error)
	CleanJobs(ctx context.Context, finishedBefore time.Time, limit int) (int, error)

	ScanForJob(ctx context.Context, scanID string) (store.Scan, store.Site, error)
	// SiteAccessForScan reads the site's access setting, sealed (see signIn).
	SiteAccessForScan(ctx context.Context, siteID string) (store.SiteAccess, error)
	StartScan(ctx context.Context, l store.Lease, pagesTotal int, now time.Time) error
	DonePages(ctx context.Context, scanID string) ([]store.PageKey, error)
	SavePageResult(ctx context.Context, l store.Lease, r store.PageResult) error
	SavePageError(ctx context.Context, l store.Lease, e store.PageError) error
	SetAuditsInFlight(ctx context.Context, l store.Lease, n int) error
	SetPagesFound(ctx context.Context, l store.Lease, audited, found int) error
	CompleteScan(ctx context.Context, l store.Lease, scores store.ScanScores, now time.Time, then ...store.JobArgs) error
	FailScan(ctx context.Context, l store.Lease, reason string, now time.Time) error
	EnqueueDueScans(ctx context.Context, now time.Time, limit int) ([]store.Scan, error)
	OverdueScans(ctx context.Context, startedBefore time.Time) ([]store.OverdueScan, error)
	ExpireScan(ctx context.Context, scanID, reason string, now time.Time) error

	PageResults(ctx context.Context, userID, scanID string) ([]store.PageResult, error)
	PageErrors(ctx context.Context, userID, scanID string) ([]store.PageError, error)
	// LatestCompletedScan and PageMetrics read the previous scan a page's audit is confirmed
	// against (see confirm).
	LatestCompletedScan(ctx context.Context, userID, siteID string) (store.Scan, error)
	PageMetrics(ctx context.Context, userID, scanID string) ([]store.PageResult, error)
}

// Retention is what the pruner needs of the store (issue 25): page details past their
// workspace's retention removed in batches, and at most one prune job queued at a time.
type Retention interface {
	PruneDetails(ctx context.Context, now time.Time, limit int) (int, error)
	// PruneBeacons deletes the beacon's days past their workspace's retention (issue 45).
	PruneBeacons(ctx context.Context, now time.Time) (int64, error)
	PruneMonths(ctx context.Context, now time.Time) ([]string, error)
	EnqueuePrune(ctx context.Context, now time.Time, every time.Duration) (bool, error)
}

// PoolConfig configures the worker pool. Zero values get the defaults noted.
type PoolConfig struct {
	Store Store
	// Retention, when set, makes the pool run the pruner: its scheduler asks for a prune job at
	// each pass and the pool works the prune kind. main hands in the store; nil prunes nothing.
	Retention Retention
	// SecurityLog, with Retention, makes each prune also delete the security log's lines older
	// than LogRetention (AUDIT_LOG_RETENTION_DAYS; 0: store.DefaultLogRetentionDays).
	SecurityLog interface {
		PruneLog(ctx context.Context, before time.Time) (int, error)
	}
	LogRetention time.Duration
	// Auditor audits the pages; a SiteAuditor chooses one per site (main's demo replay).
	Auditor   Auditor
	Discovery discover.Discovery
	// Schedules are passes of other kinds' schedules (the weekly CrUX refresh), run at each
	// scheduler pass after the scans' with the pass's time; each must be safe on many processes
	// at once, as EnqueueDueScans is.
	Schedules []func(ctx context.Context, now time.Time) (int, error)
	// Prunes are retention passes of other history (the CrUX points), run by the prune job
	// after the page details, each deleting at most limit rows a call and answering how many.
	Prunes []func(ctx context.Context, now time.Time, limit int) (int, error)
	// Runners, when set, hands the audits of a workspace with runners (a runner token of its
	// own, or the operator's) to them (runners.go); nil runs every audit in-process.
	Runners RunnerQueue
	// RunnerPoll is how often a scan waiting for a runner's report looks for it. Default 1 s.
	RunnerPoll time.Duration
	// Kinds are the workers of the other kinds of job this process runs (the digest, ...),
	// beside the scan kind the pool runs itself; see Work.
	Kinds []KindWorker
	// Then gives the follow-up jobs of a completed scan (the digest), enqueued in the
	// transaction that completes it, so a crash right after loses none; nil enqueues none.
	Then func(scanID string) []store.JobArgs
	// AccessKeys open the sites' access settings (PLATFORM_TOKEN_KEY) for signed-in audits; nil
	// fails every page of a site that has one, saying so.
	AccessKeys Opener
	// Platform refreshes a connected site's pages before a publish's scan; nil keeps the saved list.
	Platform PageRefresher
	// Quota is USER_DAILY_AUDITS, each account's daily audit budget; nil grants everything.
	Quota *psi.AccountQuota
	Log   *slog.Logger
	// Workers is SCAN_WORKERS: scans audited at once by this process. Default 3.
	Workers int
	// WorkspaceScans is SCANS_PER_WORKSPACE: scans one workspace, and one owning account across
	// its workspaces, may have running at once in this process (KindWorker.PerWorkspace); their
	// others wait for another worker or process while other accounts' are claimed. 0: no cap
	// (accounts and workspaces still take turns).
	WorkspaceScans int
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
	// KeepJobs is how long finished jobs are kept before the cleaner deletes them. Default a week.
	KeepJobs time.Duration
	// CleanEvery is how often the cleaner runs. Default 1 h.
	CleanEvery time.Duration
	// ReleaseGrace bounds how long Stop waits for cancelled jobs to release their leases. Default 5 s.
	ReleaseGrace time.Duration
	Now          func() time.Time
}

// PageRefresher reads a connected site's current published pages from the platform and saves
// them (platform.Connector).
type PageRefresher interface {
	RefreshPages(ctx context.Context, site store.Site) ([]string, error)
}

// Pool runs the job queue in this process: per kind of job, one dispatcher claiming its jobs
// and handing them to its workers (SCAN_WORKERS for scans), plus the scheduler, the rescuer and
// the cleaner. Several processes may run pools on one Postgres: claims skip locked rows, and
// every write is made under the job's lease.
type Pool struct {
	cfg      PoolConfig
	kinds    map[string]KindWorker
	stop     chan struct{} // closed by Stop: claim nothing more
	jobsCtx  context.Context
	cancel   context.CancelCauseFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
	// replayCapacity takes the replayed scans' audits: they call nothing and run no Chrome, so
	// neither the rate limit nor the backend's bound on audits at once (PSI_MAX_INFLIGHT,
	// LIGHTHOUSE_CONCURRENCY) applies; only the capacity's default bound, shared fairly between
	// replayed scans.
	replayCapacity *psi.Capacity
	// runnerCapacity takes the audits leased to runners: each runner bounds its own Chrome runs
	// (RUNNER_CONCURRENCY), so this process's backend bound does not apply to them.
	runnerCapacity *psi.Capacity
	// slots are each kind's worker slots free now, by worker number: a job holds one from its
	// claim to its end, except a scan while it discovers its pages (see scan).
	slots map[string]chan int
	// wakes are each kind's dispatcher's wake-ups: a notification, or a job of the kind ending here.
	wakes map[string]chan struct{}
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
	if cfg.KeepJobs <= 0 {
		cfg.KeepJobs = 7 * 24 * time.Hour
	}
	if cfg.CleanEvery <= 0 {
		cfg.CleanEvery = time.Hour
	}
	if cfg.ReleaseGrace <= 0 {
		cfg.ReleaseGrace = 5 * time.Second
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RunnerPoll <= 0 {
		cfg.RunnerPoll = time.Second
	}
	p := &Pool{cfg: cfg, stop: make(chan struct{}), replayCapacity: psi.NewCapacity(psi.CapacityConfig{}),
		runnerCapacity: psi.NewCapacity(psi.CapacityConfig{MaxInFlight: 256}),
		slots:          map[string]chan int{}, wakes: map[string]chan struct{}{}, discovering: map[string]int{}}
	p.jobsCtx, p.cancel = context.WithCancelCause(context.Background())
	p.kinds = map[string]KindWorker{store.KindScan: {kind: store.KindScan, workers: cfg.Workers, perWorkspace: cfg.WorkspaceScans, work: p.workScan}}
	if cfg.Retention != nil {
		p.kinds[store.KindPrune] = Work(1, func(ctx context.Context, _ store.Job, _ store.PruneJob) error {
			_, err := p.PruneOnce(ctx)
			return err
		})
	}
	for _, k := range cfg.Kinds {
		p.kinds[k.kind] = k
	}
	for _, k := range p.kinds {
		p.wakes[k.kind] = make(chan struct{}, 1)
		p.slots[k.kind] = make(chan int, k.workers)
		for n := range k.workers {
			p.slots[k.kind] <- n + 1
		}
	}
	return p
}

// JobBackoff is the wait before attempt+1 of a failed job: attempt^4 seconds ±10% (1 s, 16 s, 81 s).
func JobBackoff(attempt int) time.Duration {
	d := time.Duration(math.Pow(float64(max(attempt, 1)), 4)) * time.Second
	return jitter(d, 0.1)
}

// Start runs each kind's dispatcher, which claims a job whenever one of the kind's worker
// slots is free and runs it in a goroutine of its own, the scheduler, the rescuer and the
// cleaner, until Stop.
func (p *Pool) Start() {
	var wakes []chan struct{}
	for _, k := range p.kinds {
		wake := p.wakes[k.kind]
		wakes = append(wakes, wake)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.dispatch(k, wake)
		}()
	}
	loops := []func(){p.scheduler, p.rescuer, p.cleaner}
	if p.cfg.Wake != nil {
		loops = append(loops, func() { p.fanOut(wakes) })
	}
	for _, loop := range loops {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			loop()
		}()
	}
	p.cfg.Log.Info("scanner started", "workers", p.cfg.Workers, "scans_per_workspace", p.cfg.WorkspaceScans, "kinds", strings.Join(p.Kinds(), ","), "worker_id", p.cfg.WorkerID,
		"max_inflight", p.cfg.Capacity.MaxInFlight(), "notify", p.cfg.Wake != nil, "poll", p.cfg.Poll)
}

// Kinds are the kinds of job the pool runs, in order.
func (p *Pool) Kinds() []string { return slices.Sorted(maps.Keys(p.kinds)) }

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

// slot is the worker slot a running job holds, which a scan gives back while it discovers pages.
type slot struct {
	slots chan int // its kind's free slots
	n     int      // the worker number, for the log
	held  bool
}

// release gives the slot back, so the dispatcher can claim another job.
func (s *slot) release() {
	if s.held {
		s.held = false
		s.slots <- s.n
	}
}

// take waits for a free slot again, or for ctx to end.
func (s *slot) take(ctx context.Context) error {
	if s.held {
		return nil
	}
	select {
	case s.n = <-s.slots:
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
