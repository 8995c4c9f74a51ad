package postgres

import (
	"context"
	"database/sql"

	"sitepulse/store"
)

func (p *Store) SetSiteAccess(ctx context.Context, userID string, a store.SiteAccess) error {
	if err := a.Validate(); err != nil {
		return err
	}
	if !uuidOK(userID, a.SiteID) {
		return store.NotFound("site")
	}
	if a.Kind == store.AccessNone {
		return p.tx(ctx, func(tx *sql.Tx) error {
			if err := p.mayEdit(ctx, tx, userID, a.SiteID); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `DELETE FROM site_access WHERE site_id = $1`, a.SiteID)
			return pgErr("remove site access", err)
		})
	}
	res, err := p.db.ExecContext(ctx, `INSERT INTO site_access (site_id, kind, sealed, updated_at)
		SELECT id, $3, $4, $5 FROM sites WHERE id = $1 AND `+writable("workspace_id", 2)+`
		ON CONFLICT (site_id) DO UPDATE SET kind = EXCLUDED.kind, sealed = EXCLUDED.sealed, updated_at = EXCLUDED.updated_at`,
		a.SiteID, userID, a.Kind, a.Sealed, store.Now(a.UpdatedAt))
	return pgErr("set site access", affected(res, err, sql.ErrNoRows))
}

func (p *Store) SiteAccess(ctx context.Context, userID, siteID string) (store.SiteAccess, error) {
	if !uuidOK(userID, siteID) {
		return store.SiteAccess{}, store.NotFound("site")
	}
	return p.siteAccess(ctx, `s.id = $1 AND `+readable("s.workspace_id", 2), siteID, userID)
}

func (p *Store) SiteAccessForScan(ctx context.Context, siteID string) (store.SiteAccess, error) {
	if !uuidOK(siteID) {
		return store.SiteAccess{}, store.NotFound("site")
	}
	return p.siteAccess(ctx, `s.id = $1`, siteID)
}

// siteAccess reads the setting of the site where says, AccessNone when it has none.
func (p *Store) siteAccess(ctx context.Context, where string, args ...any) (store.SiteAccess, error) {
	var a store.SiteAccess
	var kind, sealed sql.NullString
	var at sql.NullTime
	err := p.db.QueryRowContext(ctx, `SELECT s.id, a.kind, a.sealed, a.updated_at
		FROM sites s LEFT JOIN site_access a ON a.site_id = s.id WHERE `+where, args...).Scan(&a.SiteID, &kind, &sealed, &at)
	if err != nil {
		return store.SiteAccess{}, pgErr("site", err)
	}
	a.Kind, a.Sealed = store.AccessNone, sealed.String
	if kind.Valid {
		a.Kind = store.AccessKind(kind.String)
	}
	if at.Valid {
		a.UpdatedAt = at.Time.UTC()
	}
	return a, nil
}
