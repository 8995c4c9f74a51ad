package storetest_test

import (
	"fmt"
	"testing"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// BenchmarkTrendMetrics times what the site page reads for its vitals trend: the scores and
// vitals of a site's last 20 completed scans of 100 results each (50 pages, two strategies),
// one PageMetrics call per scan against one PageMetricsOf call.
//
//	DATABASE_URL=... go test ./store -run '^$' -bench TrendMetrics -benchtime 2s
func BenchmarkTrendMetrics(b *testing.B) {
	pg := storetest.Postgres(b)
	a := newUser(b, pg, "a@example.com")
	site := newSite(b, pg, a, "site")
	var ids []string
	for i := 0; i < 20; i++ {
		sc := enqueue(b, pg, site, t0)
		j, err := pg.ClaimJob(ctx, store.KindScan, "w", t0, 0)
		must(b, err)
		must(b, pg.StartScan(ctx, j.Lease(), 100, t0))
		for p := 0; p < 50; p++ {
			for _, st := range []store.Strategy{"mobile", "desktop"} {
				lcp, cls := 2000.0+float64(p), 0.05
				must(b, pg.SavePageResult(ctx, j.Lease(), store.PageResult{PagePath: fmt.Sprintf("/p%d", p), PageURL: "https://x.test/", Strategy: st,
					Scores: store.PageScores{Performance: ip(70), SEO: ip(90)}, CoreWebVitals: store.Vitals{LCP: &lcp, CLS: &cls}}))
			}
		}
		must(b, pg.CompleteScan(ctx, j.Lease(), store.ScanScores{}, t0))
		ids = append(ids, sc.ID)
	}
	b.Run("PageMetrics per scan", func(b *testing.B) {
		for b.Loop() {
			for _, id := range ids {
				if _, err := pg.PageMetrics(ctx, a.ID, id); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("PageMetricsOf", func(b *testing.B) {
		for b.Loop() {
			if got, err := pg.PageMetricsOf(ctx, a.ID, ids); err != nil || len(got) != 20 {
				b.Fatal(len(got), err)
			}
		}
	})
}
