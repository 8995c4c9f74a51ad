package storetest_test

import (
	"testing"
	"time"

	"sitepulse/handlers/beacon"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// BEACON_DAILY_CAP holds across processes: two ingests on one store (two web replicas) keep
// together what one would, and an ingest made afresh (a restart) goes on from the day's count
// the store holds, not from zero. On both stores.
func TestBeaconDailyCapShared(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			testBeaconCapShared(t, b.Open(t))
		})
	}
}

func testBeaconCapShared(t *testing.T, s store.Store) {
	const dailyCap = 100
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "shop")
	key, err := s.BeaconKey(ctx, a.ID, site.ID)
	must(t, err)
	now := day0.Add(9 * time.Hour)
	clock := func() time.Time { return now }
	ingest := func(seed uint64) *beacon.Ingest {
		return beacon.New(s, beacon.Options{Now: clock, DailyCap: dailyCap, SiteRate: 1e9, AddrRate: 1e9, Seed: seed})
	}
	send := func(in *beacon.Ingest, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			must(t, in.Accept(ctx, key, "https://shop.test", beacon.Beacon{Path: "/", Device: store.FieldPhone, Navigation: "navigate",
				Figures: []beacon.Figure{{Metric: "lcp", Value: 1500}}}))
		}
	}
	kept := func() int64 {
		t.Helper()
		pts, err := s.BeaconSeriesOf(ctx, site.ID, store.FieldQuery{Metric: "lcp"})
		must(t, err)
		if len(pts) != 1 {
			t.Fatalf("points %+v", pts)
		}
		return pts[0].Samples
	}
	// 800 beacons, from two replicas taking turns. One process would keep the first 100, then
	// about half of the next 100, a quarter of the 200 after, an eighth of the last 400: about
	// 250. Each replica counting alone would keep about 200 of its own 400: about 400.
	r1, r2 := ingest(1), ingest(2)
	for i := 0; i < 8; i++ {
		send(r1, 50)
		send(r2, 50)
	}
	shared := kept()
	if shared < 200 || shared > 300 {
		t.Fatalf("two replicas kept %d of 800 beacons under a cap of %d: want about 250, as one process would", shared, dailyCap)
	}
	// A restart: a new ingest on the same store, 400 more beacons (the day's 801st to 1200th,
	// kept 1 in 8: about 50). Counting from zero it would keep about 200 of them.
	send(ingest(3), 400)
	restart := kept() - shared
	if restart > 100 {
		t.Fatalf("after a restart %d of 400 more beacons were kept: want about 50, the day's count going on", restart)
	}
	t.Logf("cap %d: two replicas kept %d of 800 beacons; a restarted ingest %d of 400 more", dailyCap, shared, restart)
	// The next UTC day starts afresh.
	now = now.Add(24 * time.Hour)
	send(r1, dailyCap)
	pts, err := s.BeaconSeriesOf(ctx, site.ID, store.FieldQuery{Metric: "lcp", From: store.BeaconDay(now)})
	must(t, err)
	if len(pts) != 1 || pts[0].Samples != dailyCap {
		t.Fatalf("the next day kept %+v, want all %d", pts, dailyCap)
	}
}
