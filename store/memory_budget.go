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
	in := BudgetInputs{UserID: userID, SiteName: site.Name, SiteDomain: site.Domain, Budgets: m.siteBudgets(siteID), Rules: m.siteRules(siteID), Results: []PageResult{}}
	scans := m.siteScans(siteID, 1, true)
	if len(scans) == 0 {
		return in, nil
	}
	latest := &scans[0]
	in.Scan = latest
	// Copy only what a budget is checked against: a whole-result clone costs more than the check.
	for _, r := range m.sortedResults(latest.ID) {
		if r.result != nil {
			in.Results = append(in.Results, metricsOf(latest.ID, r.result))
		}
	}
	return in, nil
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
