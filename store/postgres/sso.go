package postgres

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"sitepulse/store"
)

const identityCols = `issuer, subject, user_id, email, refresh_sealed, created_at, checked_at, lost_at`

func scanIdentity(row rowScanner) (store.Identity, error) {
	var id store.Identity
	var lost sql.NullTime
	err := row.Scan(&id.Issuer, &id.Subject, &id.UserID, &id.Email, &id.RefreshSealed, &id.CreatedAt, &id.CheckedAt, &lost)
	id.CreatedAt, id.CheckedAt, id.LostAt = id.CreatedAt.UTC(), id.CheckedAt.UTC(), timePtr(lost)
	return id, err
}

func (p *Store) Identity(ctx context.Context, issuer, subject string) (store.Identity, error) {
	id, err := scanIdentity(p.db.QueryRowContext(ctx, `SELECT `+identityCols+` FROM sso_identities WHERE issuer = $1 AND subject = $2`, issuer, subject))
	return id, pgErr("identity", err)
}

func insertIdentity(ctx context.Context, q interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, id store.Identity) error {
	_, err := q.ExecContext(ctx, `INSERT INTO sso_identities (issuer, subject, user_id, email, refresh_sealed, created_at, checked_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, id.Issuer, id.Subject, id.UserID, id.Email, id.RefreshSealed, store.Now(id.CreatedAt), store.Now(id.CheckedAt))
	return pgErr("link identity", err)
}

// CreateIdentityUser stores the account, its personal workspace and its identity together.
func (p *Store) CreateIdentityUser(ctx context.Context, u store.User, id store.Identity) error {
	id.UserID = u.ID
	return p.tx(ctx, func(tx *sql.Tx) error {
		if err := insertUser(ctx, tx, u); err != nil {
			return err
		}
		return insertIdentity(ctx, tx, id)
	})
}

func (p *Store) LinkIdentity(ctx context.Context, id store.Identity) error {
	if !uuidOK(id.UserID) {
		return store.NotFound("user")
	}
	return insertIdentity(ctx, p.db, id)
}

func (p *Store) IdentitiesOf(ctx context.Context, userID string) ([]store.Identity, error) {
	if !uuidOK(userID) {
		return []store.Identity{}, nil
	}
	return queryAll(ctx, p.db, "identities", scanIdentity, `SELECT `+identityCols+` FROM sso_identities WHERE user_id = $1 ORDER BY issuer, subject`, userID)
}

func (p *Store) Vouched(ctx context.Context, issuer, subject, refreshSealed string, now time.Time) error {
	res, err := p.db.ExecContext(ctx, `WITH s AS (UPDATE sessions SET sso_checked_at = $4 WHERE sso_issuer = $1 AND sso_subject = $2)
		UPDATE sso_identities SET refresh_sealed = $3, checked_at = $4, lost_at = NULL WHERE issuer = $1 AND subject = $2`,
		issuer, subject, refreshSealed, store.Now(now))
	return pgErr("vouched", affected(res, err, sql.ErrNoRows))
}

func (p *Store) LoseVouch(ctx context.Context, issuer, subject string, now time.Time) error {
	res, err := p.db.ExecContext(ctx, `WITH s AS (DELETE FROM sessions WHERE sso_issuer = $1 AND sso_subject = $2)
		UPDATE sso_identities SET refresh_sealed = '', lost_at = $3 WHERE issuer = $1 AND subject = $2`,
		issuer, subject, store.Now(now))
	return pgErr("lose vouch", affected(res, err, sql.ErrNoRows))
}

const ruleCols = `workspace_id, domain, token, verified_at, required_at, jit_role, updated_at`

func scanRule(row rowScanner) (store.WorkspaceSSO, error) {
	var w store.WorkspaceSSO
	var verified, required sql.NullTime
	var role string
	err := row.Scan(&w.WorkspaceID, &w.Domain, &w.Token, &verified, &required, &role, &w.UpdatedAt)
	w.VerifiedAt, w.RequiredAt, w.JITRole, w.UpdatedAt = timePtr(verified), timePtr(required), store.Role(role), w.UpdatedAt.UTC()
	return w, err
}

// rule reads a workspace's rule, a zero one when it has none.
func (p *Store) rule(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, workspaceID string) (store.WorkspaceSSO, error) {
	w, err := scanRule(q.QueryRowContext(ctx, `SELECT `+ruleCols+` FROM workspace_sso WHERE workspace_id = $1`, workspaceID))
	if errors.Is(err, sql.ErrNoRows) {
		return store.WorkspaceSSO{WorkspaceID: workspaceID}, nil
	}
	return w, pgErr("sso rule", err)
}

func (p *Store) WorkspaceSSO(ctx context.Context, userID, workspaceID string) (store.WorkspaceSSO, error) {
	if !uuidOK(userID, workspaceID) {
		return store.WorkspaceSSO{}, store.NotFound("workspace")
	}
	var member bool
	if err := p.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT FROM memberships WHERE workspace_id = $1 AND user_id = $2)`, workspaceID, userID).Scan(&member); err != nil {
		return store.WorkspaceSSO{}, pgErr("workspace", err)
	}
	if !member {
		return store.WorkspaceSSO{}, store.NotFound("workspace")
	}
	return p.rule(ctx, p.db, workspaceID)
}

func (p *Store) SetWorkspaceSSO(ctx context.Context, userID string, w store.WorkspaceSSO) error {
	if !uuidOK(userID, w.WorkspaceID) {
		return store.NotFound("workspace")
	}
	return p.tx(ctx, func(tx *sql.Tx) error {
		if err := ownerOf(ctx, tx, w.WorkspaceID, userID, "sso settings"); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO workspace_sso (`+ruleCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7)
			ON CONFLICT (workspace_id) DO UPDATE SET domain = $2, token = $3, verified_at = $4, required_at = $5, jit_role = $6, updated_at = $7`,
			w.WorkspaceID, w.Domain, w.Token, nullTime(w.VerifiedAt), nullTime(w.RequiredAt), string(w.JITRole), store.Now(w.UpdatedAt))
		return pgErr("sso settings", err)
	})
}

func (p *Store) SSORule(ctx context.Context, workspaceID string) (store.WorkspaceSSO, error) {
	if !uuidOK(workspaceID) {
		return store.WorkspaceSSO{WorkspaceID: workspaceID}, nil
	}
	return p.rule(ctx, p.db, workspaceID)
}

func (p *Store) SSORulesForDomain(ctx context.Context, domain string) ([]store.WorkspaceSSO, error) {
	return queryAll(ctx, p.db, "sso rules", scanRule, `SELECT `+ruleCols+` FROM workspace_sso
		WHERE domain = $1 AND verified_at IS NOT NULL ORDER BY workspace_id`, domain)
}

func (p *Store) JoinJustInTime(ctx context.Context, workspaceID, userID string, role store.Role, now time.Time) (bool, error) {
	if !uuidOK(workspaceID, userID) {
		return false, store.NotFound("workspace")
	}
	res, err := p.db.ExecContext(ctx, `INSERT INTO memberships (workspace_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (workspace_id, user_id) DO NOTHING`, workspaceID, userID, string(role), store.Now(now))
	if err != nil {
		return false, pgErr("join", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
