package memory

import (
	"context"

	"sitepulse/store"
)

func (m *Store) SetSiteAccess(ctx context.Context, userID string, a store.SiteAccess) error {
	if err := a.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.editableSite(userID, a.SiteID); !ok {
		return store.NotFound("site")
	}
	if a.Kind == store.AccessNone {
		delete(m.access, a.SiteID)
		return nil
	}
	a.UpdatedAt = store.Now(a.UpdatedAt)
	m.access[a.SiteID] = a
	return nil
}

func (m *Store) SiteAccess(ctx context.Context, userID, siteID string) (store.SiteAccess, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedSite(userID, siteID); !ok {
		return store.SiteAccess{}, store.NotFound("site")
	}
	return m.accessOf(siteID), nil
}

func (m *Store) SiteAccessForScan(ctx context.Context, siteID string) (store.SiteAccess, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sites[siteID]; !ok {
		return store.SiteAccess{}, store.NotFound("site")
	}
	return m.accessOf(siteID), nil
}

// accessOf is a site's setting, AccessNone when it has none; the caller holds m.mu.
func (m *Store) accessOf(siteID string) store.SiteAccess {
	if a, ok := m.access[siteID]; ok {
		return a
	}
	return store.SiteAccess{SiteID: siteID, Kind: store.AccessNone}
}
