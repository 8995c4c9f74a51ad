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

// takeKeyFreeAuditSQL spends one audit of workspace $1 on day $2 under the workspace's limit $3
// only (store.AuditLimits.KeyFree: a local Lighthouse's or a runner's audit calls no PSI key, so
// neither its payers' accounts nor the key's day count it), atomic as take_audit is: the upsert
// locks the day's row and re-reads it, so concurrent takes never spend past $3. It answers
// whether the workspace exists and whether the audit was taken; a first take of the day forgets
// the workspace's days before yesterday, as take_audit does. The memory store's TakeAudit is the
// same rule in Go; the contract test testKeyFreeAudits keeps the two equal.
const takeKeyFreeAuditSQL = `WITH ws AS (SELECT id FROM workspaces WHERE id = $1),
	took AS (INSERT INTO audit_usage (workspace_id, day, used) SELECT id, $2, 1 FROM ws WHERE $3 > 0
		ON CONFLICT (workspace_id, day) DO UPDATE SET used = audit_usage.used + 1 WHERE audit_usage.used < $3
		RETURNING (xmax = 0) AS first),
	forgot AS (DELETE FROM audit_usage WHERE workspace_id = $1 AND day < $2::date - 1 AND EXISTS (SELECT 1 FROM took WHERE first))
	SELECT EXISTS (SELECT 1 FROM ws), EXISTS (SELECT 1 FROM took)`

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
	if limits.KeyFree {
		var exists, took bool
		if err := p.db.QueryRowContext(ctx, takeKeyFreeAuditSQL, workspaceID, utcDay(now), limits.Workspace).Scan(&exists, &took); err != nil {
			return false, pgErr("take audit", err)
		}
		if !exists {
			return false, store.NotFound("workspace")
		}
		return took, nil
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
