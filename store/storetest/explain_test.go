package storetest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/lighthouse"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// TestExplains is the contract of what explains a run (issue 33) on both stores: the explain
// data a result carries is written with it and read back as it was, scoped like the result.
func TestExplains(t *testing.T) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"a result's explain data is stored with it and read back by its page result, for members only", testExplainStored},
		{"pruning a result's row takes its explain data and its bytes with it", testExplainPruned},
	}
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) { tc.fn(t, b.Open(t)) })
			}
		})
	}
}

// fixtureRun extracts a real PSI response of testdata ("psi" or "psi-before", "home.mobile").
func fixtureRun(t *testing.T, dir, name string) store.PageResult {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", dir, name+".json"))
	must(t, err)
	r, err := lighthouse.ExtractPSI(b)
	must(t, err)
	if r.Explain == nil || len(r.Explain.Requests) == 0 {
		t.Fatalf("%s/%s: no explain data extracted", dir, name)
	}
	return r
}

func testExplainStored(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	b := newUser(t, s, "b@example.com")
	site := newSite(t, s, a, "site")
	home, pricing := fixtureRun(t, "psi", "home.mobile"), fixtureRun(t, "psi", "pricing.desktop")
	bare := page("/bare", store.StrategyMobile, ip(90), 1000) // stored without explain data
	sc := scanWith(t, s, site, t0, true, home, pricing, bare)

	got, err := s.PageResult(ctx, a.ID, sc.ID, home.PagePath, home.Strategy)
	must(t, err)
	if !reflect.DeepEqual(got.Explain, home.Explain) {
		t.Errorf("explain read back differs:\n got %+v\nwant %+v", got.Explain, home.Explain)
	}
	if req, ok := got.Explain.LCPRequest(); !ok || req.URL != "http://127.0.0.1:8701/static/img/hero.jpg" {
		t.Errorf("LCP request %+v", req)
	}
	got, err = s.PageResult(ctx, a.ID, sc.ID, pricing.PagePath, pricing.Strategy)
	must(t, err)
	if !reflect.DeepEqual(got.Explain, pricing.Explain) {
		t.Errorf("the second result's explain differs")
	}
	got, err = s.PageResult(ctx, a.ID, sc.ID, "/bare", store.StrategyMobile)
	must(t, err)
	if got.Explain != nil {
		t.Errorf("a result stored without explain data reads %+v", got.Explain)
	}
	// The result's JSON never carries it: get_page_details and the export stay as they were.
	if j := string(store.EncodeResult(home)); strings.Contains(j, `"requests"`) || strings.Contains(j, "widget.js") {
		t.Errorf("the result's JSON carries the explain data: %.200s", j)
	}
	// A stranger reads nothing of it.
	_, err = s.PageResult(ctx, b.ID, sc.ID, home.PagePath, home.Strategy)
	wantErr(t, err, store.ErrNotFound)

	// Stored again (a retried job), the row is replaced with its explain data.
	again := home
	again.Explain = pricing.Explain
	j := scanJob(t, s, site, t0.Add(time.Hour))
	must(t, s.SavePageResult(ctx, j.Lease(), home))
	must(t, s.SavePageResult(ctx, j.Lease(), again))
	got, err = s.PageResult(ctx, a.ID, j.ScanID, home.PagePath, home.Strategy)
	must(t, err)
	if !reflect.DeepEqual(got.Explain, pricing.Explain) {
		t.Error("the upsert kept the first explain data")
	}
}

func testExplainPruned(t *testing.T, s store.Store) {
	day := 24 * time.Hour
	now := t0.Add(400 * day)
	a := newUser(t, s, "a@example.com")
	must(t, s.SetRetention(ctx, a.ID, 30))
	site := newSite(t, s, a, "site")
	home := fixtureRun(t, "psi", "home.mobile")
	bare := home
	bare.Explain = nil
	old := scanWith(t, s, site, now.Add(-100*day), true, home)
	oldBare := scanWith(t, s, site, now.Add(-99*day), true, bare)
	scanWith(t, s, site, now.Add(-2*day), true, home)
	scanWith(t, s, site, now.Add(-1*day), true, home)
	if old.Bytes <= oldBare.Bytes {
		t.Errorf("a scan with explain data takes %d bytes, one without %d", old.Bytes, oldBare.Bytes)
	}
	for {
		n, err := s.PruneDetails(ctx, now, 1000)
		must(t, err)
		if n == 0 {
			break
		}
	}
	got, err := s.Scan(ctx, a.ID, old.ID)
	must(t, err)
	if got.Bytes != 300 || got.DetailsPrunedAt == nil {
		t.Errorf("pruned scan: %d bytes, pruned at %v", got.Bytes, got.DetailsPrunedAt)
	}
	_, err = s.PageResult(ctx, a.ID, old.ID, home.PagePath, home.Strategy)
	wantErr(t, err, store.ErrNotFound)
}

// scanJob enqueues a scan of site, claims its job and starts it.
func scanJob(t *testing.T, s store.Store, site store.Site, at time.Time) store.Job {
	t.Helper()
	enqueue(t, s, site, at)
	j, err := s.ClaimJob(ctx, store.KindScan, "w", at)
	must(t, err)
	must(t, s.StartScan(ctx, j.Lease(), 1, at))
	return j
}

// fixtureRuns extracts the 20 Lighthouse 13 runs of testdata/psi-before and testdata/psi.
func fixtureRuns(t *testing.T) []store.PageResult {
	t.Helper()
	var out []store.PageResult
	for _, dir := range []string{"psi-before", "psi"} {
		files, err := filepath.Glob(filepath.Join("..", "..", "testdata", dir, "*.json"))
		must(t, err)
		for _, f := range files {
			out = append(out, fixtureRun(t, dir, strings.TrimSuffix(filepath.Base(f), ".json")))
		}
	}
	if len(out) != 20 {
		t.Fatalf("%d fixture runs, want 20", len(out))
	}
	return out
}

// TestStoredBytesPerPage measures what a store keeps per audited page of the fixtures, as the
// scan's recorded size counts it (Postgres: scan_bytes, its rows' pg_column_size), before issue
// 33 (the result alone) and with the explain data. .ci/README.md keeps the figures:
//
//	DATABASE_URL=... go test ./store/storetest -run TestStoredBytesPerPage -v
func TestStoredBytesPerPage(t *testing.T) {
	runs := fixtureRuns(t)
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			s := b.Open(t)
			a := newUser(t, s, "a@example.com")
			site := newSite(t, s, a, "site")
			perPage := func(at time.Time, keep func(*store.PageResult)) int64 {
				j := scanJob(t, s, site, at)
				for i, r := range runs {
					keep(&r)
					r.PagePath = fmt.Sprintf("%s#%d", r.PagePath, i) // before and after are different pages of one scan
					must(t, s.SavePageResult(ctx, j.Lease(), r))
				}
				must(t, s.CompleteScan(ctx, j.Lease(), store.ScanScores{}, at.Add(time.Minute)))
				sc, err := s.Scan(ctx, a.ID, j.ScanID)
				must(t, err)
				return (sc.Bytes - 300) / int64(len(runs))
			}
			before := perPage(t0, func(r *store.PageResult) { r.Explain = nil })
			explain := perPage(t0.Add(time.Hour), func(*store.PageResult) {})
			t.Logf("%s: %d B per audited page before issue 33, %d B with the explain data (%+d B)", b.Name, before, explain, explain-before)
			if explain-before > 8<<10 {
				t.Errorf("the explain data adds %d B per page, over the 8 KB budget", explain-before)
			}
		})
	}
}
