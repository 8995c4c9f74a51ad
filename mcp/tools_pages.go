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
	d, err := s.store.PageDetails(ctx, userID, a.str("scanId", ""), path, strategy)
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
	results, err := s.store.PageResults(ctx, userID, a.str("scanId", ""))
	if errors.Is(err, store.ErrNotFound) {
		return lcpResult{}, errScanNotFound
	}
	if err != nil {
		return lcpResult{}, err
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
