package mcp

import (
	"context"
	"maps"
	"testing"

	"sitepulse/store"
)

// countingStore counts PageMetrics reads, and PageMetricsOf calls.
type countingStore struct {
	Store
	reads map[string]int
	calls int
}

func (c *countingStore) PageMetricsOf(ctx context.Context, userID string, scanIDs []string) ([][]store.PageResult, error) {
	c.calls++
	out := make([][]store.PageResult, len(scanIDs))
	for i, id := range scanIDs {
		out[i], _ = c.PageMetrics(ctx, userID, id)
	}
	return out, nil
}

func (c *countingStore) PageMetrics(ctx context.Context, userID, scanID string) ([]store.PageResult, error) {
	c.reads[scanID]++
	return []store.PageResult{{PagePath: "/" + scanID}}, nil
}

func TestMetricsCache(t *testing.T) {
	cs := &countingStore{reads: map[string]int{}}
	s := New(Config{Store: cs})
	s.metrics = newMetricsCache(2)
	ctx := context.Background()
	read := func(id, status string) {
		t.Helper()
		m, err := s.pageMetrics(ctx, "u", store.Scan{ID: id, Status: status})
		if err != nil || len(m) != 1 || m[0].PagePath != "/"+id {
			t.Fatalf("metrics of %s = %v, %v", id, m, err)
		}
	}
	steps := []struct {
		id, status string
		wantReads  int
	}{
		{"a", store.StatusComplete, 1},
		{"a", store.StatusComplete, 1}, // cached
		{"r", store.StatusRunning, 1},
		{"r", store.StatusRunning, 2}, // a running scan still changes: never cached
		{"b", store.StatusComplete, 1},
		{"c", store.StatusComplete, 1}, // evicts a, the oldest
		{"b", store.StatusComplete, 1},
		{"a", store.StatusComplete, 2},
	}
	for i, st := range steps {
		read(st.id, st.status)
		if cs.reads[st.id] != st.wantReads {
			t.Errorf("step %d: %s read %d times, want %d", i, st.id, cs.reads[st.id], st.wantReads)
		}
	}
}

// Several scans' metrics: the uncached ones come from one store call, then from the cache.
func TestMetricsCacheOf(t *testing.T) {
	cs := &countingStore{reads: map[string]int{}}
	s := New(Config{Store: cs})
	ctx := context.Background()
	done := func(id string) store.Scan { return store.Scan{ID: id, Status: store.StatusComplete} }
	steps := []struct {
		name      string
		scans     []store.Scan
		wantCalls int
		wantReads map[string]int
	}{
		{"two cold scans are one call", []store.Scan{done("a"), done("b")}, 1, map[string]int{"a": 1, "b": 1}},
		{"two cached scans are none", []store.Scan{done("b"), done("a")}, 1, map[string]int{"a": 1, "b": 1}},
		{"one uncached is a single read", []store.Scan{done("a"), done("c")}, 1, map[string]int{"a": 1, "b": 1, "c": 1}},
		{"running scans are read each time", []store.Scan{{ID: "r", Status: store.StatusRunning}, {ID: "q", Status: store.StatusRunning}}, 2,
			map[string]int{"a": 1, "b": 1, "c": 1, "r": 1, "q": 1}},
	}
	for _, tt := range steps {
		m, err := s.pageMetricsOf(ctx, "u", tt.scans...)
		if err != nil || len(m) != len(tt.scans) {
			t.Fatalf("%s: %v, %v", tt.name, m, err)
		}
		for i, sc := range tt.scans {
			if len(m[i]) != 1 || m[i][0].PagePath != "/"+sc.ID {
				t.Errorf("%s: scan %s got %v", tt.name, sc.ID, m[i])
			}
		}
		if cs.calls != tt.wantCalls || !maps.Equal(cs.reads, tt.wantReads) {
			t.Errorf("%s: %d calls, reads %v; want %d, %v", tt.name, cs.calls, cs.reads, tt.wantCalls, tt.wantReads)
		}
	}
}
