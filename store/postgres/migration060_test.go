package postgres_test

import (
	"context"
	"os"
	"reflect"
	"testing"

	"sitepulse/scanner/lighthouse"
	"sitepulse/store"
	"sitepulse/store/postgres"
	"sitepulse/store/storetest"
)

// Migration 060 on a database with results: a result stored before it (pglz) reads back as it
// was stored, a result stored after it is compressed with lz4, on the months that were there and
// on the months made later, and both scans' pages count once.
func TestMigration060KeepsResultsAndCompressesNewOnes(t *testing.T) {
	ctx := context.Background()
	dsn := storetest.SchemaDSN(t)
	old, err := postgres.OpenMigratedTo(ctx, dsn, 59)
	if err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile("../../testdata/psi/home.mobile.json")
	must(t, err)
	run, err := lighthouse.ExtractPSI(body)
	must(t, err)
	u := newUser(t, old, "ada@example.com")
	site := newSite(t, old, u, "ada")
	save := func(s store.Store, path string) store.Scan {
		t.Helper()
		sc := enqueue(t, s, site, t0)
		j, err := s.ClaimJob(ctx, store.KindScan, "w", t0, 0)
		must(t, err)
		must(t, s.StartScan(ctx, j.Lease(), 1, t0))
		r := run
		r.PagePath, r.PageURL = path, "https://ada.test"+path
		must(t, s.SavePageResult(ctx, j.Lease(), r))
		must(t, s.CompleteScan(ctx, j.Lease(), store.ScanScores{}, t0))
		return sc
	}
	before := save(old, "/before")
	old.Close()

	s := storetest.Open(t, dsn)
	var lz4 bool // Postgres 14 and later built with lz4; elsewhere 060 leaves pglz
	must(t, s.DB().QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_settings WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals))`).Scan(&lz4))
	after := save(s, "/after")
	if _, err := s.PruneMonths(ctx, t0.AddDate(0, store.MonthsAhead+2, 0)); err != nil { // months made after 060
		t.Fatal(err)
	}
	for _, c := range []struct {
		scan store.Scan
		path string
		want string
	}{{before, "/before", "pglz"}, {after, "/after", map[bool]string{true: "lz4", false: "pglz"}[lz4]}} {
		got, err := s.PageResult(ctx, u.ID, c.scan.ID, c.path, store.StrategyMobile)
		must(t, err)
		if !reflect.DeepEqual(got.Explain, run.Explain) || !reflect.DeepEqual(got.Scores, run.Scores) {
			t.Errorf("%s read back differs from what was stored", c.path)
		}
		if list, err := s.PageImages(ctx, u.ID, c.scan.ID, c.path, store.StrategyMobile); err != nil || len(list) != len(run.Images) {
			t.Errorf("%s: %d pictures (%v), want %d", c.path, len(list), err, len(run.Images))
		}
		sc, err := s.Scan(ctx, u.ID, c.scan.ID)
		must(t, err)
		if sc.PagesDone != 1 {
			t.Errorf("%s: pages done %d, want 1", c.path, sc.PagesDone)
		}
		var method string
		must(t, s.DB().QueryRowContext(ctx, `SELECT pg_column_compression(result) FROM page_results WHERE scan_id = $1`, c.scan.ID).Scan(&method))
		if method != c.want {
			t.Errorf("%s: result compressed with %s, want %s", c.path, method, c.want)
		}
	}
	var notLZ4 []string
	rows, err := s.DB().QueryContext(ctx, `SELECT a.attrelid::regclass::text || '.' || a.attname FROM pg_attribute a
		WHERE a.attname IN ('result', 'explain') AND a.attcompression <> 'l' AND (a.attrelid = 'page_results'::regclass
			OR a.attrelid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = 'page_results'::regclass))`)
	must(t, err)
	defer rows.Close()
	for rows.Next() {
		var col string
		must(t, rows.Scan(&col))
		notLZ4 = append(notLZ4, col)
	}
	must(t, rows.Err())
	if lz4 && len(notLZ4) > 0 {
		t.Errorf("columns not compressed with lz4 after 060: %v", notLZ4)
	}
}
