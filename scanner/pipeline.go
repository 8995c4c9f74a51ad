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

// scan runs one attempt of a scan job, in four stages: resolve the pages (the site's, refreshed
// from the platform, a CI pipeline's, or discovered), plan the audits (mark the scan running with
// its total, leave out the page/strategy pairs an earlier attempt stored, so a re-run resumes,
// and sign in when the site asks for it), audit the pairs, storing each result or error as it
// arrives, and finish: complete the scan with its scores and its follow-up jobs (Then), or fail
// it when no page could be audited. An error means the attempt failed and the caller settles
// the job.
func (p *Pool) scan(ctx context.Context, log *slog.Logger, slot *slot, job store.Job) error {
	began := p.cfg.Now()
	run, err := p.resolvePages(ctx, log, slot, job)
	if run == nil {
		return err
	}
	plan, err := p.planAudits(ctx, run)
	if err != nil {
		return err
	}
	audited, err := p.auditPairs(ctx, run, plan)
	if err != nil {
		return err
	}
	return p.finishScan(ctx, run, plan, audited, began)
}

// scanRun is what resolvePages hands the later stages: the scan, its site and access setting,
// and the pages to audit.
type scanRun struct {
	log     *slog.Logger // with the site's name
	lease   store.Lease
	scan    store.Scan
	site    store.Site
	access  store.SiteAccess
	pages   []string
	found   int                  // the pages discovery found, before MAX_PAGES_PER_SCAN
	source  string               // where the pages came from (discover's source)
	limited *discover.LimitError // the note of a site with more pages than the cap, else nil
}

// signed answers whether the site is audited signed in, never by PSI (see signIn).
func (r *scanRun) signed() bool { return r.access.Kind != store.AccessNone }

// resolvePages is the first stage: it reads the job's scan and site, refuses to start while PSI
// is paused or the workspace's daily audits are spent, and finds the pages. A nil run ends the
// attempt with err, nil when the site was deleted meanwhile (the scan is failed saying so).
func (p *Pool) resolvePages(ctx context.Context, log *slog.Logger, slot *slot, job store.Job) (*scanRun, error) {
	lease := job.Lease()
	scan, site, err := p.cfg.Store.ScanForJob(ctx, job.ScanID)
	if errors.Is(err, store.ErrNotFound) { // the site and its scans were deleted meanwhile
		return nil, p.cfg.Store.FailScan(ctx, lease, "the site was deleted", p.cfg.Now())
	}
	if err != nil {
		return nil, fmt.Errorf("read scan: %w", err)
	}
	run := &scanRun{log: log.With("site", site.Name), lease: lease, scan: scan, site: site}
	run.access, err = p.cfg.Store.SiteAccessForScan(ctx, site.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, p.cfg.Store.FailScan(ctx, lease, "the site was deleted", p.cfg.Now())
	}
	if err != nil {
		return nil, fmt.Errorf("read the site's access setting: %w", err)
	}
	if a, ok := p.auditorFor(site).(Pausable); ok && !run.signed() {
		if err := a.Unavailable(); err != nil { // PSI is paused: do not even look for pages
			return nil, err
		}
	}
	if err := p.cfg.Quota.Check(site.WorkspaceID, p.cfg.Now()); err != nil { // the workspace's budget is spent
		return nil, err
	}
	if p.cfg.Platform != nil && scan.Trigger == store.TriggerWebhook && site.PlatformVerified {
		// A publish may have added pages since the import: ask the platform first.
		if fresh, err := p.cfg.Platform.RefreshPages(ctx, site); err != nil {
			run.log.Warn("scanner: platform pages not refreshed; auditing the saved list", "err", err)
		} else {
			run.log.Info("scanner: pages refreshed from the platform", "pages", len(fresh))
			run.site.Pages = fresh
		}
	}
	if requested := requestedPages(job); len(requested) > 0 {
		run.site.Pages = requested // a CI pipeline's scan of the pages its deploy changed
	}
	var note error
	run.pages, run.found, run.source, note, err = p.discover(ctx, run.log, slot, run.site)
	if err != nil {
		return nil, err
	}
	if note != nil {
		run.log.Warn("scanner: sitemap trouble", "pages_from", run.source, "reason", note)
	}
	errors.As(note, &run.limited)
	return run, nil
}

// auditPair is one audit of a scan: a page and a strategy.
type auditPair struct {
	path     string
	strategy store.Strategy
}

// auditPlan is what planAudits hands the later stages.
type auditPlan struct {
	pairs    []auditPair // every audit of the scan
	todo     []auditPair // those no earlier attempt stored (none when signing in failed)
	previous map[store.PageKey]store.PageResult
	auditor  Auditor // the site's, or one signed in as the site's access setting says, or runners'
	leased   bool    // runners run the audits (runners.go)
}

// discoveryNote is where a scan keeps the note of a site with more pages than the cap: a page
// error of its own, which counts as done in the progress.
var discoveryNote = store.PageKey{PagePath: "/sitemap.xml", Strategy: analysis.DiscoveryNote}

// planPairs is the plan of a scan's audits: every page in every strategy of the scan, those of
// them not in done (stored by an earlier attempt), and the total the progress counts to (the
// discovery note too, when this attempt or an earlier one kept one).
func planPairs(pages []string, strategy store.Strategy, done []store.PageKey, limited bool) (pairs, todo []auditPair, total int) {
	stored := map[store.PageKey]bool{}
	for _, k := range done {
		stored[k] = true
	}
	for _, path := range pages {
		for _, s := range strategiesOf(strategy) {
			pairs = append(pairs, auditPair{path, s})
		}
	}
	for _, pr := range pairs {
		if !stored[store.PageKey{PagePath: pr.path, Strategy: pr.strategy}] {
			todo = append(todo, pr)
		}
	}
	total = len(pairs)
	if limited || stored[discoveryNote] {
		total++ // the note counts as done, so the progress ends at its total
	}
	return pairs, todo, total
}

// planAudits is the second stage: it marks the scan running with its total and the pages found,
// keeps the discovery note, reads the previous scan's results (to confirm a regression against)
// and signs in when the site asks for it; a sign-in that fails stores each audit's page error
// saying why, and leaves nothing to audit.
func (p *Pool) planAudits(ctx context.Context, run *scanRun) (auditPlan, error) {
	done, err := p.cfg.Store.DonePages(ctx, run.scan.ID)
	if err != nil {
		return auditPlan{}, fmt.Errorf("read stored pages: %w", err)
	}
	var plan auditPlan
	var total int
	plan.pairs, plan.todo, total = planPairs(run.pages, run.scan.Strategy, done, run.limited != nil)
	if err := p.cfg.Store.StartScan(ctx, run.lease, total, p.cfg.Now()); err != nil {
		return auditPlan{}, fmt.Errorf("start scan: %w", err)
	}
	if err := p.cfg.Store.SetPagesFound(ctx, run.lease, len(run.pages), run.found); err != nil {
		return auditPlan{}, fmt.Errorf("record pages found: %w", err)
	}
	if run.limited != nil {
		pe := store.PageError{PagePath: discoveryNote.PagePath, PageURL: discover.SiteOrigin(run.site.Domain) + discoveryNote.PagePath,
			Strategy: discoveryNote.Strategy, Error: run.limited.Error()}
		if err := p.cfg.Store.SavePageError(ctx, run.lease, pe); err != nil {
			return auditPlan{}, fmt.Errorf("save the discovery note: %w", err)
		}
	}
	if plan.previous, err = p.previousRuns(ctx, run.site); err != nil {
		return auditPlan{}, fmt.Errorf("read the previous scan: %w", err)
	}
	run.log.Info("scan started", "pages", len(run.pages), "pages_found", run.found, "pages_from", run.source, "audits", len(plan.pairs),
		"already_stored", len(plan.pairs)-len(plan.todo), "strategy", run.scan.Strategy, "trigger", run.scan.Trigger,
		"replay", p.replayed(run.site), "signed_in", run.access.Kind)

	plan.auditor = p.auditorFor(run.site)
	leased, err := p.leasedAuditorFor(ctx, run)
	if err != nil {
		return auditPlan{}, fmt.Errorf("read the workspace's runners: %w", err)
	}
	if leased != nil {
		plan.auditor, plan.leased = leased, true
		run.log.Info("scan audited by runners", "audits", len(plan.todo))
	}
	if !run.signed() || len(plan.todo) == 0 {
		return plan, nil
	}
	a, err := p.signIn(ctx, run.site, run.access)
	switch {
	case ctx.Err() != nil:
		return auditPlan{}, context.Cause(ctx)
	case err != nil:
		// No page is audited signed out instead: each says why, and the scan fails with it.
		run.log.Warn("scanner: sign-in failed", "err", err)
		for _, pr := range plan.todo {
			pe := store.PageError{PagePath: pr.path, PageURL: discover.PageURL(run.site, pr.path), Strategy: pr.strategy, Error: err.Error()}
			if err := p.whileUnavailable(ctx, run.log, "save page error", func(ctx context.Context) error {
				return p.cfg.Store.SavePageError(ctx, run.lease, pe)
			}); err != nil {
				return auditPlan{}, fmt.Errorf("save page error: %w", err)
			}
		}
		plan.todo = nil
	default:
		plan.auditor = a
	}
	return plan, nil
}

// audited is what auditPairs did: how many audits, when they began and their summed time (for
// the capacity's ideal).
type audited struct {
	made  int
	began time.Time
	time  time.Duration
}

// auditPairs is the third stage: it audits as many of the plan's pairs at once as the capacity
// grants this scan, each storing its result or error as it arrives; the first store failure
// stops the rest. PSI becoming unavailable starts no more audits but lets those in flight finish
// and store their results (one may be the breaker's probe); then it answers the
// *psi.UnavailableError, and the job is snoozed.
func (p *Pool) auditPairs(ctx context.Context, run *scanRun, plan auditPlan) (audited, error) {
	auditCtx, stopAudits := context.WithCancelCause(ctx)
	defer stopAudits(nil)
	capacity := p.capacityFor(run.site)
	if plan.leased {
		capacity = p.runnerCapacity
	}
	share := capacity.Share()
	stopShowing := p.showInFlight(ctx, run.lease, share)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	var paused *psi.UnavailableError
	out := audited{made: len(plan.todo), began: p.cfg.Now()}
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
	for _, pr := range plan.todo {
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
			if r, ok := plan.previous[store.PageKey{PagePath: pr.path, Strategy: pr.strategy}]; ok {
				prev = &r
			}
			began := p.cfg.Now()
			err := p.auditPage(auditCtx, run.log, run.lease, run.site, plan.auditor, pr.path, pr.strategy, prev)
			mu.Lock()
			out.time += p.cfg.Now().Sub(began)
			mu.Unlock()
			if err != nil {
				fail(err)
			}
		}()
	}
	wg.Wait()
	stopShowing()
	if firstErr != nil {
		return out, firstErr
	}
	if err := context.Cause(ctx); err != nil {
		return out, err
	}
	if paused != nil {
		done, _ := p.cfg.Store.DonePages(ctx, run.scan.ID)
		run.log.Info("scan paused: PSI unavailable", "audits_stored", len(done), "audits", len(plan.pairs))
		return out, paused
	}
	return out, nil
}

// failReason is why a scan none of whose audits stored a result failed: the first failed
// audit's error and how many of the audits failed, and the discovery note when there is one.
func failReason(pageErrs []store.PageError, audits int, limited error) string {
	reason := "no page could be audited"
	var failed []store.PageError // the discovery note is not an audit
	for _, e := range pageErrs {
		if e.Strategy != analysis.DiscoveryNote {
			failed = append(failed, e)
		}
	}
	if len(failed) > 0 {
		e := failed[0]
		reason = fmt.Sprintf("no page could be audited (%d of %d failed); %s %s: %s", len(failed), audits, e.PagePath, e.Strategy, e.Error)
	}
	if limited != nil {
		reason += "; " + limited.Error()
	}
	return reason
}

// finishScan is the last stage: it completes the scan with its scores and its follow-up jobs
// (Then), or fails it when no page could be audited (failReason), and logs what the scan took
// against the capacity's ideal.
func (p *Pool) finishScan(ctx context.Context, run *scanRun, plan auditPlan, audited audited, began time.Time) error {
	log, lease := run.log, run.lease
	results, err := p.cfg.Store.PageResults(ctx, run.site.UserID, run.scan.ID)
	if err != nil {
		return fmt.Errorf("read results: %w", err)
	}
	pageErrs, err := p.cfg.Store.PageErrors(ctx, run.site.UserID, run.scan.ID)
	if err != nil {
		return fmt.Errorf("read page errors: %w", err)
	}
	if len(results) == 0 {
		var limited error
		if run.limited != nil {
			limited = run.limited
		}
		reason := failReason(pageErrs, len(plan.pairs), limited)
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
		then = p.cfg.Then(run.scan.ID)
	}
	if err := p.whileUnavailable(ctx, log, "complete scan", func(ctx context.Context) error {
		return p.cfg.Store.CompleteScan(ctx, lease, scores, p.cfg.Now(), then...)
	}); err != nil {
		return fmt.Errorf("complete scan: %w", err)
	}
	auditWall := p.cfg.Now().Sub(audited.began)
	ideal := p.capacityFor(run.site).Ideal(audited.made, audited.time/time.Duration(max(audited.made, 1)))
	log.Info("scan complete", "results", len(results), "page_errors", len(pageErrs),
		"health", intOrNil(scores.Health), "performance", intOrNil(scores.Performance),
		"accessibility", intOrNil(scores.Accessibility), "best_practices", intOrNil(scores.BestPractices),
		"seo", intOrNil(scores.SEO), "took", p.cfg.Now().Sub(began).Round(time.Millisecond),
		"audits_made", audited.made, "audits_wall", auditWall.Round(time.Millisecond),
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
	if err := p.takeAudit(site, auditor); err != nil {
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
