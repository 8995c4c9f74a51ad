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

// CreateSiteWithin locks the user's row, so creations for one user take turns at the count
// and at the domain check.
func (p *Store) CreateSiteWithin(ctx context.Context, s store.Site, max int) error {
	s.Normalize()
	if err := s.Validate(p.Rules); err != nil {
		return err
	}
	if !uuidOK(s.UserID, s.ID) {
		return store.NotFound("user")
	}
	return p.tx(ctx, func(tx *sql.Tx) error {
		if err := withinSites(ctx, tx, s.UserID, max); err != nil {
			return err
		}
		if err := sameDomain(ctx, tx, s.UserID, s.Domain, s.ID); err != nil {
			return err
		}
		return insertSite(ctx, tx, s)
	})
}

// sameDomain answers a *store.DuplicateError when the user has a site other than exceptSite on
// the domain (store.DomainKey), naming the oldest. The caller holds the user's row lock
// (withinSites or lockUser), so two writes for one user cannot both pass.
func sameDomain(ctx context.Context, tx *sql.Tx, userID, domain, exceptSite string) error {
	var id, name string
	err := tx.QueryRowContext(ctx, `SELECT id, name FROM sites
		WHERE user_id = $1 AND id <> $2 AND regexp_replace(domain, '^https?://', '') = $3
		ORDER BY created_at, id LIMIT 1`, userID, exceptSite, store.DomainKey(domain)).Scan(&id, &name)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return pgErr("same domain", err)
	}
	return &store.DuplicateError{Domain: store.DomainKey(domain), SiteID: id, Name: name}
}

// lockUser takes the user's row lock for the rest of the transaction.
func lockUser(ctx context.Context, tx *sql.Tx, userID string) error {
	_, err := tx.ExecContext(ctx, `SELECT 1 FROM users WHERE id = $1 FOR UPDATE`, userID)
	return pgErr("lock user", err)
}

// withinSites locks the user's row and answers ErrLimit when the user already has max sites.
// The count is a statement of its own: taken after the lock, it sees every site committed by
// the creation that held it (a subquery of the locking statement would not).
func withinSites(ctx context.Context, tx *sql.Tx, userID string, max int) error {
	if err := lockUser(ctx, tx, userID); err != nil {
		return err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM sites WHERE user_id = $1`, userID).Scan(&n); err != nil {
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

func insertSite(ctx context.Context, db execer, s store.Site) error {
	_, err := db.ExecContext(ctx, `INSERT INTO sites
		(id, user_id, name, domain, platform_site_id, founding, health_score, last_published, pages, created_at,
		scan_schedule, next_scan_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		s.ID, s.UserID, s.Name, s.Domain, nullString(s.PlatformSiteID), s.Founding, s.HealthScore,
		nullTime(s.LastPublished), pq.StringArray(nonNil(s.Pages)), store.Now(s.CreatedAt), store.ScheduleOrDefault(s.Schedule), nullTime(s.NextScanAt))
	return pgErr("create site", err)
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
		if err := lockUser(ctx, tx, s.UserID); err != nil {
			return err
		}
		if err := sameDomain(ctx, tx, s.UserID, s.Domain, s.ID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE sites SET name = $3, domain = $4,
			founding = $5, pages = $6, scan_schedule = $7,
			next_scan_at = CASE WHEN scan_schedule IS DISTINCT FROM $7 THEN $8 ELSE next_scan_at END
			WHERE id = $1 AND user_id = $2`,
			s.ID, s.UserID, s.Name, s.Domain, s.Founding, pq.StringArray(nonNil(s.Pages)), store.ScheduleOrDefault(s.Schedule), nullTime(s.NextScanAt))
		return pgErr("update site", affected(res, err, sql.ErrNoRows))
	})
}

func (p *Store) DeleteSite(ctx context.Context, userID, siteID string) error {
	if !uuidOK(userID, siteID) {
		return store.NotFound("site")
	}
	res, err := p.db.ExecContext(ctx, `DELETE FROM sites WHERE id = $1 AND user_id = $2`, siteID, userID)
	return pgErr("delete site", affected(res, err, sql.ErrNoRows))
}

const siteCols = `id, user_id, name, domain, coalesce(platform_site_id, ''), founding, health_score,
	last_published, pages, created_at, platform_verified, coalesce(platform_webhook_id, ''), scan_schedule, next_scan_at`

func scanSite(row rowScanner) (store.Site, error) {
	var s store.Site
	var health sql.NullInt64
	var published, next sql.NullTime
	var pages pq.StringArray
	err := row.Scan(&s.ID, &s.UserID, &s.Name, &s.Domain, &s.PlatformSiteID, &s.Founding, &health,
		&published, &pages, &s.CreatedAt, &s.PlatformVerified, &s.PlatformWebhookID, &s.Schedule, &next)
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
	s, err := scanSite(p.db.QueryRowContext(ctx, `SELECT `+siteCols+` FROM sites WHERE id = $1 AND user_id = $2`, siteID, userID))
	return s, pgErr("site", err)
}

func (p *Store) SitesOf(ctx context.Context, userID string) ([]store.Site, error) {
	if !uuidOK(userID) {
		return []store.Site{}, nil
	}
	return queryAll(ctx, p.db, "sites", scanSite, `SELECT `+siteCols+` FROM sites WHERE user_id = $1 ORDER BY name, id`, userID)
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

// owns answers whether userID owns siteID.
func (p *Store) owns(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, userID, siteID string) error {
	if !uuidOK(userID, siteID) {
		return store.NotFound("site")
	}
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM sites WHERE id = $1 AND user_id = $2`, siteID, userID).Scan(&one)
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
		if err := p.owns(ctx, tx, userID, siteID); err != nil {
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
		SELECT $1, id, $3, $4, $5, $6 FROM sites WHERE id = $2 AND user_id = $7`,
		r.ID, r.SiteID, r.Metric, r.Operator, r.Threshold, store.Now(r.CreatedAt), userID)
	return pgErr("add alert rule", affected(res, err, sql.ErrNoRows))
}

func (p *Store) UpdateAlertRule(ctx context.Context, userID string, r store.AlertRule) error {
	if !uuidOK(userID, r.SiteID, r.ID) {
		return store.NotFound("alert rule")
	}
	res, err := p.db.ExecContext(ctx, `UPDATE alert_rules r SET metric = $4, operator = $5, threshold = $6
		FROM sites s WHERE r.id = $1 AND r.site_id = $2 AND s.id = r.site_id AND s.user_id = $3`,
		r.ID, r.SiteID, userID, r.Metric, r.Operator, r.Threshold)
	return pgErr("update alert rule", affected(res, err, sql.ErrNoRows))
}

func (p *Store) DeleteAlertRule(ctx context.Context, userID, siteID, ruleID string) error {
	if !uuidOK(userID, siteID, ruleID) {
		return store.NotFound("alert rule")
	}
	res, err := p.db.ExecContext(ctx, `DELETE FROM alert_rules r USING sites s
		WHERE r.id = $1 AND r.site_id = $2 AND s.id = r.site_id AND s.user_id = $3`, ruleID, siteID, userID)
	return pgErr("delete alert rule", affected(res, err, sql.ErrNoRows))
}
