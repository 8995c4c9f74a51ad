package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lib/pq"

	"sitepulse/store"
)

func (p *Store) CreateSite(ctx context.Context, s store.Site) error {
	s.Normalize()
	if err := s.Validate(p.Rules); err != nil {
		return err
	}
	return insertSite(ctx, p.db, s)
}

// CreateSiteWithin locks the workspace's row, so creations in one workspace take turns at the
// count and at the domain check.
func (p *Store) CreateSiteWithin(ctx context.Context, s store.Site, max int) error {
	s.Normalize()
	if err := s.Validate(p.Rules); err != nil {
		return err
	}
	s.WorkspaceID = siteWorkspace(s)
	if !uuidOK(s.UserID, s.ID, s.WorkspaceID) {
		return store.NotFound("user")
	}
	return p.tx(ctx, func(tx *sql.Tx) error {
		if err := withinSites(ctx, tx, s.WorkspaceID, max); err != nil {
			return err
		}
		if err := sameDomain(ctx, tx, s.WorkspaceID, s.Domain, s.ID); err != nil {
			return err
		}
		return insertSite(ctx, tx, s)
	})
}

// siteWorkspace is the workspace a new site goes to: its own, else its creator's personal one.
func siteWorkspace(s store.Site) string {
	if s.WorkspaceID != "" {
		return s.WorkspaceID
	}
	return store.PersonalWorkspace(s.UserID)
}

// sameDomain answers a *store.DuplicateError when the workspace has a site other than
// exceptSite on the domain (store.DomainKey), naming the oldest. The caller holds the
// workspace's row lock (withinSites or lockWorkspace), so two writes in one workspace cannot
// both pass.
func sameDomain(ctx context.Context, tx *sql.Tx, workspaceID, domain, exceptSite string) error {
	var id, name string
	err := tx.QueryRowContext(ctx, `SELECT id, name FROM sites
		WHERE workspace_id = $1 AND id <> $2 AND regexp_replace(domain, '^https?://', '') = $3
		ORDER BY created_at, id LIMIT 1`, workspaceID, exceptSite, store.DomainKey(domain)).Scan(&id, &name)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return pgErr("same domain", err)
	}
	return &store.DuplicateError{Domain: store.DomainKey(domain), SiteID: id, Name: name}
}

// lockWorkspace takes the workspace's row lock for the rest of the transaction.
func lockWorkspace(ctx context.Context, tx *sql.Tx, workspaceID string) error {
	_, err := tx.ExecContext(ctx, `SELECT 1 FROM workspaces WHERE id = $1 FOR UPDATE`, workspaceID)
	return pgErr("lock workspace", err)
}

// withinSites locks the workspace's row and answers ErrLimit when it already has max sites
// (MAX_SITES_PER_WORKSPACE). The count is a statement of its own: taken after the lock, it sees
// every site committed by the creation that held it (a subquery of the locking statement would not).
func withinSites(ctx context.Context, tx *sql.Tx, workspaceID string, max int) error {
	if err := lockWorkspace(ctx, tx, workspaceID); err != nil {
		return err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sites WHERE workspace_id = $1`, workspaceID).Scan(&n); err != nil {
		return pgErr("count sites", err)
	}
	if n >= max {
		return fmt.Errorf("%d sites: %w", n, store.ErrLimit)
	}
	return nil
}

// execer is a pool or a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// insertSite stores s in its workspace when its creator may edit there; ErrNotFound otherwise.
func insertSite(ctx context.Context, db execer, s store.Site) error {
	s.WorkspaceID = siteWorkspace(s)
	if !uuidOK(s.UserID, s.WorkspaceID) {
		return store.NotFound("workspace")
	}
	res, err := db.ExecContext(ctx, `INSERT INTO sites
		(id, user_id, name, domain, platform_site_id, founding, health_score, last_published, pages, created_at,
		scan_schedule, next_scan_at, workspace_id)
		SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13
		WHERE `+writable("$13::uuid", 2),
		s.ID, s.UserID, s.Name, s.Domain, nullString(s.PlatformSiteID), s.Founding, s.HealthScore,
		nullTime(s.LastPublished), pq.StringArray(nonNil(s.Pages)), store.Now(s.CreatedAt), store.ScheduleOrDefault(s.Schedule), nullTime(s.NextScanAt), s.WorkspaceID)
	return pgErr("create site", affected(res, err, sql.ErrNoRows))
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func (p *Store) UpdateSite(ctx context.Context, s store.Site) error {
	s.Normalize()
	if err := s.Validate(p.Rules); err != nil {
		return err
	}
	if !uuidOK(s.ID, s.UserID) {
		return store.NotFound("site")
	}
	return p.tx(ctx, func(tx *sql.Tx) error {
		// The site's workspace, where the user may edit, is locked for the domain check.
		var ws string
		err := tx.QueryRowContext(ctx, `SELECT workspace_id FROM sites WHERE id = $1 AND `+writable("workspace_id", 2), s.ID, s.UserID).Scan(&ws)
		if err != nil {
			return pgErr("update site", err)
		}
		if err := lockWorkspace(ctx, tx, ws); err != nil {
			return err
		}
		if err := sameDomain(ctx, tx, ws, s.Domain, s.ID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE sites SET name = $3, domain = $4,
			founding = $5, pages = $6, scan_schedule = $7,
			next_scan_at = CASE WHEN scan_schedule IS DISTINCT FROM $7 THEN $8 ELSE next_scan_at END
			WHERE id = $1 AND `+writable("workspace_id", 2),
			s.ID, s.UserID, s.Name, s.Domain, s.Founding, pq.StringArray(nonNil(s.Pages)), store.ScheduleOrDefault(s.Schedule), nullTime(s.NextScanAt))
		return pgErr("update site", affected(res, err, sql.ErrNoRows))
	})
}

func (p *Store) DeleteSite(ctx context.Context, userID, siteID string) error {
	if !uuidOK(userID, siteID) {
		return store.NotFound("site")
	}
	res, err := p.db.ExecContext(ctx, `DELETE FROM sites WHERE id = $1 AND `+writable("workspace_id", 2), siteID, userID)
	return pgErr("delete site", affected(res, err, sql.ErrNoRows))
}

const siteCols = `id, user_id, workspace_id, name, domain, coalesce(platform_site_id, ''), founding, health_score,
	last_published, pages, created_at, platform_verified, coalesce(platform_webhook_id, ''), scan_schedule, next_scan_at,
	coalesce(platform_script_id, ''), coalesce(platform_script_version, ''), platform_script_at`

func scanSite(row rowScanner) (store.Site, error) {
	var s store.Site
	var health sql.NullInt64
	var published, next, scriptAt sql.NullTime
	var pages pq.StringArray
	var script store.PlatformScript
	err := row.Scan(&s.ID, &s.UserID, &s.WorkspaceID, &s.Name, &s.Domain, &s.PlatformSiteID, &s.Founding, &health,
		&published, &pages, &s.CreatedAt, &s.PlatformVerified, &s.PlatformWebhookID, &s.Schedule, &next,
		&script.ID, &script.Version, &scriptAt)
	if scriptAt.Valid {
		script.AppliedAt = scriptAt.Time.UTC()
		s.PlatformScript = &script
	}
	if health.Valid {
		h := int(health.Int64)
		s.HealthScore = &h
	}
	s.LastPublished, s.Pages, s.CreatedAt, s.NextScanAt = timePtr(published), nonNil(pages), s.CreatedAt.UTC(), timePtr(next)
	return s, err
}

func (p *Store) Site(ctx context.Context, userID, siteID string) (store.Site, error) {
	if !uuidOK(userID, siteID) {
		return store.Site{}, store.NotFound("site")
	}
	s, err := scanSite(p.db.QueryRowContext(ctx, `SELECT `+siteCols+` FROM sites WHERE id = $1 AND `+readable("workspace_id", 2), siteID, userID))
	return s, pgErr("site", err)
}

func (p *Store) SitesOf(ctx context.Context, userID string) ([]store.Site, error) {
	if !uuidOK(userID) {
		return []store.Site{}, nil
	}
	return queryAll(ctx, p.db, "sites", scanSite, `SELECT `+siteCols+` FROM sites WHERE `+readable("workspace_id", 1)+` ORDER BY name, id`, userID)
}

func (p *Store) SitesIn(ctx context.Context, userID, workspaceID string) ([]store.Site, error) {
	if !uuidOK(userID, workspaceID) {
		return []store.Site{}, nil
	}
	return queryAll(ctx, p.db, "sites", scanSite, `SELECT `+siteCols+` FROM sites WHERE workspace_id = $2 AND `+readable("workspace_id", 1)+`
		ORDER BY name, id`, userID, workspaceID)
}

func (p *Store) SiteByPlatformID(ctx context.Context, platformSiteID string) (store.Site, error) {
	if platformSiteID == "" {
		return store.Site{}, store.NotFound("site")
	}
	s, err := scanSite(p.db.QueryRowContext(ctx, `SELECT `+siteCols+` FROM sites WHERE platform_site_id = $1`, platformSiteID))
	return s, pgErr("site", err)
}

func (p *Store) MarkPublished(ctx context.Context, siteID string, at time.Time) error {
	if !uuidOK(siteID) {
		return store.NotFound("site")
	}
	res, err := p.db.ExecContext(ctx, `UPDATE sites SET last_published = greatest(last_published, $2) WHERE id = $1`, siteID, store.Now(at))
	return pgErr("mark published", affected(res, err, sql.ErrNoRows))
}

type queryRower interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}

// owns answers whether userID may read siteID (a member of its workspace).
func (p *Store) owns(ctx context.Context, q queryRower, userID, siteID string) error {
	return p.siteScope(ctx, q, readable("workspace_id", 2), userID, siteID)
}

// mayEdit answers whether userID may change siteID (an owner or editor of its workspace).
func (p *Store) mayEdit(ctx context.Context, q queryRower, userID, siteID string) error {
	return p.siteScope(ctx, q, writable("workspace_id", 2), userID, siteID)
}

func (p *Store) siteScope(ctx context.Context, q queryRower, scope, userID, siteID string) error {
	if !uuidOK(userID, siteID) {
		return store.NotFound("site")
	}
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM sites WHERE id = $1 AND `+scope, siteID, userID).Scan(&one)
	return pgErr("site", err)
}

func (p *Store) Budgets(ctx context.Context, userID, siteID string) (map[string]store.Budget, error) {
	if err := p.owns(ctx, p.db, userID, siteID); err != nil {
		return nil, err
	}
	type budget struct {
		metric string
		store.Budget
	}
	rows, err := queryAll(ctx, p.db, "budgets", func(r rowScanner) (b budget, err error) {
		return b, r.Scan(&b.metric, &b.Threshold, &b.Strategy)
	}, `SELECT metric, threshold, strategy FROM budgets WHERE site_id = $1`, siteID)
	if err != nil {
		return nil, err
	}
	out := map[string]store.Budget{}
	for _, b := range rows {
		out[b.metric] = b.Budget
	}
	return out, nil
}

func (p *Store) SetBudgets(ctx context.Context, userID, siteID string, budgets map[string]store.Budget) error {
	if err := store.ValidBudgets(budgets); err != nil {
		return err
	}
	return p.tx(ctx, func(tx *sql.Tx) error {
		if err := p.mayEdit(ctx, tx, userID, siteID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM budgets WHERE site_id = $1`, siteID); err != nil {
			return pgErr("set budgets", err)
		}
		for m, b := range budgets {
			b = b.WithDefault()
			if _, err := tx.ExecContext(ctx, `INSERT INTO budgets (site_id, metric, threshold, strategy) VALUES ($1, $2, $3, $4)`, siteID, m, b.Threshold, b.Strategy); err != nil {
				return pgErr("set budgets", err)
			}
		}
		return nil
	})
}

func (p *Store) AlertRules(ctx context.Context, userID, siteID string) ([]store.AlertRule, error) {
	if err := p.owns(ctx, p.db, userID, siteID); err != nil {
		return nil, err
	}
	return queryAll(ctx, p.db, "alert rules", func(row rowScanner) (r store.AlertRule, err error) {
		err = row.Scan(&r.ID, &r.SiteID, &r.Metric, &r.Operator, &r.Threshold, &r.CreatedAt)
		r.CreatedAt = r.CreatedAt.UTC()
		return r, err
	}, `SELECT id, site_id, metric, operator, threshold, created_at FROM alert_rules WHERE site_id = $1 ORDER BY created_at, id`, siteID)
}

func (p *Store) AddAlertRule(ctx context.Context, userID string, r store.AlertRule) error {
	if !uuidOK(userID, r.SiteID) {
		return store.NotFound("site")
	}
	res, err := p.db.ExecContext(ctx, `INSERT INTO alert_rules (id, site_id, metric, operator, threshold, created_at)
		SELECT $1, id, $3, $4, $5, $6 FROM sites WHERE id = $2 AND `+writable("workspace_id", 7),
		r.ID, r.SiteID, r.Metric, r.Operator, r.Threshold, store.Now(r.CreatedAt), userID)
	return pgErr("add alert rule", affected(res, err, sql.ErrNoRows))
}

func (p *Store) UpdateAlertRule(ctx context.Context, userID string, r store.AlertRule) error {
	if !uuidOK(userID, r.SiteID, r.ID) {
		return store.NotFound("alert rule")
	}
	res, err := p.db.ExecContext(ctx, `UPDATE alert_rules r SET metric = $4, operator = $5, threshold = $6
		FROM sites s WHERE r.id = $1 AND r.site_id = $2 AND s.id = r.site_id AND `+writable("s.workspace_id", 3),
		r.ID, r.SiteID, userID, r.Metric, r.Operator, r.Threshold)
	return pgErr("update alert rule", affected(res, err, sql.ErrNoRows))
}

func (p *Store) DeleteAlertRule(ctx context.Context, userID, siteID, ruleID string) error {
	if !uuidOK(userID, siteID, ruleID) {
		return store.NotFound("alert rule")
	}
	res, err := p.db.ExecContext(ctx, `DELETE FROM alert_rules r USING sites s
		WHERE r.id = $1 AND r.site_id = $2 AND s.id = r.site_id AND `+writable("s.workspace_id", 3), ruleID, siteID, userID)
	return pgErr("delete alert rule", affected(res, err, sql.ErrNoRows))
}

// readable is the condition that the workspace in col is one of user $n's: the scope of every
// read a user causes, asked in SQL (DESIGN §9), never filtered after reading.
func readable(col string, n int) string {
	return fmt.Sprintf("%s IN (SELECT workspace_id FROM memberships WHERE user_id = $%d)", col, n)
}

// writable is readable for a member who may edit there (owner or editor): the scope of every
// write, so a viewer's forged request changes nothing even past the handlers' role check.
func writable(col string, n int) string {
	return fmt.Sprintf("%s IN (SELECT workspace_id FROM memberships WHERE user_id = $%d AND role IN ('owner', 'editor'))", col, n)
}
