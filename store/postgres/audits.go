package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"sitepulse/store"
)

// takeAuditSQL spends one audit of workspace $1 on day $2 when fewer than $3 are spent, in one
// statement: the conditional upsert locks the workspace's row of the day, so concurrent takes from
// any process queue on it and each sees the count the one before left. No row comes back when
// the budget is spent. The same statement deletes the workspace's counts of days before yesterday
// (yesterday's stays, so a replica whose clock is a little behind does not count afresh).
const takeAuditSQL = `WITH pruned AS (DELETE FROM audit_usage WHERE workspace_id = $1 AND day < $2::date - 1)
INSERT INTO audit_usage AS a (workspace_id, day, used) SELECT $1, $2, 1 WHERE $3::int > 0
ON CONFLICT (workspace_id, day) DO UPDATE SET used = a.used + 1 WHERE a.used < $3
RETURNING a.used`

const auditsTakenSQL = `SELECT used FROM audit_usage WHERE workspace_id = $1 AND day = $2`

// utcDay is now's UTC day as Postgres reads a date.
func utcDay(now time.Time) string { return now.UTC().Format(time.DateOnly) }

func (p *Store) TakeAudit(ctx context.Context, workspaceID string, now time.Time, limit int) (bool, error) {
	if !uuidOK(workspaceID) {
		return false, store.NotFound("workspace")
	}
	stmt, err := p.prepared(ctx, takeAuditSQL)
	if err != nil {
		return false, pgErr("take audit", err)
	}
	var used int
	switch err := stmt.QueryRowContext(ctx, workspaceID, utcDay(now), limit).Scan(&used); {
	case err == nil:
		return true, nil
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	default:
		return false, pgErr("take audit", err) // a workspace that does not exist: ErrNotFound
	}
}

func (p *Store) AuditsTaken(ctx context.Context, workspaceID string, now time.Time) (int, error) {
	if !uuidOK(workspaceID) {
		return 0, nil
	}
	stmt, err := p.prepared(ctx, auditsTakenSQL)
	if err != nil {
		return 0, pgErr("audits taken", err)
	}
	var used int
	if err := stmt.QueryRowContext(ctx, workspaceID, utcDay(now)).Scan(&used); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, pgErr("audits taken", err)
	}
	return used, nil
}
