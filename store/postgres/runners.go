package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/lib/pq"

	"sitepulse/store"
)

const runnerTokenCols = `id, coalesce(workspace_id::text, ''), name, token_hash, prefix, created_at, revoked_at`

func scanRunnerToken(r rowScanner) (store.RunnerToken, error) {
	var t store.RunnerToken
	var revoked sql.NullTime
	err := r.Scan(&t.ID, &t.WorkspaceID, &t.Name, &t.TokenHash, &t.Prefix, &t.CreatedAt, &revoked)
	if revoked.Valid {
		at := revoked.Time.UTC()
		t.RevokedAt = &at
	}
	t.CreatedAt = t.CreatedAt.UTC()
	return t, err
}

// nullID is a uuid parameter, NULL for "".
func nullID(id string) any {
	if id == "" {
		return nil
	}
	return id
}

func (p *Store) CreateRunnerToken(ctx context.Context, t store.RunnerToken) error {
	if !uuidOK(t.ID) || t.WorkspaceID != "" && !uuidOK(t.WorkspaceID) {
		return store.NotFound("workspace")
	}
	_, err := p.db.ExecContext(ctx, `INSERT INTO runner_tokens (id, workspace_id, name, token_hash, prefix, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)`, t.ID, nullID(t.WorkspaceID), t.Name, t.TokenHash, t.Prefix, t.CreatedAt)
	return pgErr("create runner token", err)
}

func (p *Store) RunnerTokens(ctx context.Context, workspaceID string) ([]store.RunnerToken, error) {
	if workspaceID != "" && !uuidOK(workspaceID) {
		return []store.RunnerToken{}, nil
	}
	return queryAll(ctx, p.db, "runner tokens", scanRunnerToken, `SELECT `+runnerTokenCols+` FROM runner_tokens
		WHERE workspace_id IS NOT DISTINCT FROM $1::uuid AND revoked_at IS NULL ORDER BY created_at DESC, id DESC`, nullID(workspaceID))
}

func (p *Store) RevokeRunnerToken(ctx context.Context, workspaceID, tokenID string, now time.Time) error {
	if !uuidOK(tokenID) || workspaceID != "" && !uuidOK(workspaceID) {
		return store.NotFound("runner token")
	}
	return pgErr("revoke runner token", p.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE runner_tokens SET revoked_at = $3
			WHERE id = $1 AND workspace_id IS NOT DISTINCT FROM $2::uuid AND revoked_at IS NULL`, tokenID, nullID(workspaceID), now)
		if err := affected(res, err, store.NotFound("runner token")); err != nil {
			return err
		}
		// Its leases go back to the queue at once.
		_, err = tx.ExecContext(ctx, `UPDATE runner_audits SET state = 'queued', lease_id = NULL, token_id = NULL,
			runner = '', location = '', lease_until = NULL WHERE token_id = $1 AND state = 'leased'`, tokenID)
		return err
	}))
}

func (p *Store) RunnerTokenByHash(ctx context.Context, hash string) (store.RunnerToken, error) {
	t, err := scanRunnerToken(p.db.QueryRowContext(ctx, `SELECT `+runnerTokenCols+` FROM runner_tokens
		WHERE token_hash = $1 AND revoked_at IS NULL`, hash))
	return t, pgErr("runner token", err)
}

func (p *Store) RunnersServe(ctx context.Context, workspaceID string) (bool, error) {
	if !uuidOK(workspaceID) {
		return false, nil
	}
	var ok bool
	err := p.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM runner_tokens
		WHERE (workspace_id = $1 OR workspace_id IS NULL) AND revoked_at IS NULL)`, workspaceID).Scan(&ok)
	return ok, pgErr("runners serve", err)
}

func (p *Store) SetSiteLocations(ctx context.Context, siteID string, locations []string) error {
	if !uuidOK(siteID) {
		return store.NotFound("site")
	}
	if len(locations) == 0 {
		var ok bool
		err := p.db.QueryRowContext(ctx, `WITH d AS (DELETE FROM site_runner_locations WHERE site_id = $1)
			SELECT EXISTS (SELECT 1 FROM sites WHERE id = $1)`, siteID).Scan(&ok)
		if err == nil && !ok {
			return store.NotFound("site")
		}
		return pgErr("set site locations", err)
	}
	_, err := p.db.ExecContext(ctx, `INSERT INTO site_runner_locations (site_id, locations) VALUES ($1, $2)
		ON CONFLICT (site_id) DO UPDATE SET locations = EXCLUDED.locations`, siteID, pq.Array(locations))
	return pgErr("set site locations", err)
}

func (p *Store) SiteLocations(ctx context.Context, siteID string) ([]string, error) {
	if !uuidOK(siteID) {
		return nil, store.NotFound("site")
	}
	var locs []string
	var site bool
	err := p.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM sites WHERE id = $1),
		(SELECT locations FROM site_runner_locations WHERE site_id = $1)`, siteID).Scan(&site, pq.Array(&locs))
	if err == nil && !site {
		return nil, store.NotFound("site")
	}
	if len(locs) == 0 {
		locs = nil
	}
	return locs, pgErr("site locations", err)
}

func (p *Store) EnqueueRunnerAudit(ctx context.Context, a store.RunnerAudit) error {
	if !uuidOK(a.ID, a.WorkspaceID, a.SiteID, a.ScanID) {
		return store.NotFound("scan")
	}
	locs := a.Locations
	if locs == nil {
		locs = []string{}
	}
	_, err := p.db.ExecContext(ctx, `INSERT INTO runner_audits (id, workspace_id, site_id, scan_id, page_url, strategy, locations, avoid, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, a.ID, a.WorkspaceID, a.SiteID, a.ScanID, a.PageURL, a.Strategy, pq.Array(locs), a.Avoid, a.CreatedAt)
	return pgErr("enqueue runner audit", err)
}

const runnerAuditCols = `id, workspace_id, site_id, scan_id, page_url, strategy, locations, avoid, created_at, state,
	coalesce(lease_id::text, ''), coalesce(token_id::text, ''), runner, location, lease_until, report, error, benchmark`

func scanRunnerAudit(r rowScanner) (store.RunnerAudit, error) {
	var a store.RunnerAudit
	var until sql.NullTime
	err := r.Scan(&a.ID, &a.WorkspaceID, &a.SiteID, &a.ScanID, &a.PageURL, &a.Strategy, pq.Array(&a.Locations), &a.Avoid, &a.CreatedAt, &a.State,
		&a.LeaseID, &a.TokenID, &a.Runner, &a.Location, &until, &a.Report, &a.Error, &a.Benchmark)
	if until.Valid {
		a.LeaseUntil = until.Time.UTC()
	}
	if len(a.Locations) == 0 {
		a.Locations = nil
	}
	a.CreatedAt = a.CreatedAt.UTC()
	return a, err
}

// leaseRunnerSQL is the lease rule (store.Runners.LeaseRunnerAudit), written twice: the memory
// store's LeaseRunnerAudit is the same in Go. $1 token, $2 its workspace (NULL: the
// operator's, every workspace), $3 the runner's key, $4 its location, $5 now, $6 the lease's
// end, $7 the new lease id, $8 AvoidGrace in seconds.
const leaseRunnerSQL = `UPDATE runner_audits SET state = 'leased', lease_id = $7, token_id = $1, runner = $3,
		location = $4, lease_until = $6
	WHERE id = (SELECT id FROM runner_audits
		WHERE (state = 'queued' OR state = 'leased' AND lease_until < $5)
			AND ($2::uuid IS NULL OR workspace_id = $2::uuid)
			AND (cardinality(locations) = 0 OR $4 = ANY(locations))
			AND (avoid <> $3 OR created_at + make_interval(secs => $8) < $5)
			AND EXISTS (SELECT 1 FROM runner_tokens WHERE id = $1 AND revoked_at IS NULL)
		ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
	RETURNING ` + runnerAuditCols

func (p *Store) LeaseRunnerAudit(ctx context.Context, t store.RunnerToken, runner, location string, now, until time.Time) (store.RunnerAudit, error) {
	if !uuidOK(t.ID) {
		return store.RunnerAudit{}, store.NotFound("runner audit")
	}
	a, err := scanRunnerAudit(p.db.QueryRowContext(ctx, leaseRunnerSQL, t.ID, nullID(t.WorkspaceID), store.RunnerKey(t.ID, runner), location,
		now, until, store.NewID(), store.AvoidGrace.Seconds()))
	return a, pgErr("lease runner audit", err)
}

// heldCond matches the audit $1 (the token) holds under lease $2 with its lease running at $3.
const heldCond = `lease_id = $2 AND token_id = $1 AND state = 'leased' AND lease_until >= $3
	AND EXISTS (SELECT 1 FROM runner_tokens WHERE id = $1 AND revoked_at IS NULL)`

func (p *Store) ExtendRunnerLease(ctx context.Context, t store.RunnerToken, leaseID string, now, until time.Time) error {
	gone := fmt.Errorf("runner lease: %w", store.ErrGone)
	if !uuidOK(t.ID, leaseID) {
		return gone
	}
	res, err := p.db.ExecContext(ctx, `UPDATE runner_audits SET lease_until = $4 WHERE `+heldCond, t.ID, leaseID, now, until)
	return pgErr("extend runner lease", affected(res, err, gone))
}

func (p *Store) FinishRunnerAudit(ctx context.Context, t store.RunnerToken, leaseID string, f store.RunnerFinish, now time.Time) error {
	gone := fmt.Errorf("runner lease: %w", store.ErrGone)
	if !uuidOK(t.ID, leaseID) {
		return gone
	}
	state, report := store.RunnerDone, f.Report
	if f.Error != "" {
		state, report = store.RunnerFailed, nil
	}
	res, err := p.db.ExecContext(ctx, `UPDATE runner_audits SET state = $4, report = $5, error = $6, benchmark = $7, lease_id = NULL
		WHERE `+heldCond, t.ID, leaseID, now, state, report, f.Error, f.Benchmark)
	return pgErr("finish runner audit", affected(res, err, gone))
}

func (p *Store) RunnerAudit(ctx context.Context, id string) (store.RunnerAudit, error) {
	if !uuidOK(id) {
		return store.RunnerAudit{}, store.NotFound("runner audit")
	}
	a, err := scanRunnerAudit(p.db.QueryRowContext(ctx, `SELECT `+runnerAuditCols+` FROM runner_audits WHERE id = $1`, id))
	return a, pgErr("runner audit", err)
}

func (p *Store) DeleteRunnerAudit(ctx context.Context, id string) error {
	if !uuidOK(id) {
		return nil
	}
	_, err := p.db.ExecContext(ctx, `DELETE FROM runner_audits WHERE id = $1`, id)
	return pgErr("delete runner audit", err)
}

func (p *Store) ForgetRunnerAudits(ctx context.Context, scanID string) error {
	if !uuidOK(scanID) {
		return nil
	}
	_, err := p.db.ExecContext(ctx, `DELETE FROM runner_audits WHERE scan_id = $1`, scanID)
	return pgErr("forget runner audits", err)
}
