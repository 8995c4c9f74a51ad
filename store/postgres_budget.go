package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// budgetInputsSQL loads a site's name, its latest completed scan, budgets, alert rules and the
// scan's per-page scores and vitals in one statement, for the user of the caller CTE, which
// budgetCallerByUser and budgetCallerByKey define. No row means no caller (an unknown key); a
// row with no site name means the site is not the caller's. Only the small sub-objects of each
// stored result leave the database, and not even those when the latest scan is $3, the one
// whose values are cached: reading them decompresses every stored result, which costs more than
// the rest of the check together.
const budgetInputsSQL = ` SELECT k.user_id, s.name, c.id, c.site_id, c.status, c.strategy, c.trigger,
	c.pages_total, c.pages_done, c.scores, c.error, c.created_at, c.started_at, c.completed_at,
	(SELECT coalesce(json_object_agg(b.metric, b.threshold), '{}') FROM budgets b WHERE b.site_id = s.id),
	(SELECT coalesce(json_agg(json_build_object('id', r.id, 'metric', r.metric, 'operator', r.operator,
		'threshold', r.threshold, 'createdAt', r.created_at) ORDER BY r.created_at, r.id), '[]')
		FROM alert_rules r WHERE r.site_id = s.id),
	CASE WHEN c.id = $3 THEN NULL ELSE
	(SELECT coalesce(json_agg(json_build_object('pagePath', p.page_path, 'strategy', p.strategy,
		'scores', p.result->'scores', 'coreWebVitals', p.result->'coreWebVitals') ORDER BY p.page_path, p.strategy), '[]')
		FROM page_results p WHERE p.scan_id = c.id AND p.result IS NOT NULL) END
FROM caller k
LEFT JOIN sites s ON s.id = $1 AND s.user_id = k.user_id
LEFT JOIN LATERAL (SELECT id, site_id, status, strategy, trigger, pages_total, pages_done, scores, error,
	created_at, started_at, completed_at FROM scans WHERE site_id = s.id AND status = 'complete'
	ORDER BY completed_at DESC, id DESC LIMIT 1) c ON TRUE`

// budgetCallerByUser makes $2 the caller.
const budgetCallerByUser = `WITH caller AS (SELECT $2::uuid AS user_id)`

// budgetCallerByKey makes the user of the unrevoked API key whose hash is $2 the caller and
// records the key's use as APIKeyByHash does (recordKeyUse), $4 now and $5 now minus
// KeyUseGranularity.
var budgetCallerByKey = `WITH caller AS (SELECT id, user_id, last_used_at FROM api_keys
		WHERE key_hash = $2 AND revoked_at IS NULL),
	` + recordKeyUse("caller", "$4", "$5")

// The budget check's two statements, joined once rather than on every check.
var (
	budgetByUserSQL = budgetCallerByUser + budgetInputsSQL
	budgetByKeySQL  = budgetCallerByKey + budgetInputsSQL
)

// noSite is a well-formed id no site has, for a lookup whose site id is malformed.
const noSite = "00000000-0000-0000-0000-000000000000"

func (p *Postgres) BudgetInputs(ctx context.Context, userID, siteID string) (BudgetInputs, error) {
	if !uuidOK(userID, siteID) {
		return BudgetInputs{}, notFound("site")
	}
	return p.budgetInputs(ctx, budgetByUserSQL, siteID, userID)
}

func (p *Postgres) BudgetInputsByKey(ctx context.Context, keyHash, siteID string, now time.Time) (BudgetInputs, error) {
	if !uuidOK(siteID) {
		siteID = noSite
	}
	return p.budgetInputs(ctx, budgetByKeySQL, siteID, keyHash, Now(now), Now(now).Add(-KeyUseGranularity))
}

func (p *Postgres) budgetInputs(ctx context.Context, query, siteID, who string, more ...any) (BudgetInputs, error) {
	var in BudgetInputs
	var (
		siteName, id, scanSite, status, strategy, trigger, scanErr sql.NullString
		total, done                                                sql.NullInt64
		scores                                                     []byte
		created, started, completed                                sql.NullTime
		budgets, rules, results                                    []byte
	)
	stmt, err := p.prepared(ctx, query)
	if err != nil {
		return in, pgErr("budget inputs", err)
	}
	cached, cachedResults := p.vitals.get(siteID)
	args := append([]any{siteID, who, nullString(cached)}, more...)
	err = stmt.QueryRowContext(ctx, args...).Scan(&in.UserID, &siteName, &id, &scanSite, &status,
		&strategy, &trigger, &total, &done, &scores, &scanErr, &created, &started, &completed, &budgets, &rules, &results)
	if err != nil {
		return in, pgErr("api key", err)
	}
	if !siteName.Valid {
		return in, notFound("site")
	}
	in.SiteName = siteName.String
	if err := json.Unmarshal(budgets, &in.Budgets); err != nil {
		return in, fmt.Errorf("budgets of site %s: %w", siteID, err)
	}
	var rs []struct {
		ID, Metric, Operator string
		Threshold            float64
		CreatedAt            time.Time
	}
	if err := json.Unmarshal(rules, &rs); err != nil {
		return in, fmt.Errorf("alert rules of site %s: %w", siteID, err)
	}
	in.Rules = make([]AlertRule, len(rs))
	for i, r := range rs {
		in.Rules[i] = AlertRule{ID: r.ID, SiteID: siteID, Metric: r.Metric, Operator: r.Operator, Threshold: r.Threshold, CreatedAt: r.CreatedAt.UTC()}
	}
	in.Results = []PageResult{}
	if !id.Valid {
		return in, nil
	}
	sc := Scan{ID: id.String, SiteID: scanSite.String, Status: status.String, Strategy: strategy.String, Trigger: trigger.String,
		PagesTotal: int(total.Int64), PagesDone: int(done.Int64), Error: scanErr.String, CreatedAt: created.Time.UTC(),
		StartedAt: timePtr(started), CompletedAt: timePtr(completed)}
	if err := json.Unmarshal(scores, &sc.Scores); err != nil {
		return in, fmt.Errorf("scan %s scores: %w", sc.ID, err)
	}
	in.Scan = &sc
	if results == nil && sc.ID == cached {
		in.Results = cachedResults
		return in, nil
	}
	if err := json.Unmarshal(results, &in.Results); err != nil {
		return in, fmt.Errorf("page results of scan %s: %w", sc.ID, err)
	}
	for i := range in.Results {
		in.Results[i].ScanID = sc.ID
	}
	p.vitals.put(siteID, sc.ID, in.Results)
	return in, nil
}

// vitalsCache keeps, per site, the budget-relevant values of its latest completed scan. A
// complete scan's results never change (writes need a running job's lease), so an entry is
// valid for as long as that scan is the site's latest; the query above decides that on every
// check, after its owner check, so the cache never answers for a site its caller does not own
// nor serves a stale scan. Each process keeps its own; it is bounded and starts over when full.
type vitalsCache struct {
	mu      sync.Mutex
	entries map[string]vitalsEntry
}

type vitalsEntry struct {
	scanID  string
	results []PageResult
}

const vitalsCacheSize = 4096

func (c *vitalsCache) get(siteID string) (string, []PageResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[siteID]
	return e.scanID, e.results
}

func (c *vitalsCache) put(siteID, scanID string, results []PageResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil || len(c.entries) >= vitalsCacheSize {
		c.entries = map[string]vitalsEntry{}
	}
	c.entries[siteID] = vitalsEntry{scanID: scanID, results: append([]PageResult(nil), results...)}
}
