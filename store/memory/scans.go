package memory

import (
	"context"
	"sort"

	"sitepulse/store"
)

func cloneScan(s store.Scan) store.Scan {
	s.StartedAt, s.CompletedAt, s.DetailsPrunedAt = cloneTime(s.StartedAt), cloneTime(s.CompletedAt), cloneTime(s.DetailsPrunedAt)
	s.Scores = cloneScores(s.Scores)
	// The summary is never changed once written: its copies may share it.
	return s
}

func cloneScores(s store.ScanScores) store.ScanScores {
	c := func(p *int) *int {
		if p == nil {
			return nil
		}
		v := *p
		return &v
	}
	return store.ScanScores{Health: c(s.Health), Performance: c(s.Performance), SEO: c(s.SEO), Accessibility: c(s.Accessibility), BestPractices: c(s.BestPractices)}
}

// ownedScan finds a scan whose site belongs to userID.
func (m *Store) ownedScan(userID, scanID string) (store.Scan, bool) {
	s, ok := m.scans[scanID]
	if !ok {
		return store.Scan{}, false
	}
	if _, owned := m.ownedSite(userID, s.SiteID); !owned {
		return store.Scan{}, false
	}
	return s, true
}

func (m *Store) Scan(ctx context.Context, userID, scanID string) (store.Scan, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.ownedScan(userID, scanID)
	if !ok {
		return store.Scan{}, store.NotFound("scan")
	}
	return cloneScan(s), nil
}

func (m *Store) ScanWait(ctx context.Context, userID, scanID string) (store.ScanWait, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedScan(userID, scanID); !ok {
		return store.ScanWait{}, nil
	}
	for _, j := range m.jobs {
		if j.ScanID == scanID && j.State == store.JobAvailable && j.LastError != "" {
			return store.ScanWait{Reason: j.LastError, RunAt: j.RunAt}, nil
		}
	}
	return store.ScanWait{}, nil
}

func (m *Store) ScansOf(ctx context.Context, userID, siteID string, limit int) ([]store.Scan, error) {
	return m.scansOf(userID, siteID, limit, false)
}

func (m *Store) CompletedScans(ctx context.Context, userID, siteID string, limit int) ([]store.Scan, error) {
	return m.scansOf(userID, siteID, limit, true)
}

func (m *Store) LatestCompletedScan(ctx context.Context, userID, siteID string) (store.Scan, error) {
	scans, err := m.scansOf(userID, siteID, 1, true)
	if err != nil {
		return store.Scan{}, err
	}
	if len(scans) == 0 {
		return store.Scan{}, store.NotFound("completed scan")
	}
	return scans[0], nil
}

func (m *Store) scansOf(userID, siteID string, limit int, completed bool) ([]store.Scan, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedSite(userID, siteID); !ok {
		return nil, store.NotFound("site")
	}
	return m.siteScans(siteID, limit, completed), nil
}

// siteScans lists a site's scans, or its complete ones, newest first, at most limit; the caller
// holds m.mu.
func (m *Store) siteScans(siteID string, limit int, completed bool) []store.Scan {
	out := []store.Scan{}
	for _, s := range m.scans {
		if s.SiteID == siteID && (!completed || s.Status == store.StatusComplete) {
			out = append(out, cloneScan(s))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].CreatedAt, out[j].CreatedAt
		if completed {
			a, b = *out[i].CompletedAt, *out[j].CompletedAt
		}
		if !a.Equal(b) {
			return a.After(b)
		}
		return out[i].ID > out[j].ID
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// sortedResults returns a scan's rows ordered by path then strategy.
func (m *Store) sortedResults(scanID string) []memResult {
	rows := make([]memResult, 0, len(m.results[scanID]))
	for _, r := range m.results[scanID] {
		rows = append(rows, r)
	}
	key := func(r memResult) (string, store.Strategy) {
		if r.result != nil {
			return r.result.PagePath, r.result.Strategy
		}
		return r.err.PagePath, r.err.Strategy
	}
	sort.Slice(rows, func(i, j int) bool {
		pi, si := key(rows[i])
		pj, sj := key(rows[j])
		if pi != pj {
			return pi < pj
		}
		return si < sj
	})
	return rows
}

func (m *Store) PageResults(ctx context.Context, userID, scanID string) ([]store.PageResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedScan(userID, scanID); !ok {
		return nil, store.NotFound("scan")
	}
	out := []store.PageResult{}
	for _, r := range m.sortedResults(scanID) {
		if r.result != nil {
			out = append(out, clonePageResult(*r.result))
		}
	}
	return out, nil
}

func (m *Store) EachPageResult(ctx context.Context, userID, scanID string, fn func(store.PageResult) error) error {
	m.mu.Lock()
	if _, ok := m.ownedScan(userID, scanID); !ok {
		m.mu.Unlock()
		return store.NotFound("scan")
	}
	var results []store.PageResult
	for _, r := range m.sortedResults(scanID) {
		if r.result != nil {
			results = append(results, store.ExportFields(clonePageResult(*r.result)))
		}
	}
	m.mu.Unlock()
	for _, r := range results {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func (m *Store) PageResult(ctx context.Context, userID, scanID, pagePath string, strategy store.Strategy) (store.PageResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedScan(userID, scanID); !ok {
		return store.PageResult{}, store.NotFound("scan")
	}
	r, ok := m.results[scanID][store.PageKey{PagePath: pagePath, Strategy: strategy}]
	if !ok || r.result == nil {
		return store.PageResult{}, store.NotFound("page result")
	}
	out := clonePageResult(*r.result)
	var err error
	out.Explain, err = store.DecodeExplain(r.explain)
	return out, err
}

func (m *Store) PageErrors(ctx context.Context, userID, scanID string) ([]store.PageError, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedScan(userID, scanID); !ok {
		return nil, store.NotFound("scan")
	}
	out := []store.PageError{}
	for _, r := range m.sortedResults(scanID) {
		if r.result == nil {
			out = append(out, r.err)
		}
	}
	return out, nil
}

// clonePageResult deep-copies a result through its stored form, as Postgres's jsonb does.
func clonePageResult(r store.PageResult) store.PageResult {
	c, err := store.DecodeResult(store.EncodeResult(r))
	if err != nil {
		panic(err) // a PageResult always round-trips
	}
	c.ScanID = r.ScanID
	return c
}
