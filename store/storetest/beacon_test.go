package storetest_test

import (
	"math"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// The beacon's store, on both stores: keys, the histograms and their p75, the slowest
// interactions, scoping and retention.
func TestBeaconStore(t *testing.T) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"a site's beacon key is made once by an owner or editor and names the site to the ingest only", testBeaconKey},
		{"beacon bins sum into daily points whose p75 is exact to a bin, scaled by sampling, per page and site-wide", testBeaconSeries},
		{"the p75 of a day is the nearest-rank p75 of the samples added, exact to a bin", testBeaconP75Table},
		{"the slowest interactions come by count then p75 with their phases, bounded per page and day", testSlowInteractions},
		{"beacon figures are read by the site's members only, and go with the site and with retention", testBeaconScopeAndRetention},
		{"page views are counted by navigation type, soft navigations included", testBeaconViews},
	}
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					t.Parallel()
					tt.fn(t, b.Open(t))
				})
			}
		})
	}
}

var day0 = time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)

func testBeaconKey(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	b := newUser(t, s, "b@example.com")
	ed := newUser(t, s, "editor@example.com")
	vw := newUser(t, s, "viewer@example.com")
	w := team(t, s, a, "Agency", map[store.User]store.Role{ed: store.RoleEditor, vw: store.RoleViewer})
	site := teamSite(t, s, a, w, "shop")
	k1, err := s.BeaconKey(ctx, a.ID, site.ID)
	must(t, err)
	k2, err := s.BeaconKey(ctx, ed.ID, site.ID)
	must(t, err)
	if !store.ValidBeaconKey(k1) || k1 != k2 {
		t.Fatalf("keys %q and %q: want one valid key", k1, k2)
	}
	for _, u := range []store.User{vw, b} {
		_, err := s.BeaconKey(ctx, u.ID, site.ID)
		wantErr(t, err, store.ErrNotFound)
	}
	_, err = s.BeaconKey(ctx, a.ID, "not-a-uuid")
	wantErr(t, err, store.ErrNotFound)
	got, err := s.BeaconSiteByKey(ctx, k1)
	must(t, err)
	if got != (store.BeaconSite{SiteID: site.ID, WorkspaceID: w.ID, Domain: "shop.test"}) {
		t.Fatalf("site by key: %+v", got)
	}
	for _, forged := range []string{site.ID, store.NewBeaconKey(), "", "b_'; DROP TABLE sites;--"} {
		_, err := s.BeaconSiteByKey(ctx, forged)
		wantErr(t, err, store.ErrNotFound)
	}
	// Another site gets another key.
	other := teamSite(t, s, a, w, "blog")
	k3, err := s.BeaconKey(ctx, a.ID, other.ID)
	must(t, err)
	if k3 == k1 {
		t.Fatal("two sites share a key")
	}
}

// add adds samples of one metric as the ingest would flush them: each into its page's bins and
// the site-wide ones, with weight the day's sampling.
func addSamples(t *testing.T, s store.Store, siteID string, day time.Time, path string, device store.FieldDevice, metric string, weight float64, values ...float64) {
	t.Helper()
	var b store.BeaconBatch
	for _, v := range values {
		bin := store.BeaconBin(metric, v)
		if bin < 0 {
			t.Fatalf("%s %v out of range", metric, v)
		}
		for _, p := range []string{path, ""} {
			b.Counts = append(b.Counts, store.BeaconCount{SiteID: siteID, Day: day, Path: p, Device: device, Metric: metric, Bin: bin, Count: weight, Kept: 1})
		}
	}
	mustAdd(t, s, b)
}

func testBeaconSeries(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "shop")
	addSamples(t, s, site.ID, day0.Add(13*time.Hour), "/pricing", store.FieldPhone, "inp", 1, 100, 200, 300, 400)
	addSamples(t, s, site.ID, day0, "/pricing", store.FieldPhone, "inp", 1, 420) // the same day, a later flush
	addSamples(t, s, site.ID, day0, "/", store.FieldDesktop, "lcp", 4, 2000)     // sampled 1 in 4
	addSamples(t, s, site.ID, day0.AddDate(0, 0, 1), "/pricing", store.FieldPhone, "inp", 1, 150)

	pts, err := s.BeaconSeriesOf(ctx, site.ID, store.FieldQuery{Page: "https://shop.test/pricing", Metric: "inp"})
	must(t, err)
	if len(pts) != 2 {
		t.Fatalf("%d points, want 2 days: %+v", len(pts), pts)
	}
	p := pts[0]
	if p.Source != store.FieldBeacon || p.Page != "https://shop.test/pricing" || p.Device != store.FieldPhone || p.Metric != "inp" ||
		!p.Start.Equal(day0) || !p.End.Equal(day0.AddDate(0, 0, 1)) || p.Samples != 5 || p.P75 == nil {
		t.Fatalf("day one: %+v", p)
	}
	if b := store.BeaconBin("inp", *p.P75); b != store.BeaconBin("inp", 400) {
		t.Errorf("p75 %v, want in 400's bin", *p.P75)
	}
	var sum float64
	for _, bin := range p.Histogram {
		sum += bin.Count
		if bin.End <= bin.Start {
			t.Errorf("bin %+v", bin)
		}
	}
	if sum != 5 {
		t.Errorf("histogram sums to %v, want 5", sum)
	}
	if !pts[1].Start.Equal(day0.AddDate(0, 0, 1)) || pts[1].Samples != 1 {
		t.Errorf("day two: %+v", pts[1])
	}

	// Site-wide: Page "". The sampled LCP day keeps 1 sample that counts 4.
	pts, err = s.BeaconSeriesOf(ctx, site.ID, store.FieldQuery{Device: store.FieldDesktop})
	must(t, err)
	if len(pts) != 1 || pts[0].Page != "" || pts[0].Metric != "lcp" || pts[0].Samples != 1 || len(pts[0].Histogram) != 1 || pts[0].Histogram[0].Count != 4 {
		t.Fatalf("site-wide desktop: %+v", pts)
	}
	// From and To select days: From <= Start < To.
	pts, err = s.BeaconSeriesOf(ctx, site.ID, store.FieldQuery{Page: "https://shop.test/pricing", From: day0.Add(time.Hour), To: day0.AddDate(0, 0, 2)})
	must(t, err)
	if len(pts) != 1 || !pts[0].Start.Equal(day0.AddDate(0, 0, 1)) {
		t.Fatalf("from a day's first hour: %+v", pts)
	}
	pts, err = s.BeaconSeriesOf(ctx, site.ID, store.FieldQuery{Page: "https://shop.test/pricing", To: day0})
	must(t, err)
	if len(pts) != 0 {
		t.Fatalf("to the first day: %+v", pts)
	}
	// A page of another origin, or of none, has no figures.
	for _, page := range []string{"https://evil.test/pricing", "https://shop.test/nothing"} {
		pts, err := s.BeaconSeriesOf(ctx, site.ID, store.FieldQuery{Page: page})
		must(t, err)
		if len(pts) != 0 {
			t.Errorf("%s: %+v", page, pts)
		}
	}
}

// The p75 table on the store: samples added in flushes of one, read back exact to a bin.
func testBeaconP75Table(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "shop")
	tests := []struct {
		path    string
		metric  string
		samples []float64
		want    float64 // the nearest-rank p75
	}{
		{"/one", "lcp", []float64{2400}, 2400},
		{"/four", "lcp", []float64{1000, 2000, 3000, 4000}, 3000},
		{"/skewed", "inp", []float64{40, 40, 40, 40, 40, 900, 900, 900}, 900},
		{"/cls", "cls", []float64{0, 0.01, 0.05, 0.3}, 0.05},
		{"/zeros", "cls", []float64{0, 0, 0, 0}, 0},
		{"/ttfb", "ttfb", []float64{80, 90, 100, 110, 120, 130, 140, 150, 160, 170}, 150},
	}
	for _, tt := range tests {
		for _, v := range tt.samples {
			addSamples(t, s, site.ID, day0, tt.path, store.FieldPhone, tt.metric, 1, v)
		}
	}
	for _, tt := range tests {
		pts, err := s.BeaconSeriesOf(ctx, site.ID, store.FieldQuery{Page: "https://shop.test" + tt.path, Metric: tt.metric})
		must(t, err)
		if len(pts) != 1 || pts[0].P75 == nil || pts[0].Samples != int64(len(tt.samples)) {
			t.Fatalf("%s: %+v", tt.path, pts)
		}
		if got := *pts[0].P75; store.BeaconBin(tt.metric, got) != store.BeaconBin(tt.metric, tt.want) || (tt.want > 0 && math.Abs(got-tt.want)/tt.want > 0.1) {
			t.Errorf("%s: p75 %v, want %v's bin", tt.path, got, tt.want)
		}
	}
}

func interaction(siteID, path, selector, event string, device store.FieldDevice, inp, input, proc, pres float64) []store.BeaconInteractionCount {
	var out []store.BeaconInteractionCount
	for part, v := range map[string]float64{"inp": inp, "input": input, "processing": proc, "presentation": pres} {
		out = append(out, store.BeaconInteractionCount{SiteID: siteID, Day: day0, Path: path, Device: device, Selector: selector,
			EventType: event, Part: part, Bin: store.BeaconBin("inp", v), Count: 1, Seen: day0.Add(time.Hour)})
	}
	return out
}

func testSlowInteractions(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "shop")
	var b store.BeaconBatch
	for i := 0; i < 3; i++ {
		b.Interactions = append(b.Interactions, interaction(site.ID, "/pricing", "button.plan-toggle", "click", store.FieldPhone, 420, 20, 350, 50)...)
	}
	b.Interactions = append(b.Interactions, interaction(site.ID, "/pricing", "input#q", "keydown", store.FieldPhone, 900, 10, 800, 90)...)
	b.Interactions = append(b.Interactions, interaction(site.ID, "/", "a.nav", "click", store.FieldDesktop, 120, 5, 60, 55)...)
	mustAdd(t, s, b)
	got, err := s.SlowInteractionsOf(ctx, site.ID, store.FieldQuery{Page: "https://shop.test/pricing"}, 10)
	must(t, err)
	if len(got) != 2 || got[0].Selector != "button.plan-toggle" || got[0].EventType != "click" || got[0].Count != 3 ||
		got[0].Page != "https://shop.test/pricing" || got[0].Device != store.FieldPhone || got[1].Selector != "input#q" {
		t.Fatalf("slowest on /pricing: %+v", got)
	}
	near := func(got, want float64) bool { return store.BeaconBin("inp", got) == store.BeaconBin("inp", want) }
	if i := got[0]; !near(i.P75, 420) || !near(i.InputDelay, 20) || !near(i.ProcessingDuration, 350) || !near(i.PresentationDelay, 50) ||
		!i.LastSeen.Equal(day0.Add(time.Hour)) {
		t.Errorf("the toggle's figures: %+v", i)
	}
	all, err := s.SlowInteractionsOf(ctx, site.ID, store.FieldQuery{}, 2)
	must(t, err)
	if len(all) != 2 || all[0].Selector != "button.plan-toggle" {
		t.Fatalf("site-wide, limit 2: %+v", all)
	}
	desk, err := s.SlowInteractionsOf(ctx, site.ID, store.FieldQuery{Device: store.FieldDesktop}, 10)
	must(t, err)
	if len(desk) != 1 || desk[0].Page != "https://shop.test/" {
		t.Fatalf("desktop: %+v", desk)
	}
	// A flood of distinct selectors keeps at most MaxBeaconInteractions per page and day.
	for round := 0; round < 3; round++ {
		var flood store.BeaconBatch
		for i := 0; i < store.MaxBeaconInteractions; i++ {
			sel := "div.x" + string(rune('a'+round)) + string(rune('a'+i))
			flood.Interactions = append(flood.Interactions, interaction(site.ID, "/flood", sel, "click", store.FieldPhone, 200, 1, 1, 1)...)
		}
		mustAdd(t, s, flood)
	}
	kept, err := s.SlowInteractionsOf(ctx, site.ID, store.FieldQuery{Page: "https://shop.test/flood"}, 1000)
	must(t, err)
	if len(kept) != store.MaxBeaconInteractions {
		t.Fatalf("%d interactions kept on a flooded page, want %d", len(kept), store.MaxBeaconInteractions)
	}
	// The toggle, already kept on /pricing, is still counted.
	mustAdd(t, s, store.BeaconBatch{Interactions: interaction(site.ID, "/pricing", "button.plan-toggle", "click", store.FieldPhone, 420, 20, 350, 50)})
	got, _ = s.SlowInteractionsOf(ctx, site.ID, store.FieldQuery{Page: "https://shop.test/pricing"}, 1)
	if len(got) != 1 || got[0].Count != 4 {
		t.Fatalf("after one more: %+v", got)
	}
	// LCP elements and CLS targets are kept beside, and are no interactions.
	el := func(part, sel, res string, v float64) store.BeaconInteractionCount {
		return store.BeaconInteractionCount{SiteID: site.ID, Day: day0, Path: "/pricing", Device: store.FieldPhone, Selector: sel, EventType: res,
			Part: part, Bin: store.BeaconBin(part, v), Count: 1, Seen: day0.Add(2 * time.Hour)}
	}
	mustAdd(t, s, store.BeaconBatch{Interactions: []store.BeaconInteractionCount{
		el("lcp", "img.hero", "https://shop.test/hero.jpg", 2400), el("lcp", "img.hero", "https://shop.test/hero.jpg", 2600), el("cls", "div.banner", "", 0.2)}})
	els, err := s.BeaconElementsOf(ctx, site.ID, store.FieldQuery{Page: "https://shop.test/pricing"}, 10)
	must(t, err)
	if len(els) != 2 || els[0].Metric != "lcp" || els[0].Selector != "img.hero" || els[0].Resource != "https://shop.test/hero.jpg" || els[0].Count != 2 ||
		els[1].Metric != "cls" || els[1].Selector != "div.banner" || store.BeaconBin("cls", els[1].P75) != store.BeaconBin("cls", 0.2) {
		t.Fatalf("elements: %+v", els)
	}
	got, _ = s.SlowInteractionsOf(ctx, site.ID, store.FieldQuery{Page: "https://shop.test/pricing"}, 10)
	if len(got) != 2 {
		t.Fatalf("elements read as interactions: %+v", got)
	}
}

func testBeaconScopeAndRetention(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	b := newUser(t, s, "b@example.com")
	vw := newUser(t, s, "viewer@example.com")
	w := team(t, s, a, "Agency", map[store.User]store.Role{vw: store.RoleViewer})
	site := teamSite(t, s, a, w, "shop")
	addSamples(t, s, site.ID, day0, "/", store.FieldPhone, "lcp", 1, 1800)
	mustAdd(t, s, store.BeaconBatch{Interactions: interaction(site.ID, "/", "button", "click", store.FieldPhone, 300, 1, 1, 1)})
	for _, u := range []store.User{a, vw} {
		pts, err := s.BeaconSeries(ctx, u.ID, site.ID, store.FieldQuery{})
		must(t, err)
		its, err := s.SlowInteractions(ctx, u.ID, site.ID, store.FieldQuery{}, 10)
		must(t, err)
		if len(pts) != 1 || len(its) != 1 {
			t.Fatalf("%s reads %d points and %d interactions", u.Email, len(pts), len(its))
		}
	}
	for _, u := range []string{b.ID, "", "not-a-uuid"} {
		_, err := s.BeaconSeries(ctx, u, site.ID, store.FieldQuery{})
		wantErr(t, err, store.ErrNotFound)
		_, err = s.SlowInteractions(ctx, u, site.ID, store.FieldQuery{}, 10)
		wantErr(t, err, store.ErrNotFound)
	}
	_, err := s.BeaconSeriesOf(ctx, store.NewID(), store.FieldQuery{})
	wantErr(t, err, store.ErrNotFound)
	// Counts for an unknown site are dropped, not an error (a site deleted between accept and
	// flush).
	mustAdd(t, s, store.BeaconBatch{Counts: []store.BeaconCount{{SiteID: store.NewID(), Day: day0, Device: store.FieldPhone, Metric: "lcp", Bin: 3, Count: 1, Kept: 1}}})

	// Retention: the workspace keeps 400 days; a day older than that goes, a newer one stays.
	n, err := s.PruneBeacons(ctx, day0.AddDate(0, 0, 400))
	must(t, err)
	if n != 0 {
		t.Fatalf("pruned %d rows of a day 400 days old", n)
	}
	n, err = s.PruneBeacons(ctx, day0.AddDate(0, 0, 401))
	must(t, err)
	if n == 0 {
		t.Fatal("nothing pruned past retention")
	}
	pts, _ := s.BeaconSeriesOf(ctx, site.ID, store.FieldQuery{})
	its, _ := s.SlowInteractionsOf(ctx, site.ID, store.FieldQuery{}, 10)
	if len(pts) != 0 || len(its) != 0 {
		t.Fatalf("after retention: %+v %+v", pts, its)
	}
	// Deleting the site deletes its key and figures.
	k, err := s.BeaconKey(ctx, a.ID, site.ID)
	must(t, err)
	addSamples(t, s, site.ID, day0, "/", store.FieldPhone, "lcp", 1, 1800)
	must(t, s.DeleteSite(ctx, a.ID, site.ID))
	_, err = s.BeaconSiteByKey(ctx, k)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.BeaconSeriesOf(ctx, site.ID, store.FieldQuery{})
	wantErr(t, err, store.ErrNotFound)
}

func testBeaconViews(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	site := newSite(t, s, a, "shop")
	nav := func(path, kind string) store.BeaconCount {
		for i, n := range store.BeaconNavigations {
			if n == kind {
				return store.BeaconCount{SiteID: site.ID, Day: day0, Path: path, Device: store.FieldDesktop, Metric: store.BeaconNavMetric, Bin: i, Count: 1, Kept: 1}
			}
		}
		t.Fatalf("no navigation %q", kind)
		return store.BeaconCount{}
	}
	mustAdd(t, s, store.BeaconBatch{Counts: []store.BeaconCount{nav("/", "navigate"), nav("/", "reload"), nav("/", "soft"), nav("/", "soft")}})
	got, err := s.BeaconViewsOf(ctx, site.ID, store.FieldQuery{Page: "https://shop.test/"})
	must(t, err)
	view := func(nav string, n float64) store.BeaconViews {
		return store.BeaconViews{Page: "https://shop.test/", Device: store.FieldDesktop, Navigation: nav, Count: n}
	}
	want := []store.BeaconViews{view("navigate", 1), view("reload", 1), view("soft", 2)}
	if len(got) != len(want) {
		t.Fatalf("views %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("views[%d] %+v, want %+v", i, got[i], want[i])
		}
	}
	// Page views are not a field metric.
	pts, _ := s.BeaconSeriesOf(ctx, site.ID, store.FieldQuery{Page: "https://shop.test/"})
	if len(pts) != 0 {
		t.Errorf("views read as points: %+v", pts)
	}
}

// mustAdd adds a batch as the ingest's flush would.
func mustAdd(t *testing.T, s store.Store, b store.BeaconBatch) {
	t.Helper()
	_, err := s.AddBeacons(ctx, b)
	must(t, err)
}
