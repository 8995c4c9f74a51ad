package metrics

import (
	"context"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
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

// noJobs is a queue with nothing in it.
type noJobs struct{}

func (noJobs) JobFigures(context.Context, time.Time) ([]store.JobFigure, error) { return nil, nil }

// TestZeroSeriesBeforeAnything: a scrape of a process that has done nothing yet has a series of
// value 0 for every known label of the job, scan, audit and delivery families, so a rate or an
// alert on them has something to read from the first scrape (issue 43: they had no samples
// until something happened).
func TestZeroSeriesBeforeAnything(t *testing.T) {
	m := &Metrics{Role: "all", Jobs: noJobs{}, JobKinds: []string{"scan", "digest"}}
	var b strings.Builder
	if err := m.Write(t.Context(), &b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`sitepulse_jobs{kind="digest",state="available"} 0`, `sitepulse_jobs{kind="digest",state="running"} 0`,
		`sitepulse_jobs{kind="scan",state="available"} 0`, `sitepulse_jobs{kind="scan",state="running"} 0`,
		`sitepulse_jobs_oldest_runnable_age_seconds{kind="digest"} 0`, `sitepulse_jobs_oldest_runnable_age_seconds{kind="scan"} 0`,
		`sitepulse_scans_total{outcome="completed"} 0`, `sitepulse_scans_total{outcome="failed"} 0`,
		`sitepulse_audits_total{outcome="ok"} 0`, `sitepulse_audits_total{outcome="failed"} 0`,
		`sitepulse_deliveries_total{outcome="delivered"} 0`, `sitepulse_deliveries_total{outcome="pending"} 0`, `sitepulse_deliveries_total{outcome="failed"} 0`,
	} {
		if !strings.Contains(b.String(), want+"\n") {
			t.Errorf("no %s in:\n%s", want, b.String())
		}
	}
	// Once counted, a series says so, once.
	m.Scans.Add("completed")
	b.Reset()
	m.Write(t.Context(), &b)
	if strings.Count(b.String(), `sitepulse_scans_total{outcome="completed"}`) != 1 || !strings.Contains(b.String(), `sitepulse_scans_total{outcome="completed"} 1`+"\n") {
		t.Errorf("after a completed scan:\n%s", b.String())
	}
}
