package scanner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"sitepulse/scanner/lighthouse"
	"sitepulse/store"
)

// RunnerQueue is what the pool needs of the store to hand audits to runners (`sitepulse
// runner`, docs/runners.md) instead of running them in-process.
type RunnerQueue interface {
	RunnersServe(ctx context.Context, workspaceID string) (bool, error)
	SiteLocations(ctx context.Context, siteID string) ([]string, error)
	EnqueueRunnerAudit(ctx context.Context, a store.RunnerAudit) error
	RunnerAudit(ctx context.Context, id string) (store.RunnerAudit, error)
	DeleteRunnerAudit(ctx context.Context, id string) error
	ForgetRunnerAudits(ctx context.Context, scanID string) error
}

// leasedAuditorFor is the auditor of a scan whose audits runners run: its workspace has a
// runner token, or the operator has one. Nil keeps the in-process auditor: no runner queue,
// no runner for the workspace, a replayed site, or a site audited signed in (its credentials
// never leave the service).
func (p *Pool) leasedAuditorFor(ctx context.Context, run *scanRun) (Auditor, error) {
	if p.cfg.Runners == nil || run.signed() || p.replayed(run.site) {
		return nil, nil
	}
	ws := run.site.WorkspaceID
	if ws == "" {
		ws = run.site.UserID
	}
	serve, err := p.cfg.Runners.RunnersServe(ctx, ws)
	if err != nil || !serve {
		return nil, err
	}
	locations, err := p.cfg.Runners.SiteLocations(ctx, run.site.ID)
	if err != nil {
		return nil, fmt.Errorf("read the site's runner locations: %w", err)
	}
	// This attempt holds the scan's job: what an earlier, dead attempt left queued or posted
	// is nobody's now.
	if err := p.cfg.Runners.ForgetRunnerAudits(ctx, run.scan.ID); err != nil {
		return nil, fmt.Errorf("forget an earlier attempt's runner audits: %w", err)
	}
	return &leasedAuditor{p: p, workspace: ws, site: run.site.ID, scan: run.scan.ID, locations: locations, last: map[store.PageKey]string{}}, nil
}

// leasedAuditor audits through runners: each Audit enqueues one runner audit and waits for a
// runner to lease it and post its report, which is extracted as the local Lighthouse backend
// extracts its own (lighthouse.ExtractLighthouse). A runner lost meanwhile lets its lease
// expire and another runner takes the audit; the wait ends with the scan (its deadline).
type leasedAuditor struct {
	p                     *Pool
	workspace, site, scan string
	locations             []string
	mu                    sync.Mutex
	// last is the runner of each page and strategy's latest audit in this scan: a
	// confirmation re-audit prefers another runner than the one that saw the regression.
	last map[store.PageKey]string
}

// Audit hands one audit to runners and waits for its report or its error.
func (a *leasedAuditor) Audit(ctx context.Context, pageURL string, strategy store.Strategy) (store.PageResult, error) {
	q := a.p.cfg.Runners
	key := store.PageKey{PagePath: pageURL, Strategy: strategy}
	a.mu.Lock()
	avoid := a.last[key]
	a.mu.Unlock()
	ra := store.RunnerAudit{ID: store.NewID(), WorkspaceID: a.workspace, SiteID: a.site, ScanID: a.scan, PageURL: pageURL,
		Strategy: strategy, Locations: a.locations, Avoid: avoid, CreatedAt: a.p.cfg.Now()}
	if err := q.EnqueueRunnerAudit(ctx, ra); err != nil {
		return store.PageResult{}, fmt.Errorf("hand the audit to runners: %w", err)
	}
	// The audit is forgotten however the wait ends: read, or given up with the scan.
	defer q.DeleteRunnerAudit(context.WithoutCancel(ctx), ra.ID)
	tick := time.NewTicker(a.p.cfg.RunnerPoll)
	defer tick.Stop()
	for {
		got, err := q.RunnerAudit(ctx, ra.ID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return store.PageResult{}, errors.New("the runner audit was deleted (its site or scan is gone)")
		case err != nil && ctx.Err() == nil:
			a.p.cfg.Log.Warn("scanner: read runner audit", "err", err)
		case err == nil && (got.State == store.RunnerDone || got.State == store.RunnerFailed):
			a.mu.Lock()
			a.last[key] = got.Runner
			a.mu.Unlock()
			if got.State == store.RunnerFailed {
				return store.PageResult{}, fmt.Errorf("runner at %q: %s", got.Location, got.Error)
			}
			r, err := lighthouse.ExtractLighthouse(got.Report)
			if err != nil {
				return store.PageResult{}, err
			}
			r.BenchmarkIndex, r.Location = got.Benchmark, got.Location
			return r, nil
		}
		select {
		case <-ctx.Done():
			return store.PageResult{}, context.Cause(ctx)
		case <-tick.C:
		}
	}
}
