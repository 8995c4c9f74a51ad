package scanner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"sitepulse/store"
)

// KindWorker runs the jobs of one kind: its worker function and how many of its jobs this
// process runs at once. Work makes one; PoolConfig.Kinds lists them beside the scan kind the
// pool registers itself.
type KindWorker struct {
	kind    string
	workers int
	// perWorkspace caps the jobs of the kind one workspace runs at once (0: no cap); see
	// PerWorkspace.
	perWorkspace int
	work         func(ctx context.Context, log *slog.Logger, slot *slot, job store.Job) error
}

// Kind is the kind of job the worker runs.
func (k KindWorker) Kind() string { return k.kind }

// PerWorkspace caps at n the jobs of the kind one workspace may have running at once in this
// process (store.ClaimJob): with n below the workers, one workspace's jobs (eight alert channels
// pointing at a slow receiver) never hold every worker of a process while another workspace's
// job waits, and a workspace alone still has n workers in every process. Workspaces take turns
// either way.
func (k KindWorker) PerWorkspace(n int) KindWorker {
	k.perWorkspace = n
	return k
}

// Work makes the worker of kind T (River's Worker[T]): fn runs each job of T's kind with the
// job's args decoded into a T, at most workers at once in this process (default 1). fn returns
// nil when the job is done (the pool completes it), a *Snooze to put it back without spending
// an attempt, or an error to retry it with backoff until its attempts are spent, when it is
// discarded. Delivery is at least once, so fn must be idempotent.
func Work[T store.JobArgs](workers int, fn func(ctx context.Context, job store.Job, args T) error) KindWorker {
	var zero T
	return KindWorker{kind: zero.Kind(), workers: max(workers, 1), work: func(ctx context.Context, _ *slog.Logger, _ *slot, job store.Job) error {
		var args T
		if err := json.Unmarshal(job.Args, &args); err != nil {
			return fmt.Errorf("job %d of kind %s: args %s: %w", job.ID, job.Kind, job.Args, err)
		}
		return fn(ctx, job, args)
	}}
}

// Snooze is the error a worker returns to put its job back until Until without spending an
// attempt (River's JobSnooze): for a job that cannot run now through no fault of its own.
type Snooze struct {
	Until  time.Time
	Reason string
}

func (s *Snooze) Error() string { return s.Reason }

// A worker's error with a RetryAt() time.Time method (notify's delivery, which honours a
// receiver's Retry-After) retries its job at that time instead of the pool's backoff; it spends
// an attempt like any retry. An interface, so a kind's package need not import the pool.

// dispatch claims a job of k whenever one of its worker slots is free, waking on
// notifications and on the poll, and runs it in a goroutine of its own. It holds the slot only
// while it claims: a scan that discovered its pages may be waiting for it.
func (p *Pool) dispatch(k KindWorker, wake <-chan struct{}) {
	slots := p.slots[k.kind]
	poll := time.NewTicker(p.cfg.Poll)
	defer poll.Stop()
	for {
		var n int
		select {
		case <-p.stop:
			return
		case n = <-slots:
		}
		job, err := p.claim(p.jobsCtx, k)
		if err == nil {
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.run(p.jobsCtx, &slot{slots: slots, n: n, held: true}, k, job)
			}()
			continue
		}
		slots <- n
		select {
		case <-p.stop:
			return
		case <-wake:
		case <-poll.C:
		}
	}
}

// claim takes the next runnable job of k's kind, its workspace's turn and cap respected;
// ErrNotFound when there is none. Other failures are logged: the dispatcher tries again at its
// next wake-up.
func (p *Pool) claim(ctx context.Context, k KindWorker) (store.Job, error) {
	job, err := p.cfg.Store.ClaimJob(ctx, k.kind, p.cfg.WorkerID, p.cfg.Now(), k.perWorkspace)
	switch {
	case err == nil, errors.Is(err, store.ErrNotFound):
	case store.Classify(err) == store.ErrUnavailable: // a restart: the next poll tries again
		p.cfg.Log.Warn("scanner: claim failed: database unavailable", "kind", k.kind, "err", err)
	default:
		p.cfg.Log.Error("scanner: claim failed", "kind", k.kind, "err", err)
	}
	return job, err
}

// poke wakes kind's dispatcher: a job of the kind ended here, so a workspace at its cap may
// have a job to claim now (other processes' ends are heard at the next poll).
func (p *Pool) poke(kind string) {
	select {
	case p.wakes[kind] <- struct{}{}:
	default: // one pending wake-up stands for many
	}
}

// WorkOnce is one step of a kind's dispatcher, in the caller's goroutine: it takes one of the
// kind's worker slots, claims one runnable job of kind and runs it to its settlement. It
// answers whether there was one.
func (p *Pool) WorkOnce(ctx context.Context, kind string) (bool, error) {
	k, ok := p.kinds[kind]
	if !ok {
		return false, fmt.Errorf("scanner: no worker registered for kind %q", kind)
	}
	s := &slot{slots: p.slots[kind]}
	if err := s.take(ctx); err != nil {
		return false, err
	}
	job, err := p.claim(ctx, k)
	if err != nil {
		s.release()
		if errors.Is(err, store.ErrNotFound) {
			return false, nil
		}
		return false, err
	}
	p.run(ctx, s, k, job)
	return true, nil
}

// run works one job under its lease, with heartbeats, and settles it: done, retried later,
// snoozed, given up, or released at shutdown.
func (p *Pool) run(parent context.Context, s *slot, k KindWorker, job store.Job) {
	defer p.poke(k.kind) // after the slot is back: the dispatcher may claim at once
	defer s.release()
	lease := job.Lease()
	attempt := job.Attempt - job.Snoozes() // real attempts: a snooze spends none
	log := p.cfg.Log.With("worker", s.n, "job", job.ID, "kind", job.Kind)
	if job.ScanID != "" {
		log = log.With("scan", job.ScanID)
	}
	log = log.With("attempt", attempt)
	ctx, cancel := context.WithCancelCause(parent)
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
	err := k.work(ctx, log, s, job)
	leaseLost := errors.Is(context.Cause(ctx), errLeaseLost)
	shutdown := errors.Is(context.Cause(ctx), errShutdown)
	cancel(nil)
	<-hbDone
	// Settling uses a fresh context: the job's own may be the thing that was cancelled. It
	// outlasts a database restart (whileUnavailable), so the job is not left running until
	// the rescuer's lease lapses.
	settle, stop := context.WithTimeout(context.Background(), p.cfg.Lease/2+10*time.Second)
	defer stop()
	now := p.cfg.Now()
	var snooze *Snooze
	var later interface{ RetryAt() time.Time }
	switch {
	case err == nil:
		if err := p.whileUnavailable(settle, log, "complete job", func(ctx context.Context) error {
			return p.cfg.Store.CompleteJob(ctx, lease, now)
		}); errors.Is(err, store.ErrLeaseLost) {
			log.Warn("scanner: lease lost; the job belongs to another worker now", "err", err)
		} else if err != nil {
			log.Warn("scanner: could not complete the job; the rescuer will return it", "err", err)
		}
	case errors.Is(err, store.ErrLeaseLost) || leaseLost:
		// Deleting a site deletes its scans and their jobs, which also ends the lease.
		if job.ScanID != "" {
			if _, _, serr := p.cfg.Store.ScanForJob(settle, job.ScanID); errors.Is(serr, store.ErrNotFound) {
				log.Info("scanner: the site was deleted while it was scanned; the scan stopped with it")
				return
			}
		}
		log.Warn("scanner: lease lost; the job belongs to another worker now", "err", err)
	case shutdown:
		// Not the job's fault: the attempt is not spent.
		if err := p.cfg.Store.SnoozeJob(settle, lease, now, "released at shutdown"); err != nil {
			log.Warn("scanner: could not release the job; the rescuer will", "err", err)
			return
		}
		log.Info("scanner: job released at shutdown; another worker resumes it")
	case errors.As(err, &snooze):
		if err := p.whileUnavailable(settle, log, "snooze job", func(ctx context.Context) error {
			return p.cfg.Store.SnoozeJob(ctx, lease, snooze.Until, snooze.Reason)
		}); err != nil {
			log.Warn("scanner: could not snooze the job; the rescuer will return it", "err", err)
		}
	case job.Attempt < job.MaxAttempts && errors.As(err, &later):
		// The work says when to try again (a receiver's Retry-After): spent, as any retry.
		log.Info("scanner: attempt failed; retrying at the time the work asked", "err", err, "retry_at", later.RetryAt())
		msg := err.Error()
		if err := p.whileUnavailable(settle, log, "retry job", func(ctx context.Context) error {
			return p.cfg.Store.RetryJob(ctx, lease, later.RetryAt(), msg)
		}); err != nil {
			log.Warn("scanner: could not schedule the retry", "err", err)
		}
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
		what := "job failed"
		if job.ScanID != "" {
			what = "scan failed" // giving up a scan job fails its scan
		}
		log.Error(what, "reason", reason)
		if err := p.whileUnavailable(settle, log, "discard job", func(ctx context.Context) error {
			return p.cfg.Store.DiscardJob(ctx, lease, reason, now)
		}); err != nil {
			log.Warn("scanner: could not discard the job", "err", err)
		}
	}
}

// cleanBatch bounds the jobs one cleaner statement deletes, so a long backlog is cleaned in
// short steps.
const cleanBatch = 1000

// CleanOnce is one step of the cleaner: it deletes the jobs finished (completed or discarded)
// more than KeepJobs before now, in batches, and answers how many.
func (p *Pool) CleanOnce(ctx context.Context, now time.Time) (int, error) {
	total := 0
	for {
		n, err := p.cfg.Store.CleanJobs(ctx, now.Add(-p.cfg.KeepJobs), cleanBatch)
		total += n
		if err != nil || n < cleanBatch {
			return total, err
		}
	}
}

// cleaner runs CleanOnce at Start and then every CleanEvery.
func (p *Pool) cleaner() {
	t := time.NewTicker(p.cfg.CleanEvery)
	defer t.Stop()
	for {
		n, err := p.CleanOnce(p.jobsCtx, p.cfg.Now())
		if err != nil {
			p.cfg.Log.Error("scanner: cleaning finished jobs failed", "err", err)
		} else if n > 0 {
			p.cfg.Log.Info("scanner: finished jobs cleaned", "jobs", n)
		}
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
	}
}

// RescueOnce is one step of the rescuer: it returns the jobs of dead workers to the queue, or
// gives them up on their last attempt, and fails the scans past their deadline.
func (p *Pool) RescueOnce(ctx context.Context) (int, error) {
	now := p.cfg.Now()
	n, err := p.cfg.Store.RescueJobs(ctx, now.Add(-p.cfg.Lease), now)
	p.expireOverdue(ctx)
	return n, err
}

// rescuer runs RescueOnce at Start and then every RescueEvery.
func (p *Pool) rescuer() {
	t := time.NewTicker(p.cfg.RescueEvery)
	defer t.Stop()
	for {
		n, err := p.RescueOnce(p.jobsCtx)
		if err != nil {
			p.cfg.Log.Error("scanner: rescue failed", "err", err)
		} else if n > 0 {
			p.cfg.Log.Warn("scanner: rescued stale jobs", "jobs", n)
		}
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
	}
}

// fanOut passes each wake-up on Wake to every kind's dispatcher: one notification may be for
// any kind, and a dispatcher that finds nothing costs one claim query.
func (p *Pool) fanOut(wakes []chan struct{}) {
	for {
		select {
		case <-p.stop:
			return
		case _, ok := <-p.cfg.Wake:
			if !ok {
				return
			}
			for _, w := range wakes {
				select {
				case w <- struct{}{}:
				default: // one pending wake-up stands for many
				}
			}
		}
	}
}
