package memory

import (
	"context"
	"slices"
	"time"

	"sitepulse/store"
)

// memBeacon is the beacon's part of the store (store.BeaconWrites, store.BeaconReads); made on
// first use, guarded by m.mu.
type memBeacon struct {
	keys   map[string]string // public id by site
	sites  map[string]string // site by public id
	counts map[beaconCell]beaconTally
	inter  map[interCell]interTally
	seen   map[beaconDay]int64 // beacons seen per site and day (store.BeaconSeen)
}

type beaconDay struct {
	site string
	day  time.Time
}

type beaconCell struct {
	site   string
	day    time.Time
	path   string
	device store.FieldDevice
	metric string
	bin    int
}

type beaconTally struct {
	count float64
	kept  int64
}

type interGroup struct {
	site   string
	day    time.Time
	path   string
	device store.FieldDevice
}

type interCell struct {
	interGroup
	selector, event, part string
	bin                   int
}

type interTally struct {
	count float64
	seen  time.Time
}

// beaconState is m.beacon, made on first use; the caller holds m.mu.
func (m *Store) beaconState() *memBeacon {
	if m.beacon == nil {
		m.beacon = &memBeacon{keys: map[string]string{}, sites: map[string]string{},
			counts: map[beaconCell]beaconTally{}, inter: map[interCell]interTally{}, seen: map[beaconDay]int64{}}
	}
	return m.beacon
}

func (m *Store) BeaconKey(ctx context.Context, userID, siteID string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.editableSite(userID, siteID); !ok {
		return "", store.NotFound("site")
	}
	b := m.beaconState()
	if k, ok := b.keys[siteID]; ok {
		return k, nil
	}
	k := store.NewBeaconKey()
	b.keys[siteID], b.sites[k] = k, siteID
	return k, nil
}

func (m *Store) BeaconSiteByKey(ctx context.Context, publicID string) (store.BeaconSite, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id, ok := m.beaconState().sites[publicID]
	s, found := m.sites[id]
	if !ok || !found {
		return store.BeaconSite{}, store.NotFound("beacon key")
	}
	return store.BeaconSite{SiteID: s.ID, WorkspaceID: s.WorkspaceID, Domain: s.Domain}, nil
}

func (m *Store) AddBeacons(ctx context.Context, batch store.BeaconBatch) ([]store.BeaconSeen, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.beaconState()
	var totals []store.BeaconSeen
	for _, d := range batch.Seen {
		if _, ok := m.sites[d.SiteID]; ok {
			k := beaconDay{d.SiteID, store.BeaconDay(d.Day)}
			b.seen[k] += d.Seen
		}
	}
	for _, d := range batch.Seen { // each site and day once, with its total after the batch
		k := beaconDay{d.SiteID, store.BeaconDay(d.Day)}
		if n, ok := b.seen[k]; ok && !slices.ContainsFunc(totals, func(t store.BeaconSeen) bool { return t.SiteID == k.site && t.Day.Equal(k.day) }) {
			totals = append(totals, store.BeaconSeen{SiteID: k.site, Day: k.day, Seen: n})
		}
	}
	for _, c := range batch.Counts {
		if _, ok := m.sites[c.SiteID]; !ok {
			continue
		}
		k := beaconCell{c.SiteID, store.BeaconDay(c.Day), c.Path, c.Device, c.Metric, c.Bin}
		t := b.counts[k]
		t.count += c.Count
		t.kept += c.Kept
		b.counts[k] = t
	}
	// The slowest list is bounded per site, day, page and device: a selector not yet kept is
	// admitted while the group had fewer than MaxBeaconInteractions before this batch.
	// Each part counts apart (an INP value and its phases, an LCP element, a CLS target).
	type sel struct{ selector, event string }
	type group struct {
		interGroup
		part string
	}
	before := map[group]map[sel]bool{}
	known := map[interGroup]map[sel]bool{}
	for k := range b.inter {
		g := group{k.interGroup, k.part}
		if before[g] == nil {
			before[g] = map[sel]bool{}
		}
		before[g][sel{k.selector, k.event}] = true
		if known[k.interGroup] == nil {
			known[k.interGroup] = map[sel]bool{}
		}
		known[k.interGroup][sel{k.selector, k.event}] = true
	}
	for _, c := range batch.Interactions {
		if _, ok := m.sites[c.SiteID]; !ok {
			continue
		}
		g := interGroup{c.SiteID, store.BeaconDay(c.Day), c.Path, c.Device}
		if !known[g][sel{c.Selector, c.EventType}] && len(before[group{g, c.Part}]) >= store.MaxBeaconInteractions {
			continue
		}
		k := interCell{g, c.Selector, c.EventType, c.Part, c.Bin}
		t := b.inter[k]
		t.count += c.Count
		if seen := store.Now(c.Seen); seen.After(t.seen) {
			t.seen = seen
		}
		b.inter[k] = t
	}
	return totals, nil
}

// beaconSite is the origin of a site the user may read ("" and false otherwise); userID ""
// is the system. The caller holds m.mu.
func (m *Store) beaconSite(userID, siteID string) (string, bool) {
	s, ok := m.sites[siteID]
	if !ok || (userID != "" && !m.canRead(userID, s.WorkspaceID)) {
		return "", false
	}
	return store.SiteOrigin(s.Domain), true
}

// beaconDayIn answers whether a day is within a query's From and To.
func beaconDayIn(day time.Time, q store.FieldQuery) bool {
	return (q.From.IsZero() || !day.Before(q.From)) && (q.To.IsZero() || day.Before(q.To))
}

// beaconRead answers read of the origin and path of q's page, for a site userID may read (""
// is the system), under m.mu: ErrNotFound for another site, nothing for a page of another
// origin. Every beacon read goes through it.
func beaconRead[T any](m *Store, userID, siteID string, q store.FieldQuery, read func(origin, path string) []T) ([]T, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	origin, ok := m.beaconSite(userID, siteID)
	if !ok {
		return nil, store.NotFound("site")
	}
	path, ok := store.BeaconPath(origin, q.Page)
	if !ok {
		return []T{}, nil
	}
	return read(origin, path), nil
}

// countRows are a site's bins of path within q: the page views (metric nav) when nav, else the
// field metrics (q.Metric's, or all); the caller holds m.mu. Postgres's beaconBins reads the same.
func (m *Store) countRows(siteID, path string, q store.FieldQuery, nav bool) []store.BeaconCount {
	var rows []store.BeaconCount
	for k, t := range m.beaconState().counts {
		if k.site == siteID && k.path == path && beaconDayIn(k.day, q) && (q.Device == "" || k.device == q.Device) &&
			(k.metric == store.BeaconNavMetric) == nav && (q.Metric == "" || k.metric == q.Metric) {
			rows = append(rows, store.BeaconCount{Day: k.day, Path: k.path, Device: k.device, Metric: k.metric, Bin: k.bin, Count: t.count, Kept: t.kept})
		}
	}
	return rows
}

func (m *Store) beaconSeries(userID, siteID string, q store.FieldQuery) ([]store.FieldPoint, error) {
	return beaconRead(m, userID, siteID, q, func(origin, path string) []store.FieldPoint {
		return store.BeaconPoints(origin, m.countRows(siteID, path, q, false))
	})
}

func (m *Store) BeaconSeries(ctx context.Context, userID, siteID string, q store.FieldQuery) ([]store.FieldPoint, error) {
	if userID == "" {
		return nil, store.NotFound("site")
	}
	return m.beaconSeries(userID, siteID, q)
}

func (m *Store) BeaconSeriesOf(ctx context.Context, siteID string, q store.FieldQuery) ([]store.FieldPoint, error) {
	return m.beaconSeries("", siteID, q)
}

func (m *Store) slowInteractions(userID, siteID string, q store.FieldQuery, limit int) ([]store.Interaction, error) {
	return beaconRead(m, userID, siteID, q, func(origin, path string) []store.Interaction {
		return store.BeaconSlowest(origin, m.interRows(siteID, path, q), limit)
	})
}

func (m *Store) BeaconElementsOf(ctx context.Context, siteID string, q store.FieldQuery, limit int) ([]store.BeaconElement, error) {
	return beaconRead(m, "", siteID, q, func(origin, path string) []store.BeaconElement {
		return store.BeaconElementsFrom(origin, m.interRows(siteID, path, q), limit)
	})
}

// interRows are a site's interaction rows of path ("" every page) within q; the caller holds
// m.mu.
func (m *Store) interRows(siteID, path string, q store.FieldQuery) []store.BeaconInteractionCount {
	var rows []store.BeaconInteractionCount
	for k, t := range m.beaconState().inter {
		if k.site != siteID || (path != "" && k.path != path) || !beaconDayIn(k.day, q) || (q.Device != "" && k.device != q.Device) {
			continue
		}
		rows = append(rows, store.BeaconInteractionCount{Day: k.day, Path: k.path, Device: k.device, Selector: k.selector,
			EventType: k.event, Part: k.part, Bin: k.bin, Count: t.count, Seen: t.seen})
	}
	return rows
}

func (m *Store) SlowInteractions(ctx context.Context, userID, siteID string, q store.FieldQuery, limit int) ([]store.Interaction, error) {
	if userID == "" {
		return nil, store.NotFound("site")
	}
	return m.slowInteractions(userID, siteID, q, limit)
}

func (m *Store) SlowInteractionsOf(ctx context.Context, siteID string, q store.FieldQuery, limit int) ([]store.Interaction, error) {
	return m.slowInteractions("", siteID, q, limit)
}

func (m *Store) BeaconViewsOf(ctx context.Context, siteID string, q store.FieldQuery) ([]store.BeaconViews, error) {
	q.Metric = ""
	return beaconRead(m, "", siteID, q, func(origin, path string) []store.BeaconViews {
		return store.BeaconViewsFrom(origin, m.countRows(siteID, path, q, true))
	})
}

func (m *Store) PruneBeacons(ctx context.Context, now time.Time) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.beaconState()
	old := func(siteID string, day time.Time) bool {
		s, ok := m.sites[siteID]
		if !ok {
			return true
		}
		w := m.workspaces[s.WorkspaceID]
		return w.RetentionDays > 0 && day.Before(store.BeaconDay(now).AddDate(0, 0, -w.RetentionDays))
	}
	var n int64
	for k := range b.counts {
		if old(k.site, k.day) {
			delete(b.counts, k)
			n++
		}
	}
	for k := range b.inter {
		if old(k.site, k.day) {
			delete(b.inter, k)
			n++
		}
	}
	for k := range b.seen {
		if old(k.site, k.day) {
			delete(b.seen, k)
			n++
		}
	}
	return n, nil
}

// dropBeacon forgets a deleted site's key and figures; the caller holds m.mu.
func (m *Store) dropBeacon(siteID string) {
	b := m.beaconState()
	delete(b.sites, b.keys[siteID])
	delete(b.keys, siteID)
	for k := range b.counts {
		if k.site == siteID {
			delete(b.counts, k)
		}
	}
	for k := range b.inter {
		if k.site == siteID {
			delete(b.inter, k)
		}
	}
	for k := range b.seen {
		if k.site == siteID {
			delete(b.seen, k)
		}
	}
}
