package svg

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"sitepulse/handlers/svg/svgtest"
	"sitepulse/scanner/analysis"
	"sitepulse/scanner/lighthouse/lhtest"
	"sitepulse/store"
)

func req(url string, start, end int) store.Request {
	return store.Request{URL: url, Type: "Script", StartMs: start, EndMs: end, TransferBytes: 1000}
}

func TestWaterfallRows(t *testing.T) {
	many := func(n int) []analysis.RequestChange {
		var out []analysis.RequestChange
		for i := range n {
			r := req("https://a.test/"+strconv.Itoa(i), i*10, i*10+5)
			out = append(out, analysis.RequestChange{URL: r.URL, Before: &r, After: &r})
		}
		return out
	}
	late := req("https://a.test/late-new", 9000, 9500)
	lcp := req("https://a.test/hero.jpg", 8000, 8800)
	lcp.LCP = true
	blocking := req("https://a.test/font.css", 7000, 7100)
	blocking.RenderBlocking = true
	gone := req("https://a.test/gone", 6000, 6100)
	withKept := append(many(50),
		analysis.RequestChange{URL: late.URL, After: &late},
		analysis.RequestChange{URL: lcp.URL, Before: &lcp, After: &lcp},
		analysis.RequestChange{URL: blocking.URL, Before: &blocking, After: &blocking},
		analysis.RequestChange{URL: gone.URL, Before: &gone})
	for _, tc := range []struct {
		name       string
		reqs       []analysis.RequestChange
		max        int
		wantRows   int
		wantHidden int
		mustHave   []string
		mustNot    []string
	}{
		{name: "a page with fewer requests than the bound draws them all", reqs: many(5), max: 40, wantRows: 5},
		{name: "a page with more draws the earliest up to the bound", reqs: many(50), max: 40, wantRows: 40, wantHidden: 10,
			mustHave: []string{"https://a.test/0", "https://a.test/39"}, mustNot: []string{"https://a.test/40"}},
		{name: "the new, LCP and render-blocking requests are drawn however late", reqs: withKept, max: 40, wantRows: 40, wantHidden: 14,
			mustHave: []string{late.URL, lcp.URL, blocking.URL, "https://a.test/0", "https://a.test/36"},
			mustNot:  []string{gone.URL, "https://a.test/37"}},
		{name: "no requests, no rows", reqs: nil, max: 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, hidden := waterfallRows(tc.reqs, tc.max)
			if len(rows) != tc.wantRows || hidden != tc.wantHidden {
				t.Fatalf("%d rows, %d hidden; want %d, %d", len(rows), hidden, tc.wantRows, tc.wantHidden)
			}
			urls := make([]string, len(rows))
			for i, r := range rows {
				urls[i] = r.URL
				if i > 0 && rows[i-1].start() > r.start() {
					t.Errorf("row %d starts before the row above it", i)
				}
			}
			for _, u := range tc.mustHave {
				if !slices.Contains(urls, u) {
					t.Errorf("%s is not drawn", u)
				}
			}
			for _, u := range tc.mustNot {
				if slices.Contains(urls, u) {
					t.Errorf("%s is drawn", u)
				}
			}
		})
	}
}

func TestNiceStep(t *testing.T) {
	for _, tc := range []struct{ span, n, want int }{
		{1, 10, 100}, {752, 10, 100}, {1900, 6, 500}, {3000, 10, 500}, {8300, 10, 1000}, {8300, 6, 2000}, {61000, 10, 10000},
	} {
		if got := niceStep(tc.span, tc.n); got != tc.want {
			t.Errorf("niceStep(%d, %d) = %d, want %d", tc.span, tc.n, got, tc.want)
		}
	}
}

func TestFilmGrid(t *testing.T) {
	im := func(index int, timings ...int) store.PageImage {
		return store.PageImage{Index: index, Timings: timings}
	}
	for _, tc := range []struct {
		name          string
		before, after []store.PageImage
		lcpB, lcpA    int
		wantMoments   []int
		wantB, wantA  []FilmCell
	}{
		{name: "no pictures kept, no filmstrip", lcpB: 700, lcpA: 900},
		{name: "both runs on the later run's time axis, each LCP marked once",
			before: []store.PageImage{im(0, 300), im(1, 600, 900, 1200)}, after: []store.PageImage{im(0, 300, 600, 900), im(1, 1200, 1500, 1800)},
			lcpB: 600, lcpA: 1700, wantMoments: []int{200, 400, 600, 800, 1000, 1200, 1400, 1600, 1800},
			wantB: []FilmCell{{-1, false}, {0, false}, {1, true}, {1, false}, {1, false}, {1, false}, {1, false}, {1, false}, {1, false}},
			wantA: []FilmCell{{-1, false}, {0, false}, {0, false}, {0, false}, {0, false}, {1, false}, {1, false}, {1, false}, {1, true}}},
		{name: "a run with no LCP has no mark, the axis reaches the later LCP",
			before: []store.PageImage{im(0, 100)}, after: []store.PageImage{im(0, 100)}, lcpA: 950,
			wantMoments: []int{100, 200, 300, 400, 500, 600, 700, 800, 900, 1000},
			wantB:       []FilmCell{{0, false}, {0, false}, {0, false}, {0, false}, {0, false}, {0, false}, {0, false}, {0, false}, {0, false}, {0, false}},
			wantA:       []FilmCell{{0, false}, {0, false}, {0, false}, {0, false}, {0, false}, {0, false}, {0, false}, {0, false}, {0, false}, {0, true}}},
		{name: "only the later run kept pictures: the earlier row is blank",
			after: []store.PageImage{im(0, 500)}, lcpB: 400, lcpA: 500,
			wantMoments: []int{100, 200, 300, 400, 500},
			wantB:       []FilmCell{{-1, false}, {-1, false}, {-1, false}, {-1, true}, {-1, false}},
			wantA:       []FilmCell{{-1, false}, {-1, false}, {-1, false}, {-1, false}, {0, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			moments, rows := FilmGrid(tc.before, tc.after, tc.lcpB, tc.lcpA)
			if !slices.Equal(moments, tc.wantMoments) {
				t.Fatalf("moments %v, want %v", moments, tc.wantMoments)
			}
			if !slices.Equal(rows[0], tc.wantB) || !slices.Equal(rows[1], tc.wantA) {
				t.Errorf("rows\n%v\n%v\nwant\n%v\n%v", rows[0], rows[1], tc.wantB, tc.wantA)
			}
			if len(moments) > FilmColumns {
				t.Errorf("%d moments, more than %d", len(moments), FilmColumns)
			}
		})
	}
}

// The waterfall and the phases of the fixtures' home page, before and after the publish, and of
// a hostile page: well-formed SVG whose text is the requests' (escaped), bounded in rows.
func TestWaterfallSVG(t *testing.T) {
	before, after := lhtest.Explained(t, "../../testdata/psi-before/home.mobile.json"), lhtest.Explained(t, "../../testdata/psi/home.mobile.json")
	hostile := *after.Explain
	hostile.Requests = append(slices.Clone(hostile.Requests), store.Request{URL: `https://evil.test/"><script>alert(1)</script>&x=<y>`, Type: "Script", StartMs: 10, EndMs: 20})
	for _, tc := range []struct {
		name       string
		b, a       *store.Explain
		wantRows   int
		wantHidden int
		wantText   []string
	}{
		{name: "the fixtures' home page: the widget's requests new, the hero image the LCP request", b: before.Explain, a: after.Explain,
			wantRows: len(analysis.Requests(before.Explain, after.Explain)),
			wantText: []string{"cdn.widgetly.test/widget.js", "/static/img/hero.jpg", "new", "LCP", "render-blocking"}},
		{name: "a URL with markup in it is text", b: before.Explain, a: &hostile, wantRows: len(analysis.Requests(before.Explain, &hostile)),
			wantText: []string{"&lt;script&gt;alert(1)&lt;/script&gt;&amp;x=&lt;y&gt;"}},
		{name: "100 requests a run: 40 drawn, the rest counted", b: lhtest.Repeated(before.Explain, 100), a: lhtest.Repeated(after.Explain, 100),
			wantRows: MaxWaterfallRows, wantHidden: len(analysis.Requests(lhtest.Repeated(before.Explain, 100), lhtest.Repeated(after.Explain, 100))) - MaxWaterfallRows,
			wantText: []string{"more left out", "/static/img/hero.jpg"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svg, hidden := Waterfall(analysis.Requests(tc.b, tc.a), tc.b.LCP.Ms(), tc.a.LCP.Ms())
			count := svgtest.WellFormed(t, string(svg))
			if count["g"] != tc.wantRows || hidden != tc.wantHidden {
				t.Errorf("%d rows, %d hidden; want %d, %d", count["g"], hidden, tc.wantRows, tc.wantHidden)
			}
			if count["script"] > 0 {
				t.Error("the SVG has a script element")
			}
			for _, s := range tc.wantText {
				if !strings.Contains(string(svg), s) {
					t.Errorf("the SVG does not say %q", s)
				}
			}
			if !strings.Contains(string(svg), `class="wf-lcp-after"`) {
				t.Error("the later run's LCP moment is not marked")
			}
		})
	}
}

func TestPhasesSVG(t *testing.T) {
	before, after := lhtest.Explained(t, "../../testdata/psi-before/home.mobile.json"), lhtest.Explained(t, "../../testdata/psi/home.mobile.json")
	c := analysis.Compare(before, after)
	if len(c.LCP.Phases) != 4 {
		t.Fatalf("%d phases", len(c.LCP.Phases))
	}
	svg := string(Phases(c.LCP.Phases))
	count := svgtest.WellFormed(t, svg)
	if count["rect"] < 4 || count["rect"] > 8 {
		t.Errorf("%d phase bars, want one per phase of each run that took time", count["rect"])
	}
	for _, s := range []string{"Before", "After", "Load duration", analysis.FormatValue("lcp", float64(after.Explain.LCP.Ms()))} {
		if !strings.Contains(svg, s) {
			t.Errorf("the phases do not say %q", s)
		}
	}
	if Phases(nil) != "" {
		t.Error("runs without phases draw bars")
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
