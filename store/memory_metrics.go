package store

import "context"

func (m *Memory) PageMetrics(ctx context.Context, userID, scanID string) ([]PageResult, error) {
	full, err := m.PageResults(ctx, userID, scanID)
	if err != nil {
		return nil, err
	}
	out := make([]PageResult, len(full))
	for i, r := range full {
		out[i] = PageResult{ScanID: r.ScanID, PagePath: r.PagePath, PageURL: r.PageURL, Strategy: r.Strategy,
			Scores: r.Scores, CoreWebVitals: r.CoreWebVitals}
	}
	return out, nil
}

func (m *Memory) PageMetricsOf(ctx context.Context, userID string, scanIDs []string) ([][]PageResult, error) {
	out := make([][]PageResult, len(scanIDs))
	for i, id := range scanIDs {
		r, err := m.PageMetrics(ctx, userID, id)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}
