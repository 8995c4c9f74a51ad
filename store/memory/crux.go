package memory

import (
	"context"
	"slices"
	"sort"
	"strings"
	"time"

	"sitepulse/store"
)

// cruxKey is crux_points' primary key.
type cruxKey struct {
	site, page string
	device     store.FieldDevice
	metric     string
	start      time.Time
}

// cruxTarget is crux_fetches' primary key.
type cruxTarget struct {
	site, page string
	device     store.FieldDevice
}

func (m *Store) EnqueueDueCrux(ctx context.Context, now time.Time, every time.Duration, limit int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cruxNext == nil {
		m.cruxNext = map[string]time.Time{}
	}
	return m.enqueueDue(m.cruxNext, now, now.Add(every), limit, func(s store.Site) (string, any) {
		return store.KindCrux, store.CruxJob{SiteID: s.ID, WorkspaceID: s.WorkspaceID}
	})
}

// enqueueDue enqueues, for up to limit sites whose next time in next is unset or at or before
// now, the job job answers (kind "" skips the site), and moves their next time to then: the
// weekly CrUX refresh's and the daily field check's schedule. Ordered as Postgres orders
// them: never done first, then by due time, then by id. m.mu is held.
func (m *Store) enqueueDue(next map[string]time.Time, now, then time.Time, limit int, job func(store.Site) (string, any)) (int, error) {
	type due struct {
		site  store.Site
		at    time.Time
		never bool
	}
	var list []due
	for _, s := range m.sites {
		at, ok := next[s.ID]
		if !ok || !at.After(now) {
			list = append(list, due{s, at, !ok})
		}
	}
	sort.Slice(list, func(a, b int) bool {
		if list[a].never != list[b].never {
			return list[a].never
		}
		if !list[a].at.Equal(list[b].at) {
			return list[a].at.Before(list[b].at)
		}
		return list[a].site.ID < list[b].site.ID
	})
	n := 0
	for _, d := range list {
		if n >= limit {
			break
		}
		kind, args := job(d.site)
		if kind == "" {
			continue
		}
		if _, err := m.insertJob(kind, args, "", now, now); err != nil {
			return n, err
		}
		next[d.site.ID] = store.Now(then)
		n++
	}
	return n, nil
}

func (m *Store) EnqueueDueField(ctx context.Context, now time.Time, limit int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fieldNext == nil {
		m.fieldNext = map[string]time.Time{}
	}
	since := store.BeaconDay(now).AddDate(0, 0, -store.FieldCheckDays)
	has := map[string]bool{}
	for k := range m.beaconState().seen {
		if !k.day.Before(since) {
			has[k.site] = true
		}
	}
	for k := range m.beaconState().counts {
		if !k.day.Before(since) {
			has[k.site] = true
		}
	}
	for k := range m.cruxPoints {
		has[k.site] = true
	}
	return m.enqueueDue(m.fieldNext, now, store.NextFieldCheck(now), limit, func(s store.Site) (string, any) {
		if !has[s.ID] {
			return "", nil
		}
		return store.KindField, store.FieldJob{SiteID: s.ID, WorkspaceID: s.WorkspaceID}
	})
}

func (m *Store) CruxTarget(ctx context.Context, siteID string) (store.CruxTarget, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sites[siteID]
	if !ok {
		return store.CruxTarget{}, store.NotFound("site")
	}
	t := store.CruxTarget{Site: cloneSite(s), Pages: []string{}}
	if latest := m.siteScans(siteID, 1, true); len(latest) == 1 {
		seen := map[string]bool{}
		for _, r := range m.results[latest[0].ID] {
			if r.result != nil && r.result.PageURL != "" && !seen[r.result.PageURL] {
				seen[r.result.PageURL] = true
				t.Pages = append(t.Pages, r.result.PageURL)
			}
		}
		slices.Sort(t.Pages)
	}
	return t, nil
}

func (m *Store) SaveCrux(ctx context.Context, siteID string, rec store.CruxRecord, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.sites[siteID]; !ok || !rec.Device.Valid() {
		return store.NotFound("site")
	}
	if m.cruxPoints == nil {
		m.cruxPoints, m.cruxFetches = map[cruxKey]store.FieldPoint{}, map[cruxTarget]store.CruxFetch{}
	}
	periods := map[time.Time]bool{}
	for _, pt := range rec.Points {
		pt.Source, pt.Page, pt.Device, pt.Samples = store.FieldCrUX, rec.Page, rec.Device, 0
		pt.Start, pt.End = store.Now(pt.Start), store.Now(pt.End)
		if pt.P75 != nil {
			v := *pt.P75
			pt.P75 = &v
		}
		if len(pt.Histogram) == 0 {
			pt.Histogram = nil
		} else {
			pt.Histogram = slices.Clone(pt.Histogram)
		}
		m.cruxPoints[cruxKey{siteID, rec.Page, rec.Device, pt.Metric, pt.Start}] = pt
		periods[pt.Start] = true
	}
	m.cruxFetches[cruxTarget{siteID, rec.Page, rec.Device}] = store.CruxFetch{Page: rec.Page, Device: rec.Device,
		FetchedAt: store.Now(now), Found: rec.Found, Periods: len(periods)}
	return nil
}

func (m *Store) CruxFetches(ctx context.Context, userID, siteID string) ([]store.CruxFetch, error) {
	m.mu.Lock()
	_, ok := m.ownedSite(userID, siteID)
	m.mu.Unlock()
	if !ok {
		return nil, store.NotFound("site")
	}
	return m.CruxFetchesOf(ctx, siteID)
}

func (m *Store) CruxFetchesOf(ctx context.Context, siteID string) ([]store.CruxFetch, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []store.CruxFetch{}
	for k, f := range m.cruxFetches {
		if k.site == siteID {
			out = append(out, f)
		}
	}
	sort.Slice(out, func(a, b int) bool {
		if out[a].Page != out[b].Page {
			return out[a].Page < out[b].Page
		}
		return out[a].Device > out[b].Device // phone before desktop
	})
	return out, nil
}

func (m *Store) CruxSeries(ctx context.Context, userID, siteID string, q store.FieldQuery) ([]store.FieldPoint, error) {
	m.mu.Lock()
	_, ok := m.ownedSite(userID, siteID)
	m.mu.Unlock()
	if !ok {
		return nil, store.NotFound("site")
	}
	return m.CruxSeriesOf(ctx, siteID, q)
}

func (m *Store) CruxSeriesOf(ctx context.Context, siteID string, q store.FieldQuery) ([]store.FieldPoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []store.FieldPoint{}
	for k, pt := range m.cruxPoints {
		if k.site != siteID || k.page != q.Page || q.Device != "" && k.device != q.Device || q.Metric != "" && k.metric != q.Metric ||
			!q.From.IsZero() && k.start.Before(q.From) || !q.To.IsZero() && !k.start.Before(q.To) {
			continue
		}
		if pt.P75 != nil {
			v := *pt.P75
			pt.P75 = &v
		}
		pt.Histogram = slices.Clone(pt.Histogram)
		out = append(out, pt)
	}
	// As Postgres orders them: oldest first, phone before desktop, metrics by name.
	sort.Slice(out, func(a, b int) bool {
		if !out[a].Start.Equal(out[b].Start) {
			return out[a].Start.Before(out[b].Start)
		}
		if out[a].Device != out[b].Device {
			return out[a].Device > out[b].Device
		}
		return strings.Compare(out[a].Metric, out[b].Metric) < 0
	})
	return out, nil
}

func (m *Store) PruneCrux(ctx context.Context, now time.Time, limit int) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, pt := range m.cruxPoints {
		if n >= limit {
			break
		}
		s, ok := m.sites[k.site]
		if !ok {
			continue
		}
		days := m.workspaces[s.WorkspaceID].RetentionDays
		if days > 0 && pt.End.Before(now.AddDate(0, 0, -days)) {
			delete(m.cruxPoints, k)
			n++
		}
	}
	return n, nil
}

// dropCrux forgets a deleted site's CrUX history, as Postgres's cascade does; m.mu is held.
func (m *Store) dropCrux(siteID string) {
	delete(m.cruxNext, siteID)
	delete(m.fieldNext, siteID)
	for k := range m.cruxPoints {
		if k.site == siteID {
			delete(m.cruxPoints, k)
		}
	}
	for k := range m.cruxFetches {
		if k.site == siteID {
			delete(m.cruxFetches, k)
		}
	}
}
