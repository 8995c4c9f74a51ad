package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"

	"sitepulse/store"
)

func (p *Store) CreatePlatformState(ctx context.Context, stateHash, userID string, now, expiresAt time.Time) error {
	if !uuidOK(userID) {
		return store.NotFound("user")
	}
	return p.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM platform_states WHERE user_id = $1 AND (expires_at <= $2 OR state_hash IN
			(SELECT state_hash FROM platform_states WHERE user_id = $1 AND expires_at > $2 ORDER BY expires_at DESC OFFSET $3))`,
			userID, store.Now(now), store.MaxPlatformStates-1); err != nil {
			return pgErr("drop stale platform states", err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO platform_states (state_hash, user_id, expires_at, workspace_id) VALUES ($1, $2, $3, $2)`,
			stateHash, userID, store.Now(expiresAt))
		return pgErr("create platform state", err)
	})
}

func (p *Store) TakePlatformState(ctx context.Context, stateHash, userID string, now time.Time) error {
	if !uuidOK(userID) {
		return store.NotFound("platform state")
	}
	// Expired states go first, so abandoned connects do not pile up.
	if _, err := p.db.ExecContext(ctx, `DELETE FROM platform_states WHERE expires_at <= $1`, store.Now(now)); err != nil {
		return pgErr("platform state", err)
	}
	// Deleted whoever presents it, so a state is tried once; it counts only for its user, unexpired.
	var owner string
	var expires time.Time
	err := p.db.QueryRowContext(ctx, `DELETE FROM platform_states WHERE state_hash = $1 RETURNING user_id, expires_at`,
		stateHash).Scan(&owner, &expires)
	if err == nil && (owner != userID || !expires.After(now)) {
		err = sql.ErrNoRows
	}
	return pgErr("platform state", err)
}

func (p *Store) SavePlatformConnection(ctx context.Context, c store.PlatformConnection) error {
	if !uuidOK(c.WorkspaceID) {
		return store.NotFound("workspace")
	}
	_, err := p.db.ExecContext(ctx, `INSERT INTO platform_connections (workspace_id, token_sealed, scopes, disabled_at, created_at)
		VALUES ($1, $2, $3, NULL, $4)
		ON CONFLICT (workspace_id) DO UPDATE SET token_sealed = EXCLUDED.token_sealed, scopes = EXCLUDED.scopes, disabled_at = NULL,
			created_at = EXCLUDED.created_at`,
		c.WorkspaceID, c.TokenSealed, strings.Join(c.Scopes, " "), store.Now(c.CreatedAt))
	return pgErr("save platform connection", err)
}

func (p *Store) PlatformConnection(ctx context.Context, workspaceID string) (store.PlatformConnection, error) {
	if !uuidOK(workspaceID) {
		return store.PlatformConnection{}, store.NotFound("platform connection")
	}
	var c store.PlatformConnection
	var disabled sql.NullTime
	var scopes string
	err := p.db.QueryRowContext(ctx, `SELECT workspace_id, token_sealed, scopes, disabled_at, created_at FROM platform_connections WHERE workspace_id = $1`,
		workspaceID).Scan(&c.WorkspaceID, &c.TokenSealed, &scopes, &disabled, &c.CreatedAt)
	c.Scopes, c.DisabledAt, c.CreatedAt = strings.Fields(scopes), timePtr(disabled), c.CreatedAt.UTC()
	return c, pgErr("platform connection", err)
}

func (p *Store) DisablePlatformConnection(ctx context.Context, workspaceID string, now time.Time) error {
	if !uuidOK(workspaceID) {
		return store.NotFound("platform connection")
	}
	res, err := p.db.ExecContext(ctx, `UPDATE platform_connections SET disabled_at = coalesce(disabled_at, $2) WHERE workspace_id = $1`,
		workspaceID, store.Now(now))
	return pgErr("disable platform connection", affected(res, err, sql.ErrNoRows))
}

func (p *Store) DisconnectPlatform(ctx context.Context, workspaceID string) error {
	if !uuidOK(workspaceID) {
		return nil
	}
	return p.tx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE sites SET platform_site_id = NULL, platform_verified = false, platform_webhook_id = NULL,
			platform_script_id = NULL, platform_script_version = NULL, platform_script_at = NULL WHERE workspace_id = $1 AND platform_verified`, workspaceID); err != nil {
			return pgErr("unlink platform sites", err)
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM platform_connections WHERE workspace_id = $1`, workspaceID)
		return pgErr("delete platform connection", err)
	})
}

func (p *Store) ImportPlatformSite(ctx context.Context, s store.Site, maxSites int) (store.Site, bool, error) {
	s.Schedule = ""
	s.Normalize()
	if err := s.Validate(p.Rules); err != nil {
		return store.Site{}, false, err
	}
	s.WorkspaceID = siteWorkspace(s)
	if !uuidOK(s.ID, s.UserID, s.WorkspaceID) || s.PlatformSiteID == "" {
		return store.Site{}, false, store.NotFound("site")
	}
	var out store.Site
	var created bool
	err := p.tx(ctx, func(tx *sql.Tx) error {
		if err := lockWorkspace(ctx, tx, s.WorkspaceID); err != nil {
			return err
		}
		old, err := scanSite(tx.QueryRowContext(ctx, `SELECT `+siteCols+` FROM sites WHERE platform_site_id = $1 FOR UPDATE`, s.PlatformSiteID))
		mine := s.ID // the workspace's site this import writes: a duplicate is another one
		if err == nil && old.WorkspaceID == s.WorkspaceID {
			mine = old.ID
		}
		if err := sameDomain(ctx, tx, s.WorkspaceID, s.Domain, mine); err != nil {
			return err
		}
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return pgErr("import platform site", err)
		case old.WorkspaceID == s.WorkspaceID:
			// lastPublished never moves backwards: a publish seen by the webhook is newer
			// than the platform's listing read before it.
			out, err = scanSite(tx.QueryRowContext(ctx, `UPDATE sites SET name = $2, domain = $3, last_published = greatest(last_published, $4),
				pages = $5, platform_verified = true WHERE id = $1 RETURNING `+siteCols,
				old.ID, s.Name, s.Domain, nullTime(s.LastPublished), pq.StringArray(nonNil(s.Pages))))
			return pgErr("import platform site", err)
		case old.PlatformVerified:
			return fmt.Errorf("import platform site: another workspace's connection holds it: %w", store.ErrConflict)
		default: // another workspace's hand-typed link: dropped, the site and its history stay theirs
			if _, err := tx.ExecContext(ctx, `UPDATE sites SET platform_site_id = NULL WHERE id = $1`, old.ID); err != nil {
				return pgErr("import platform site", err)
			}
		}
		if err := withinSites(ctx, tx, s.WorkspaceID, maxSites); err != nil {
			return err
		}
		created = true
		out, err = scanSite(tx.QueryRowContext(ctx, `INSERT INTO sites
			(id, user_id, name, domain, platform_site_id, platform_verified, last_published, pages, created_at, workspace_id)
			VALUES ($1, $2, $3, $4, $5, true, $6, $7, $8, $9) RETURNING `+siteCols,
			s.ID, s.UserID, s.Name, s.Domain, s.PlatformSiteID, nullTime(s.LastPublished), pq.StringArray(nonNil(s.Pages)), store.Now(s.CreatedAt), s.WorkspaceID))
		return pgErr("import platform site", err)
	})
	return out, created && err == nil, err
}

func (p *Store) SetPlatformScript(ctx context.Context, userID, siteID string, sc *store.PlatformScript) error {
	if !uuidOK(userID, siteID) {
		return store.NotFound("site")
	}
	var id, version sql.NullString
	var at sql.NullTime
	if sc != nil {
		id, version, at = sql.NullString{String: sc.ID, Valid: true}, sql.NullString{String: sc.Version, Valid: true}, sql.NullTime{Time: store.Now(sc.AppliedAt), Valid: true}
	}
	res, err := p.db.ExecContext(ctx, `UPDATE sites SET platform_script_id = $3, platform_script_version = $4, platform_script_at = $5
		WHERE id = $1 AND `+writable("workspace_id", 2), siteID, userID, id, version, at)
	return pgErr("set platform script", affected(res, err, sql.ErrNoRows))
}

func (p *Store) SetPlatformWebhook(ctx context.Context, userID, siteID, webhookID string) error {
	if !uuidOK(userID, siteID) {
		return store.NotFound("site")
	}
	res, err := p.db.ExecContext(ctx, `UPDATE sites SET platform_webhook_id = $3 WHERE id = $1 AND `+readable("workspace_id", 2),
		siteID, userID, nullString(webhookID))
	return pgErr("set platform webhook", affected(res, err, sql.ErrNoRows))
}

func (p *Store) SetSitePages(ctx context.Context, userID, siteID, platformSiteID string, pages []string) error {
	pages, err := store.ValidPages(pages, p.Rules)
	if err != nil {
		return err
	}
	if !uuidOK(userID, siteID) || platformSiteID == "" {
		return store.NotFound("site")
	}
	res, err := p.db.ExecContext(ctx, `UPDATE sites SET pages = $4
		WHERE id = $1 AND `+readable("workspace_id", 2)+` AND platform_site_id = $3 AND platform_verified`,
		siteID, userID, platformSiteID, pq.StringArray(nonNil(pages)))
	return pgErr("set site pages", affected(res, err, sql.ErrNoRows))
}
