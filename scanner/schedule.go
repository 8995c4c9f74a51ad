package scanner

import (
	"context"
	"time"

	"sitepulse/store"
)

// ScheduleOnce is one step of the scheduler: it enqueues the scans of the sites due at now, in
// batches, and answers how many.
func (p *Pool) ScheduleOnce(ctx context.Context) (int, error) {
	total := 0
	for {
		scans, err := p.cfg.Store.EnqueueDueScans(ctx, p.cfg.Now(), scheduleBatch)
		for _, sc := range scans {
			p.cfg.Log.Info("scheduled scan enqueued", "scan", sc.ID, "site_id", sc.SiteID)
		}
		total += len(scans)
		if err != nil || len(scans) < scheduleBatch {
			return total, err
		}
	}
}

// scheduleBatch bounds the sites one scheduler pass claims, so one transaction stays short; a
// pass that fills it runs again at once.
const scheduleBatch = 100

// scheduler enqueues the scans of sites whose scheduled scan is due, at Start and then about
// every ScheduleEvery (±10%, so the processes' passes spread out). Every process runs one: the
// store claims due sites with FOR UPDATE SKIP LOCKED, enqueues and moves each one's next scan
// in one transaction, so however many processes run, a due site gets exactly one scan.
func (p *Pool) scheduler() {
	for {
		if _, err := p.ScheduleOnce(p.jobsCtx); err != nil {
			p.cfg.Log.Error("scheduler: enqueuing due scans failed", "err", err)
		}
		for _, pass := range p.cfg.Schedules {
			if _, err := pass(p.jobsCtx, p.cfg.Now()); err != nil {
				p.cfg.Log.Error("scheduler: a schedule pass failed", "err", err)
			}
		}
		if p.cfg.Retention != nil {
			if _, err := p.cfg.Retention.EnqueuePrune(p.jobsCtx, p.cfg.Now(), PruneEvery); err != nil {
				p.cfg.Log.Error("scheduler: enqueuing the pruner failed", "err", err)
			}
		}
		t := time.NewTimer(jitter(p.cfg.ScheduleEvery, 0.1))
		select {
		case <-p.stop:
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// PruneEvery is how often the pruner runs: every process's scheduler asks the store for a prune
// job at each pass, and the store enqueues one only when none is queued or running and none
// finished within PruneEvery, so however many processes run, one prunes at a time.
const PruneEvery = time.Hour

// PruneOnce is one run of the pruner (the prune job's work): it deletes the page details older
// than their workspace's retention, store.PruneBatch rows per statement, each statement on its
// own so no scan waits on it for long, until none is left or ctx ends, then runs the other
// retention passes (PoolConfig.Prunes). It answers how many rows it changed, and first deletes
// the security log's lines past LogRetention when PoolConfig.SecurityLog is set. It needs
// PoolConfig.Retention.
func (p *Pool) PruneOnce(ctx context.Context) (int, error) {
	total, err := p.pruneDetails(ctx)
	for _, prune := range p.cfg.Prunes {
		if err != nil {
			break
		}
		var n int
		n, err = pruneAll(ctx, func(ctx context.Context) (int, error) { return prune(ctx, p.cfg.Now(), store.PruneBatch) })
		total += n
		if n > 0 {
			p.cfg.Log.Info("pruner: history past its workspace's retention removed", "rows", n)
		}
	}
	return total, err
}

// pruneAll runs one batch after another until a batch deletes nothing or ctx ends.
func pruneAll(ctx context.Context, batch func(context.Context) (int, error)) (int, error) {
	total := 0
	for {
		n, err := batch(ctx)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}

// pruneDetails deletes the page details past their workspace's retention (PruneOnce).
func (p *Pool) pruneDetails(ctx context.Context) (int, error) {
	total := 0
	if p.cfg.SecurityLog != nil {
		keep := p.cfg.LogRetention
		if keep <= 0 {
			keep = store.DefaultLogRetentionDays * 24 * time.Hour
		}
		n, err := p.cfg.SecurityLog.PruneLog(ctx, p.cfg.Now().Add(-keep))
		if err != nil {
			return 0, err
		}
		if n > 0 {
			p.cfg.Log.Info("pruner: security log lines past AUDIT_LOG_RETENTION_DAYS removed", "lines", n)
		}
	}
	// Whole months first (a partition dropped on Postgres), then the rows of the months that
	// straddle a workspace's window. A month that cannot go now (a lock not granted at once)
	// goes at a later run: the rows are pruned meanwhile.
	if months, err := p.cfg.Retention.PruneMonths(ctx, p.cfg.Now()); err != nil {
		p.cfg.Log.Error("pruner: dropping whole months failed", "err", err)
	} else if len(months) > 0 {
		p.cfg.Log.Info("pruner: months past every workspace's retention dropped", "months", months)
	}
	// The beacon's daily histograms go with the same retention: a few rows per page and day.
	if n, err := p.cfg.Retention.PruneBeacons(ctx, p.cfg.Now()); err != nil {
		return 0, err
	} else if n > 0 {
		p.cfg.Log.Info("pruner: beacon days past their workspace's retention removed", "rows", n)
	}
	for {
		n, err := p.cfg.Retention.PruneDetails(ctx, p.cfg.Now(), store.PruneBatch)
		total += n
		if err != nil || n == 0 {
			if total > 0 {
				p.cfg.Log.Info("pruner: page details past their workspace's retention removed", "rows", total)
			}
			return total, err
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}
