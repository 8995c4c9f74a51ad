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
