package memory

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"time"

	"sitepulse/store"
)

func (m *Store) RecordPublish(ctx context.Context, p store.Publish) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sites[p.SiteID]; !ok {
		return store.NotFound("site")
	}
	if sc, ok := m.scans[p.ScanID]; p.ScanID != "" && (!ok || sc.SiteID != p.SiteID) {
		return store.NotFound("site")
	}
	p.Normalize()
	p.PublishedOn = store.Now(p.PublishedOn)
	p.Domains = slices.Clone(p.Domains)
	m.publishes = append(m.publishes, p)
	return nil
}

// publish copies a kept publish as Postgres reads it back; a deleted scan leaves no link.
func (m *Store) publish(p store.Publish) store.Publish {
	if _, ok := m.scans[p.ScanID]; !ok {
		p.ScanID = ""
	}
	p.Domains = slices.Clone(p.Domains)
	if p.Domains == nil {
		p.Domains = []string{}
	}
	return p
}

func (m *Store) Publishes(ctx context.Context, userID, siteID string, since time.Time, limit int) ([]store.Publish, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedSite(userID, siteID); !ok {
		return nil, store.NotFound("site")
	}
	out := []store.Publish{}
	for _, p := range m.publishes {
		if p.SiteID == siteID && !p.PublishedOn.Before(since) {
			out = append(out, m.publish(p))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].PublishedOn.Equal(out[j].PublishedOn) {
			return out[i].PublishedOn.Before(out[j].PublishedOn)
		}
		return out[i].ID < out[j].ID
	})
	if limit >= 0 && len(out) > limit {
		out = out[len(out)-limit:]
	}
	return out, nil
}

func (m *Store) PublishesOfScans(ctx context.Context, userID string, scanIDs []string) (map[string]store.Publish, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]store.Publish{}
	for _, p := range m.publishes {
		if p.ScanID == "" || !slices.Contains(scanIDs, p.ScanID) {
			continue
		}
		if _, ok := m.ownedSite(userID, p.SiteID); ok {
			if p = m.publish(p); p.ScanID != "" {
				out[p.ScanID] = p
			}
		}
	}
	return out, nil
}

func (m *Store) EnqueueFollowUp(ctx context.Context, siteID string, runAt time.Time) (store.FollowUp, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	site, ok := m.sites[siteID]
	if !ok {
		return "", store.NotFound("site")
	}
	for _, s := range m.scans {
		if s.SiteID == siteID && s.Status == store.StatusQueued {
			return store.FollowUpCovered, nil
		}
	}
	for _, j := range m.jobs {
		var f store.FollowUpJob
		if j.Kind == store.KindFollowUp && j.State == store.JobAvailable && json.Unmarshal(j.Args, &f) == nil && f.SiteID == siteID {
			return store.FollowUpJoined, nil
		}
	}
	if _, err := m.insertJob(store.KindFollowUp, store.FollowUpJob{SiteID: siteID, WorkspaceID: site.WorkspaceID}, "", runAt, time.Now()); err != nil {
		return "", err
	}
	return store.FollowUpQueued, nil
}
