package store

// BudgetInputs is everything a budget check reads about one site, loaded together so the
// check (interface "POST /api/external/budget-check") costs one store call. The
// Postgres store shares the Scan, maps and slices of a site's inputs between calls: read them,
// never modify them.
type BudgetInputs struct {
	UserID string // the caller: for BudgetInputsByKey, empty when the key is unknown or revoked
	// Version is the site's budget version the inputs were read at: two reads of one site with
	// the same non-zero version have the same inputs, so an answer computed from them may be
	// kept and served again. 0 when the store keeps no version (the memory store).
	Version    int64
	SiteName   string
	SiteDomain string
	// Scan is the latest completed scan; nil when the site has none.
	Scan    *Scan
	Budgets map[string]Budget
	Rules   []AlertRule
	// Results are the scan's successful page results ordered by path then strategy, with only
	// PagePath, Strategy, Scores and CoreWebVitals filled: what a budget is checked against.
	Results []PageResult
}
