package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"sitepulse/store"
)

const providerCols = `workspace_id, issuer, client_id, secret_sealed, updated_at`

func scanProvider(row interface{ Scan(...any) error }) (store.WorkspaceProvider, error) {
	var p store.WorkspaceProvider
	err := row.Scan(&p.WorkspaceID, &p.Issuer, &p.ClientID, &p.SecretSealed, &p.UpdatedAt)
	p.UpdatedAt = store.Now(p.UpdatedAt)
	return p, err
}

func (p *Store) SetWorkspaceProvider(ctx context.Context, userID string, w store.WorkspaceProvider) error {
	if !uuidOK(userID, w.WorkspaceID) {
		return store.NotFound("workspace")
	}
	return p.tx(ctx, func(tx *sql.Tx) error {
		if err := ownerOf(ctx, tx, w.WorkspaceID, userID, "workspace provider"); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO workspace_providers (`+providerCols+`) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (workspace_id) DO UPDATE SET issuer = $2, client_id = $3, secret_sealed = $4, updated_at = $5`,
			w.WorkspaceID, w.Issuer, w.ClientID, w.SecretSealed, store.Now(w.UpdatedAt))
		return pgErr("workspace provider", err)
	})
}

// ownerOf checks, in tx, that userID owns workspaceID (the membership held for the
// transaction): ErrNotFound for a non-member, ErrForbidden for a member who is not an owner.
func ownerOf(ctx context.Context, tx *sql.Tx, workspaceID, userID, what string) error {
	var role string
	err := tx.QueryRowContext(ctx, `SELECT role FROM memberships WHERE workspace_id = $1 AND user_id = $2 FOR SHARE`, workspaceID, userID).Scan(&role)
	if errors.Is(err, sql.ErrNoRows) {
		return store.NotFound("workspace")
	}
	if err != nil {
		return pgErr(what, err)
	}
	if store.Role(role) != store.RoleOwner {
		return fmt.Errorf("%s: %w", what, store.ErrForbidden)
	}
	return nil
}

func (p *Store) WorkspaceProviderOf(ctx context.Context, workspaceID string) (store.WorkspaceProvider, error) {
	if !uuidOK(workspaceID) {
		return store.WorkspaceProvider{}, store.NotFound("workspace provider")
	}
	w, err := scanProvider(p.db.QueryRowContext(ctx, `SELECT `+providerCols+` FROM workspace_providers WHERE workspace_id = $1`, workspaceID))
	return w, pgErr("workspace provider", err)
}

func (p *Store) WorkspaceProviderByIssuer(ctx context.Context, issuer string) (store.WorkspaceProvider, error) {
	w, err := scanProvider(p.db.QueryRowContext(ctx, `SELECT `+providerCols+` FROM workspace_providers WHERE issuer = $1`, issuer))
	return w, pgErr("workspace provider", err)
}

// RemoveWorkspaceProvider locks the workspace's rule while it reads it, so a requirement
// turned on at the same moment either sees the provider or is seen here.
func (p *Store) RemoveWorkspaceProvider(ctx context.Context, userID, workspaceID string) (store.WorkspaceProvider, error) {
	var w store.WorkspaceProvider
	if !uuidOK(userID, workspaceID) {
		return w, store.NotFound("workspace")
	}
	err := p.tx(ctx, func(tx *sql.Tx) error {
		if err := ownerOf(ctx, tx, workspaceID, userID, "workspace provider"); err != nil {
			return err
		}
		var required bool
		err := tx.QueryRowContext(ctx, `SELECT required_at IS NOT NULL FROM workspace_sso WHERE workspace_id = $1 FOR UPDATE`, workspaceID).Scan(&required)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return pgErr("workspace provider", err)
		}
		if required {
			return fmt.Errorf("workspace provider: single sign-on is required: %w", store.ErrConflict)
		}
		w, err = scanProvider(tx.QueryRowContext(ctx, `DELETE FROM workspace_providers WHERE workspace_id = $1 RETURNING `+providerCols, workspaceID))
		return pgErr("workspace provider", err)
	})
	return w, err
}

func (p *Store) AnyWorkspaceProvider(ctx context.Context) (bool, error) {
	var exists bool
	err := p.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT FROM workspace_providers)`).Scan(&exists)
	return exists, pgErr("workspace providers", err)
}
