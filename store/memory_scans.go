package store

import (
	"context"
	"sort"
)

func cloneScan(s Scan) Scan {
	s.StartedAt, s.CompletedAt = cloneTime(s.StartedAt), cloneTime(s.CompletedAt)
	s.Scores = cloneScores(s.Scores)
	return s
}

func cloneScores(s ScanScores) ScanScores {
	c := func(p *int) *int {
		if p == nil {
			return nil
		}
		v := *p
		return &v
	}
	return ScanScores{c(s.Health), c(s.Performance), c(s.SEO), c(s.Accessibility), c(s.BestPractices)}
}

// ownedScan finds a scan whose site belongs to userID.
func (m *Memory) ownedScan(userID, scanID string) (Scan, bool) {
	s, ok := m.scans[scanID]
	if !ok {
		return Scan{}, false
	}
	if _, owned := m.ownedSite(userID, s.SiteID); !owned {
		return Scan{}, false
	}
	return s, true
}

func (m *Memory) Scan(ctx context.Context, userID, scanID string) (Scan, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.ownedScan(userID, scanID)
	if !ok {
		return Scan{}, notFound("scan")
	}
	return cloneScan(s), nil
}

func (m *Memory) ScanWait(ctx context.Context, userID, scanID string) (ScanWait, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedScan(userID, scanID); !ok {
		return ScanWait{}, nil
	}
	for _, j := range m.jobs {
		if j.ScanID == scanID && j.State == JobAvailable && j.LastError != "" {
			return ScanWait{Reason: j.LastError, RunAt: j.RunAt}, nil
		}
	}
	return ScanWait{}, nil
}

func (m *Memory) ScansOf(ctx context.Context, userID, siteID string, limit int) ([]Scan, error) {
	return m.scansOf(userID, siteID, limit, false)
}

func (m *Memory) LastScans(ctx context.Context, userID string) (map[string]Scan, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]Scan{}
	for _, sc := range m.scans {
		if site, ok := m.sites[sc.SiteID]; !ok || site.UserID != userID {
			continue
		}
		last, ok := out[sc.SiteID]
		if !ok || sc.CreatedAt.After(last.CreatedAt) || sc.CreatedAt.Equal(last.CreatedAt) && sc.ID > last.ID {
			out[sc.SiteID] = cloneScan(sc)
		}
	}
	return out, nil
}

func (m *Memory) CompletedScans(ctx context.Context, userID, siteID string, limit int) ([]Scan, error) {
	return m.scansOf(userID, siteID, limit, true)
}

func (m *Memory) LatestCompletedScan(ctx context.Context, userID, siteID string) (Scan, error) {
	scans, err := m.scansOf(userID, siteID, 1, true)
	if err != nil {
		return Scan{}, err
	}
	if len(scans) == 0 {
		return Scan{}, notFound("completed scan")
	}
	return scans[0], nil
}

func (m *Memory) scansOf(userID, siteID string, limit int, completed bool) ([]Scan, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedSite(userID, siteID); !ok {
		return nil, notFound("site")
	}
	return m.siteScans(siteID, limit, completed), nil
}

// siteScans lists a site's scans, or its complete ones, newest first, at most limit; the caller
// holds m.mu.
func (m *Memory) siteScans(siteID string, limit int, completed bool) []Scan {
	out := []Scan{}
	for _, s := range m.scans {
		if s.SiteID == siteID && (!completed || s.Status == StatusComplete) {
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
func (m *Memory) sortedResults(scanID string) []memResult {
	rows := make([]memResult, 0, len(m.results[scanID]))
	for _, r := range m.results[scanID] {
		rows = append(rows, r)
	}
	key := func(r memResult) (string, string) {
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

func (m *Memory) PageResults(ctx context.Context, userID, scanID string) ([]PageResult, error) {
	out := []PageResult{}
	err := m.EachPageResult(ctx, userID, scanID, func(r PageResult) error {
		out = append(out, r)
		return nil
	})
	return out, err
}

func (m *Memory) EachPageResult(ctx context.Context, userID, scanID string, fn func(PageResult) error) error {
	m.mu.Lock()
	if _, ok := m.ownedScan(userID, scanID); !ok {
		m.mu.Unlock()
		return notFound("scan")
	}
	var results []PageResult
	for _, r := range m.sortedResults(scanID) {
		if r.result != nil {
			results = append(results, clonePageResult(*r.result))
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

func (m *Memory) PageResult(ctx context.Context, userID, scanID, pagePath, strategy string) (PageResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedScan(userID, scanID); !ok {
		return PageResult{}, notFound("scan")
	}
	r, ok := m.results[scanID][PageKey{pagePath, strategy}]
	if !ok || r.result == nil {
		return PageResult{}, notFound("page result")
	}
	return clonePageResult(*r.result), nil
}

func (m *Memory) PageErrors(ctx context.Context, userID, scanID string) ([]PageError, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.ownedScan(userID, scanID); !ok {
		return nil, notFound("scan")
	}
	out := []PageError{}
	for _, r := range m.sortedResults(scanID) {
		if r.result == nil {
			out = append(out, r.err)
		}
	}
	return out, nil
}

// clonePageResult deep-copies a result through its stored form, as Postgres's jsonb does.
func clonePageResult(r PageResult) PageResult {
	c, err := decodeResult(encodeResult(r))
	if err != nil {
		panic(err) // a PageResult always round-trips
	}
	c.ScanID = r.ScanID
	return c
}
