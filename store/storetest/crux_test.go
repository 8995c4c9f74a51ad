package storetest_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"sitepulse/store"
)

// cruxPoints are n weekly periods of the metrics, ending on last (exclusive), p75 base+i and
// a gap (nil p75, no histogram) at gap.
func cruxPoints(last time.Time, n int, base float64, gap int, metrics ...string) []store.FieldPoint {
	var out []store.FieldPoint
	for i := range n {
		end := last.AddDate(0, 0, -7*(n-1-i))
		for _, m := range metrics {
			pt := store.FieldPoint{Source: store.FieldCrUX, Metric: m, Start: end.AddDate(0, 0, -28), End: end}
			if i != gap {
				v := base + float64(i)
				pt.P75 = &v
				pt.Histogram = []store.FieldBin{{Start: 0, End: 2500, Count: 0.7}, {Start: 2500, End: 4000, Count: 0.2}, {Start: 4000, Count: 0.1}}
			}
			out = append(out, pt)
		}
	}
	return out
}

func testCruxHistory(t *testing.T, s store.Store) {
	a := newUser(t, s, "crux-a@example.com")
	b := newUser(t, s, "crux-b@example.com")
	site := newSite(t, s, a, "crux")
	origin := "https://crux.test"
	last := time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC)
	// Phone and desktop of the origin, one page's phone, and a page without data.
	must(t, s.SaveCrux(ctx, site.ID, store.CruxRecord{Device: store.FieldPhone, Found: true, Points: cruxPoints(last, 3, 2000, 1, "lcp", "cls")}, t0))
	must(t, s.SaveCrux(ctx, site.ID, store.CruxRecord{Device: store.FieldDesktop, Found: true, Points: cruxPoints(last, 3, 1000, -1, "lcp")}, t0))
	must(t, s.SaveCrux(ctx, site.ID, store.CruxRecord{Page: origin + "/", Device: store.FieldPhone, Found: true, Points: cruxPoints(last, 2, 3000, -1, "inp")}, t0))
	must(t, s.SaveCrux(ctx, site.ID, store.CruxRecord{Page: origin + "/none", Device: store.FieldPhone}, t0))

	got, err := s.CruxSeries(ctx, a.ID, site.ID, store.FieldQuery{})
	must(t, err)
	var keys []string
	for _, p := range got {
		keys = append(keys, fmt.Sprintf("%s %s %s %v", p.Start.Format("01-02"), p.Device, p.Metric, p.P75 != nil))
		if p.Source != store.FieldCrUX || p.Page != "" || p.Samples != 0 {
			t.Errorf("point %+v: want source crux, the origin, no samples", p)
		}
		if (p.P75 == nil) != (p.Histogram == nil) {
			t.Errorf("point %s: p75 %v with histogram %v", keys[len(keys)-1], p.P75, p.Histogram)
		}
	}
	want := []string{"09-13 phone cls true", "09-13 phone lcp true", "09-13 desktop lcp true",
		"09-20 phone cls false", "09-20 phone lcp false", "09-20 desktop lcp true",
		"09-27 phone cls true", "09-27 phone lcp true", "09-27 desktop lcp true"}
	if !reflect.DeepEqual(keys, want) {
		t.Fatalf("origin series\n got %q\nwant %q", keys, want)
	}
	if first := got[1]; *first.P75 != 2000 || !first.End.Equal(last.AddDate(0, 0, -14)) || !first.Start.Equal(last.AddDate(0, 0, -42)) ||
		!reflect.DeepEqual(first.Histogram, []store.FieldBin{{Start: 0, End: 2500, Count: 0.7}, {Start: 2500, End: 4000, Count: 0.2}, {Start: 4000, Count: 0.1}}) {
		t.Errorf("first phone LCP point %+v", first)
	}

	// Filters: device, metric, the page, the time bounds (on the period's start).
	for _, tt := range []struct {
		name string
		q    store.FieldQuery
		n    int
	}{
		{"phone only", store.FieldQuery{Device: store.FieldPhone}, 6},
		{"lcp only", store.FieldQuery{Metric: "lcp"}, 6},
		{"desktop cls: none", store.FieldQuery{Device: store.FieldDesktop, Metric: "cls"}, 0},
		{"the page", store.FieldQuery{Page: origin + "/"}, 2},
		{"a page without data", store.FieldQuery{Page: origin + "/none"}, 0},
		{"from the second period", store.FieldQuery{From: last.AddDate(0, 0, -35)}, 6},
		{"before the last period", store.FieldQuery{To: last.AddDate(0, 0, -28)}, 6},
	} {
		got, err := s.CruxSeriesOf(ctx, site.ID, tt.q)
		must(t, err)
		if len(got) != tt.n {
			t.Errorf("%s: %d points, want %d", tt.name, len(got), tt.n)
		}
	}

	// A week later: the API revised a period and added one; nothing doubles.
	later := cruxPoints(last.AddDate(0, 0, 7), 3, 5000, -1, "lcp", "cls")
	must(t, s.SaveCrux(ctx, site.ID, store.CruxRecord{Device: store.FieldPhone, Found: true, Points: later}, t0.AddDate(0, 0, 7)))
	got, err = s.CruxSeriesOf(ctx, site.ID, store.FieldQuery{Device: store.FieldPhone, Metric: "lcp"})
	must(t, err)
	var p75s []any
	for _, p := range got {
		if p.P75 == nil {
			p75s = append(p75s, nil)
		} else {
			p75s = append(p75s, *p.P75)
		}
	}
	if want := []any{2000.0, 5000.0, 5001.0, 5002.0}; !reflect.DeepEqual(p75s, want) {
		t.Errorf("phone LCP after the second refresh: %v, want %v", p75s, want)
	}

	// The last answers: found, or the API's 404 ("no field data").
	fetches, err := s.CruxFetches(ctx, a.ID, site.ID)
	must(t, err)
	var fk []string
	for _, f := range fetches {
		fk = append(fk, fmt.Sprintf("%q %s %v %d", f.Page, f.Device, f.Found, f.Periods))
	}
	if want := []string{`"" phone true 3`, `"" desktop true 3`, `"https://crux.test/" phone true 2`, `"https://crux.test/none" phone false 0`}; !reflect.DeepEqual(fk, want) {
		t.Errorf("fetches\n got %q\nwant %q", fk, want)
	}
	if !fetches[0].FetchedAt.Equal(t0.AddDate(0, 0, 7)) || !fetches[1].FetchedAt.Equal(t0) {
		t.Errorf("fetched at %v and %v", fetches[0].FetchedAt, fetches[1].FetchedAt)
	}

	// Another workspace's user, unknown and malformed ids: not found.
	_, err = s.CruxSeries(ctx, b.ID, site.ID, store.FieldQuery{})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.CruxFetches(ctx, b.ID, site.ID)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.CruxSeries(ctx, a.ID, store.NewID(), store.FieldQuery{})
	wantErr(t, err, store.ErrNotFound)
	_, err = s.CruxSeries(ctx, a.ID, "not-a-uuid", store.FieldQuery{})
	wantErr(t, err, store.ErrNotFound)
	wantErr(t, s.SaveCrux(ctx, store.NewID(), store.CruxRecord{Device: store.FieldPhone}, t0), store.ErrNotFound)
	wantErr(t, s.SaveCrux(ctx, site.ID, store.CruxRecord{Device: "tablet"}, t0), store.ErrNotFound)

	// A deleted site's history goes with it.
	must(t, s.DeleteSite(ctx, a.ID, site.ID))
	if got, _ := s.CruxSeriesOf(ctx, site.ID, store.FieldQuery{}); len(got) != 0 {
		t.Errorf("%d points of a deleted site", len(got))
	}
	if got, _ := s.CruxFetchesOf(ctx, site.ID); len(got) != 0 {
		t.Errorf("%d fetches of a deleted site", len(got))
	}
}

func testEnqueueDueCrux(t *testing.T, s store.Store) {
	a := newUser(t, s, "crux-due@example.com")
	one := newSite(t, s, a, "crux one")
	two := newSite(t, s, a, "crux two")
	n, err := s.EnqueueDueCrux(ctx, t0, store.CruxEvery, 1)
	must(t, err)
	if n != 1 {
		t.Fatalf("enqueued %d refreshes with a limit of 1", n)
	}
	n, err = s.EnqueueDueCrux(ctx, t0, store.CruxEvery, 100)
	must(t, err)
	if n != 1 {
		t.Fatalf("the second pass enqueued %d refreshes, want the other site's", n)
	}
	if n, _ := s.EnqueueDueCrux(ctx, t0.Add(store.CruxEvery-time.Minute), store.CruxEvery, 100); n != 0 {
		t.Fatalf("%d refreshes enqueued within the week", n)
	}
	sites := claimSiteJobs(t, s, store.KindCrux, a.ID, t0, 2)
	if !sites[one.ID] || !sites[two.ID] {
		t.Errorf("refreshed %v, want both sites", sites)
	}
	if n, _ := s.EnqueueDueCrux(ctx, t0.Add(store.CruxEvery), store.CruxEvery, 100); n != 2 {
		t.Fatalf("a week later %d refreshes enqueued, want 2", n)
	}
}

func testCruxTarget(t *testing.T, s store.Store) {
	a := newUser(t, s, "crux-target@example.com")
	site := newSite(t, s, a, "crux target")
	tg, err := s.CruxTarget(ctx, site.ID)
	must(t, err)
	if tg.Site.ID != site.ID || len(tg.Pages) != 0 {
		t.Fatalf("target of a site never scanned: %+v", tg)
	}
	finishedScan(t, s, site, t0, summaryResults(), 1, false)
	tg, err = s.CruxTarget(ctx, site.ID)
	must(t, err)
	if want := []string{"https://x.test/", "https://x.test/a", "https://x.test/b"}; !reflect.DeepEqual(tg.Pages, want) {
		t.Errorf("pages %q, want the latest completed scan's %q", tg.Pages, want)
	}
	_, err = s.CruxTarget(ctx, store.NewID())
	wantErr(t, err, store.ErrNotFound)
}

func testPruneCrux(t *testing.T, s store.Store) {
	a := newUser(t, s, "crux-prune@example.com")
	b := newUser(t, s, "crux-keep@example.com")
	short := newSite(t, s, a, "crux short")
	forever := newSite(t, s, b, "crux forever")
	must(t, s.SetRetention(ctx, a.ID, 30))
	must(t, s.SetRetention(ctx, b.ID, 0))
	last := t0.Truncate(24 * time.Hour)
	for _, site := range []store.Site{short, forever} {
		must(t, s.SaveCrux(ctx, site.ID, store.CruxRecord{Device: store.FieldPhone, Found: true, Points: cruxPoints(last, 10, 100, -1, "lcp", "inp")}, t0))
	}
	total := 0
	for {
		n, err := s.PruneCrux(ctx, t0, 3)
		must(t, err)
		if n > 3 {
			t.Fatalf("one call pruned %d points with a limit of 3", n)
		}
		total += n
		if n == 0 {
			break
		}
	}
	// Periods ending 0, 7, 14, 21 and 28 days before t0 stay; the five before them go.
	if total != 10 {
		t.Errorf("pruned %d points, want 10", total)
	}
	kept, err := s.CruxSeriesOf(ctx, short.ID, store.FieldQuery{})
	must(t, err)
	for _, p := range kept {
		if p.End.Before(t0.AddDate(0, 0, -30)) {
			t.Errorf("a point ending %v outlived a 30-day retention", p.End)
		}
	}
	if len(kept) != 10 {
		t.Errorf("%d points kept, want 10", len(kept))
	}
	all, _ := s.CruxSeriesOf(ctx, forever.ID, store.FieldQuery{})
	if len(all) != 20 {
		t.Errorf("a workspace keeping history forever has %d points, want 20", len(all))
	}
}
