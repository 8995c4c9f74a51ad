package postgres_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"sitepulse/handlers/beacon"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// What one page's day takes in Postgres at 1 and at 1,000,000 beacons (the figures of
// .ci/README.md): each beacon carries five metrics, INP with one of 30 selectors (20 kept),
// LCP and CLS with their elements; values spread log-normally. Past the daily cap (100,000)
// the ingest samples, and the rows are bounded by the histogram bins whatever the traffic.
//
//	DATABASE_URL=... go test ./store/postgres/ -run TestBeaconStoragePerPageDay -v
func TestBeaconStoragePerPageDay(t *testing.T) {
	for _, n := range []int{1, 1_000_000} {
		if n > 1 && testing.Short() {
			continue
		}
		pg := storetest.Postgres(t)
		ctx := context.Background()
		u := store.User{ID: store.NewID(), Email: "a@example.com", PasswordHash: "x", CreatedAt: time.Now()}
		site := store.Site{ID: store.NewID(), UserID: u.ID, Name: "Shop", Domain: "shop.example", Pages: []string{"/"}, CreatedAt: time.Now()}
		must(t, pg.CreateUser(ctx, u))
		must(t, pg.CreateSite(ctx, site))
		key, err := pg.BeaconKey(ctx, u.ID, site.ID)
		must(t, err)
		now := time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC)
		in := beacon.New(pg, beacon.Options{Now: func() time.Time { return now }, FlushEvery: time.Hour, SiteRate: 1e12, SiteBurst: 1e12, Seed: 1})
		rnd := rand.New(rand.NewPCG(1, 2))
		logn := func(median, spread, max float64) float64 {
			return math.Min(max, median*math.Exp(rnd.NormFloat64()*spread))
		}
		selectors := make([]string, 30)
		for i := range selectors {
			selectors[i] = "main>section:nth-child(" + string(rune('a'+i%26)) + ")>button.toggle"
		}
		for i := 0; i < n; i++ {
			inp := logn(150, 0.8, 50_000)
			b := beacon.Beacon{Path: "/pricing", Device: []store.FieldDevice{store.FieldPhone, store.FieldDesktop}[i%2], Navigation: "navigate", Figures: []beacon.Figure{
				{Metric: "ttfb", Value: logn(300, 0.7, 100_000)}, {Metric: "fcp", Value: logn(1200, 0.6, 100_000)},
				{Metric: "lcp", Value: logn(2200, 0.6, 100_000), Target: "img.hero", Resource: "https://shop.example/hero.jpg"},
				{Metric: "cls", Value: math.Min(50, logn(0.05, 1.2, 50)), Target: "main>div.banner"},
				{Metric: "inp", Value: inp, Target: selectors[rnd.IntN(len(selectors))], EventType: "click", InputDelay: inp * 0.1, ProcessingDuration: inp * 0.6, PresentationDelay: inp * 0.3},
			}}
			if err := in.Accept(ctx, key, "https://shop.example", b); err != nil {
				t.Fatal(err)
			}
			if i%200_000 == 199_999 {
				must(t, in.Flush(ctx))
			}
		}
		must(t, in.Flush(ctx))
		rows, rowBytes, tableBytes, err := pg.BeaconBytes(ctx, site.ID)
		must(t, err)
		s := in.Stats()
		t.Logf("%d beacons to one page in a day (%d kept, %d sampled away): %d rows, %d bytes of rows, %d bytes with indexes and pages",
			n, s.Accepted, s.Sampled, rows, rowBytes, tableBytes)
		// The bound whatever the traffic: per device, every bin of every metric on the page and
		// site-wide, the page views, and MaxBeaconInteractions selectors' four INP histograms and
		// LCP and CLS elements' histograms.
		var bins int64
		for _, m := range store.FieldMetrics {
			bins += int64(store.BeaconBins(m))
		}
		bound := 2 * (2*(bins+int64(len(store.BeaconNavigations))) + store.MaxBeaconInteractions*(4*int64(store.BeaconBins("inp"))+int64(store.BeaconBins("lcp")+store.BeaconBins("cls"))))
		if rows > bound {
			t.Errorf("a page's day has %d rows, above the bound %d", rows, bound)
		}
	}
}
