package memory

import (
	"context"
	"time"

	"sitepulse/store"
)

func (m *Store) BudgetInputs(ctx context.Context, userID, siteID string) (store.BudgetInputs, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	site, ok := m.ownedSite(userID, siteID)
	if !ok {
		return store.BudgetInputs{}, store.NotFound("site")
	}
	in := store.BudgetInputs{UserID: userID, SiteName: site.Name, SiteDomain: site.Domain, Budgets: m.siteBudgets(siteID), Rules: m.siteRules(siteID), Results: []store.PageResult{}}
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

// BudgetInputsByKey is written twice: budget_key (Postgres, migration 026_hot_path_functions.sql)
// is the same rule in PL/pgSQL. The contract tests testKeyWorkspace, testBudgetInputsByKey and
// testAPIKeys keep them equal (rulesWrittenTwice in store/storetest/twice_test.go): change both,
// run them on both stores.
func (m *Store) BudgetInputsByKey(ctx context.Context, keyHash, siteID string, now time.Time) (store.BudgetInputs, error) {
	k, err := m.APIKeyByHash(ctx, keyHash, now)
	if err != nil {
		return store.BudgetInputs{}, err
	}
	m.mu.Lock()
	site, ok := m.sites[siteID]
	m.mu.Unlock()
	if !ok || site.WorkspaceID != k.WorkspaceID { // the key reads its workspace only
		return store.BudgetInputs{UserID: k.UserID}, store.NotFound("site")
	}
	in, err := m.BudgetInputs(ctx, k.UserID, siteID)
	in.UserID = k.UserID
	return in, err
}
