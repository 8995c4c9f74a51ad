package mcp

import (
	"context"
	"sync"

	"sitepulse/store"
)

// metricsCache keeps the page metrics of completed scans. A completed scan's results never change,
// so they can be kept for as long as memory allows; every read still goes through the owner-scoped
// store calls first (the scan is found as the caller's before its metrics are looked up here).
// It holds at most maxScans scans (about 80 KB each at 200 pages), dropping the oldest entry.
type metricsCache struct {
	mu       sync.Mutex
	byScan   map[string][]store.PageResult
	order    []string
	maxScans int
}

func newMetricsCache(maxScans int) *metricsCache {
	return &metricsCache{byScan: map[string][]store.PageResult{}, maxScans: maxScans}
}

// pageMetrics returns the metrics of a scan the caller owns. Only complete scans are cached;
// callers must treat the slice as read-only.
func (s *Server) pageMetrics(ctx context.Context, userID string, scan store.Scan) ([]store.PageResult, error) {
	m, err := s.pageMetricsOf(ctx, userID, scan)
	if err != nil {
		return nil, err
	}
	return m[0], nil
}

// pageMetricsOf is pageMetrics of several scans: those not cached are read in one store call.
func (s *Server) pageMetricsOf(ctx context.Context, userID string, scans ...store.Scan) ([][]store.PageResult, error) {
	c := s.metrics
	out := make([][]store.PageResult, len(scans))
	var missing []int
	c.mu.Lock()
	for i, sc := range scans {
		m, ok := c.byScan[sc.ID]
		if ok && sc.Status == store.StatusComplete {
			out[i] = m
		} else {
			missing = append(missing, i)
		}
	}
	c.mu.Unlock()
	switch len(missing) {
	case 0:
		return out, nil
	case 1:
		m, err := s.store.PageMetrics(ctx, userID, scans[missing[0]].ID)
		if err != nil {
			return nil, err
		}
		out[missing[0]] = m
	default:
		ids := make([]string, len(missing))
		for j, i := range missing {
			ids[j] = scans[i].ID
		}
		ms, err := s.store.PageMetricsOf(ctx, userID, ids)
		if err != nil {
			return nil, err
		}
		for j, i := range missing {
			out[i] = ms[j]
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, i := range missing {
		if id := scans[i].ID; scans[i].Status == store.StatusComplete {
			if _, ok := c.byScan[id]; !ok {
				if len(c.order) >= c.maxScans {
					delete(c.byScan, c.order[0])
					c.order = c.order[1:]
				}
				c.byScan[id] = out[i]
				c.order = append(c.order, id)
			}
		}
	}
	return out, nil
}
