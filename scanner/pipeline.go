package scanner

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/store"

	"sitepulse/scanner/discover"
	"sitepulse/scanner/psi"
)

// strategiesOf lists the audits a scan's strategy asks for, mobile first.
func strategiesOf(strategy store.Strategy) []store.Strategy {
	switch strategy {
	case store.StrategyMobile, store.StrategyDesktop:
		return []store.Strategy{strategy}
	default:
		return []store.Strategy{store.StrategyMobile, store.StrategyDesktop}
	}
}

// workScan is the worker of the scan kind: one attempt of a scan (see scan). PSI being
// unavailable (its breaker, its daily quota, the account's daily audits) snoozes the job.
func (p *Pool) workScan(ctx context.Context, log *slog.Logger, slot *slot, job store.Job) error {
	err := p.scan(ctx, log, slot, job)
	var unavailable *psi.UnavailableError
	if !errors.As(err, &unavailable) {
		return err
	}
	// PSI cannot be used until then: the scan waits without spending an attempt, keeping the
	// pages already stored. The jitter spreads the snoozed scans over a few seconds.
	at := later(unavailable.Until, p.cfg.Now()).Add(jitter(2500*time.Millisecond, 1))
	// What waits: PSI (breaker, daily quota) or this account (its daily audits).
	what := unavailable.What
	if what == "" {
		what = "PSI unavailable"
	}
	log.Warn(fmt.Sprintf("scanner: %s until %s, scan snoozed", what, unavailable.Until.UTC().Format(time.RFC3339)),
		"reason", unavailable.Reason, "resumes_at", at.UTC().Format(time.RFC3339))
	return &Snooze{Until: at, Reason: unavailable.Error() + "; scan snoozed"}
}

// scan runs one attempt of a scan job: discover the pages, mark the scan running,
// audit every page/strategy pair not yet stored (so a re-run resumes), storing each result or
// error as it arrives, then complete the scan with its scores and its follow-up jobs (Then),
// or fail it when no page could be audited. An error means the attempt failed and the caller
// settles the job.
func (p *Pool) scan(ctx context.Context, log *slog.Logger, slot *slot, job store.Job) error {
	lease := job.Lease()
	began := p.cfg.Now()
	scan, site, err := p.cfg.Store.ScanForJob(ctx, job.ScanID)
	if errors.Is(err, store.ErrNotFound) { // the site and its scans were deleted meanwhile
		return p.cfg.Store.FailScan(ctx, lease, "the site was deleted", p.cfg.Now())
	}
	if err != nil {
		return fmt.Errorf("read scan: %w", err)
	}
	log = log.With("site", site.Name)
	access, err := p.cfg.Store.SiteAccessForScan(ctx, site.ID)
	if errors.Is(err, store.ErrNotFound) {
		return p.cfg.Store.FailScan(ctx, lease, "the site was deleted", p.cfg.Now())
	}
	if err != nil {
		return fmt.Errorf("read the site's access setting: %w", err)
	}
	signed := access.Kind != store.AccessNone // audited signed in, never by PSI (see signIn)
	if a, ok := p.auditorFor(site).(Pausable); ok && !signed {
		if err := a.Unavailable(); err != nil { // PSI is paused: do not even look for pages
			return err
		}
	}
	if err := p.cfg.Quota.Check(site.WorkspaceID, p.cfg.Now()); err != nil { // the workspace's budget is spent
		return err
	}
	if p.cfg.Platform != nil && scan.Trigger == store.TriggerWebhook && site.PlatformVerified {
		// A publish may have added pages since the import: ask the platform first.
		if fresh, err := p.cfg.Platform.RefreshPages(ctx, site); err != nil {
			log.Warn("scanner: platform pages not refreshed; auditing the saved list", "err", err)
		} else {
			log.Info("scanner: pages refreshed from the platform", "pages", len(fresh))
			site.Pages = fresh
		}
	}
	if requested := requestedPages(job); len(requested) > 0 {
		site.Pages = requested // a CI pipeline's scan of the pages its deploy changed
	}
	pages, found, source, note, err := p.discover(ctx, log, slot, site)
	if err != nil {
		return err
	}
	if note != nil {
		log.Warn("scanner: sitemap trouble", "pages_from", source, "reason", note)
	}
	var limited *discover.LimitError
	errors.As(note, &limited)
	type pair struct {
		path     string
		strategy store.Strategy
	}
	var pairs []pair
	for _, path := range pages {
		for _, s := range strategiesOf(scan.Strategy) {
			pairs = append(pairs, pair{path, s})
		}
	}
	done, err := p.cfg.Store.DonePages(ctx, scan.ID)
	if err != nil {
		return fmt.Errorf("read stored pages: %w", err)
	}
	stored := map[store.PageKey]bool{}
	for _, k := range done {
		stored[k] = true
	}
	noteKey := store.PageKey{PagePath: "/sitemap.xml", Strategy: analysis.DiscoveryNote}
	total := len(pairs)
	if limited != nil || stored[noteKey] {
		total++ // the note (of this attempt or an earlier one) counts as done, so the progress ends at its total
	}
	if err := p.cfg.Store.StartScan(ctx, lease, total, p.cfg.Now()); err != nil {
		return fmt.Errorf("start scan: %w", err)
	}
	if err := p.cfg.Store.SetPagesFound(ctx, lease, len(pages), found); err != nil {
		return fmt.Errorf("record pages found: %w", err)
	}
	if limited != nil {
		pe := store.PageError{PagePath: noteKey.PagePath, PageURL: discover.SiteOrigin(site.Domain) + noteKey.PagePath,
			Strategy: noteKey.Strategy, Error: limited.Error()}
		if err := p.cfg.Store.SavePageError(ctx, lease, pe); err != nil {
			return fmt.Errorf("save the discovery note: %w", err)
		}
	}
	var todo []pair
	for _, pr := range pairs {
		if !stored[store.PageKey{PagePath: pr.path, Strategy: pr.strategy}] {
			todo = append(todo, pr)
		}
	}
	previous, err := p.previousRuns(ctx, site)
	if err != nil {
		return fmt.Errorf("read the previous scan: %w", err)
	}
	log.Info("scan started", "pages", len(pages), "pages_found", found, "pages_from", source, "audits", len(pairs),
		"already_stored", len(pairs)-len(todo), "strategy", scan.Strategy, "trigger", scan.Trigger,
		"replay", p.replayed(site), "signed_in", access.Kind)

	auditor := p.auditorFor(site)
	if signed && len(todo) > 0 {
		a, err := p.signIn(ctx, site, access)
		switch {
		case ctx.Err() != nil:
			return context.Cause(ctx)
		case err != nil:
			// No page is audited signed out instead: each says why, and the scan fails with it.
			log.Warn("scanner: sign-in failed", "err", err)
			for _, pr := range todo {
				pe := store.PageError{PagePath: pr.path, PageURL: discover.PageURL(site, pr.path), Strategy: pr.strategy, Error: err.Error()}
				if err := p.whileUnavailable(ctx, log, "save page error", func(ctx context.Context) error {
					return p.cfg.Store.SavePageError(ctx, lease, pe)
				}); err != nil {
					return fmt.Errorf("save page error: %w", err)
				}
			}
			todo = nil
		default:
			auditor = a
		}
	}

	// Audit as many pairs at once as the capacity grants this scan; the first store failure
	// stops the rest. PSI becoming unavailable starts no more audits but lets those in flight
	// finish and store their results (one may be the breaker's probe); then the job is snoozed.
	auditCtx, stopAudits := context.WithCancelCause(ctx)
	defer stopAudits(nil)
	capacity := p.capacityFor(site)
	share := capacity.Share()
	stopShowing := p.showInFlight(ctx, lease, share)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	var paused *psi.UnavailableError
	var auditTime time.Duration // summed over the audits made, for the ideal
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		var ue *psi.UnavailableError
		if errors.As(err, &ue) {
			if paused == nil || ue.Until.After(paused.Until) {
				paused = ue
			}
			return
		}
		if firstErr == nil {
			firstErr = err
		}
		stopAudits(err)
	}
	isPaused := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return paused != nil
	}
	auditsBegan := p.cfg.Now()
	for _, pr := range todo {
		if share.Acquire(auditCtx) != nil {
			break
		}
		if isPaused() || auditCtx.Err() != nil {
			share.Release()
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer share.Release()
			var prev *store.PageResult
			if r, ok := previous[store.PageKey{PagePath: pr.path, Strategy: pr.strategy}]; ok {
				prev = &r
			}
			began := p.cfg.Now()
			err := p.auditPage(auditCtx, log, lease, site, auditor, pr.path, pr.strategy, prev)
			mu.Lock()
			auditTime += p.cfg.Now().Sub(began)
			mu.Unlock()
			if err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	stopShowing()
	if firstErr != nil {
		return firstErr
	}
	if err := context.Cause(ctx); err != nil {
		return err
	}
	if paused != nil {
		done, _ := p.cfg.Store.DonePages(ctx, scan.ID)
		log.Info("scan paused: PSI unavailable", "audits_stored", len(done), "audits", len(pairs))
		return paused
	}

	results, err := p.cfg.Store.PageResults(ctx, site.UserID, scan.ID)
	if err != nil {
		return fmt.Errorf("read results: %w", err)
	}
	pageErrs, err := p.cfg.Store.PageErrors(ctx, site.UserID, scan.ID)
	if err != nil {
		return fmt.Errorf("read page errors: %w", err)
	}
	if len(results) == 0 {
		reason := "no page could be audited"
		var audits []store.PageError // the discovery note is not an audit
		for _, e := range pageErrs {
			if e.Strategy != analysis.DiscoveryNote {
				audits = append(audits, e)
			}
		}
		if len(audits) > 0 {
			e := audits[0]
			reason = fmt.Sprintf("no page could be audited (%d of %d failed); %s %s: %s", len(audits), len(pairs), e.PagePath, e.Strategy, e.Error)
		}
		if limited != nil {
			reason += "; " + limited.Error()
		}
		if err := p.whileUnavailable(ctx, log, "fail scan", func(ctx context.Context) error {
			return p.cfg.Store.FailScan(ctx, lease, reason, p.cfg.Now())
		}); err != nil {
			return fmt.Errorf("fail scan: %w", err)
		}
		log.Error("scan failed", "reason", reason)
		return nil
	}
	scores := analysis.ScanScores(results)
	var then []store.JobArgs
	if p.cfg.Then != nil {
		then = p.cfg.Then(scan.ID)
	}
	if err := p.whileUnavailable(ctx, log, "complete scan", func(ctx context.Context) error {
		return p.cfg.Store.CompleteScan(ctx, lease, scores, p.cfg.Now(), then...)
	}); err != nil {
		return fmt.Errorf("complete scan: %w", err)
	}
	auditWall := p.cfg.Now().Sub(auditsBegan)
	ideal := capacity.Ideal(len(todo), auditTime/time.Duration(max(len(todo), 1)))
	log.Info("scan complete", "results", len(results), "page_errors", len(pageErrs),
		"health", intOrNil(scores.Health), "performance", intOrNil(scores.Performance),
		"accessibility", intOrNil(scores.Accessibility), "best_practices", intOrNil(scores.BestPractices),
		"seo", intOrNil(scores.SEO), "took", p.cfg.Now().Sub(began).Round(time.Millisecond),
		"audits_made", len(todo), "audits_wall", auditWall.Round(time.Millisecond),
		"ideal", ideal.Round(time.Millisecond), "vs_ideal", ratio(auditWall, ideal))
	return nil
}

// requestedPages are the pages a scan was started with instead of the site's
// (store.Scan.Pages, kept in its job's args); nil for the others.
func requestedPages(job store.Job) []string {
	var args store.ScanJob
	if json.Unmarshal(job.Args, &args) != nil {
		return nil
	}
	return args.Pages
}

// discover finds the site's pages. Reading a sitemap is in the tenant's hands (a slow server
// holds it up to the discovery deadline), so the scan gives its worker slot back meanwhile and
// takes one again to audit: another tenant's scan is claimed and audited meanwhile instead of
// waiting. One account discovers at most accountDiscoveries scans at once; its others are
// snoozed, so its scans cannot take over the queue either.
func (p *Pool) discover(ctx context.Context, log *slog.Logger, slot *slot, site store.Site) (pages []string, found int, source string, note, err error) {
	if len(site.Pages) > 0 { // saved paths: nothing to fetch
		pages, found, source, note = p.cfg.Discovery.PagesFound(ctx, site)
		return pages, found, source, note, nil
	}
	leave, ok := p.enterDiscovery(site.UserID)
	if !ok {
		wait := cmp.Or(p.cfg.Discovery.Deadline, discover.DefaultDiscoveryDeadline) / 6
		return nil, 0, "", nil, &psi.UnavailableError{What: "this account's other scans are discovering their pages",
			Until: p.cfg.Now().Add(wait), Reason: fmt.Sprintf("an account discovers at most %d scans' pages at once", accountDiscoveries)}
	}
	slot.release()
	pages, found, source, note = p.cfg.Discovery.PagesFound(ctx, site)
	leave()
	if err := slot.take(ctx); err != nil {
		return nil, 0, "", nil, err
	}
	return pages, found, source, note, nil
}

// auditPage audits one pair with the scan's auditor and stores its result or its error; a result that regressed against
// prev is confirmed first. It returns an error only when the attempt must stop: the store
// failed, the lease was lost, or the job was cancelled.
func (p *Pool) auditPage(ctx context.Context, log *slog.Logger, lease store.Lease, site store.Site, auditor Auditor, path string, strategy store.Strategy, prev *store.PageResult) error {
	pageURL := discover.PageURL(site, path)
	began := p.cfg.Now()
	if err := p.takeAudit(site); err != nil {
		return err // never audited: the scan waits for the account's next daily budget
	}
	r, err := auditor.Audit(ctx, pageURL, strategy)
	if ctx.Err() != nil {
		return context.Cause(ctx) // cancelled: not the page's fault, record nothing
	}
	if errors.Is(err, psi.ErrPSIUnavailable) {
		return err // never audited: not the page's fault, record nothing; the scan is snoozed
	}
	if err != nil {
		log.Warn("page failed", "page", path, "strategy", strategy, "err", err)
		pe := store.PageError{PagePath: path, PageURL: pageURL, Strategy: strategy, Error: err.Error()}
		if err := p.whileUnavailable(ctx, log, "save page error", func(ctx context.Context) error {
			return p.cfg.Store.SavePageError(ctx, lease, pe)
		}); err != nil {
			return fmt.Errorf("save page error: %w", err)
		}
		return nil
	}
	// Results are keyed by what was asked for, whatever URL the audit reports after redirects.
	r.PagePath, r.PageURL, r.Strategy = path, pageURL, strategy
	if r, err = p.confirm(ctx, log, auditor, site, pageURL, r, prev); err != nil {
		return err // cancelled: record nothing
	}
	if prev != nil && analysis.Suspect(*prev, r) {
		r.RegressedFrom = prev.ScanID // both runs' screenshots are kept
	}
	if err := p.whileUnavailable(ctx, log, "save page result", func(ctx context.Context) error {
		return p.cfg.Store.SavePageResult(ctx, lease, r)
	}); err != nil {
		return fmt.Errorf("save page result: %w", err)
	}
	log.Info("page done", "page", path, "strategy", strategy, "performance", intOrNil(r.Scores.Performance),
		"lcp_ms", floatOrNil(r.CoreWebVitals.LCP), "runs", r.Runs, "took", p.cfg.Now().Sub(began).Round(time.Millisecond))
	return nil
}

// ratio is a/b to two decimals, nil when b is 0.
func ratio(a, b time.Duration) any {
	if b <= 0 {
		return nil
	}
	return math.Round(100*a.Seconds()/b.Seconds()) / 100
}

func intOrNil(v *int) any {
	if v == nil {
		return nil
	}
	return *v
}

func floatOrNil(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}
