package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// budgetInputsSQL loads a site's name, its latest completed scan, budgets, alert rules and the
// scan's per-page scores and vitals in one statement. Only the small sub-objects of each stored
// result leave the database.
const budgetInputsSQL = `SELECT s.name, c.id, c.site_id, c.status, c.strategy, c.trigger, c.pages_total,
	c.pages_done, c.scores, c.error, c.created_at, c.started_at, c.completed_at,
	(SELECT coalesce(json_object_agg(b.metric, b.threshold), '{}') FROM budgets b WHERE b.site_id = s.id),
	(SELECT coalesce(json_agg(json_build_object('id', r.id, 'metric', r.metric, 'operator', r.operator,
		'threshold', r.threshold, 'createdAt', r.created_at) ORDER BY r.created_at, r.id), '[]')
		FROM alert_rules r WHERE r.site_id = s.id),
	(SELECT coalesce(json_agg(json_build_object('pagePath', p.page_path, 'strategy', p.strategy,
		'scores', p.result->'scores', 'coreWebVitals', p.result->'coreWebVitals') ORDER BY p.page_path, p.strategy), '[]')
		FROM page_results p WHERE p.scan_id = c.id AND p.result IS NOT NULL)
FROM sites s
LEFT JOIN LATERAL (SELECT * FROM scans WHERE site_id = s.id AND status = 'complete'
	ORDER BY completed_at DESC, id DESC LIMIT 1) c ON TRUE
WHERE s.id = $1 AND s.user_id = $2`

func (p *Postgres) BudgetInputs(ctx context.Context, userID, siteID string) (BudgetInputs, error) {
	var in BudgetInputs
	if !uuidOK(userID, siteID) {
		return in, notFound("site")
	}
	var (
		id, scanSite, status, strategy, trigger, scanErr sql.NullString
		total, done                                      sql.NullInt64
		scores                                           []byte
		created, started, completed                      sql.NullTime
		budgets, rules, results                          []byte
	)
	err := p.db.QueryRowContext(ctx, budgetInputsSQL, siteID, userID).Scan(&in.SiteName, &id, &scanSite, &status,
		&strategy, &trigger, &total, &done, &scores, &scanErr, &created, &started, &completed, &budgets, &rules, &results)
	if err != nil {
		return in, pgErr("site", err)
	}
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
	if err := json.Unmarshal(results, &in.Results); err != nil {
		return in, fmt.Errorf("page results of scan %s: %w", sc.ID, err)
	}
	for i := range in.Results {
		in.Results[i].ScanID = sc.ID
	}
	return in, nil
}
