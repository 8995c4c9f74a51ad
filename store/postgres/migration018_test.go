package postgres_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"sitepulse/store"
)

// Migration 018 writes the summary and size of every scan completed before it from its page
// rows, the same summary CompleteScan writes since (store.Summarize of its page metrics).
func TestMigration018BackfillsSummaries(t *testing.T) {
	ctx := context.Background()
	exec, upgrade := olderSchema(t, 17)
	user, site, done, failed := store.NewID(), store.NewID(), store.NewID(), store.NewID()
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	exec(`INSERT INTO users (id, email, password_hash, created_at) VALUES ($1, 'ada@example.com', 'h', $2)`, user, now)
	exec(`INSERT INTO workspaces (id, name, created_at) VALUES ($1, 'Ada', $2)`, user, now)
	exec(`INSERT INTO memberships (workspace_id, user_id, role, created_at) VALUES ($1, $1, 'owner', $2)`, user, now)
	exec(`INSERT INTO sites (id, user_id, workspace_id, name, domain, pages, created_at) VALUES ($1, $2, $2, 'Ada shop', 'ada.test', '{/}', $3)`, site, user, now)
	exec(`INSERT INTO scans (id, site_id, status, strategy, trigger, pages_total, pages_done, scores, created_at, completed_at)
		VALUES ($1, $3, 'complete', 'both', 'manual', 4, 4, '{"performance": 80}', $4, $4), ($2, $3, 'failed', 'both', 'manual', 1, 1, '{}', $4, $4)`,
		done, failed, site, now)
	for _, r := range []struct{ path, strategy, result string }{
		{"/", "mobile", `{"scores": {"performance": 81, "seo": 90}, "coreWebVitals": {"lcp": 2500, "cls": 0.1}}`},
		{"/a", "mobile", `{"scores": {"performance": 84, "seo": 91}, "coreWebVitals": {"lcp": 2500.5, "tbt": 300}}`},
		{"/", "desktop", `{"scores": {"performance": 97, "accessibility": 90}, "coreWebVitals": {"lcp": 900}}`},
	} {
		exec(`INSERT INTO page_results (scan_id, page_path, strategy, page_url, result) VALUES ($1, $2, $3, 'https://ada.test' || $2, $4)`, done, r.path, r.strategy, r.result)
	}
	exec(`INSERT INTO page_results (scan_id, page_path, strategy, page_url, error) VALUES ($1, '/b', 'mobile', 'https://ada.test/b', 'timed out')`, done)
	exec(`INSERT INTO page_results (scan_id, page_path, strategy, page_url, error) VALUES ($1, '/', 'mobile', 'https://ada.test/', 'timed out')`, failed)
	s := upgrade() // applies 018
	sc, err := s.Scan(ctx, user, done)
	must(t, err)
	metrics, err := s.PageMetrics(ctx, user, done)
	must(t, err)
	if want := store.Summarize(metrics); sc.Summary == nil || !reflect.DeepEqual(*sc.Summary, want) {
		t.Errorf("backfilled summary %+v, want %+v", sc.Summary, want)
	}
	if m, _ := sc.Summary.Strategy(store.StrategyMobile); m.Worst["lcp"].PagePath != "/a" || *m.Scores.Performance != 83 || *m.Scores.Health != 87 {
		t.Errorf("mobile summary %+v", m)
	}
	if sc.Bytes <= 300+4*150 {
		t.Errorf("backfilled size %d, want the scan's four rows counted", sc.Bytes)
	}
	f, err := s.Scan(ctx, user, failed)
	must(t, err)
	if f.Summary != nil || f.Bytes <= 300 {
		t.Errorf("a failed scan: summary %+v, size %d; want none and its row counted", f.Summary, f.Bytes)
	}
}
