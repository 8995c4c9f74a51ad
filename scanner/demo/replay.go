package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"time"

	"sitepulse/scanner"
	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// ReplayConfig configures the demo site's auditor. Zero values get the defaults noted.
type ReplayConfig struct {
	// Runs are the real Lighthouse runs replayed, one per page path and strategy: the site after
	// the bad publish.
	Runs []store.PageResult
	// Before are the runs of the site before it. With Store, each new scan alternates (see
	// Replay.choose); without either, every scan replays Runs.
	Before []store.PageResult
	Store  ReplayStore
	// SiteIDs are the sites replayed, while on Domain: the demo site the demo seeding made,
	// on its fictional domain, and never a user's own site.
	SiteIDs []string
	Domain  string
	// Delay and Jitter make a replayed audit take Delay plus up to Jitter, as a real one takes
	// a while. Defaults 2 s and 2 s: the demo's 10 audits, all at once, end in about 4 s.
	Delay, Jitter time.Duration
	Log           *slog.Logger
}

// ReplayStore is what the replay reads to choose a scan's runs: what the site's latest completed
// scan showed.
type ReplayStore interface {
	LatestCompletedScan(ctx context.Context, userID, siteID string) (store.Scan, error)
	PageResult(ctx context.Context, userID, scanID, pagePath string, strategy store.Strategy) (store.PageResult, error)
}

// Replay audits the demo site offline: the fictional demo.sitepulse.test cannot be audited by
// PageSpeed Insights, so its audits are answered from the real Lighthouse runs in testdata (the
// runs the demo's seeded scans were extracted from), after a realistic delay. It makes no call
// and spends no PSI quota. It serves only the sites it was made for, on their domain: main
// puts it before the real auditor with Replaying.
type Replay struct {
	cfg          ReplayConfig
	runs, before map[store.PageKey]store.PageResult
}

// NewReplay returns the replay of cfg.Runs.
func NewReplay(cfg ReplayConfig) *Replay {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Delay == 0 && cfg.Jitter == 0 {
		cfg.Delay, cfg.Jitter = 2*time.Second, 2*time.Second
	}
	r := &Replay{cfg: cfg, runs: byKey(cfg.Runs), before: byKey(cfg.Before)}
	return r
}

// Serves answers whether a site's audits are replayed: the demo site, while its domain is still
// the fictional demo domain. A nil replay serves none.
func (r *Replay) Serves(site store.Site) bool {
	if r == nil || site.Domain != r.cfg.Domain {
		return false
	}
	for _, id := range r.cfg.SiteIDs {
		if id == site.ID {
			return true
		}
	}
	return false
}

func byKey(runs []store.PageResult) map[store.PageKey]store.PageResult {
	m := map[store.PageKey]store.PageResult{}
	for _, res := range runs {
		m[store.PageKey{PagePath: res.PagePath, Strategy: res.Strategy}] = res
	}
	return m
}

// choose is the recorded run a new audit of the site's page replays, so the demo always has a
// story: the run after the bad publish when it regresses against what the site's latest completed
// scan showed of the page (or nothing was shown), else the run before it, the recovery. Every
// scan of the demo site thus shows either the regressions, with their causes, or their recovery,
// alternately; re-audits in one scan (confirmation) choose alike, as the latest scan is unchanged.
func (r *Replay) choose(ctx context.Context, site store.Site, key store.PageKey) (store.PageResult, bool, error) {
	after, ok := r.runs[key]
	before, hasBefore := r.before[key]
	if !ok || !hasBefore || r.cfg.Store == nil {
		return after, ok, nil
	}
	latest, err := r.cfg.Store.LatestCompletedScan(ctx, site.UserID, site.ID)
	if errors.Is(err, store.ErrNotFound) {
		return after, true, nil
	}
	if err != nil {
		return store.PageResult{}, false, fmt.Errorf("replay: read the latest scan: %w", err)
	}
	shown, err := r.cfg.Store.PageResult(ctx, site.UserID, latest.ID, key.PagePath, key.Strategy)
	if errors.Is(err, store.ErrNotFound) {
		return after, true, nil
	}
	if err != nil {
		return store.PageResult{}, false, fmt.Errorf("replay: read the latest scan's page: %w", err)
	}
	if analysis.Suspect(shown, after) {
		return after, true, nil
	}
	return before, true, nil
}

// Audit answers with the recorded run (after the bad publish) of the page and strategy.
func (r *Replay) Audit(ctx context.Context, pageURL string, strategy store.Strategy) (store.PageResult, error) {
	return r.audit(ctx, store.Site{}, pageURL, strategy)
}

// audit answers with the recorded run of the page and strategy that site's new scan replays
// (choose; a zero site: the latest runs), after the delay; a page the recordings lack fails the
// way Lighthouse fails on a page it cannot load.
func (r *Replay) audit(ctx context.Context, site store.Site, pageURL string, strategy store.Strategy) (store.PageResult, error) {
	path := "/"
	if u, err := url.Parse(pageURL); err == nil && u.Path != "" {
		path = u.Path
	}
	wait := r.cfg.Delay
	if r.cfg.Jitter > 0 {
		wait += rand.N(r.cfg.Jitter)
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return store.PageResult{}, ctx.Err()
	}
	key := store.PageKey{PagePath: path, Strategy: strategy}
	run, ok := r.runs[key]
	if site.ID != "" {
		var err error
		if run, ok, err = r.choose(ctx, site, key); err != nil {
			return store.PageResult{}, err
		}
	}
	if !ok {
		return store.PageResult{}, fmt.Errorf("replay: no recorded Lighthouse run of %s on %s", path, strategy)
	}
	var perf any
	if run.Scores.Performance != nil {
		perf = *run.Scores.Performance
	}
	r.cfg.Log.Info("replay: demo audit answered from a recorded Lighthouse run", "page", path, "strategy", strategy,
		"performance", perf)
	run.PageURL = pageURL
	return run, nil
}

// Replays marks the replay as a scanner.Replayer: its audits call no one, so they spend no
// account's daily audits and take no slot of the audit capacity, PSI's or Lighthouse's.
func (r *Replay) Replays() {}

// Replaying is the auditor main chooses with the demo: the sites r serves are audited by r,
// offline, every other site by next. A nil r is next itself.
func Replaying(r *Replay, next scanner.Auditor) scanner.Auditor {
	if r == nil {
		return next
	}
	return &replaying{replay: r, next: next}
}

type replaying struct {
	replay *Replay
	next   scanner.Auditor
}

// Audit is next's: a page of no known site is never the demo's.
func (a *replaying) Audit(ctx context.Context, pageURL string, strategy store.Strategy) (store.PageResult, error) {
	return a.next.Audit(ctx, pageURL, strategy)
}

// For is the auditor of a site's scan.
func (a *replaying) For(site store.Site) scanner.Auditor {
	if a.replay.Serves(site) {
		return siteReplay{a.replay, site}
	}
	return a.next
}

// siteReplay is the replay of one site's scan, which alternates (Replay.choose).
type siteReplay struct {
	r    *Replay
	site store.Site
}

func (s siteReplay) Audit(ctx context.Context, pageURL string, strategy store.Strategy) (store.PageResult, error) {
	return s.r.audit(ctx, s.site, pageURL, strategy)
}

// Replays: see Replay.Replays.
func (siteReplay) Replays() {}

var (
	_ scanner.Replayer    = (*Replay)(nil)
	_ scanner.Replayer    = siteReplay{}
	_ scanner.SiteAuditor = (*replaying)(nil)
)
