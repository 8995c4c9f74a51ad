package memory

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"sitepulse/store"
)

func cloneSite(s store.Site) store.Site {
	s.Pages = slices.Clone(s.Pages)
	if s.Pages == nil {
		s.Pages = []string{}
	}
	if s.HealthScore != nil {
		h := *s.HealthScore
		s.HealthScore = &h
	}
	s.LastPublished = cloneTime(s.LastPublished)
	s.NextScanAt = cloneTime(s.NextScanAt)
	if s.PlatformScript != nil {
		c := *s.PlatformScript
		s.PlatformScript = &c
	}
	return s
}

func (m *Store) platformTaken(platformID, exceptSite string) bool {
	if platformID == "" {
		return false
	}
	for _, o := range m.sites {
		if o.PlatformSiteID == platformID && o.ID != exceptSite {
			return true
		}
	}
	return false
}

func (m *Store) CreateSite(ctx context.Context, s store.Site) error {
	s.Normalize()
	if err := s.Validate(m.Rules); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.createSiteLocked(s)
}

func (m *Store) CreateSiteWithin(ctx context.Context, s store.Site, max int) error {
	s.Normalize()
	if err := s.Validate(m.Rules); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.withinSites(siteWorkspace(s), max); err != nil {
		return err
	}
	if err := m.sameDomain(siteWorkspace(s), s.Domain, s.ID); err != nil {
		return err
	}
	return m.createSiteLocked(s)
}

// siteWorkspace is the workspace a new site goes to: its own, else its creator's personal one.
func siteWorkspace(s store.Site) string {
	if s.WorkspaceID != "" {
		return s.WorkspaceID
	}
	return store.PersonalWorkspace(s.UserID)
}

// sameDomain answers a *store.DuplicateError when the workspace has a site other than
// exceptSite on the domain (store.DomainKey); the caller holds m.mu. Of several, the oldest is
// named.
func (m *Store) sameDomain(workspaceID, domain, exceptSite string) error {
	var first *store.Site
	for _, o := range m.sites {
		if o.WorkspaceID == workspaceID && o.ID != exceptSite && store.DomainKey(o.Domain) == store.DomainKey(domain) &&
			(first == nil || o.CreatedAt.Before(first.CreatedAt) || (o.CreatedAt.Equal(first.CreatedAt) && o.ID < first.ID)) {
			o := o
			first = &o
		}
	}
	if first != nil {
		return &store.DuplicateError{Domain: store.DomainKey(domain), SiteID: first.ID, Name: first.Name}
	}
	return nil
}

// withinSites answers ErrLimit when the workspace already has max sites; the caller holds m.mu.
func (m *Store) withinSites(workspaceID string, max int) error {
	n := 0
	for _, o := range m.sites {
		if o.WorkspaceID == workspaceID {
			n++
		}
	}
	if n >= max {
		return fmt.Errorf("%d sites: %w", n, store.ErrLimit)
	}
	return nil
}

func (m *Store) createSiteLocked(s store.Site) error {
	if _, ok := m.users[s.UserID]; !ok {
		return store.NotFound("user")
	}
	s.WorkspaceID = siteWorkspace(s)
	if !m.canEdit(s.UserID, s.WorkspaceID) {
		return store.NotFound("workspace")
	}
	if m.platformTaken(s.PlatformSiteID, "") {
		return fmt.Errorf("platform site id %q: %w", s.PlatformSiteID, store.ErrConflict)
	}
	s.CreatedAt, s.Schedule = store.Now(s.CreatedAt), store.ScheduleOrDefault(s.Schedule)
	s.PlatformVerified, s.PlatformWebhookID = false, "" // only ImportPlatformSite verifies
	if s.LastPublished != nil {
		s.LastPublished = tp(*s.LastPublished)
	}
	if s.NextScanAt != nil {
		s.NextScanAt = tp(*s.NextScanAt)
	}
	m.sites[s.ID] = cloneSite(s)
	return nil
}

func (m *Store) UpdateSite(ctx context.Context, s store.Site) error {
	s.Normalize()
	if err := s.Validate(m.Rules); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.sites[s.ID]
	if !ok || !m.canEdit(s.UserID, old.WorkspaceID) {
		return store.NotFound("site")
	}
	if err := m.sameDomain(old.WorkspaceID, s.Domain, s.ID); err != nil {
		return err
	}
	old.Name, old.Domain, old.Founding = s.Name, s.Domain, s.Founding
	old.Pages = slices.Clone(s.Pages)
	if sched := store.ScheduleOrDefault(s.Schedule); sched != old.Schedule {
		old.Schedule, old.NextScanAt = sched, nil
		if s.NextScanAt != nil {
			old.NextScanAt = tp(*s.NextScanAt)
		}
	}
	m.sites[s.ID] = cloneSite(old)
	return nil
}

func (m *Store) DeleteSite(ctx context.Context, userID, siteID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sites[siteID]
	if !ok || !m.canEdit(userID, s.WorkspaceID) {
		return store.NotFound("site")
	}
	m.dropSite(siteID)
	return nil
}

// dropSite deletes a site with its budgets, rules, scans, results, queued jobs and the reports
// of its scans; the caller holds m.mu. A running scan's job is gone, so its worker stops as
// Postgres's cascade makes it stop.
func (m *Store) dropSite(siteID string) {
	delete(m.sites, siteID)
	delete(m.access, siteID)
	m.dropCrux(siteID)
	m.dropBeacon(siteID)
	delete(m.budgets, siteID)
	for id, r := range m.rules {
		if r.SiteID == siteID {
			delete(m.rules, id)
		}
	}
	for id, sc := range m.scans {
		if sc.SiteID != siteID {
			continue
		}
		delete(m.scans, id)
		delete(m.results, id)
		for jid, j := range m.jobs {
			if j.ScanID == id {
				delete(m.jobs, jid)
			}
		}
		for rid, r := range m.reports {
			if r.ScanID == id {
				delete(m.reports, rid)
			}
		}
	}
}

// ownedSite finds a site userID may read: a member of its workspace.
func (m *Store) ownedSite(userID, siteID string) (store.Site, bool) {
	s, ok := m.sites[siteID]
	if !ok || !m.canRead(userID, s.WorkspaceID) {
		return store.Site{}, false
	}
	return s, true
}

// editableSite finds a site userID may change: an owner or editor of its workspace.
func (m *Store) editableSite(userID, siteID string) (store.Site, bool) {
	s, ok := m.sites[siteID]
	if !ok || !m.canEdit(userID, s.WorkspaceID) {
		return store.Site{}, false
	}
	return s, true
}

func (m *Store) Site(ctx context.Context, userID, siteID string) (store.Site, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.ownedSite(userID, siteID)
	if !ok {
		return store.Site{}, store.NotFound("site")
	}
	return cloneSite(s), nil
}

func (m *Store) SitesOf(ctx context.Context, userID string) ([]store.Site, error) {
	return m.sitesWhere(func(s store.Site) bool { return m.canRead(userID, s.WorkspaceID) })
}

func (m *Store) SitesIn(ctx context.Context, userID, workspaceID string) ([]store.Site, error) {
	return m.sitesWhere(func(s store.Site) bool { return s.WorkspaceID == workspaceID && m.canRead(userID, s.WorkspaceID) })
}

func (m *Store) sitesWhere(keep func(store.Site) bool) ([]store.Site, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []store.Site{}
	for _, s := range m.sites {
		if keep(s) {
			out = append(out, cloneSite(s))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

func (m *Store) SiteByPlatformID(ctx context.Context, platformSiteID string) (store.Site, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if platformSiteID == "" {
		return store.Site{}, store.NotFound("site")
	}
	for _, s := range m.sites {
		if s.PlatformSiteID == platformSiteID {
			return cloneSite(s), nil
		}
	}
	return store.Site{}, store.NotFound("site")
}

func (m *Store) MarkPublished(ctx context.Context, siteID string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sites[siteID]
	if !ok {
		return store.NotFound("site")
	}
	if s.LastPublished == nil || at.After(*s.LastPublished) { // never backwards
		s.LastPublished = tp(at)
	}
	m.sites[siteID] = s
	return nil
}

func (m *Store) Budgets(ctx context.Context, userID, siteID string) (map[string]store.Budget, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedSite(userID, siteID); !ok {
		return nil, store.NotFound("site")
	}
	return m.siteBudgets(siteID), nil
}

// siteBudgets copies a site's budgets; the caller holds m.mu.
func (m *Store) siteBudgets(siteID string) map[string]store.Budget {
	out := map[string]store.Budget{}
	for k, v := range m.budgets[siteID] {
		out[k] = v
	}
	return out
}

func (m *Store) SetBudgets(ctx context.Context, userID, siteID string, budgets map[string]store.Budget) error {
	if err := store.ValidBudgets(budgets); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.editableSite(userID, siteID); !ok {
		return store.NotFound("site")
	}
	b := map[string]store.Budget{}
	for k, v := range budgets {
		b[k] = v.WithDefault()
	}
	m.budgets[siteID] = b
	return nil
}

func (m *Store) AlertRules(ctx context.Context, userID, siteID string) ([]store.AlertRule, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedSite(userID, siteID); !ok {
		return nil, store.NotFound("site")
	}
	return m.siteRules(siteID), nil
}

// siteRules lists a site's alert rules in order; the caller holds m.mu.
func (m *Store) siteRules(siteID string) []store.AlertRule {
	out := []store.AlertRule{}
	for _, r := range m.rules {
		if r.SiteID == siteID {
			out = append(out, r)
		}
	}
	sortRules(out)
	return out
}

// sortRules orders alert rules as both stores list them: by creation, then id.
func sortRules(out []store.AlertRule) {
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
}

func (m *Store) AddAlertRule(ctx context.Context, userID string, r store.AlertRule) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.editableSite(userID, r.SiteID); !ok {
		return store.NotFound("site")
	}
	r.CreatedAt = store.Now(r.CreatedAt)
	m.rules[r.ID] = r
	return nil
}

func (m *Store) UpdateAlertRule(ctx context.Context, userID string, r store.AlertRule) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.rules[r.ID]
	if _, owned := m.editableSite(userID, r.SiteID); !ok || !owned || old.SiteID != r.SiteID {
		return store.NotFound("alert rule")
	}
	old.Metric, old.Operator, old.Threshold = r.Metric, r.Operator, r.Threshold
	m.rules[r.ID] = old
	return nil
}

func (m *Store) DeleteAlertRule(ctx context.Context, userID, siteID, ruleID string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rules[ruleID]
	if _, owned := m.editableSite(userID, siteID); !ok || !owned || r.SiteID != siteID {
		return store.NotFound("alert rule")
	}
	delete(m.rules, ruleID)
	return nil
}
