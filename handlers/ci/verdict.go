// Package ci is SitePulse's CI surface: the budget check's verdict and the formats it is
// written in (JSON, GitHub-flavoured Markdown, JUnit XML), which the service answers a pipeline
// with, and `sitepulse check`, the client a pipeline runs, which writes them.
package ci

import (
	"context"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// Answer is the 200 body of POST /api/external/budget-check. Every key is always
// present, so a CI script can read it without guarding: when the site has no completed scan,
// pass is false, violations is [] and scores, scanId and scannedAt are null.
type Answer struct {
	Pass       bool                 `json:"pass"`
	Site       string               `json:"site"`
	Scores     *store.ScanScores    `json:"scores"`
	Violations []analysis.Violation `json:"violations"`
	ScanID     *string              `json:"scanId"`
	ScannedAt  *time.Time           `json:"scannedAt"`
}

// Verdict is a budget check's answer before a format writes it: the interface's fields
// (Answer), and what a CI pipeline's answer adds beside them. The JSON of a check
// asked with the CI parameters (scanId, waitSeconds, format) carries all of them; a check
// asked as the interface shows stays byte for byte the interface's (handleBudgetCheck).
type Verdict struct {
	Answer
	// Status is the judged scan's: complete, or failed (then Reason says why and pass is
	// false); null when the site has no completed scan yet.
	Status *store.ScanStatus `json:"status"`
	// Reason says why there is no verdict on budgets: the scan failed, or there is none yet.
	Reason      *string `json:"reason"`
	ScanURL     *string `json:"scanUrl"`     // the scan's page in the web UI
	Commit      *string `json:"commit"`      // the commit deployed, when the scan's start named one
	PublishedBy *string `json:"publishedBy"` // who published, when its publish named someone
	// PreviousScanID is the scan the changes are measured against: the site's completed scan
	// before this one; null when there is none.
	PreviousScanID *string  `json:"previousScanId"`
	Changes        []Change `json:"changes"`

	checks []analysis.Check      // every budget and rule, held or not (the formats' table, JUnit's cases)
	pages  []analysis.PageChange // what changed on each regressed page and strategy (JUnit's failures say why)
	domain string
}

// Change is something that got worse since the scan before: a metric of one page
// (analysis.Regressions), with the causes that explain it: one sentence (CauseSentence), and
// how sure it is (analysis.Cause's Confidence; absent when the sentence names no change).
type Change struct {
	analysis.Regression
	Causes     []string `json:"causes"`
	Confidence string   `json:"confidence,omitempty"`
}

// judged says whether the verdict judged budgets (a completed scan), not why it could not.
func (v Verdict) judged() bool { return v.Status != nil && *v.Status == store.StatusComplete }

// Store is what a verdict reads: the judged scan's results and publish, the site's budgets and
// rules, and the runs of the scan before it.
type Store interface {
	Budgets(ctx context.Context, userID, siteID string) (map[string]store.Budget, error)
	AlertRules(ctx context.Context, userID, siteID string) ([]store.AlertRule, error)
	PageMetrics(ctx context.Context, userID, scanID string) ([]store.PageResult, error)
	PreviousPairs(ctx context.Context, userID, scanID string) (store.ScanPairs, error)
	PublishesOfScans(ctx context.Context, userID string, scanIDs []string) (map[string]store.Publish, error)
}

// Judge judges scan sc of a site (nil: the site has no completed scan) for the user: its
// scores against the site's budgets and rules, and what changed since the scan before it.
// scanURL is the scan's page in the web UI.
func Judge(ctx context.Context, st Store, userID string, site store.Site, sc *store.Scan, scanURL func(siteID, scanID string) string) (Verdict, error) {
	v := Verdict{Answer: Answer{Site: site.Name, Violations: []analysis.Violation{}}, Changes: []Change{},
		checks: []analysis.Check{}, domain: site.Domain}
	if sc == nil {
		reason := "The site has no completed scan yet."
		v.Reason = &reason
		return v, nil
	}
	status, url, id := sc.Status, scanURL(site.ID, sc.ID), sc.ID
	v.Status, v.ScanURL, v.ScanID = &status, &url, &id
	pubs, err := st.PublishesOfScans(ctx, userID, []string{sc.ID})
	if err != nil {
		return v, err
	}
	if p, ok := pubs[sc.ID]; ok {
		if p.Commit != "" {
			v.Commit = &p.Commit
		}
		if p.PublishedBy != "" {
			v.PublishedBy = &p.PublishedBy
		}
	}
	if sc.Status != store.StatusComplete {
		reason := "The scan " + string(sc.Status) + ": " + sc.Error
		if sc.Status != store.StatusFailed {
			reason = "The scan has not completed: it is " + string(sc.Status) + "."
		}
		v.Reason = &reason
		return v, nil
	}
	budgets, err := st.Budgets(ctx, userID, site.ID)
	if err != nil {
		return v, err
	}
	rules, err := st.AlertRules(ctx, userID, site.ID)
	if err != nil {
		return v, err
	}
	results, err := st.PageMetrics(ctx, userID, sc.ID)
	if err != nil {
		return v, err
	}
	// The site's completed scan before this one and the runs both have, with what explains
	// them: the regressions and their causes (analysis.Compare).
	pairs, err := st.PreviousPairs(ctx, userID, sc.ID)
	if err != nil {
		return v, err
	}
	v.checks = analysis.Checks(sc.Scores, results, budgets, rules)
	for _, c := range v.checks {
		if c.Measured && !c.Pass {
			v.Violations = append(v.Violations, c.Violation())
		}
	}
	v.Pass = len(v.Violations) == 0
	v.Scores, v.ScannedAt = &sc.Scores, sc.CompletedAt
	if pairs.From != nil {
		v.PreviousScanID = &pairs.From.ID
		v.Changes, v.pages = WhatChanged(pairs.Pairs)
	}
	return v, nil
}

// WhatChanged is what got worse between two scans' runs of each page and strategy, in the
// order of analysis.Regressions, each regression with the sentence of its cause: what changed
// between the two runs that explains it (analysis.Compare, the sentence the alerts, the scan
// page and MCP show).
// It also answers the pages' changes themselves.
func WhatChanged(pairs []store.RunPair) ([]Change, []analysis.PageChange) {
	pages := analysis.RegressedChanges(pairs)
	return changesOf(pages), pages
}

// changesOf are the regressions of pages, each with its cause's sentence and confidence.
func changesOf(pages []analysis.PageChange) []Change {
	out := []Change{}
	for _, c := range pages {
		for _, r := range c.Regressions {
			cause, _ := c.CauseOf(r.Metric)
			out = append(out, Change{Regression: r, Causes: []string{c.CauseSentence(r)}, Confidence: cause.Confidence})
		}
	}
	return out
}

// hedged is a cause's sentence as the Markdown and JUnit answers give it: a high confidence
// stated plainly, a lower one said after it ("... (low confidence)").
func hedged(sentence, confidence string) string {
	if h := analysis.Hedge(confidence); h != "" {
		return sentence + " (" + h + ")"
	}
	return sentence
}

// ScanStatus is a scan as the CI endpoints show it: POST /api/external/scans, GET
// /api/external/scans/{scanId}, and a budget check whose wait ran out (202).
type ScanStatus struct {
	ScanID      string           `json:"scanId"`
	SiteID      string           `json:"siteId"`
	Status      store.ScanStatus `json:"status"`
	Strategy    store.Strategy   `json:"strategy"`
	Trigger     string           `json:"trigger"`
	PagesDone   int              `json:"pagesDone"`
	PagesTotal  int              `json:"pagesTotal"`
	CreatedAt   time.Time        `json:"createdAt"`
	StartedAt   *time.Time       `json:"startedAt"`
	CompletedAt *time.Time       `json:"completedAt"`
	Reason      *string          `json:"reason"`    // why a failed scan failed
	URL         string           `json:"url"`       // the scan's page in the web UI
	StatusURL   string           `json:"statusUrl"` // GET /api/external/scans/{scanId}
}
