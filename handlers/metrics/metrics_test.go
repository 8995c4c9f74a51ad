package metrics

import (
	"testing"
	"time"
)

// BenchmarkMetricsObserve is what the metrics add to every request: the in-flight gauge and one
// observation, from every core at once on one route.
func BenchmarkMetricsObserve(b *testing.B) {
	m := &Metrics{}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.Begin()
			m.Observe("POST /api/external/budget-check", 200, 3*time.Millisecond)
			m.End()
		}
	})
}
