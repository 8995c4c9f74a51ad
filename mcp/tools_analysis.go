package mcp

import (
	"context"
	"errors"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// This file holds the site analyses over the latest scans: get_third_party_scripts,
// get_accessibility_issues, get_regression_report. The analysis itself is package scanner's,
// shared with the budget check and the pipeline.

// latestAnalysis answers an analysis (named name, with its arguments) of the full page results
// of the latest completed scan of the site a names, in one statement (store.LatestResults). A
// completed scan's results never change, so the answer is kept per scan, and the scan last
// analysed for the site is named to the store, which then leaves its results out: while the
// site's latest scan is the one analysed, the statement finds it and reads nothing more.
func latestAnalysis[T any](ctx context.Context, s *Server, userID string, a args, name string, analyze func([]store.PageResult) T) (T, error) {
	var zero T
	siteID := store.CanonicalID(a.str("siteId", ""))
	latestKey := "latest " + name + " " + siteID
	known, _ := s.analyses.get(latestKey)
	knownID, _ := known.(string)
	if _, ok := s.analyses.get(name + " " + knownID); !ok {
		knownID = ""
	}
	for {
		in, err := s.scans.LatestResults(ctx, userID, siteID, knownID)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return zero, errSiteNotFound
		case err != nil:
			return zero, err
		case in.Scan == nil:
			return zero, errNoScanYet
		}
		key := name + " " + in.Scan.ID
		if in.Results == nil && knownID != "" { // the scan named as known: its answer is kept, unless dropped meanwhile
			if v, ok := s.analyses.get(key); ok {
				return v.(T), nil
			}
			knownID = ""
			continue
		}
		v := analyze(in.Results)
		s.analyses.put(key, v)
		s.analyses.set(latestKey, in.Scan.ID)
		return v, nil
	}
}

type thirdPartyResult struct {
	Scripts       []analysis.ThirdPartyImpact `json:"scripts"`
	PagesAnalyzed int                         `json:"pagesAnalyzed"`
}

func (s *Server) getThirdPartyScripts(ctx context.Context, userID string, a args) (thirdPartyResult, error) {
	return latestAnalysis(ctx, s, userID, a, "third-party", func(results []store.PageResult) thirdPartyResult {
		scripts, pages := analysis.ThirdParties(results)
		return thirdPartyResult{scripts, pages}
	})
}

type a11yResult struct {
	Issues                []analysis.A11yGroup `json:"issues"`
	Count                 int                  `json:"count"`
	PagesAnalyzed         int                  `json:"pagesAnalyzed"`
	AvgAccessibilityScore *int                 `json:"avgAccessibilityScore"`
}

func (s *Server) getAccessibilityIssues(ctx context.Context, userID string, a args) (a11yResult, error) {
	severity := a.str("severity", "all")
	return latestAnalysis(ctx, s, userID, a, "a11y "+severity, func(results []store.PageResult) a11yResult {
		sum := analysis.AccessibilityIssues(results, severity)
		return a11yResult{sum.Issues, len(sum.Issues), sum.PagesAnalyzed, sum.AvgAccessibilityScore}
	})
}

// regressionCore is get_regression_report as the interface's 2025-03-26 payload has it.
type regressionCore struct {
	LatestScanID          string                `json:"latestScanId"`
	LatestScanCompletedAt *string               `json:"latestScanCompletedAt"`
	PreviousScanID        *string               `json:"previousScanId"`
	HasRegression         bool                  `json:"hasRegression"`
	RegressionCount       int                   `json:"regressionCount"`
	Regressions           []analysis.Regression `json:"regressions"`
}

type regressionReport struct {
	regressionCore
	// Regressions shadows regressionCore's from 2025-06-18 on: each says whether it was confirmed.
	Regressions []confirmedRegression `json:"regressions"`
	// PublishedBy and PublishedAt name the publish that started the latest scan; null when no
	// publish did (a scheduled or manual scan), PublishedBy also when the platform named nobody.
	PublishedBy *string `json:"publishedBy"`
	PublishedAt *string `json:"publishedAt"`
}

// confirmedRegression is a regression with its confirmation: the page looked regressed, was
// audited Runs-1 more times (REGRESSION_CONFIRM_RUNS) and the kept median run still regressed.
// Runs 1 is a regression seen once (re-audits off, or skipped for the quota): not confirmed.
type confirmedRegression struct {
	analysis.Regression
	Confirmed bool `json:"confirmed"`
	Runs      int  `json:"runs"`
	// Cause is why it got worse, in one sentence (analysis.Compare's cause of the metric);
	// Confidence how sure that cause is (high, medium, low; absent when it names no change);
	// Changes is what changed in its page and strategy, bounded (changesOf).
	Cause      string      `json:"cause"`
	Confidence string      `json:"confidence,omitempty"`
	Changes    pageChanges `json:"changes"`
}

// legacy leaves out publishedBy, publishedAt and the confirmations, which came after 2025-03-26.
func (r regressionReport) legacy() any { return r.regressionCore }

// getRegressionReport reads the two latest completed scans, their page metrics and the latest
// one's publish in one statement (store.LatestTwo). Completed scans never change: the metrics of
// the scans this server keeps (metricsCache) are named to the store, which leaves them out.
func (s *Server) getRegressionReport(ctx context.Context, userID string, a args) (regressionReport, error) {
	siteID := store.CanonicalID(a.str("siteId", ""))
	two, err := s.scans.LatestTwo(ctx, userID, siteID, s.metrics.scans())
	var latest, previous []store.PageResult
	if err == nil && len(two.Scans) == 2 {
		var okLatest, okPrevious bool
		latest, okLatest = s.metrics.keep(two.Scans[0].ID, two.Metrics[0])
		previous, okPrevious = s.metrics.keep(two.Scans[1].ID, two.Metrics[1])
		if !okLatest || !okPrevious { // dropped from the cache since named: read them
			if two, err = s.scans.LatestTwo(ctx, userID, siteID, nil); err == nil && len(two.Scans) == 2 {
				latest, previous = two.Metrics[0], two.Metrics[1]
			}
		}
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return regressionReport{}, errSiteNotFound
	case err != nil:
		return regressionReport{}, err
	case len(two.Scans) == 0:
		return regressionReport{}, errNoScanYet
	}
	scans := two.Scans
	out := regressionReport{regressionCore: regressionCore{LatestScanID: scans[0].ID, LatestScanCompletedAt: iso(scans[0].CompletedAt), Regressions: []analysis.Regression{}}}
	if two.PublishedOn != nil {
		out.PublishedAt = iso(two.PublishedOn)
		if two.PublishedBy != "" {
			out.PublishedBy = &two.PublishedBy
		}
	}
	if len(scans) == 2 {
		prevID := scans[1].ID
		out.PreviousScanID = &prevID
		out.regressionCore.Regressions = analysis.Regressions(previous, latest)
	}
	out.RegressionCount = len(out.regressionCore.Regressions)
	out.HasRegression = out.RegressionCount > 0
	out.Regressions = make([]confirmedRegression, len(out.regressionCore.Regressions))
	if out.HasRegression && typed(ctx) {
		changes, err := s.scanChanges(ctx, userID, scans[1].ID, scans[0].ID)
		if err != nil {
			return regressionReport{}, err
		}
		for i, r := range out.regressionCore.Regressions {
			c := changes[store.PageKey{PagePath: r.PagePath, Strategy: r.Strategy}]
			n := max(c.runs, 1)
			own, _ := c.CauseOf(r.Metric)
			out.Regressions[i] = confirmedRegression{Regression: r, Confirmed: n > 1, Runs: n, Cause: causeOf(c.Comparison, r),
				Confidence: own.Confidence, Changes: changesOf(c.Comparison, r)}
		}
	}
	return out, nil
}

// pageChange is what changed in a page and strategy between two scans, and how many audits
// stand behind the later result (store.PageResult's Runs): whether its regression was confirmed.
type pageChange struct {
	analysis.Comparison
	runs int
}

// scanChanges is what changed in each page and strategy from scan fromID to scan toID of the
// user's (analysis.Compare of store.Explains.ComparePairs, one statement, which reads the runs
// too), kept per pair of scans (analysisCache) since completed scans never change. Only a
// report with regressions asks, from 2025-06-18 on.
func (s *Server) scanChanges(ctx context.Context, userID, fromID, toID string) (map[store.PageKey]pageChange, error) {
	key := "changes " + fromID + " " + toID
	if v, ok := s.analyses.get(key); ok {
		return v.(map[store.PageKey]pageChange), nil
	}
	pairs, err := s.scans.ComparePairs(ctx, userID, fromID, toID)
	if err != nil {
		return nil, err
	}
	out := map[store.PageKey]pageChange{}
	for i, c := range analysis.CompareAll(pairs.Pairs) {
		out[store.PageKey{PagePath: c.PagePath, Strategy: c.Strategy}] = pageChange{c, pairs.Pairs[i].After.Runs}
	}
	s.analyses.put(key, out)
	return out, nil
}

// causeOf is a regression's cause sentence: the comparison's cause of its metric. A metric can
// cross a web.dev band (the regression rule) while moving less than run-to-run noise, or be
// field data the runs do not explain (INP): then it says what the comparison found beside it,
// or that nothing measurable changed.
func causeOf(c analysis.Comparison, r analysis.Regression) string {
	if cause, ok := c.CauseOf(r.Metric); ok {
		return cause.Sentence
	}
	head := analysis.Label(r.Metric) + " " + analysis.FormatDelta(r.Metric, r.Delta) + ": "
	switch {
	case c.PagePath == "" || !c.Explained:
		return head + analysis.NotExplainedSentence
	case len(c.Causes) > 0:
		return head + "within run-to-run noise on its own; beside it, " + c.Summary
	}
	return head + analysis.NoChangeSentence
}

// Bounds of a regression's changes: a chat's context holds the cause and the largest changes,
// not every request of the page (compare_scans shows them all).
const maxChangedRequests = 5

// pageChanges is what a regression carries of its page and strategy's analysis.Comparison: the
// reasons of its metric's cause, the added, removed and grown requests (the first
// maxChangedRequests of each, with how many there are), the third parties added, and the LCP
// element and phases.
type pageChanges struct {
	Explained bool `json:"explained"`
	// Phase is, for LCP, the phase that grew most; Reasons the changes that explain most of
	// the metric's change, ranked (analysis.Cause).
	Phase               string                 `json:"phase,omitempty"`
	Reasons             []analysis.Reason      `json:"reasons"`
	Added               []changedRequest       `json:"added"`
	AddedCount          int                    `json:"addedCount"`
	Removed             []changedRequest       `json:"removed"`
	RemovedCount        int                    `json:"removedCount"`
	Grown               []changedRequest       `json:"grown"`
	GrownCount          int                    `json:"grownCount"`
	RenderBlockingAdded int                    `json:"renderBlockingAdded"`
	ThirdPartiesAdded   []analysis.PartyChange `json:"thirdPartiesAdded"`
	LCP                 lcpChanges             `json:"lcp"`
}

// changedRequest is a request of a change list, in short: its transfer size in the run it is
// from (the later one when both made it) and what moved.
type changedRequest struct {
	URL           string `json:"url"`
	Type          string `json:"type"`
	Entity        string `json:"entity,omitempty"`
	ThirdParty    bool   `json:"thirdParty,omitempty"`
	TransferBytes int64  `json:"transferBytes"`
	BytesDelta    int64  `json:"bytesDelta"`
	EndDelta      int    `json:"endDelta"`
}

// lcpChanges is the LCP element of both runs (its selector) and its phases.
type lcpChanges struct {
	ElementBefore  string                 `json:"elementBefore"`
	ElementAfter   string                 `json:"elementAfter"`
	ElementChanged bool                   `json:"elementChanged"`
	Phases         []analysis.PhaseChange `json:"phases"`
}

// changesOf is regression r's changes in its page and strategy's comparison c.
func changesOf(c analysis.Comparison, r analysis.Regression) pageChanges {
	short := func(l []analysis.RequestChange) []changedRequest {
		out := []changedRequest{}
		for _, x := range l[:min(len(l), maxChangedRequests)] {
			side := x.After
			if side == nil {
				side = x.Before
			}
			out = append(out, changedRequest{URL: x.URL, Type: x.Type, Entity: x.Entity, ThirdParty: x.ThirdParty,
				TransferBytes: side.TransferBytes, BytesDelta: x.BytesDelta, EndDelta: x.EndDelta})
		}
		return out
	}
	selector := func(e *store.Element) string {
		if e == nil {
			return ""
		}
		return e.Selector
	}
	out := pageChanges{Explained: c.Explained, Reasons: []analysis.Reason{},
		Added: short(c.Added), AddedCount: len(c.Added), Removed: short(c.Removed), RemovedCount: len(c.Removed),
		Grown: short(c.Grown), GrownCount: len(c.Grown), RenderBlockingAdded: len(c.RenderBlockingAdded), ThirdPartiesAdded: c.ThirdPartiesAdded,
		LCP: lcpChanges{ElementBefore: selector(c.LCP.ElementBefore), ElementAfter: selector(c.LCP.ElementAfter), ElementChanged: c.LCP.ElementChanged, Phases: c.LCP.Phases}}
	if cause, ok := c.CauseOf(r.Metric); ok {
		out.Phase, out.Reasons = cause.Phase, cause.Reasons
	}
	if out.ThirdPartiesAdded == nil {
		out.ThirdPartiesAdded = []analysis.PartyChange{}
	}
	if out.LCP.Phases == nil {
		out.LCP.Phases = []analysis.PhaseChange{}
	}
	return out
}
