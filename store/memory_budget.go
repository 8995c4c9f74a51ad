package store

import (
	"context"
	"time"
)

func (m *Memory) BudgetInputs(ctx context.Context, userID, siteID string) (BudgetInputs, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	site, ok := m.ownedSite(userID, siteID)
	if !ok {
		return BudgetInputs{}, notFound("site")
	}
	in := BudgetInputs{UserID: userID, SiteName: site.Name, Budgets: m.siteBudgets(siteID), Rules: m.siteRules(siteID), Results: []PageResult{}}
	scans := m.siteScans(siteID, 1, true)
	if len(scans) == 0 {
		return in, nil
	}
	latest := &scans[0]
	in.Scan = latest
	// Copy only what a budget is checked against: a whole-result clone costs more than the check.
	for _, r := range m.sortedResults(latest.ID) {
		if res := r.result; res != nil {
			sc, v := res.Scores, res.CoreWebVitals
			in.Results = append(in.Results, PageResult{ScanID: latest.ID, PagePath: res.PagePath, Strategy: res.Strategy,
				Scores: PageScores{Performance: copyPtr(sc.Performance), SEO: copyPtr(sc.SEO), Accessibility: copyPtr(sc.Accessibility),
					BestPractices: copyPtr(sc.BestPractices)},
				CoreWebVitals: Vitals{LCP: copyPtr(v.LCP), CLS: copyPtr(v.CLS), INP: copyPtr(v.INP), FCP: copyPtr(v.FCP),
					TTFB: copyPtr(v.TTFB), TBT: copyPtr(v.TBT), SpeedIndex: copyPtr(v.SpeedIndex), TTI: copyPtr(v.TTI)}})
		}
	}
	return in, nil
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func (m *Memory) BudgetInputsByKey(ctx context.Context, keyHash, siteID string, now time.Time) (BudgetInputs, error) {
	k, err := m.APIKeyByHash(ctx, keyHash, now)
	if err != nil {
		return BudgetInputs{}, err
	}
	in, err := m.BudgetInputs(ctx, k.UserID, siteID)
	in.UserID = k.UserID
	return in, err
}
