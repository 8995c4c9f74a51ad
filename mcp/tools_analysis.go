package mcp

import (
	"context"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// This file holds the site analyses over the latest scans: get_third_party_scripts,
// get_accessibility_issues, get_regression_report. The analysis itself is package scanner's,
// shared with the budget check and the pipeline.

// latestResults reads the full page results of the latest completed scan of the site a names.
func (s *Server) latestResults(ctx context.Context, userID string, a args) ([]store.PageResult, error) {
	scans, err := s.completedScans(ctx, userID, a.str("siteId", ""), 1)
	if err != nil {
		return nil, err
	}
	if len(scans) == 0 {
		return nil, errNoScanYet
	}
	return s.store.PageResults(ctx, userID, scans[0].ID)
}

type thirdPartyResult struct {
	Scripts       []analysis.ThirdPartyImpact `json:"scripts"`
	PagesAnalyzed int                         `json:"pagesAnalyzed"`
}

func (s *Server) getThirdPartyScripts(ctx context.Context, userID string, a args) (thirdPartyResult, error) {
	results, err := s.latestResults(ctx, userID, a)
	if err != nil {
		return thirdPartyResult{}, err
	}
	scripts, pages := analysis.ThirdParties(results)
	return thirdPartyResult{scripts, pages}, nil
}

type a11yResult struct {
	Issues                []analysis.A11yGroup `json:"issues"`
	Count                 int                  `json:"count"`
	PagesAnalyzed         int                  `json:"pagesAnalyzed"`
	AvgAccessibilityScore *int                 `json:"avgAccessibilityScore"`
}

func (s *Server) getAccessibilityIssues(ctx context.Context, userID string, a args) (a11yResult, error) {
	results, err := s.latestResults(ctx, userID, a)
	if err != nil {
		return a11yResult{}, err
	}
	sum := analysis.AccessibilityIssues(results, a.str("severity", "all"))
	return a11yResult{sum.Issues, len(sum.Issues), sum.PagesAnalyzed, sum.AvgAccessibilityScore}, nil
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
	// PublishedBy and PublishedAt name the publish that started the latest scan; null when no
	// publish did (a scheduled or manual scan), PublishedBy also when the platform named nobody.
	PublishedBy *string `json:"publishedBy"`
	PublishedAt *string `json:"publishedAt"`
}

// legacy leaves out publishedBy and publishedAt, which came after 2025-03-26.
func (r regressionReport) legacy() any { return r.regressionCore }

func (s *Server) getRegressionReport(ctx context.Context, userID string, a args) (regressionReport, error) {
	scans, err := s.completedScans(ctx, userID, a.str("siteId", ""), 2)
	if err != nil {
		return regressionReport{}, err
	}
	if len(scans) == 0 {
		return regressionReport{}, errNoScanYet
	}
	out := regressionReport{regressionCore: regressionCore{LatestScanID: scans[0].ID, LatestScanCompletedAt: iso(scans[0].CompletedAt), Regressions: []analysis.Regression{}}}
	pubs, err := s.store.PublishesOfScans(ctx, userID, []string{scans[0].ID})
	if err != nil {
		return regressionReport{}, err
	}
	if p, ok := pubs[scans[0].ID]; ok {
		out.PublishedAt = iso(&p.PublishedOn)
		if p.PublishedBy != "" {
			out.PublishedBy = &p.PublishedBy
		}
	}
	if len(scans) == 2 {
		prevID := scans[1].ID
		out.PreviousScanID = &prevID
		// Completed scans never change: their metrics come from the cache after the first read.
		// The two scans are read side by side: on Postgres each read is a round trip of its own.
		var previous []store.PageResult
		var prevErr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			previous, prevErr = s.pageMetrics(ctx, userID, scans[1])
		}()
		latest, err := s.pageMetrics(ctx, userID, scans[0])
		<-done
		if err != nil {
			return regressionReport{}, err
		}
		if prevErr != nil {
			return regressionReport{}, prevErr
		}
		out.Regressions = analysis.Regressions(previous, latest)
	}
	out.RegressionCount = len(out.Regressions)
	out.HasRegression = out.RegressionCount > 0
	return out, nil
}
