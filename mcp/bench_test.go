package mcp

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"testing"
	"time"

	"sitepulse/scanner/analysis"
	"sitepulse/scanner/lighthouse"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// benchPages is the size of the benchmark's scans: 200 pages, each audited mobile and desktop.
const benchPages = 200

// fixtureResults extracts the real PSI responses of a testdata directory.
func fixtureResults(tb testing.TB, dir string) []store.PageResult {
	tb.Helper()
	fsys := os.DirFS("..")
	names, err := fs.Glob(fsys, path.Join(dir, "*.json"))
	if err != nil || len(names) == 0 {
		tb.Fatalf("no fixtures in %s", dir)
	}
	var out []store.PageResult
	for _, name := range names {
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			tb.Fatal(err)
		}
		r, err := lighthouse.ExtractPSI(body)
		if err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		out = append(out, r)
	}
	return out
}

// recordScan takes a 200-page scan through the queue's life cycle, page i getting the real
// result of fixture i mod n (mobile and desktop kept apart).
func recordScan(tb testing.TB, st store.Store, site store.Site, fixtures []store.PageResult, at time.Time) string {
	tb.Helper()
	ctx := context.Background()
	byStrategy := map[store.Strategy][]store.PageResult{}
	for _, r := range fixtures {
		byStrategy[r.Strategy] = append(byStrategy[r.Strategy], r)
	}
	scan := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: at}
	if err := st.EnqueueScan(ctx, scan, "bench", at); err != nil {
		tb.Fatal(err)
	}
	job, err := st.ClaimJob(ctx, "bench", "bench", at, 0)
	if err != nil {
		tb.Fatal(err)
	}
	lease := job.Lease()
	if err := st.StartScan(ctx, lease, 2*benchPages, at); err != nil {
		tb.Fatal(err)
	}
	var all []store.PageResult
	for i := 0; i < benchPages; i++ {
		for _, strategy := range []store.Strategy{store.StrategyMobile, store.StrategyDesktop} {
			pool := byStrategy[strategy]
			r := pool[i%len(pool)]
			r.PagePath = fmt.Sprintf("/page-%03d", i)
			r.PageURL = "https://bench.test" + r.PagePath
			if err := st.SavePageResult(ctx, lease, r); err != nil {
				tb.Fatal(err)
			}
			all = append(all, r)
		}
	}
	if err := st.CompleteScan(ctx, lease, analysis.ScanScores(all), at.Add(time.Minute)); err != nil {
		tb.Fatal(err)
	}
	return scan.ID
}

// BenchmarkToolsCallPostgres measures tools/call end to end through Serve (JSON-RPC decoding,
// schema validation, Postgres reads, analysis, encoding) on two 200-page scans.
func BenchmarkToolsCallPostgres(b *testing.B) {
	st := storetest.Postgres(b)
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	u := store.User{ID: store.NewID(), Email: "bench@example.com", PasswordHash: "x", CreatedAt: now}
	if err := st.CreateUser(ctx, u); err != nil {
		b.Fatal(err)
	}
	site := store.Site{ID: store.NewID(), UserID: u.ID, Name: "Bench", Domain: "bench.test", CreatedAt: now}
	if err := st.CreateSite(ctx, site); err != nil {
		b.Fatal(err)
	}
	recordScan(b, st, site, fixtureResults(b, "testdata/psi-before"), now.Add(-time.Hour))
	latest := recordScan(b, st, site, fixtureResults(b, "testdata/psi"), now)
	srv := New(Config{Sites: st, Scans: st, Writes: st, BaseURL: testBase, Now: func() time.Time { return now }})
	cases := []struct{ name, params string }{
		{"get_latest_scan", `{"name":"get_latest_scan","arguments":{"siteId":"` + site.ID + `"}}`},
		{"get_accessibility_issues", `{"name":"get_accessibility_issues","arguments":{"siteId":"` + site.ID + `"}}`},
		{"get_regression_report", `{"name":"get_regression_report","arguments":{"siteId":"` + site.ID + `"}}`},
		{"get_page_details/pagePath", `{"name":"get_page_details","arguments":{"scanId":"` + latest + `","pagePath":"/page-123"}}`},
		{"get_page_details/worst", `{"name":"get_page_details","arguments":{"scanId":"` + latest + `"}}`},
	}
	b.Run("store.PageMetrics", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := st.PageMetrics(ctx, u.ID, latest); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range cases {
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + c.params + `}`)
		if status, out := srv.Serve(allScopes, u.ID, body); status != 200 || len(out) < 300 {
			b.Fatalf("%s: %d %s", c.name, status, out)
		}
		// warm: one server, as in production, where completed scans' metrics stay cached.
		b.Run(c.name+"/warm", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				srv.Serve(allScopes, u.ID, body)
			}
		})
		// cold: a new server per call, so every read goes to Postgres.
		b.Run(c.name+"/cold", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				New(Config{Sites: st, Scans: st, Writes: st, BaseURL: testBase}).Serve(allScopes, u.ID, body)
			}
		})
	}
}
