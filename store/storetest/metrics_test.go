package storetest_test

import (
	"reflect"
	"testing"

	"sitepulse/store"
)

func testPageMetrics(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	b := newUser(t, s, "b@example.com")
	site := newSite(t, s, a, "site")
	sc := enqueue(t, s, site, t0)
	j, err := s.ClaimJob(ctx, store.KindScan, "w", t0, 0)
	must(t, err)
	l := j.Lease()
	must(t, s.StartScan(ctx, l, 3, t0))
	lcp, cls := 3100.0, 0.12
	full := store.PageResult{PagePath: "/b", PageURL: "https://x.test/b", Strategy: "mobile",
		Scores: store.PageScores{Performance: ip(61), SEO: ip(90)}, CoreWebVitals: store.Vitals{LCP: &lcp, CLS: &cls},
		Opportunities: []store.Opportunity{{Title: "Reduce unused JavaScript", SavingsMs: 300}},
		LCPElement:    &store.Element{Selector: "img"}, Diagnostics: map[string]any{"numRequests": 12.0}}
	must(t, s.SavePageResult(ctx, l, full))
	must(t, s.SavePageResult(ctx, l, store.PageResult{PagePath: "/a", PageURL: "https://x.test/a", Strategy: "desktop"}))
	must(t, s.SavePageError(ctx, l, store.PageError{PagePath: "/c", Strategy: "mobile", PageURL: "https://x.test/c", Error: "timeout"}))

	got, err := s.PageMetrics(ctx, a.ID, sc.ID)
	must(t, err)
	if len(got) != 2 || got[0].PagePath != "/a" || got[0].Strategy != "desktop" || got[0].Scores.Performance != nil {
		t.Fatalf("metrics = %+v", got)
	}
	m := got[1]
	if m.PagePath != "/b" || m.PageURL != "https://x.test/b" || m.Strategy != "mobile" || m.ScanID != sc.ID ||
		*m.Scores.Performance != 61 || *m.Scores.SEO != 90 || m.Scores.Accessibility != nil ||
		*m.CoreWebVitals.LCP != lcp || *m.CoreWebVitals.CLS != cls || m.CoreWebVitals.INP != nil {
		t.Errorf("metrics = %+v", m)
	}
	if m.Opportunities != nil || m.LCPElement != nil || m.Diagnostics != nil {
		t.Errorf("metrics carry more than scores and vitals: %+v", m)
	}
	_, err = s.PageMetrics(ctx, b.ID, sc.ID)
	wantErr(t, err, store.ErrNotFound)
	_, err = s.PageMetrics(ctx, a.ID, store.NewID())
	wantErr(t, err, store.ErrNotFound)
	_, err = s.PageMetrics(ctx, a.ID, "not-a-uuid")
	wantErr(t, err, store.ErrNotFound)
	empty := enqueue(t, s, newSite(t, s, a, "other"), t0)
	none, err := s.PageMetrics(ctx, a.ID, empty.ID)
	must(t, err)
	if len(none) != 0 {
		t.Errorf("metrics of a scan without results = %+v", none)
	}
}

// testPageMetricsEveryValue: each of the four scores and eight vitals comes back as saved, in
// its own field (every value differs, so a crossed column shows).
func testPageMetricsEveryValue(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	sc := enqueue(t, s, newSite(t, s, a, "site"), t0)
	j, err := s.ClaimJob(ctx, store.KindScan, "w", t0, 0)
	must(t, err)
	must(t, s.StartScan(ctx, j.Lease(), 1, t0))
	f := func(v float64) *float64 { return &v }
	want := store.PageResult{ScanID: sc.ID, PagePath: "/", PageURL: "https://x.test/", Strategy: "desktop",
		Scores:        store.PageScores{Performance: ip(1), SEO: ip(2), Accessibility: ip(3), BestPractices: ip(100)},
		CoreWebVitals: store.Vitals{LCP: f(2500.5), CLS: f(0.1234), INP: f(200), FCP: f(1800.25), TTFB: f(800), TBT: f(0), SpeedIndex: f(3400), TTI: f(7300.75)}}
	must(t, s.SavePageResult(ctx, j.Lease(), want))
	got, err := s.PageMetrics(ctx, a.ID, sc.ID)
	must(t, err)
	if len(got) != 1 || !reflect.DeepEqual(got[0], want) {
		t.Errorf("metrics = %+v\nwant %+v", got, want)
	}
}

// testPageMetricsOf: several scans' metrics in one call, as PageMetrics gives each; scans of
// another user, unknown or malformed ids, and scans without results have no entry.
func testPageMetricsOf(t *testing.T, s store.Store) {
	a := newUser(t, s, "a@example.com")
	b := newUser(t, s, "b@example.com")
	var ids []string
	for i, site := range []store.Site{newSite(t, s, a, "one"), newSite(t, s, a, "two"), newSite(t, s, b, "b's")} {
		sc := enqueue(t, s, site, t0)
		j, err := s.ClaimJob(ctx, store.KindScan, "w", t0, 0)
		must(t, err)
		must(t, s.StartScan(ctx, j.Lease(), 2, t0))
		lcp := 1000.0 * float64(i+1)
		must(t, s.SavePageResult(ctx, j.Lease(), store.PageResult{PagePath: "/", PageURL: "https://x.test/", Strategy: "mobile",
			Scores: store.PageScores{Performance: ip(50 + i)}, CoreWebVitals: store.Vitals{LCP: &lcp}}))
		must(t, s.SavePageError(ctx, j.Lease(), store.PageError{PagePath: "/", Strategy: "desktop", PageURL: "https://x.test/", Error: "x"}))
		ids = append(ids, sc.ID)
	}
	empty := enqueue(t, s, newSite(t, s, a, "empty"), t0)
	got, err := s.PageMetricsOf(ctx, a.ID, append(ids, store.NewID(), "not-a-uuid", empty.ID))
	must(t, err)
	if len(got) != 2 {
		t.Fatalf("entries for %d scans, want A's two with results: %v", len(got), got)
	}
	for _, id := range ids[:2] {
		want, err := s.PageMetrics(ctx, a.ID, id)
		must(t, err)
		if !reflect.DeepEqual(got[id], want) {
			t.Errorf("scan %s: %+v, want PageMetrics' %+v", id, got[id], want)
		}
	}
	if none, err := s.PageMetricsOf(ctx, a.ID, nil); err != nil || len(none) != 0 {
		t.Errorf("no ids: %v, %v", none, err)
	}
}
