package mcp

import (
	"context"
	"slices"
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
	c := s.metrics
	if scan.Status != store.StatusComplete {
		return s.scans.PageMetrics(ctx, userID, scan.ID)
	}
	c.mu.Lock()
	m, ok := c.byScan[scan.ID]
	c.mu.Unlock()
	if ok {
		return m, nil
	}
	m, err := s.scans.PageMetrics(ctx, userID, scan.ID)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byScan[scan.ID]; !ok {
		if len(c.order) >= c.maxScans {
			delete(c.byScan, c.order[0])
			c.order = c.order[1:]
		}
		c.byScan[scan.ID] = m
		c.order = append(c.order, scan.ID)
	}
	return m, nil
}

// scans lists the scans whose metrics are kept.
func (c *metricsCache) scans() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.order)
}

// keep answers the kept metrics of a completed scan when m is nil (the store left them out as
// known), false when they were dropped meanwhile, and otherwise keeps m.
func (c *metricsCache) keep(scanID string, m []store.PageResult) ([]store.PageResult, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m == nil {
		kept, ok := c.byScan[scanID]
		return kept, ok
	}
	if _, ok := c.byScan[scanID]; !ok {
		if len(c.order) >= c.maxScans {
			delete(c.byScan, c.order[0])
			c.order = c.order[1:]
		}
		c.byScan[scanID] = m
		c.order = append(c.order, scanID)
	}
	return m, true
}

// analysisCache keeps answers read from completed scans, keyed by what was asked and the scan:
// the site analyses of latestAnalysis (small) and get_page_details' pages (a decoded result
// each, some tens of KB), at most max of them, dropping the oldest.
type analysisCache struct {
	mu    sync.Mutex
	byKey map[string]any
	order []string
	max   int
}

func (c *analysisCache) get(key string) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.byKey[key]
	return v, ok
}

func (c *analysisCache) put(key string, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[key]; ok {
		return
	}
	c.addLocked(key, v)
}

// set is put that replaces the value a key holds.
func (c *analysisCache) set(key string, v any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byKey[key]; ok {
		c.byKey[key] = v
		return
	}
	c.addLocked(key, v)
}

func (c *analysisCache) addLocked(key string, v any) {
	if c.byKey == nil {
		c.byKey = map[string]any{}
	}
	if len(c.order) >= c.max {
		delete(c.byKey, c.order[0])
		c.order = c.order[1:]
	}
	c.byKey[key] = v
	c.order = append(c.order, key)
}
