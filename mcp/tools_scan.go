package mcp

import (
	"context"
	"errors"
	"time"

	"sitepulse/store"
)

// This file holds the tools that start a scan and follow it: start_scan and get_scan. A scan
// an agent starts is a "Scan now" scan (handlers' handleScanNow): the same enqueue, so the same
// rules (one scan in flight per site), and the account's daily audit quota checked first.

// Quota is the account's daily audit budget (psi.AccountQuota): Check answers an error that
// says until when the workspace's scans wait, or nil.
type Quota interface {
	Check(userID string, now time.Time) error
}

// scanState is a scan as start_scan and get_scan show it. Result is what get_latest_scan
// returns for this scan once it is complete; Reason is why a failed scan failed.
type scanState struct {
	ScanID         string           `json:"scanId"`
	SiteID         string           `json:"siteId"`
	Status         store.ScanStatus `json:"status"`
	Strategy       store.Strategy   `json:"strategy"`
	PagesDone      int              `json:"pagesDone"`
	PagesTotal     int              `json:"pagesTotal"`
	AlreadyRunning bool             `json:"alreadyRunning"`
	CreatedAt      *string          `json:"createdAt"`
	CompletedAt    *string          `json:"completedAt"`
	Reason         *string          `json:"reason"`
	Result         *latestScan      `json:"result"`
}

// startScan enqueues a manual scan of the site, or answers the scan already in flight
// (store.StartScan: the rules of Scan now), the workspace's daily quota checked first.
func (s *Server) startScan(ctx context.Context, userID string, a args) (scanState, error) {
	site, err := s.sites.Site(ctx, userID, store.CanonicalID(a.str("siteId", "")))
	if errors.Is(err, store.ErrNotFound) {
		return scanState{}, errSiteNotFound
	}
	if err != nil {
		return scanState{}, err
	}
	now := s.now()
	sc := store.Scan{ID: store.NewID(), SiteID: site.ID, Status: store.StatusQueued, Strategy: a.strategy(store.StrategyBoth),
		Trigger: store.TriggerManual, CreatedAt: now}
	admit := func() error {
		if s.quota == nil {
			return nil
		}
		if err := s.quota.Check(site.WorkspaceID, now); err != nil { // USER_DAILY_AUDITS is the workspace's
			return toolError("Cannot start a scan now: " + err.Error() + ". Retry after that time; get_latest_scan still reads the last completed scan.")
		}
		return nil
	}
	got, started, err := store.StartScan(ctx, s.writes, userID, sc, now, admit)
	if err != nil {
		return scanState{}, err
	}
	if started {
		s.log.Info("scan enqueued", "site", site.ID, "scan", sc.ID, "trigger", store.TriggerManual, "via", "mcp")
	}
	st, err := s.scanState(ctx, userID, got)
	st.AlreadyRunning = !started
	return st, err
}

// getScan reads one scan of the user with its site's name, domain and budgets, in one
// statement (store.ScanView).
func (s *Server) getScan(ctx context.Context, userID string, a args) (scanState, error) {
	v, err := s.scans.ScanView(ctx, userID, store.CanonicalID(a.str("scanId", "")))
	if errors.Is(err, store.ErrNotFound) {
		return scanState{}, errScanNotFound
	}
	if err != nil {
		return scanState{}, err
	}
	return stateOf(v.Scan, store.BudgetInputs{SiteName: v.SiteName, SiteDomain: v.SiteDomain, Budgets: v.Budgets}), nil
}

// scanState shows a scan: with get_latest_scan's payload once complete, its reason once failed.
func (s *Server) scanState(ctx context.Context, userID string, sc store.Scan) (scanState, error) {
	var in store.BudgetInputs
	if sc.Status == store.StatusComplete {
		var err error
		if in, err = s.sites.BudgetInputs(ctx, userID, sc.SiteID); err != nil {
			return scanState{}, err
		}
	}
	return stateOf(sc, in), nil
}

// stateOf is scanState of a scan whose site's name, domain and budgets are in in (read when
// the scan is complete).
func stateOf(sc store.Scan, in store.BudgetInputs) scanState {
	st := scanState{ScanID: sc.ID, SiteID: sc.SiteID, Status: sc.Status, Strategy: sc.Strategy, PagesDone: sc.PagesDone,
		PagesTotal: sc.PagesTotal, CreatedAt: iso(&sc.CreatedAt), CompletedAt: iso(sc.CompletedAt)}
	switch sc.Status {
	case store.StatusFailed:
		reason := sc.Error
		st.Reason = &reason
	case store.StatusComplete:
		r := latestScanOf(in, sc)
		st.Result = &r
	}
	return st
}

// cancelScan fails the user's unfinished scan as cancelled; a finished scan is left as it is.
func (s *Server) cancelScan(ctx context.Context, userID, scanID string) error {
	sc, err := s.scan(ctx, userID, scanID)
	if err != nil || !sc.InFlight() {
		return err
	}
	err = s.writes.ExpireScan(ctx, sc.ID, "Cancelled through MCP (tasks/cancel)", s.now())
	if errors.Is(err, store.ErrNotFound) { // it finished meanwhile
		return nil
	}
	return err
}
