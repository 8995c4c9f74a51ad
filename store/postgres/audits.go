package postgres

import (
	"context"
	"database/sql"
	"time"

	"sitepulse/store"
)

// takeAuditSQL spends one audit of workspace $1 on day $2 under the workspace's limit $3, its
// accounts' limit $4 and the key's day shared ($5-$8: store.AuditLimits's Day, Mark, Reserve,
// Newcomer), in one call (take_audit, migration 039): all or nothing, atomic across every
// process on the database.
const takeAuditSQL = `SELECT take_audit($1, $2, $3, $4, $5, $6, $7, $8)`

// auditsTakenSQL reads a workspace's audits of day $2, the most any of its payers has spent (and
// of that, past the mark), and the key's day when the workspace exists.
const auditsTakenSQL = `SELECT coalesce((SELECT used FROM audit_usage WHERE workspace_id = $1 AND day = $2), 0),
	coalesce(p.used, 0), coalesce(p.late, 0), coalesce(k.used, 0), coalesce(k.askers, 0)
	FROM (SELECT 1) one
	LEFT JOIN LATERAL (SELECT used, late FROM account_audits WHERE day = $2 AND user_id IN (SELECT audit_payers($1, $2))
		ORDER BY used DESC, late DESC LIMIT 1) p ON true
	LEFT JOIN key_audits k ON k.day = $2 AND EXISTS (SELECT 1 FROM workspaces WHERE id = $1)`

// utcDay is now's UTC day as Postgres reads a date.
func utcDay(now time.Time) string { return now.UTC().Format(time.DateOnly) }

func (p *Store) TakeAudit(ctx context.Context, workspaceID string, now time.Time, limits store.AuditLimits) (bool, error) {
	if !uuidOK(workspaceID) {
		return false, store.NotFound("workspace")
	}
	var spent sql.NullString
	if err := p.db.QueryRowContext(ctx, takeAuditSQL, workspaceID, utcDay(now), limits.Workspace, limits.Account,
		limits.Day, limits.Mark, limits.Reserve, limits.Newcomer).Scan(&spent); err != nil {
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
	err := p.db.QueryRowContext(ctx, auditsTakenSQL, workspaceID, utcDay(now)).Scan(&u.Workspace, &u.Account, &u.Late, &u.Key, &u.Askers)
	return u, pgErr("audits taken", err)
}
