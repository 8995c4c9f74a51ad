package memory

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	"sitepulse/store"
)

// rowBytes is about how much a page row takes, as Postgres's page_row_bytes counts it: 150 B
// and its result as JSON (uncompressed here), its explain data and text.
func rowBytes(r memResult) int64 {
	n := int64(150 + len(r.err.Error))
	if r.result != nil {
		raw, _ := json.Marshal(r.result)
		n += int64(len(raw) + len(r.explain) + len(r.result.PagePath) + len(r.result.PageURL) + len(r.result.Strategy))
	} else {
		n += int64(len(r.err.PagePath) + len(r.err.PageURL) + len(r.err.Strategy))
	}
	return n
}

// scanBytes is scan_bytes: 300 B, the scan's page rows and its pictures. m.mu is held.
func (m *Store) scanBytes(scanID string) int64 {
	n := int64(300)
	for k, r := range m.results[scanID] {
		n += rowBytes(r)
		for _, im := range r.images {
			n += imageBytes(im, k.PagePath)
		}
	}
	return n
}

// releaseImages deletes up to limit pictures the store no longer keeps (Postgres's
// pruneImagesSQL) and takes their bytes off their scans: every picture of a prunable scan, and
// the unpinned pictures of a finished scan that is not one of the latest two completed scans
// with a result of the picture's page (a failed scan's always). It answers how many went; the
// caller holds m.mu.
func (m *Store) releaseImages(now time.Time, limit int, latest map[string][]string) int {
	// laterResults counts the completed scans of the scan's site, completed after it, that have
	// a result of page k.
	laterResults := func(s store.Scan, k store.PageKey) int {
		n := 0
		for _, o := range m.scans {
			if o.SiteID != s.SiteID || o.Status != store.StatusComplete || o.CompletedAt == nil ||
				!(o.CompletedAt.After(*s.CompletedAt) || o.CompletedAt.Equal(*s.CompletedAt) && o.ID > s.ID) {
				continue
			}
			if r, ok := m.results[o.ID][k]; ok && r.result != nil {
				n++
			}
		}
		return n
	}
	deleted := 0
	for id, s := range m.scans {
		if s.CompletedAt == nil || (s.Status != store.StatusComplete && s.Status != store.StatusFailed) {
			continue
		}
		prunable := m.prunable(s, now, latest)
		for k, r := range m.results[id] {
			if len(r.images) == 0 || deleted == limit {
				continue
			}
			if !prunable && (r.pinned || s.Status == store.StatusComplete && laterResults(s, k) < 2) {
				continue
			}
			n := min(len(r.images), limit-deleted) // the last pictures first, as a batch may stop midway
			for _, im := range r.images[len(r.images)-n:] {
				s.Bytes = max(s.Bytes-imageBytes(im, k.PagePath), 0)
			}
			r.images = r.images[:len(r.images)-n]
			m.results[id][k] = r
			deleted += n
		}
		m.scans[id] = s
	}
	return deleted
}

// prunable answers whether scan s's page details may go at now (Postgres's prunableSQL).
func (m *Store) prunable(s store.Scan, now time.Time, latest map[string][]string) bool {
	if s.DetailsPrunedAt != nil || (s.Status != store.StatusComplete && s.Status != store.StatusFailed) || s.CompletedAt == nil {
		return false
	}
	site, ok := m.sites[s.SiteID]
	if !ok {
		return false
	}
	w := m.workspaces[site.WorkspaceID]
	if w.RetentionDays <= 0 || !s.CompletedAt.Before(now.AddDate(0, 0, -w.RetentionDays)) {
		return false
	}
	for _, id := range latest[s.SiteID] {
		if id == s.ID {
			return false
		}
	}
	return true
}

func (m *Store) PruneDetails(ctx context.Context, now time.Time, limit int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	latest := m.latestTwo()
	released := m.releaseImages(now, limit, latest)
	deleted := 0
	for id, s := range m.scans {
		if !m.prunable(s, now, latest) {
			continue
		}
		for k, r := range m.results[id] {
			if deleted == limit {
				break
			}
			if len(r.images) > 0 {
				continue // its pictures go first, counted (releaseImages)
			}
			s.Bytes = max(s.Bytes-rowBytes(r), 0)
			delete(m.results[id], k)
			deleted++
		}
		m.scans[id] = s
	}
	marked := 0
	for id, s := range m.scans {
		if marked < limit && len(m.results[id]) == 0 && m.prunable(s, now, latest) {
			delete(m.results, id)
			s.DetailsPrunedAt = tp(now)
			s.Bytes = min(s.Bytes, store.PrunedScanBytes)
			m.scans[id] = s
			marked++
		}
	}
	return released + deleted + marked, nil
}

// latestTwo is the latest two completed scans of each site (prunable's latest). m.mu is held.
func (m *Store) latestTwo() map[string][]string {
	var done []store.Scan
	for _, s := range m.scans {
		if s.Status == store.StatusComplete && s.CompletedAt != nil {
			done = append(done, s)
		}
	}
	sort.Slice(done, func(i, j int) bool {
		a, b := done[i], done[j]
		if !a.CompletedAt.Equal(*b.CompletedAt) {
			return a.CompletedAt.After(*b.CompletedAt)
		}
		return a.ID > b.ID
	})
	latest := map[string][]string{}
	for _, s := range done {
		if len(latest[s.SiteID]) < 2 {
			latest[s.SiteID] = append(latest[s.SiteID], s.ID)
		}
	}
	return latest
}

// PruneMonths is Postgres's partition drop on the memory store's terms: the same months go
// (every scan of a month that ended before now pruned already or prunable), their scans'
// details at once, and it answers the months that had a scan not pruned yet, as Postgres does.
// There are no partitions to make ahead.
func (m *Store) PruneMonths(ctx context.Context, now time.Time) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	latest := m.latestTwo()
	kept := map[string]bool{} // the months with a scan not pruned yet: whether one is kept
	for _, s := range m.scans {
		if s.DetailsPrunedAt != nil {
			continue
		}
		month := s.CreatedAt.UTC().Format("2006-01")
		kept[month] = kept[month] || !m.prunable(s, now, latest)
	}
	var dropped []string
	for month, keep := range kept {
		start, _ := time.Parse("2006-01", month)
		if !keep && !start.AddDate(0, 1, 0).After(now) {
			dropped = append(dropped, month)
		}
	}
	sort.Strings(dropped)
	for id, s := range m.scans {
		month := s.CreatedAt.UTC().Format("2006-01")
		if i := sort.SearchStrings(dropped, month); i == len(dropped) || dropped[i] != month || s.DetailsPrunedAt != nil {
			continue
		}
		delete(m.results, id)
		s.DetailsPrunedAt = tp(now)
		s.Bytes = min(s.Bytes, store.PrunedScanBytes)
		m.scans[id] = s
	}
	return dropped, nil
}

func (m *Store) EnqueuePrune(ctx context.Context, now time.Time, every time.Duration) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, j := range m.jobs {
		if j.Kind != store.KindPrune {
			continue
		}
		if j.State == store.JobAvailable || j.State == store.JobRunning ||
			j.State == store.JobCompleted && j.FinalizedAt != nil && j.FinalizedAt.After(now.Add(-every)) {
			return false, nil
		}
	}
	if _, err := m.insertJob(store.KindPrune, store.PruneJob{}, "", now, now); err != nil {
		return false, err
	}
	return true, nil
}

func (m *Store) SetRetention(ctx context.Context, workspaceID string, days int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	w, ok := m.workspaces[workspaceID]
	if !ok {
		return store.NotFound("workspace")
	}
	w.RetentionDays = days
	m.workspaces[workspaceID] = w
	return nil
}

func (m *Store) WorkspaceBytes(ctx context.Context, workspaceID string) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for _, s := range m.scans {
		if site, ok := m.sites[s.SiteID]; ok && site.WorkspaceID == workspaceID {
			n += s.Bytes
		}
	}
	return n, nil
}
