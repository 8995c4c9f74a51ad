package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"sitepulse/store"
)

// CreateWorkspace locks the owner's row, so concurrent creations take turns at the count.
func (p *Store) CreateWorkspace(ctx context.Context, w store.Workspace, ownerID string, max int) error {
	if !uuidOK(w.ID, ownerID) {
		return store.NotFound("user")
	}
	return p.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `SELECT 1 FROM users WHERE id = $1 FOR UPDATE`, ownerID); err != nil {
			return pgErr("lock user", err)
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM memberships WHERE user_id = $1 AND role = 'owner'`, ownerID).Scan(&n); err != nil {
			return pgErr("count workspaces", err)
		}
		if n >= max {
			return fmt.Errorf("%d workspaces: %w", n, store.ErrLimit)
		}
		at := store.Now(w.CreatedAt)
		if _, err := tx.ExecContext(ctx, `INSERT INTO workspaces (id, name, created_at, created_by) VALUES ($1, $2, $3, $4)`, w.ID, w.Name, at, ownerID); err != nil {
			return pgErr("create workspace", err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO memberships (workspace_id, user_id, role, created_at) VALUES ($1, $2, 'owner', $3)`,
			w.ID, ownerID, at)
		return pgErr("create workspace", err)
	})
}

const workspaceCols = `w.id, w.name, w.created_at, w.retention_days, m.role
	FROM workspaces w JOIN memberships m ON m.workspace_id = w.id`

func scanWorkspace(row rowScanner) (store.Workspace, error) {
	var w store.Workspace
	err := row.Scan(&w.ID, &w.Name, &w.CreatedAt, &w.RetentionDays, &w.Role)
	w.CreatedAt = w.CreatedAt.UTC()
	return w, err
}

func (p *Store) WorkspacesOf(ctx context.Context, userID string) ([]store.Workspace, error) {
	if !uuidOK(userID) {
		return []store.Workspace{}, nil
	}
	return queryAll(ctx, p.db, "workspaces", scanWorkspace, `SELECT `+workspaceCols+`
		WHERE m.user_id = $1 ORDER BY w.id <> $1, lower(w.name), w.id`, userID)
}

func (p *Store) Workspace(ctx context.Context, userID, workspaceID string) (store.Workspace, error) {
	if !uuidOK(userID, workspaceID) {
		return store.Workspace{}, store.NotFound("workspace")
	}
	w, err := scanWorkspace(p.db.QueryRowContext(ctx, `SELECT `+workspaceCols+` WHERE m.user_id = $1 AND w.id = $2`, userID, workspaceID))
	return w, pgErr("workspace", err)
}

func (p *Store) Members(ctx context.Context, workspaceID string) ([]store.Member, error) {
	if !uuidOK(workspaceID) {
		return []store.Member{}, nil
	}
	return queryAll(ctx, p.db, "members", func(r rowScanner) (m store.Member, err error) {
		err = r.Scan(&m.WorkspaceID, &m.UserID, &m.Email, &m.Role, &m.CreatedAt, &m.NotifyRegressions)
		m.CreatedAt = m.CreatedAt.UTC()
		return m, err
	}, `SELECT m.workspace_id, m.user_id, u.email, m.role, m.created_at, m.notify_regressions
		FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.workspace_id = $1 ORDER BY lower(u.email)`, workspaceID)
}

// lastOwner answers ErrConflict when the workspace would keep no owner without userID's
// ownership. It locks the workspace's row so two owners demoting each other take turns.
func lastOwner(ctx context.Context, tx *sql.Tx, workspaceID, userID string) error {
	if _, err := tx.ExecContext(ctx, `SELECT 1 FROM workspaces WHERE id = $1 FOR UPDATE`, workspaceID); err != nil {
		return pgErr("lock workspace", err)
	}
	var others int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM memberships WHERE workspace_id = $1 AND role = 'owner' AND user_id <> $2`,
		workspaceID, userID).Scan(&others); err != nil {
		return pgErr("count owners", err)
	}
	if others == 0 {
		return fmt.Errorf("a workspace keeps at least one owner: %w", store.ErrConflict)
	}
	return nil
}

// handOver gives the sites and reports userID made in a workspace to its oldest other owner:
// the scanner reads a site's scans as its user, and a report must not go when its maker's
// account does (reports cascade with their user). RemoveMember and DeleteAccount share it.
func handOver(ctx context.Context, tx *sql.Tx, workspaceID, userID string) error {
	_, err := tx.ExecContext(ctx, `WITH heir AS (SELECT user_id FROM memberships
			WHERE workspace_id = $1 AND role = 'owner' AND user_id <> $2 ORDER BY created_at, user_id LIMIT 1),
		s AS (UPDATE sites SET user_id = (SELECT user_id FROM heir) WHERE workspace_id = $1 AND user_id = $2)
		UPDATE reports SET user_id = (SELECT user_id FROM heir) WHERE workspace_id = $1 AND user_id = $2`, workspaceID, userID)
	return pgErr("hand over", err)
}

// personalHolder refuses a change that would take the holder of a personal workspace (its id
// is theirs) out of it or make them less than owner: it is their account's home.
func personalHolder(workspaceID, userID string) error {
	if workspaceID == store.PersonalWorkspace(userID) {
		return fmt.Errorf("the holder of a personal workspace stays its owner: %w", store.ErrConflict)
	}
	return nil
}

// revokeInvitationsBy revokes the pending invitations userID made in the workspace: they grant
// what their inviter may grant, and the inviter no longer may.
func revokeInvitationsBy(ctx context.Context, tx *sql.Tx, workspaceID, userID string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `UPDATE invitations SET revoked_at = $3
		WHERE workspace_id = $1 AND invited_by = $2 AND used_at IS NULL AND revoked_at IS NULL`, workspaceID, userID, store.Now(now))
	return pgErr("revoke invitations", err)
}

func (p *Store) SetRole(ctx context.Context, workspaceID, userID string, role store.Role) error {
	if _, err := store.ParseRole(string(role)); err != nil {
		return err
	}
	if !uuidOK(workspaceID, userID) {
		return store.NotFound("member")
	}
	if role != store.RoleOwner {
		if err := personalHolder(workspaceID, userID); err != nil {
			return err
		}
	}
	return p.tx(ctx, func(tx *sql.Tx) error {
		if role != store.RoleOwner {
			if err := lastOwner(ctx, tx, workspaceID, userID); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `UPDATE memberships SET role = $3 WHERE workspace_id = $1 AND user_id = $2`, workspaceID, userID, role)
		if err := affected(res, err, sql.ErrNoRows); err != nil {
			return pgErr("set role", err)
		}
		if role == store.RoleOwner {
			return nil
		}
		return revokeInvitationsBy(ctx, tx, workspaceID, userID, time.Now())
	})
}

func (p *Store) RemoveMember(ctx context.Context, workspaceID, userID string) error {
	defer p.forgetKeys()
	if !uuidOK(workspaceID, userID) {
		return store.NotFound("member")
	}
	if err := personalHolder(workspaceID, userID); err != nil {
		return err
	}
	return p.tx(ctx, func(tx *sql.Tx) error {
		if err := lastOwner(ctx, tx, workspaceID, userID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM memberships WHERE workspace_id = $1 AND user_id = $2`, workspaceID, userID)
		if err := affected(res, err, sql.ErrNoRows); err != nil {
			return pgErr("remove member", err)
		}
		if err := handOver(ctx, tx, workspaceID, userID); err != nil {
			return err
		}
		return revokeInvitationsBy(ctx, tx, workspaceID, userID, time.Now())
	})
}

func (p *Store) DeleteWorkspace(ctx context.Context, userID, workspaceID string) error {
	defer p.forgetKeys()
	if !uuidOK(userID, workspaceID) {
		return store.NotFound("workspace")
	}
	return p.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `SELECT 1 FROM workspaces WHERE id = $1 FOR UPDATE`, workspaceID); err != nil {
			return pgErr("lock workspace", err)
		}
		var role string
		err := tx.QueryRowContext(ctx, `SELECT role FROM memberships WHERE workspace_id = $1 AND user_id = $2`, workspaceID, userID).Scan(&role)
		if errors.Is(err, sql.ErrNoRows) {
			return store.NotFound("workspace")
		}
		if err != nil {
			return pgErr("delete workspace", err)
		}
		if store.Role(role) != store.RoleOwner {
			return store.ErrForbidden
		}
		var personal bool
		if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM users WHERE id = $1)`, workspaceID).Scan(&personal); err != nil {
			return pgErr("delete workspace", err)
		}
		if personal {
			return fmt.Errorf("a personal workspace is its account's home: %w", store.ErrConflict)
		}
		// Sites (and through them scans, results, jobs, budgets, rules), API keys, reports,
		// invitations, memberships and the platform connection reference the
		// workspace ON DELETE CASCADE (migration 013).
		res, err := tx.ExecContext(ctx, `DELETE FROM workspaces WHERE id = $1`, workspaceID)
		return pgErr("delete workspace", affected(res, err, sql.ErrNoRows))
	})
}

func (p *Store) SetMemberNotify(ctx context.Context, workspaceID, userID string, on bool) error {
	if !uuidOK(workspaceID, userID) {
		return store.NotFound("member")
	}
	res, err := p.db.ExecContext(ctx, `UPDATE memberships SET notify_regressions = $3 WHERE workspace_id = $1 AND user_id = $2`, workspaceID, userID, on)
	return pgErr("set member notifications", affected(res, err, sql.ErrNoRows))
}

func (p *Store) CreateInvitation(ctx context.Context, inv store.Invitation) error {
	if !uuidOK(inv.ID, inv.WorkspaceID, inv.InvitedBy) {
		return store.NotFound("workspace")
	}
	_, err := p.db.ExecContext(ctx, `INSERT INTO invitations (id, token_hash, workspace_id, email, role, invited_by, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, inv.ID, inv.TokenHash, inv.WorkspaceID, store.CanonicalEmail(inv.Email), inv.Role, inv.InvitedBy,
		store.Now(inv.CreatedAt), store.Now(inv.ExpiresAt))
	return pgErr("create invitation", err)
}

const invitationCols = `i.id, i.token_hash, i.workspace_id, w.name, i.email, i.role, i.invited_by, coalesce(u.email, ''),
	i.created_at, i.expires_at, i.used_at, i.revoked_at
	FROM invitations i JOIN workspaces w ON w.id = i.workspace_id LEFT JOIN users u ON u.id = i.invited_by`

func scanInvitation(row rowScanner) (store.Invitation, error) {
	var i store.Invitation
	var used, revoked sql.NullTime
	err := row.Scan(&i.ID, &i.TokenHash, &i.WorkspaceID, &i.WorkspaceName, &i.Email, &i.Role, &i.InvitedBy, &i.InviterEmail,
		&i.CreatedAt, &i.ExpiresAt, &used, &revoked)
	i.CreatedAt, i.ExpiresAt, i.UsedAt, i.RevokedAt = i.CreatedAt.UTC(), i.ExpiresAt.UTC(), timePtr(used), timePtr(revoked)
	return i, err
}

func (p *Store) Invitations(ctx context.Context, workspaceID string, now time.Time) ([]store.Invitation, error) {
	if !uuidOK(workspaceID) {
		return []store.Invitation{}, nil
	}
	return queryAll(ctx, p.db, "invitations", scanInvitation, `SELECT `+invitationCols+`
		WHERE i.workspace_id = $1 AND i.used_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > $2
		ORDER BY i.created_at DESC, i.id`, workspaceID, store.Now(now))
}

func (p *Store) InvitationByHash(ctx context.Context, tokenHash string) (store.Invitation, error) {
	i, err := scanInvitation(p.db.QueryRowContext(ctx, `SELECT `+invitationCols+` WHERE i.token_hash = $1`, tokenHash))
	return i, pgErr("invitation", err)
}

// AcceptInvitation takes the invitation with one conditional UPDATE: of any number of
// concurrent accepts exactly one sees the row unused and marks it; the others find nothing
// to update and answer ErrGone. The membership is written in the same transaction.
func (p *Store) AcceptInvitation(ctx context.Context, tokenHash, userID, email string, now time.Time) (store.Invitation, error) {
	if !uuidOK(userID) {
		return store.Invitation{}, store.NotFound("user")
	}
	var out store.Invitation
	err := p.tx(ctx, func(tx *sql.Tx) error {
		inv, err := scanInvitation(tx.QueryRowContext(ctx, `SELECT `+invitationCols+` WHERE i.token_hash = $1`, tokenHash))
		if err != nil {
			return pgErr("invitation", err)
		}
		if inv.Email != store.CanonicalEmail(email) {
			return fmt.Errorf("invitation for another address: %w", store.ErrForbidden)
		}
		// Shared with the workspace's row lock a role change or removal takes (lastOwner), so an
		// inviter's removal and an accept of their invitation happen one after the other.
		if _, err := tx.ExecContext(ctx, `SELECT 1 FROM workspaces WHERE id = $1 FOR SHARE`, inv.WorkspaceID); err != nil {
			return pgErr("lock workspace", err)
		}
		// The inviter must still be an owner: what a removed or demoted owner sent grants nothing.
		res, err := tx.ExecContext(ctx, `UPDATE invitations i SET used_at = $2, used_by = $3
			WHERE id = $1 AND used_at IS NULL AND revoked_at IS NULL AND expires_at > $2
			AND EXISTS (SELECT 1 FROM memberships m WHERE m.workspace_id = i.workspace_id AND m.user_id = i.invited_by AND m.role = 'owner')`,
			inv.ID, store.Now(now), userID)
		if err := affected(res, err, sql.ErrNoRows); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("invitation used, revoked or expired: %w", store.ErrGone)
			}
			return pgErr("accept invitation", err)
		}
		// A member already keeps the higher of the two roles.
		if _, err := tx.ExecContext(ctx, `INSERT INTO memberships (workspace_id, user_id, role, created_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (workspace_id, user_id) DO UPDATE SET role = CASE
				WHEN memberships.role = 'owner' OR EXCLUDED.role = 'owner' THEN 'owner'
				WHEN memberships.role = 'editor' OR EXCLUDED.role = 'editor' THEN 'editor' ELSE 'viewer' END`,
			inv.WorkspaceID, userID, inv.Role, store.Now(now)); err != nil {
			return pgErr("accept invitation", err)
		}
		t := store.Now(now)
		inv.UsedAt, out = &t, inv
		return nil
	})
	return out, err
}

func (p *Store) RevokeInvitation(ctx context.Context, workspaceID, invitationID string, now time.Time) error {
	if !uuidOK(workspaceID, invitationID) {
		return store.NotFound("invitation")
	}
	res, err := p.db.ExecContext(ctx, `UPDATE invitations SET revoked_at = $3
		WHERE id = $1 AND workspace_id = $2 AND used_at IS NULL AND revoked_at IS NULL`, invitationID, workspaceID, store.Now(now))
	return pgErr("revoke invitation", affected(res, err, sql.ErrNoRows))
}
