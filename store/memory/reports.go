package memory

import (
	"context"
	"fmt"
	"sort"
	"time"

	"sitepulse/store"
)

func cloneReport(r store.Report) store.Report {
	r.ExpiresAt, r.RevokedAt = cloneTime(r.ExpiresAt), cloneTime(r.RevokedAt)
	return r
}

func (m *Store) CreateReport(ctx context.Context, r store.Report) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.createReportLocked(r)
}

func (m *Store) CreateReportWithin(ctx context.Context, r store.Report, max int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, o := range m.reports {
		if o.UserID == r.UserID && o.RevokedAt == nil && (o.ExpiresAt == nil || o.ExpiresAt.After(r.CreatedAt)) {
			n++
		}
	}
	if n >= max {
		return fmt.Errorf("%d active reports: %w", n, store.ErrLimit)
	}
	return m.createReportLocked(r)
}

func (m *Store) createReportLocked(r store.Report) error {
	if _, ok := m.ownedScan(r.UserID, r.ScanID); !ok {
		return store.NotFound("scan")
	}
	r.CreatedAt = store.Now(r.CreatedAt)
	if r.ExpiresAt != nil {
		r.ExpiresAt = tp(*r.ExpiresAt)
	}
	r.RevokedAt = nil
	r.SiteID = m.scans[r.ScanID].SiteID
	r.WorkspaceID = m.sites[r.SiteID].WorkspaceID
	m.reports[r.ID] = cloneReport(r)
	return nil
}

func (m *Store) ReportByHash(ctx context.Context, tokenHash string) (store.Report, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.reports {
		if r.TokenHash == tokenHash {
			return cloneReport(r), nil
		}
	}
	return store.Report{}, store.NotFound("report")
}

func (m *Store) ReportsOf(ctx context.Context, userID string) ([]store.Report, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []store.Report{}
	for _, r := range m.reports {
		if m.canRead(userID, r.WorkspaceID) {
			out = append(out, cloneReport(r))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

func (m *Store) RevokeReport(ctx context.Context, userID, reportID string, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.reports[reportID]
	if !ok || !m.canEdit(userID, r.WorkspaceID) {
		return store.NotFound("report")
	}
	if r.RevokedAt == nil {
		r.RevokedAt = tp(now)
		m.reports[reportID] = r
	}
	return nil
}

func (m *Store) ReportScan(ctx context.Context, r store.Report) (store.Scan, store.Site, []store.PageResult, error) {
	m.mu.Lock()
	s, ok := m.scans[r.ScanID]
	site, siteOK := m.sites[s.SiteID]
	// Read as a member of the report's workspace, as Postgres does.
	for k, mb := range m.members {
		if k[0] == r.WorkspaceID && r.WorkspaceID != "" {
			r.UserID = k[1]
			if mb.Role == store.RoleOwner {
				break
			}
		}
	}
	m.mu.Unlock()
	if !ok || !siteOK || !m.canRead(r.UserID, site.WorkspaceID) {
		return store.Scan{}, store.Site{}, nil, store.NotFound("scan")
	}
	results, err := m.PageResults(ctx, r.UserID, r.ScanID)
	if err != nil {
		return store.Scan{}, store.Site{}, nil, err
	}
	return cloneScan(s), cloneSite(site), results, nil
}

func (m *Store) SeenDelivery(ctx context.Context, bodyHash string, since, now time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if last, ok := m.deliveries[bodyHash]; ok && last.After(since) {
		return true, nil
	}
	// Keys seen before the window are dropped once a window has passed since the last sweep:
	// one pass over the map per window, so each delivery pays a constant share.
	if !since.Before(m.deliveriesSwept) {
		for h, last := range m.deliveries {
			if last.Before(since) {
				delete(m.deliveries, h)
			}
		}
		m.deliveriesSwept = now
	}
	m.deliveries[bodyHash] = store.Now(now)
	return false, nil
}

func (m *Store) ForgetDelivery(ctx context.Context, keys ...string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		delete(m.deliveries, k)
	}
	return nil
}
