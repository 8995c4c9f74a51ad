package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/lib/pq"

	"sitepulse/store"
)

func (p *Store) CreateReport(ctx context.Context, r store.Report) error {
	return insertReport(ctx, p.db, r)
}

// CreateReportWithin counts after locking the user's row, as CreateSiteWithin does.
func (p *Store) CreateReportWithin(ctx context.Context, r store.Report, max int) error {
	if !uuidOK(r.UserID, r.ScanID) {
		return store.NotFound("scan")
	}
	return p.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `SELECT 1 FROM users WHERE id = $1 FOR UPDATE`, r.UserID); err != nil {
			return pgErr("lock user", err)
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM reports WHERE user_id = $1 AND revoked_at IS NULL
			AND (expires_at IS NULL OR expires_at > $2)`, r.UserID, store.Now(r.CreatedAt)).Scan(&n); err != nil {
			return pgErr("count reports", err)
		}
		if n >= max {
			return fmt.Errorf("%d active reports: %w", n, store.ErrLimit)
		}
		return insertReport(ctx, tx, r)
	})
}

func insertReport(ctx context.Context, db execer, r store.Report) error {
	if !uuidOK(r.UserID, r.ScanID) {
		return store.NotFound("scan")
	}
	res, err := db.ExecContext(ctx, `INSERT INTO reports (id, token_hash, scan_id, user_id, title, created_at, expires_at, workspace_id, token_sealed)
		SELECT $1, $2, c.id, $4, $5, $6, $7, s.workspace_id, $8 FROM scans c JOIN sites s ON s.id = c.site_id
		WHERE c.id = $3 AND `+readable("s.workspace_id", 4),
		r.ID, r.TokenHash, r.ScanID, r.UserID, r.Title, store.Now(r.CreatedAt), nullTime(r.ExpiresAt), nullString(r.TokenSealed))
	return pgErr("create report", affected(res, err, sql.ErrNoRows))
}

// reportCols are a report's columns and its scan's site, from reports r JOIN scans c.
const reportCols = `r.id, r.token_hash, coalesce(r.token_sealed, ''), r.scan_id, c.site_id, r.user_id, r.workspace_id, r.title, r.created_at, r.expires_at, r.revoked_at
	FROM reports r JOIN scans c ON c.id = r.scan_id`

func scanReport(row rowScanner) (store.Report, error) {
	var r store.Report
	var exp, rev sql.NullTime
	err := row.Scan(&r.ID, &r.TokenHash, &r.TokenSealed, &r.ScanID, &r.SiteID, &r.UserID, &r.WorkspaceID, &r.Title, &r.CreatedAt, &exp, &rev)
	r.CreatedAt, r.ExpiresAt, r.RevokedAt = r.CreatedAt.UTC(), timePtr(exp), timePtr(rev)
	return r, err
}

func (p *Store) ReportByHash(ctx context.Context, tokenHash string) (store.Report, error) {
	r, err := scanReport(p.db.QueryRowContext(ctx, `SELECT `+reportCols+` WHERE r.token_hash = $1`, tokenHash))
	return r, pgErr("report", err)
}

func (p *Store) ReportsOf(ctx context.Context, userID string) ([]store.Report, error) {
	if !uuidOK(userID) {
		return []store.Report{}, nil
	}
	return queryAll(ctx, p.db, "reports", scanReport, `SELECT `+reportCols+` WHERE `+readable("r.workspace_id", 1)+`
		ORDER BY r.created_at DESC, r.id DESC`, userID)
}

func (p *Store) RevokeReport(ctx context.Context, userID, reportID string, now time.Time) error {
	if !uuidOK(userID, reportID) {
		return store.NotFound("report")
	}
	res, err := p.db.ExecContext(ctx, `UPDATE reports SET revoked_at = coalesce(revoked_at, $3)
		WHERE id = $1 AND `+writable("workspace_id", 2), reportID, userID, store.Now(now))
	return pgErr("revoke report", affected(res, err, sql.ErrNoRows))
}

func (p *Store) ReportScan(ctx context.Context, r store.Report) (store.Scan, store.Site, []store.PageResult, error) {
	if !uuidOK(r.UserID, r.ScanID) {
		return store.Scan{}, store.Site{}, nil, store.NotFound("scan")
	}
	// The report is its workspace's: it is read as one of its members (a workspace always has
	// an owner), so it outlives its maker's membership.
	if uuidOK(r.WorkspaceID) {
		var member string
		err := p.db.QueryRowContext(ctx, `SELECT user_id FROM memberships WHERE workspace_id = $1 ORDER BY role = 'owner' DESC LIMIT 1`, r.WorkspaceID).Scan(&member)
		if err != nil {
			return store.Scan{}, store.Site{}, nil, pgErr("report's workspace", err)
		}
		r.UserID = member
	}
	sc, err := p.Scan(ctx, r.UserID, r.ScanID)
	if err != nil {
		return store.Scan{}, store.Site{}, nil, err
	}
	site, err := p.Site(ctx, r.UserID, sc.SiteID)
	if err != nil {
		return store.Scan{}, store.Site{}, nil, err
	}
	results, err := p.PageResults(ctx, r.UserID, r.ScanID)
	return sc, site, results, err
}

// deliveryPrune bounds the expired webhook deliveries one delivery deletes: more than arrive
// per delivery, so a backlog drains, few enough to keep the webhook's statement short.
const deliveryPrune = 100

func (p *Store) SeenDelivery(ctx context.Context, bodyHash string, since, now time.Time) (bool, error) {
	var one int
	// Each delivery also drops up to deliveryPrune keys seen before the window (not its own, which
	// the upsert handles), so the table holds about one window's deliveries at a bounded cost.
	err := p.db.QueryRowContext(ctx, `WITH expired AS (
			DELETE FROM webhook_deliveries WHERE body_hash IN (SELECT body_hash FROM webhook_deliveries
				WHERE seen_at < $2 AND body_hash <> $1 LIMIT $4 FOR UPDATE SKIP LOCKED))
		INSERT INTO webhook_deliveries (body_hash, seen_at) VALUES ($1, $3)
		ON CONFLICT (body_hash) DO UPDATE SET seen_at = EXCLUDED.seen_at WHERE webhook_deliveries.seen_at <= $2
		RETURNING 1`, bodyHash, store.Now(since), store.Now(now), deliveryPrune).Scan(&one)
	if err == sql.ErrNoRows {
		return true, nil
	}
	return false, pgErr("webhook delivery", err)
}

func (p *Store) ForgetDelivery(ctx context.Context, keys ...string) error {
	_, err := p.db.ExecContext(ctx, `DELETE FROM webhook_deliveries WHERE body_hash = ANY($1)`, pq.StringArray(keys))
	return pgErr("forget webhook delivery", err)
}
