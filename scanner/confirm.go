package scanner

import (
	"context"
	"errors"
	"log/slog"

	"sitepulse/scanner/analysis"
	"sitepulse/store"

	"sitepulse/scanner/psi"
)

// previousRuns reads what a scan's audits are compared with before they are believed, and
// whose screenshots a regression keeps (store.PageResult.RegressedFrom): the page metrics of the
// site's previous completed scan, by page and strategy, each with that scan's id. Nil when the
// site has no completed scan yet.
func (p *Pool) previousRuns(ctx context.Context, site store.Site) (map[store.PageKey]store.PageResult, error) {
	prev, err := p.cfg.Store.LatestCompletedScan(ctx, site.UserID, site.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	metrics, err := p.cfg.Store.PageMetrics(ctx, site.UserID, prev.ID)
	if err != nil {
		return nil, err
	}
	out := make(map[store.PageKey]store.PageResult, len(metrics))
	for _, m := range metrics {
		m.ScanID = prev.ID
		out[store.PageKey{PagePath: m.PagePath, Strategy: m.Strategy}] = m
	}
	return out, nil
}

// confirm is the second look at a page whose first audit regressed against prev, the same page
// and strategy in the previous completed scan (analysis.Suspect): it audits the page ConfirmRuns
// more times through the same auditor, so the re-audits count against the same rate limit and
// daily quota, and against the account's daily audits (Quota), and keeps the median run
// (analysis.MedianRun). A page that did not regress, or
// has nothing to compare with, keeps its one run. A re-audit that fails is left out of the
// median; PSI becoming unavailable ends the re-audits early. Only a cancelled ctx is an error.
func (p *Pool) confirm(ctx context.Context, log *slog.Logger, auditor Auditor, site store.Site, pageURL string, first store.PageResult, prev *store.PageResult) (store.PageResult, error) {
	first.Runs = 1
	if prev == nil || p.cfg.ConfirmRuns <= 0 || !analysis.Suspect(*prev, first) {
		return first, nil
	}
	runs := []store.PageResult{first}
	for range p.cfg.ConfirmRuns {
		if err := p.takeAudit(site, auditor); err != nil {
			log.Warn("re-audit skipped", "page", first.PagePath, "strategy", first.Strategy, "err", err)
			break
		}
		r, err := auditor.Audit(ctx, pageURL, first.Strategy)
		if ctx.Err() != nil {
			return first, context.Cause(ctx)
		}
		if err != nil {
			log.Warn("re-audit failed", "page", first.PagePath, "strategy", first.Strategy, "err", err)
			if errors.Is(err, psi.ErrPSIUnavailable) {
				break
			}
			continue
		}
		runs = append(runs, r)
	}
	kept := runs[analysis.MedianRun(runs)]
	kept.PagePath, kept.PageURL, kept.Strategy, kept.Runs = first.PagePath, first.PageURL, first.Strategy, len(runs)
	log.Info("regression re-audited", "page", first.PagePath, "strategy", first.Strategy, "runs", len(runs),
		"confirmed", analysis.Suspect(*prev, kept), "performance", intOrNil(kept.Scores.Performance))
	return kept, nil
}
