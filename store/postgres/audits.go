package postgres

import (
	"context"
	"database/sql"
	"time"

	"sitepulse/store"
)

// takeAuditSQL spends one audit of workspace $1 on day $2 under the workspace's limit $3 and its
// accounts' limit $4, in one call (take_audit, migration 022): all or nothing, atomic across
// every process on the database.
const takeAuditSQL = `SELECT take_audit($1, $2, $3, $4)`

// auditsTakenSQL reads a workspace's audits of day $2 and the most any of its payers has spent.
const auditsTakenSQL = `SELECT coalesce((SELECT used FROM audit_usage WHERE workspace_id = $1 AND day = $2), 0),
	coalesce((SELECT max(used) FROM account_audits WHERE day = $2 AND user_id IN (SELECT audit_payers($1, $2))), 0)`

// utcDay is now's UTC day as Postgres reads a date.
func utcDay(now time.Time) string { return now.UTC().Format(time.DateOnly) }

func (p *Store) TakeAudit(ctx context.Context, workspaceID string, now time.Time, limits store.AuditLimits) (bool, error) {
	if !uuidOK(workspaceID) {
		return false, store.NotFound("workspace")
	}
	var spent sql.NullString
	if err := p.db.QueryRowContext(ctx, takeAuditSQL, workspaceID, utcDay(now), limits.Workspace, limits.Account).Scan(&spent); err != nil {
		return false, pgErr("take audit", err)
	}
	if !spent.Valid {
		return false, store.NotFound("workspace")
	}
	return spent.String == "", nil
}

func (p *Store) AuditsTaken(ctx context.Context, workspaceID string, now time.Time) (store.AuditUsage, error) {
	var u store.AuditUsage
	if !uuidOK(workspaceID) {
		return u, nil
	}
	err := p.db.QueryRowContext(ctx, auditsTakenSQL, workspaceID, utcDay(now)).Scan(&u.Workspace, &u.Account)
	return u, pgErr("audits taken", err)
}
