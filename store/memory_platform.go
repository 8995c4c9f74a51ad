package store

import (
	"context"
	"fmt"
	"slices"
	"time"
)

type memState struct {
	userID    string
	expiresAt time.Time
}

func (m *Memory) CreatePlatformState(ctx context.Context, stateHash, userID string, now, expiresAt time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.users[userID]; !ok {
		return notFound("user")
	}
	if _, ok := m.platformStates[stateHash]; ok {
		return fmt.Errorf("platform state: %w", ErrConflict)
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
	for _, st := range lives[min(len(lives), MaxPlatformStates-1):] {
		delete(m.platformStates, st.hash)
	}
	m.platformStates[stateHash] = memState{userID: userID, expiresAt: Now(expiresAt)}
	return nil
}

func (m *Memory) TakePlatformState(ctx context.Context, stateHash, userID string, now time.Time) error {
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
		return notFound("platform state")
	}
	return nil
}

func (m *Memory) SavePlatformConnection(ctx context.Context, c PlatformConnection) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.users[c.UserID]; !ok {
		return notFound("user")
	}
	c.DisabledAt, c.CreatedAt = nil, Now(c.CreatedAt)
	m.connections[c.UserID] = c
	return nil
}

func (m *Memory) PlatformConnection(ctx context.Context, userID string) (PlatformConnection, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.connections[userID]
	if !ok {
		return PlatformConnection{}, notFound("platform connection")
	}
	c.DisabledAt = cloneTime(c.DisabledAt)
	return c, nil
}

func (m *Memory) DisablePlatformConnection(ctx context.Context, userID string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.connections[userID]
	if !ok {
		return notFound("platform connection")
	}
	if c.DisabledAt == nil {
		c.DisabledAt = tp(now)
	}
	m.connections[userID] = c
	return nil
}

func (m *Memory) DisconnectPlatform(ctx context.Context, userID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, s := range m.sites {
		if s.UserID == userID && s.PlatformVerified {
			s.PlatformSiteID, s.PlatformVerified, s.PlatformWebhookID = "", false, ""
			m.sites[id] = s
		}
	}
	delete(m.connections, userID)
	return nil
}

func (m *Memory) ImportPlatformSite(ctx context.Context, s Site, maxSites int) (Site, bool, error) {
	s.Schedule = ""
	s.Normalize()
	if err := s.Validate(m.Rules); err != nil {
		return Site{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.users[s.UserID]; !ok || s.PlatformSiteID == "" {
		return Site{}, false, notFound("site")
	}
	mine := s.ID // the user's site this import would write: a duplicate is another one
	for _, old := range m.sites {
		if old.PlatformSiteID == s.PlatformSiteID && old.UserID == s.UserID {
			mine = old.ID
		}
	}
	if err := m.sameDomain(s.UserID, s.Domain, mine); err != nil {
		return Site{}, false, err
	}
	for id, old := range m.sites {
		if old.PlatformSiteID != s.PlatformSiteID {
			continue
		}
		if old.UserID != s.UserID && !old.PlatformVerified {
			// s will be created: the cap is checked before the other user's link is dropped.
			if err := m.withinSites(s.UserID, maxSites); err != nil {
				return Site{}, false, err
			}
		}
		switch {
		case old.UserID == s.UserID:
			old.Name, old.Domain, old.Pages, old.PlatformVerified = s.Name, s.Domain, slices.Clone(s.Pages), true
			if s.LastPublished != nil && (old.LastPublished == nil || s.LastPublished.After(*old.LastPublished)) { // never backwards
				old.LastPublished = tp(*s.LastPublished)
			}
			m.sites[id] = cloneSite(old)
			return cloneSite(old), false, nil
		case old.PlatformVerified:
			return Site{}, false, fmt.Errorf("import platform site: another account's connection holds it: %w", ErrConflict)
		default: // another user's hand-typed link: dropped, the site and its history stay theirs
			old.PlatformSiteID = ""
			m.sites[id] = old
		}
	}
	if err := m.withinSites(s.UserID, maxSites); err != nil {
		return Site{}, false, err
	}
	s.CreatedAt, s.PlatformVerified, s.PlatformWebhookID = Now(s.CreatedAt), true, ""
	s.HealthScore, s.Founding, s.Schedule, s.NextScanAt = nil, false, ScheduleOff, nil
	if s.LastPublished != nil {
		s.LastPublished = tp(*s.LastPublished)
	}
	m.sites[s.ID] = cloneSite(s)
	return cloneSite(s), true, nil
}

func (m *Memory) SetPlatformWebhook(ctx context.Context, userID, siteID, webhookID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.ownedSite(userID, siteID)
	if !ok {
		return notFound("site")
	}
	s.PlatformWebhookID = webhookID
	m.sites[siteID] = s
	return nil
}

func (m *Memory) SetSitePages(ctx context.Context, userID, siteID, platformSiteID string, pages []string) error {
	pages, err := validPages(pages, m.Rules)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.ownedSite(userID, siteID)
	if !ok || platformSiteID == "" || s.PlatformSiteID != platformSiteID || !s.PlatformVerified {
		return notFound("site")
	}
	s.Pages = slices.Clone(pages)
	m.sites[siteID] = cloneSite(s)
	return nil
}
