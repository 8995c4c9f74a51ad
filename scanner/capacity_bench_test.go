package scanner

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"sitepulse/scanner/scantest"
	"sitepulse/store"
	"sitepulse/store/memory"

	"sitepulse/scanner/discover"
	"sitepulse/scanner/psi"
)

// BenchmarkTimeToResults prints the wall time of scans against a PSI double answering in 3 s,
// on the defaults (PSI_RATE_LIMIT 400 per 100 s, PSI_MAX_INFLIGHT 64, three workers), next to
// the ideal audits/rate + latency, for 10, 50 and 200 pages (x2 strategies) and for three
// sites of 50 pages published at once. "cold" starts with an unused quota window, which lets
// 400 calls go at once; "warm" starts with the window spent evenly, as after minutes of
// steady work, so the rate binds from the first call. Run it with
//
//	go test ./scanner -run '^$' -bench TimeToResults -benchtime 1x
//
// It takes about five minutes: every audit really waits 3 s.
func BenchmarkTimeToResults(b *testing.B) {
	if testing.Short() {
		b.Skip("3 s audits")
	}
	const latency = 3 * time.Second
	for _, warm := range []bool{false, true} {
		for _, c := range []struct {
			name         string
			sites, pages int
		}{{"10 pages", 1, 10}, {"50 pages", 1, 50}, {"200 pages", 1, 200}, {"three sites of 50 at once", 3, 50}} {
			name := "cold/" + c.name
			if warm {
				name = "warm/" + c.name
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					wall, each := timeScans(b, c.sites, c.pages, latency, warm)
					audits := 2 * c.sites * c.pages
					ideal := time.Duration(float64(audits)/4*float64(time.Second)) + latency
					b.ReportMetric(wall.Seconds(), "wall_s")
					b.ReportMetric(ideal.Seconds(), "ideal_s")
					b.ReportMetric(wall.Seconds()/ideal.Seconds(), "x_ideal")
					b.Logf("%s: %d audits in %s, ideal %s (%.2fx); each site's scan: %v", name, audits,
						wall.Round(10*time.Millisecond), ideal, wall.Seconds()/ideal.Seconds(), each)
				}
			})
		}
	}
}

// timeScans publishes sites of pages at once and answers how long until the last scan
// completed, and each scan's own time from start to completion.
func timeScans(b *testing.B, sites, pages int, latency time.Duration, warm bool) (time.Duration, []time.Duration) {
	ctx := context.Background()
	st := memory.New()
	fake := scantest.NewPSI(b, "../testdata/psi")
	fake.Delay(latency)
	limiter := psi.NewRateLimiter(400, 100*time.Second)
	if warm { // the last window's 400 calls spread evenly over it
		limiter.Warm(time.Now())
	}
	capacity := psi.NewCapacity(psi.CapacityConfig{Limiter: limiter})
	pool := NewPool(PoolConfig{Store: st, Capacity: capacity, Poll: 10 * time.Millisecond,
		Auditor:   psi.New(psi.Config{Endpoint: fake.Endpoint(), Limiter: limiter, Capacity: capacity}),
		Discovery: discover.Discovery{MaxPages: pages}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	user := store.User{ID: store.NewID(), Email: "ttr@example.com", PasswordHash: "x", CreatedAt: time.Now()}
	if err := st.CreateUser(ctx, user); err != nil {
		b.Fatal(err)
	}
	var ids []string
	began := time.Now()
	for i := range sites {
		s := store.Site{ID: store.NewID(), UserID: user.ID, Name: fmt.Sprint("site ", i), Domain: "sample.test", Pages: copies(pages / 5), CreatedAt: time.Now()}
		if err := st.CreateSite(ctx, s); err != nil {
			b.Fatal(err)
		}
		sc := store.Scan{ID: store.NewID(), SiteID: s.ID, Strategy: store.StrategyBoth, Trigger: store.TriggerWebhook, CreatedAt: time.Now()}
		if err := st.EnqueueScan(ctx, sc, store.KindScan, time.Now()); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, sc.ID)
	}
	pool.Start()
	defer pool.Stop(ctx)
	var last time.Time
	var each []time.Duration
	for _, id := range ids {
		for {
			sc, err := st.Scan(ctx, user.ID, id)
			if err != nil {
				b.Fatal(err)
			}
			if sc.Status == store.StatusFailed || sc.Status == store.StatusComplete && sc.PagesDone != 2*pages {
				b.Fatalf("scan %s with %d of %d audits: %s", sc.Status, sc.PagesDone, 2*pages, sc.Error)
			}
			if sc.Status == store.StatusComplete {
				last = later(last, *sc.CompletedAt)
				each = append(each, sc.CompletedAt.Sub(*sc.StartedAt).Round(10*time.Millisecond))
				break
			}
			// Not an event: the pool announces no finished scan (Then runs inside the completing
			// transaction, before it commits), so the benchmark polls the scan row; its figures are the
			// stored start and completion times, which the poll does not change.
			time.Sleep(20 * time.Millisecond)
		}
	}
	return last.Sub(began), each
}

// BenchmarkQuota429s prints the 429s the adaptive capacity meets on real time, through a real
// socket and the machine's scheduler, in the two cases TestTimeToResults bounds on fake time:
// a key refusing more than 8 calls at once, and a key with a quarter of the configured rate
// (three scans of 20 audits each). Run it with
//
//	go test ./scanner -run '^$' -bench Quota429s -benchtime 3x
func BenchmarkQuota429s(b *testing.B) {
	for _, c := range []quotaCase{quotaAtOnce, quotaRate} {
		b.Run(c.name, func(b *testing.B) {
			var all, later int
			for b.Loop() {
				r := newRig(b, memory.New())
				r.psi = scantest.NewPSI(b, "../testdata/psi")
				a, l := runQuotaCase(b, r, c)
				all, later = all+a, later+l
			}
			b.ReportMetric(float64(all)/float64(b.N), "429s/op")
			b.ReportMetric(float64(later)/float64(b.N), "late-429s/op")
		})
	}
}
