package mcp

import (
	"context"
	"errors"
	"fmt"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// This file holds the page-level tools of one scan: get_page_details, get_lcp_elements.

// pageDetails is a page result with crux null when the page has no field data of its own.
type pageDetails struct {
	store.PageResult
	Crux *store.Crux `json:"crux"`
}

func (s *Server) getPageDetails(ctx context.Context, userID string, a args) (pageDetails, error) {
	sc, err := s.scan(ctx, userID, a.str("scanId", ""))
	if err != nil {
		return pageDetails{}, err
	}
	strategy := a.strategy(store.StrategyMobile)
	path, ok := a["pagePath"].(string)
	if !ok {
		// The worst page is chosen on scores alone, then only its full result is read.
		metrics, err := s.pageMetrics(ctx, userID, sc)
		if err != nil {
			return pageDetails{}, err
		}
		worst, found := analysis.WorstPage(metrics, strategy)
		if !found {
			return pageDetails{}, toolError(fmt.Sprintf("This scan has no %s results (status %s).", strategy, sc.Status))
		}
		path = worst.PagePath
	}
	// A completed scan's results never change: its pages' answers are kept (analysisCache), so
	// a page read again costs the owner-scoped scan lookup alone.
	key := "page " + sc.ID + " " + string(strategy) + " " + path
	if sc.Status == store.StatusComplete {
		if v, ok := s.analyses.get(key); ok {
			return v.(pageDetails), nil
		}
	}
	r, err := s.store.PageResult(ctx, userID, sc.ID, path, strategy)
	if errors.Is(err, store.ErrNotFound) {
		return pageDetails{}, toolError(fmt.Sprintf("No %s result for page %q in this scan. get_lcp_elements lists the scan's pages.", strategy, path))
	}
	if err != nil {
		return pageDetails{}, err
	}
	d := pageDetails{PageResult: r}
	if r.Crux.HasCruxData {
		d.Crux = &r.Crux
	}
	if sc.Status == store.StatusComplete {
		s.analyses.put(key, d)
	}
	return d, nil
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
