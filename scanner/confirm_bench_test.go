package scanner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/memory"

	"sitepulse/scanner/psi"
)

// BenchmarkConfirmationCost counts what confirming regressions costs in PSI calls, with
// REGRESSION_CONFIRM_RUNS=2, through the real PSI client and the PSI double: each iteration
// scans a 10-page site twice and reports the calls of the second scan. Unchanged, that is
// pages x 2; with one page in ten regressing on both strategies, 2 x 2 re-audits more.
func BenchmarkConfirmationCost(b *testing.B) {
	const pages = 10
	// The site before: every page the sample home page before the bad publish; after: page 3
	// is the home page after it (performance 49 -> 16 on mobile, 92 -> 43 on desktop).
	before, after := b.TempDir(), b.TempDir()
	for _, s := range []string{"mobile", "desktop"} {
		good, err := os.ReadFile(filepath.Join(beforeDir, "home."+s+".json"))
		if err != nil {
			b.Fatal(err)
		}
		bad, err := os.ReadFile(filepath.Join(afterDir, "home."+s+".json"))
		if err != nil {
			b.Fatal(err)
		}
		for i := range pages {
			if err := os.WriteFile(filepath.Join(before, fmt.Sprintf("page-%02d.%s.json", i, s)), good, 0o644); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(after, "page-03."+s+".json"), bad, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	paths := make([]string, pages)
	for i := range paths {
		paths[i] = fmt.Sprintf("/page-%02d", i)
	}
	for _, c := range []struct {
		name      string
		regresses bool
		want      int
	}{{"unchanged", false, pages * 2}, {"one_page_in_ten_regresses", true, pages*2 + 2*2}} {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			st := memory.New()
			fake := scantest.NewPSI(b, before)
			user := store.User{ID: store.NewID(), Email: "bench@example.com", PasswordHash: "x", CreatedAt: time.Now()}
			if err := st.CreateUser(ctx, user); err != nil {
				b.Fatal(err)
			}
			pool := NewPool(PoolConfig{Store: st, Auditor: psi.New(psi.Config{Endpoint: fake.Endpoint()}), ConfirmRuns: 2, Poll: 2 * time.Millisecond})
			pool.Start()
			defer pool.Stop(ctx)
			scan := func(site store.Site) {
				sc := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: time.Now()}
				if err := st.EnqueueScan(ctx, sc, store.KindScan, time.Now()); err != nil {
					b.Fatal(err)
				}
				for {
					got, err := st.Scan(ctx, user.ID, sc.ID)
					if err != nil {
						b.Fatal(err)
					}
					if got.Status == store.StatusComplete {
						return
					}
					if got.Status == store.StatusFailed {
						b.Fatalf("scan failed: %s", got.Error)
					}
					// Not an event: the pool announces no finished scan (Then runs inside the completing
					// transaction, before it commits), so the benchmark polls the scan row; the figure is a
					// count of PSI calls, which the poll does not change.
					time.Sleep(time.Millisecond)
				}
			}
			calls, scans := 0, 0
			for b.Loop() {
				site := store.Site{ID: store.NewID(), UserID: user.ID, Name: "bench", Domain: "bench.test", Pages: paths, CreatedAt: time.Now()}
				if err := st.CreateSite(ctx, site); err != nil {
					b.Fatal(err)
				}
				for _, s := range []store.Strategy{"mobile", "desktop"} {
					fake.Sequence("/page-03", s, before)
				}
				scan(site) // the baseline
				if c.regresses {
					for _, s := range []store.Strategy{"mobile", "desktop"} {
						fake.Sequence("/page-03", s, after)
					}
				}
				was := fake.Total()
				scan(site)
				calls += fake.Total() - was
				scans++
			}
			if got := calls / scans; got != c.want || calls%scans != 0 {
				b.Errorf("%d PSI calls over %d scans, want %d per scan", calls, scans, c.want)
			}
			b.ReportMetric(float64(calls)/float64(scans), "psi-calls/scan")
			b.ReportMetric(float64(calls)/float64(scans*pages), "psi-calls/page")
		})
	}
}
