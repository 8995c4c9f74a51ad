package postgres_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/postgres"
	"sitepulse/store/storetest"
)

// Migration 043 (issue 46) moves page_results and page_images into tables partitioned by month
// in place: every row of a database an older SitePulse left is kept, in the partition of its
// scan's month (a month without one, the default partition), and every read answers as before.
func TestMigration043PartitionsKeepEveryRow(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.SchemaDSN(t)
	old, err := postgres.OpenMigratedTo(ctx, dsn, 38)
	if err != nil {
		t.Fatal(err)
	}
	db := old.DB()
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	user, other, site, oSite := store.NewID(), store.NewID(), store.NewID(), store.NewID()
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	exec(`INSERT INTO users (id, email, password_hash, created_at) VALUES ($1, 'ada@example.com', 'h', $3), ($2, 'bo@example.com', 'h', $3)`, user, other, now)
	exec(`INSERT INTO workspaces (id, name, created_at) VALUES ($1, 'Ada', $3), ($2, 'Bo', $3)`, user, other, now)
	exec(`INSERT INTO memberships (workspace_id, user_id, role, created_at) VALUES ($1, $1, 'owner', $3), ($2, $2, 'owner', $3)`, user, other, now)
	exec(`INSERT INTO sites (id, user_id, workspace_id, name, domain, pages, created_at) VALUES ($1, $2, $2, 'Ada shop', 'ada.test', '{/}', $5),
		($3, $4, $4, 'Bo', 'bo.test', '{/}', $5)`, site, user, oSite, other, now)
	// Scans of two past months, one far ahead of every partition (the default one), and another
	// workspace's; each with results on both strategies, an error, explain data and pictures.
	var scans []string
	for i, at := range []time.Time{now.AddDate(0, -1, 3), now.AddDate(0, -1, 20), now, now.AddDate(0, 0, 7), now.AddDate(4, 0, 0)} {
		id := store.NewID()
		scans = append(scans, id)
		exec(`INSERT INTO scans (id, site_id, status, strategy, trigger, pages_total, pages_done, scores, created_at, completed_at)
			VALUES ($1, $2, 'complete', 'both', 'manual', 3, 3, '{"performance": 80}', $3, $3::timestamptz + interval '5 minutes')`, id, site, at)
		for _, st := range []string{"mobile", "desktop"} {
			exec(`INSERT INTO page_results (scan_id, page_path, strategy, page_url, result, explain) VALUES ($1, '/', $2, 'https://ada.test/', $3, $4)`,
				id, st, `{"pagePath": "/", "strategy": "`+st+`", "scores": {"performance": `+string(rune('5'+i))+`1, "seo": 90}, "coreWebVitals": {"lcp": 2500, "cls": 0.1}}`, store.EncodeExplain(&store.Explain{Requests: []store.Request{{URL: fmt.Sprintf("https://ada.test/%d.js", i)}}}))
			exec(`INSERT INTO page_images (scan_id, page_path, strategy, idx, mime, width, height, timings, final, pinned, data)
				VALUES ($1, '/', $2, 0, 'image/jpeg', 375, 750, '{100,200}', false, false, $3), ($1, '/', $2, 1, 'image/jpeg', 375, 750, '{}', true, $4, $5)`,
				id, st, []byte{0xff, 0xd8, byte(i)}, i == 2, []byte{0xff, 0xd8, 0xff, byte(i)})
		}
		exec(`INSERT INTO page_results (scan_id, page_path, strategy, page_url, error) VALUES ($1, '/b', 'mobile', 'https://ada.test/b', 'timed out')`, id)
	}
	oScan := store.NewID()
	exec(`INSERT INTO scans (id, site_id, status, strategy, trigger, created_at, completed_at) VALUES ($1, $2, 'complete', 'both', 'manual', $3, $3)`, oScan, oSite, now)
	exec(`INSERT INTO page_results (scan_id, page_path, strategy, page_url, result) VALUES ($1, '/', 'mobile', 'https://bo.test/', '{"scores": {"performance": 12}}')`, oScan)
	exec(`UPDATE scans SET summary = scan_summary(id), bytes = scan_bytes(id)`)

	// What the reads answer before.
	type answers struct {
		Results  [][]store.PageResult
		Errors   [][]store.PageError
		Metrics  [][]store.PageResult
		Images   [][]store.PageImage
		Image    []store.PageImage
		Result   []store.PageResult
		Scans    []store.Scan
		Bytes    int64
		Others   []store.PageResult
		Refusals []error
	}
	read := func(s *postgres.Store) answers {
		t.Helper()
		var a answers
		for _, id := range scans {
			r, err := s.PageResults(ctx, user, id)
			must(t, err)
			e, err := s.PageErrors(ctx, user, id)
			must(t, err)
			m, err := s.PageMetrics(ctx, user, id)
			must(t, err)
			im, err := s.PageImages(ctx, user, id, "/", store.StrategyMobile)
			must(t, err)
			one, err := s.PageImage(ctx, user, id, "/", store.StrategyDesktop, 1)
			must(t, err)
			res, err := s.PageResult(ctx, user, id, "/", store.StrategyMobile)
			must(t, err)
			a.Results, a.Errors, a.Metrics, a.Images = append(a.Results, r), append(a.Errors, e), append(a.Metrics, m), append(a.Images, im)
			a.Image, a.Result = append(a.Image, one), append(a.Result, res)
		}
		var err error
		a.Scans, err = s.CompletedScans(ctx, user, site, 0)
		must(t, err)
		a.Bytes, err = s.WorkspaceBytes(ctx, user)
		must(t, err)
		a.Others, err = s.PageResults(ctx, other, oScan)
		must(t, err)
		_, err1 := s.PageResults(ctx, other, scans[0])
		_, err2 := s.PageImages(ctx, other, scans[0], "/", store.StrategyMobile)
		a.Refusals = []error{err1, err2}
		return a
	}
	before := read(old)
	count := func(s *postgres.Store, table string) (n int) {
		t.Helper()
		must(t, s.DB().QueryRowContext(ctx, `SELECT count(*) FROM `+table).Scan(&n))
		return n
	}
	rows, pictures := count(old, "page_results"), count(old, "page_images")
	old.Close()

	s := storetest.Open(t, dsn) // applies 043
	if got := count(s, "page_results"); got != rows || rows != 5*3+1 {
		t.Errorf("%d page rows after the migration, %d before (want 16)", got, rows)
	}
	if got := count(s, "page_images"); got != pictures || pictures != 5*2*2 {
		t.Errorf("%d pictures after the migration, %d before (want 20)", got, pictures)
	}
	if got := count(s, "page_results_default"); got != 3 {
		t.Errorf("%d rows in the default partition, want the far scan's 3", got)
	}
	var misplaced int
	must(t, s.DB().QueryRowContext(ctx, `SELECT count(*) FROM page_results r JOIN scans c ON c.id = r.scan_id JOIN sites x ON x.id = c.site_id
		WHERE r.scanned_at <> c.created_at OR r.workspace_id <> x.workspace_id`).Scan(&misplaced))
	if misplaced != 0 {
		t.Errorf("%d rows with a partition key or workspace other than their scan's", misplaced)
	}
	after := read(s)
	if !reflect.DeepEqual(after, before) {
		t.Errorf("the reads answer differently after the migration:\nbefore %+v\nafter  %+v", before, after)
	}
	if before.Refusals[0] == nil || before.Refusals[1] == nil {
		t.Error("another workspace read a scan")
	}
	months, err := s.Partitions(ctx)
	must(t, err)
	if len(months) < 4 || !months[0].Equal(time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("partitions %v, want one a month from October 2026 (the oldest scan's) to two months ahead", months)
	}
	// The migrated rows take new writes: a retried page of a migrated scan replaces its row.
	must(t, s.DB().QueryRowContext(ctx, `SELECT count(*) FROM page_results WHERE scan_id = $1`, scans[0]).Scan(&misplaced))
	if misplaced != 3 {
		t.Errorf("scan 0 has %d rows", misplaced)
	}
}
