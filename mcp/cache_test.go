package mcp

import (
	"context"
	"testing"

	"sitepulse/store"
)

// countingStore counts PageMetrics reads.
type countingStore struct {
	ScanReader
	reads map[string]int
}

func (c *countingStore) PageMetrics(ctx context.Context, userID, scanID string) ([]store.PageResult, error) {
	c.reads[scanID]++
	return []store.PageResult{{PagePath: "/" + scanID}}, nil
}

func TestMetricsCache(t *testing.T) {
	cs := &countingStore{reads: map[string]int{}}
	s := New(Config{Scans: cs})
	s.metrics = newMetricsCache(2)
	ctx := context.Background()
	read := func(id string, status store.ScanStatus) {
		t.Helper()
		m, err := s.pageMetrics(ctx, "u", store.Scan{ID: id, Status: status})
		if err != nil || len(m) != 1 || m[0].PagePath != "/"+id {
			t.Fatalf("metrics of %s = %v, %v", id, m, err)
		}
	}
	steps := []struct {
		id        string
		status    store.ScanStatus
		wantReads int
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
