package memory

import "context"
import "sitepulse/store"

// PageMetrics projects the stored results directly, as BudgetInputs does: going through
// PageResults would clone every whole result (a JSON round trip each) only to drop most of it.
func (m *Store) PageMetrics(ctx context.Context, userID, scanID string) ([]store.PageResult, error) {
	m.mu.Lock()
	if _, ok := m.ownedScan(userID, scanID); !ok {
		m.mu.Unlock()
		return nil, store.NotFound("scan")
	}
	out := m.metricsLocked(scanID)
	m.mu.Unlock()
	if len(out) > 0 {
		// As PageResults: a cancelled request gets its context's error, not rows.
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (m *Store) PageMetricsOf(ctx context.Context, userID string, scanIDs []string) (map[string][]store.PageResult, error) {
	m.mu.Lock()
	out := map[string][]store.PageResult{}
	for _, id := range scanIDs {
		if _, ok := m.ownedScan(userID, id); !ok {
			continue
		}
		for _, r := range m.sortedResults(id) {
			if r.result != nil {
				p := metricsOf(id, r.result)
				p.PageURL = r.result.PageURL
				out[id] = append(out[id], p)
			}
		}
	}
	m.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// metricsOf copies what a budget, a regression or the worst page is judged on out of a stored
// result: its page, strategy, scores and vitals, each value copied so the caller may keep it.
func metricsOf(scanID string, res *store.PageResult) store.PageResult {
	sc, v := res.Scores, res.CoreWebVitals
	return store.PageResult{ScanID: scanID, PagePath: res.PagePath, Strategy: res.Strategy,
		Scores: store.PageScores{Performance: copyPtr(sc.Performance), SEO: copyPtr(sc.SEO), Accessibility: copyPtr(sc.Accessibility),
			BestPractices: copyPtr(sc.BestPractices)},
		CoreWebVitals: store.Vitals{LCP: copyPtr(v.LCP), CLS: copyPtr(v.CLS), INP: copyPtr(v.INP), FCP: copyPtr(v.FCP),
			TTFB: copyPtr(v.TTFB), TBT: copyPtr(v.TBT), SpeedIndex: copyPtr(v.SpeedIndex), TTI: copyPtr(v.TTI)}}
}

func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

// metricsLocked is PageMetrics of a scan, with m.mu held.
func (m *Store) metricsLocked(scanID string) []store.PageResult {
	out := []store.PageResult{}
	for _, r := range m.sortedResults(scanID) {
		if r.result != nil {
			p := metricsOf(scanID, r.result)
			p.PageURL = r.result.PageURL
			out = append(out, p)
		}
	}
	return out
}
