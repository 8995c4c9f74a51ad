package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"sitepulse/store"
)

type memState struct {
	userID    string
	expiresAt time.Time
}

func (m *Store) CreatePlatformState(ctx context.Context, stateHash, userID string, now, expiresAt time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.users[userID]; !ok {
		return store.NotFound("user")
	}
	if _, ok := m.platformStates[stateHash]; ok {
		return fmt.Errorf("platform state: %w", store.ErrConflict)
	}
	type live struct {
		hash      string
		expiresAt time.Time
	}
	var lives []live
	for h, st := range m.platformStates {
		switch {
		case st.userID != userID:
		case !st.expiresAt.After(now):
			delete(m.platformStates, h)
		default:
			lives = append(lives, live{h, st.expiresAt})
		}
	}
	slices.SortFunc(lives, func(x, y live) int { return y.expiresAt.Compare(x.expiresAt) })
	for _, st := range lives[min(len(lives), store.MaxPlatformStates-1):] {
		delete(m.platformStates, st.hash)
	}
	m.platformStates[stateHash] = memState{userID: userID, expiresAt: store.Now(expiresAt)}
	return nil
}

func (m *Store) TakePlatformState(ctx context.Context, stateHash, userID string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.platformStates[stateHash]
	delete(m.platformStates, stateHash)
	for h, other := range m.platformStates { // abandoned connects do not pile up
		if !other.expiresAt.After(now) {
			delete(m.platformStates, h)
		}
	}
	if !ok || st.userID != userID || !st.expiresAt.After(now) {
		return store.NotFound("platform state")
	}
	return nil
}

func (m *Store) SavePlatformConnection(ctx context.Context, c store.PlatformConnection) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.workspaces[c.WorkspaceID]; !ok {
		return store.NotFound("workspace")
	}
	c.DisabledAt, c.CreatedAt, c.Scopes = nil, store.Now(c.CreatedAt), slices.Clone(c.Scopes)
	m.connections[c.WorkspaceID] = c
	return nil
}

func (m *Store) PlatformConnection(ctx context.Context, workspaceID string) (store.PlatformConnection, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.connections[workspaceID]
	if !ok {
		return store.PlatformConnection{}, store.NotFound("platform connection")
	}
	c.DisabledAt, c.Scopes = cloneTime(c.DisabledAt), slices.Clone(c.Scopes)
	return c, nil
}

func (m *Store) DisablePlatformConnection(ctx context.Context, workspaceID string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.connections[workspaceID]
	if !ok {
		return store.NotFound("platform connection")
	}
	if c.DisabledAt == nil {
		c.DisabledAt = tp(now)
	}
	m.connections[workspaceID] = c
	return nil
}

func (m *Store) DisconnectPlatform(ctx context.Context, workspaceID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, s := range m.sites {
		if s.WorkspaceID == workspaceID && s.PlatformVerified {
			s.PlatformSiteID, s.PlatformVerified, s.PlatformWebhookID, s.PlatformScript = "", false, "", nil
			m.sites[id] = s
		}
	}
	delete(m.connections, workspaceID)
	return nil
}

func (m *Store) ImportPlatformSite(ctx context.Context, s store.Site, maxSites int) (store.Site, bool, error) {
	s.Schedule = ""
	s.Normalize()
	if err := s.Validate(m.Rules); err != nil {
		return store.Site{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s.WorkspaceID = siteWorkspace(s)
	if _, ok := m.users[s.UserID]; !ok || s.PlatformSiteID == "" {
		return store.Site{}, false, store.NotFound("site")
	}
	mine := s.ID // the workspace's site this import would write: a duplicate is another one
	for _, old := range m.sites {
		if old.PlatformSiteID == s.PlatformSiteID && old.WorkspaceID == s.WorkspaceID {
			mine = old.ID
		}
	}
	if err := m.sameDomain(s.WorkspaceID, s.Domain, mine); err != nil {
		return store.Site{}, false, err
	}
	for id, old := range m.sites {
		if old.PlatformSiteID != s.PlatformSiteID {
			continue
		}
		if old.WorkspaceID != s.WorkspaceID && !old.PlatformVerified {
			// s will be created: the cap is checked before the other workspace's link is dropped.
			if err := m.withinSites(s.WorkspaceID, maxSites); err != nil {
				return store.Site{}, false, err
			}
		}
		switch {
		case old.WorkspaceID == s.WorkspaceID:
			old.Name, old.Domain, old.Pages, old.PlatformVerified = s.Name, s.Domain, slices.Clone(s.Pages), true
			if s.LastPublished != nil && (old.LastPublished == nil || s.LastPublished.After(*old.LastPublished)) { // never backwards
				old.LastPublished = tp(*s.LastPublished)
			}
			m.sites[id] = cloneSite(old)
			return cloneSite(old), false, nil
		case old.PlatformVerified:
			return store.Site{}, false, fmt.Errorf("import platform site: another workspace's connection holds it: %w", store.ErrConflict)
		default: // another workspace's hand-typed link: dropped, the site and its history stay theirs
			old.PlatformSiteID = ""
			m.sites[id] = old
		}
	}
	if err := m.withinSites(s.WorkspaceID, maxSites); err != nil {
		return store.Site{}, false, err
	}
	s.CreatedAt, s.PlatformVerified, s.PlatformWebhookID = store.Now(s.CreatedAt), true, ""
	s.HealthScore, s.Founding, s.Schedule, s.NextScanAt = nil, false, store.ScheduleOff, nil
	if s.LastPublished != nil {
		s.LastPublished = tp(*s.LastPublished)
	}
	m.sites[s.ID] = cloneSite(s)
	return cloneSite(s), true, nil
}

func (m *Store) SetPlatformScript(ctx context.Context, userID, siteID string, sc *store.PlatformScript) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.editableSite(userID, siteID)
	if !ok {
		return store.NotFound("site")
	}
	s.PlatformScript = nil
	if sc != nil {
		c := *sc
		c.AppliedAt = store.Now(c.AppliedAt)
		s.PlatformScript = &c
	}
	m.sites[siteID] = cloneSite(s)
	return nil
}

func (m *Store) SetPlatformWebhook(ctx context.Context, userID, siteID, webhookID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.ownedSite(userID, siteID)
	if !ok {
		return store.NotFound("site")
	}
	s.PlatformWebhookID = webhookID
	m.sites[siteID] = s
	return nil
}

func (m *Store) SetSitePages(ctx context.Context, userID, siteID, platformSiteID string, pages []string) error {
	pages, err := store.ValidPages(pages, m.Rules)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.ownedSite(userID, siteID)
	if !ok || platformSiteID == "" || s.PlatformSiteID != platformSiteID || !s.PlatformVerified {
		return store.NotFound("site")
	}
	s.Pages = slices.Clone(pages)
	m.sites[siteID] = cloneSite(s)
	return nil
}
