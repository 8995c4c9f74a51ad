package scanner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/store"

	"sitepulse/scanner/psi"
)

// expireOverdue ends every scan not completed Deadline after it started: failed, with a reason
// a person can act on, its job discarded so the site is free for its next scan. Results already
// stored are kept. Any number of processes may run it at once: a scan is expired once.
func (p *Pool) expireOverdue(ctx context.Context) {
	now := p.cfg.Now()
	overdue, err := p.cfg.Store.OverdueScans(ctx, now.Add(-p.cfg.Deadline))
	if err != nil {
		p.cfg.Log.Error("scanner: reading overdue scans failed", "err", err)
		return
	}
	for _, o := range overdue {
		if parkedForQuota(o) {
			continue
		}
		pageErrs, err := p.cfg.Store.PageErrors(ctx, o.UserID, o.ID)
		if err != nil {
			p.cfg.Log.Error("scanner: reading an overdue scan's errors failed", "scan", o.ID, "err", err)
			continue
		}
		reason := deadlineReason(o, pageErrs, p.cfg.Deadline)
		switch err := p.cfg.Store.ExpireScan(ctx, o.ID, reason, now); {
		case errors.Is(err, store.ErrNotFound): // it finished meanwhile, or another process expired it
		case err != nil:
			p.cfg.Log.Error("scanner: expiring an overdue scan failed", "scan", o.ID, "err", err)
		default:
			p.cfg.Log.Warn("scan failed: deadline passed", "scan", o.ID, "site_id", o.SiteID, "reason", reason)
		}
	}
}

// parkedForQuota answers whether a scan waits for its workspace's or an owner's daily audits to come back (the
// next UTC day): such a scan was promised to wait, not to fail, so the deadline leaves it. Once
// it runs again and meets another trouble, its job's last error changes and the deadline, still
// counted from when it first started, applies.
func parkedForQuota(o store.OverdueScan) bool {
	return psi.ParkedForBudget(o.LastError)
}

// deadlineReason explains why a scan did not finish in time: what most likely went wrong and
// what to do (ExplainAuditError of the last error, else of the first audit error it knows),
// then how far it got, the audits that failed, and its last error.
func deadlineReason(o store.OverdueScan, pageErrs []store.PageError, deadline time.Duration) string {
	texts := []string{o.LastError}
	for _, e := range pageErrs {
		texts = append(texts, e.Error)
	}
	cause := "Its audits kept failing or waiting"
	if o.Status == store.StatusQueued && o.LastError == "" {
		cause = "No scanner picked it up: check that a SitePulse process with scan workers is running"
	}
	for _, t := range texts {
		if what, todo, ok := analysis.ExplainAuditError(t); ok {
			cause = "Its audits " + what + ": " + todo
			break
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s. The scan was stopped %s after it started", cause, minutes(deadline))
	if o.PagesTotal > 0 {
		fmt.Fprintf(&b, ": %d of %d audits done", o.PagesDone, o.PagesTotal)
		if len(pageErrs) > 0 {
			fmt.Fprintf(&b, ", %d failed", len(pageErrs))
			if e := pageErrs[0]; !strings.Contains(o.LastError, e.Error) { // said once is enough
				fmt.Fprintf(&b, " (%s %s: %s)", e.PagePath, e.Strategy, e.Error)
			}
		}
	}
	b.WriteString(".")
	if o.LastError != "" {
		fmt.Fprintf(&b, " Last error: %s.", strings.TrimSuffix(o.LastError, "."))
	}
	return b.String()
}

// minutes says a duration the way a person would: "30 minutes", "90 seconds".
func minutes(d time.Duration) string {
	switch {
	case d%time.Minute == 0 && d >= 2*time.Minute:
		return fmt.Sprintf("%d minutes", d/time.Minute)
	case d%time.Second == 0:
		return fmt.Sprintf("%d seconds", d/time.Second)
	default:
		return d.String()
	}
}
