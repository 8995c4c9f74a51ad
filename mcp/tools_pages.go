package mcp

import (
	"context"
	"errors"
	"fmt"

	"sitepulse/store"
)

// This file holds the page-level tools of one scan: get_page_details, get_lcp_elements.

// pageDetails is a page result with crux null when the page has no field data of its own.
type pageDetails struct {
	store.PageResult
	Crux *store.Crux `json:"crux"`
}

// getPageDetails reads the page, or the worst page (analysis.WorstPage's choice, made in the
// store's one statement), with the scan's owner check in the same statement.
func (s *Server) getPageDetails(ctx context.Context, userID string, a args) (pageDetails, error) {
	strategy := a.strategy(store.StrategyMobile)
	path, named := a["pagePath"].(string)
	d, err := s.scans.PageDetails(ctx, userID, a.str("scanId", ""), path, strategy)
	if err == nil && !d.Found { // only then is the scan read: retention may have removed its pages
		if err := s.prunedScan(ctx, userID, a.str("scanId", "")); err != nil {
			return pageDetails{}, err
		}
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return pageDetails{}, errScanNotFound
	case err != nil:
		return pageDetails{}, err
	case !d.Found && !named:
		return pageDetails{}, toolError(fmt.Sprintf("This scan has no %s results (status %s).", strategy, d.ScanStatus))
	case !d.Found:
		return pageDetails{}, toolError(fmt.Sprintf("No %s result for page %q in this scan. get_lcp_elements lists the scan's pages.", strategy, path))
	}
	out := pageDetails{PageResult: d.Result}
	if d.Result.Crux.HasCruxData {
		out.Crux = &d.Result.Crux
	}
	return out, nil
}

type lcpElement struct {
	Selector string `json:"selector"`
	Snippet  string `json:"snippet"`
}

type clsElement struct {
	Selector        string  `json:"selector"`
	ClsContribution float64 `json:"clsContribution"`
}

type lcpPage struct {
	PagePath    string       `json:"pagePath"`
	LcpMs       *float64     `json:"lcpMs"`
	ClsScore    *float64     `json:"clsScore"`
	LcpElement  *lcpElement  `json:"lcpElement"`
	ClsElements []clsElement `json:"clsElements"`
}

type lcpResult struct {
	Pages []lcpPage `json:"pages"`
}

func (s *Server) getLCPElements(ctx context.Context, userID string, a args) (lcpResult, error) {
	strategy := a.strategy(store.StrategyMobile)
	// PageResults checks the scan is the user's itself: no separate read of the scan.
	results, err := s.scans.PageResults(ctx, userID, a.str("scanId", ""))
	if errors.Is(err, store.ErrNotFound) {
		return lcpResult{}, errScanNotFound
	}
	if err != nil {
		return lcpResult{}, err
	}
	if len(results) == 0 { // pruned, or no result: only then is the scan read to tell
		if err := s.prunedScan(ctx, userID, a.str("scanId", "")); err != nil {
			return lcpResult{}, err
		}
	}
	pages := []lcpPage{}
	for _, r := range results {
		if r.Strategy != strategy {
			continue
		}
		p := lcpPage{PagePath: r.PagePath, LcpMs: r.CoreWebVitals.LCP, ClsScore: r.CoreWebVitals.CLS, ClsElements: []clsElement{}}
		if r.LCPElement != nil {
			p.LcpElement = &lcpElement{Selector: r.LCPElement.Selector, Snippet: r.LCPElement.Snippet}
		}
		for _, e := range r.CLSElements {
			p.ClsElements = append(p.ClsElements, clsElement{Selector: e.Selector, ClsContribution: e.ClsContribution})
		}
		pages = append(pages, p)
	}
	return lcpResult{pages}, nil
}

// pruned is the tool error of a scan whose page details retention removed (issue 25): a tool
// that reads a scan's pages says so rather than answer an empty list.
func pruned(sc store.Scan) error {
	if sc.DetailsPrunedAt == nil {
		return nil
	}
	return toolError("The page details of this scan were removed on " + sc.DetailsPrunedAt.UTC().Format("2 Jan 2006") +
		" by its workspace's retention setting (an owner sets how many days they are kept on the workspace page). " +
		"Its scores remain: get_trend lists them. The latest two completed scans of each site always keep their page details: get_latest_scan gives the latest.")
}

// prunedScan is pruned of scan scanID of the user, read for a tool that found none of its pages;
// an error reading it is the tool's error.
func (s *Server) prunedScan(ctx context.Context, userID, scanID string) error {
	sc, err := s.scan(ctx, userID, scanID)
	if err != nil {
		return err
	}
	return pruned(sc)
}
