package svg

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
)

func TestTrendCharts(t *testing.T) {
	if TrendCharts(nil, nil) != nil {
		t.Error("no scans, want no charts")
	}
	f := func(v float64) *float64 { return &v }
	i := func(v int) *int { return &v }
	day := func(d int) time.Time { return time.Date(2026, 11, d, 9, 0, 0, 0, time.UTC) }
	points := []TrendPoint{
		{At: day(1), Scores: store.ScanScores{Health: i(82)}, Vitals: map[string]*float64{"lcp": f(3600), "cls": f(0.01)}},
		{At: day(2), Scores: store.ScanScores{Health: i(77)}, Vitals: map[string]*float64{"lcp": f(8305), "cls": f(0.39)}},
	}
	charts := TrendCharts(points, nil)
	var ids []string
	for _, c := range charts {
		ids = append(ids, c.ID)
	}
	if got := strings.Join(ids, ","); got != "scores,health,lcp,cls,tbt" {
		t.Fatalf("tabs %s, want scores,health,lcp,cls,tbt", got)
	}
	for _, tt := range []struct {
		chart         int
		name          string
		want, notWant []string
	}{
		{1, "health is a score chart with one line", []string{"Health 82 · 1 Nov 2026, 09:00 UTC", `class="line s-health"`, ">75<"}, nil},
		{2, "LCP has grid lines at web.dev's bands and grows to its worst value", []string{">2.5 s<", ">4.0 s<", "LCP 8.3 s · 2 Nov 2026, 09:00 UTC", ">10.0 s<"}, nil},
		{3, "CLS is written unitless", []string{">0.10<", ">0.25<", "CLS 0.39"}, nil},
		{4, "a vital no scan has draws no line", []string{`aria-label="Total Blocking Time of the last 2 completed scans`}, []string{"<path", "<circle"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := string(charts[tt.chart].SVG)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in\n%s", w, got)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("unexpected %q in\n%s", w, got)
				}
			}
		})
	}
}

func TestNiceCeil(t *testing.T) {
	for in, want := range map[float64]float64{8720: 10000, 5000: 5000, 0.31: 0.5, 0.24: 0.25, 750: 1000, 1900: 2000, 0: 1} {
		if got := NiceCeil(in); got != want {
			t.Errorf("NiceCeil(%v) = %v, want %v", in, got, want)
		}
	}
}

// TestTrendChartMarksPublishes: each publish is a marker on every trend chart, placed in time
// between the scans around it, named by who published and when, its text escaped.
func TestTrendChartMarksPublishes(t *testing.T) {
	i := func(v int) *int { return &v }
	day := func(d int) time.Time { return time.Date(2026, 11, d, 9, 0, 0, 0, time.UTC) }
	var points []TrendPoint
	for d := 1; d <= 3; d++ {
		points = append(points, TrendPoint{At: day(d), Scores: store.ScanScores{Health: i(80), Performance: i(80)}, Vitals: map[string]*float64{}})
	}
	publishes := []store.Publish{
		{PublishedBy: "<b>Ana</b>", PublishedOn: day(1).Add(12 * time.Hour)}, // halfway from the first scan to the second
		{PublishedOn: day(3).Add(time.Hour)},                                 // after the last scan: its scan is not done yet
		{PublishedBy: "Old", PublishedOn: day(1).Add(-time.Hour)},            // before the chart: not drawn
	}
	charts := TrendCharts(points, publishes)
	for _, c := range charts[:2] { // the score charts: scans at x 87, 357.5 and 628
		got := string(c.SVG)
		for _, want := range []string{
			`<g class="publish"><line x1="222.2" y1="20" x2="222.2" y2="264"/>`, `<title>Published by &lt;b&gt;Ana&lt;/b&gt;, 1 Nov 21:00</title>`,
			`<line x1="628" y1="20" x2="628" y2="264"/>`, `<title>Published 3 Nov 10:00</title>`,
		} {
			if !strings.Contains(got, want) {
				t.Errorf("%s chart lacks %q:\n%s", c.ID, want, got)
			}
		}
		if strings.Contains(got, "Old") || strings.Count(got, `class="publish"`) != 2 {
			t.Errorf("%s chart draws %d markers, want 2:\n%s", c.ID, strings.Count(got, `class="publish"`), got)
		}
	}
	for _, c := range charts[2:] {
		if strings.Count(string(c.SVG), `class="publish"`) != 2 {
			t.Errorf("%s chart lacks the publish markers", c.ID)
		}
	}
}

// TestChartAxes is issue 24's chart: the y axis says what it measures, its tick labels never
// crowd each other (the phone stylesheet draws them 26 units high), and the dates under the
// chart do not overlap at that size either.
func TestChartAxes(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	i := func(v int) *int { return &v }
	var points []TrendPoint
	for d := 1; d <= 9; d++ {
		points = append(points, TrendPoint{At: time.Date(2026, 11, d, 9, 0, 0, 0, time.UTC),
			Scores: store.ScanScores{Health: i(80), Performance: i(70)},
			// A 40 s LCP puts the top at 50 s: 0, 2.5 s and 4 s would sit within 15 units.
			Vitals: map[string]*float64{"lcp": f(40000), "cls": f(0.05), "tbt": f(300)}})
	}
	tick := regexp.MustCompile(`<text class="axis" x="[0-9.]+" y="([0-9.]+)" text-anchor="end">`)
	date := regexp.MustCompile(`<text class="axis date" x="([0-9.]+)" y="[0-9.]+" text-anchor="(start|middle|end)">([^<]*)<`)
	for _, c := range TrendCharts(points, nil) {
		t.Run(c.ID, func(t *testing.T) {
			svg := string(c.SVG)
			want := map[string]string{"scores": "Score", "health": "Health", "lcp": "LCP", "cls": "CLS", "tbt": "TBT"}[c.ID]
			if !strings.Contains(svg, `class="axis-title"`) || !strings.Contains(svg, ">"+want+"<") {
				t.Errorf("the y axis has no title %q:\n%s", want, svg)
			}
			var ys []float64
			for _, m := range tick.FindAllStringSubmatch(svg, -1) {
				y, _ := strconv.ParseFloat(m[1], 64)
				ys = append(ys, y)
			}
			if len(ys) < 2 {
				t.Fatalf("%d tick labels, want at least 0 and one more:\n%s", len(ys), svg)
			}
			for k := 1; k < len(ys); k++ {
				if gap := ys[k-1] - ys[k]; gap < ChartTickGap {
					t.Errorf("tick labels %v and %v are %v units apart, want at least %v", ys[k-1], ys[k], gap, ChartTickGap)
				}
			}
			dates := date.FindAllStringSubmatch(svg, -1)
			if len(dates) < 2 {
				t.Fatalf("%d date labels:\n%s", len(dates), svg)
			}
			// Each date's extent at the phone size (about 0.6 em a character), by its anchor.
			lastRight := -1.0
			for _, m := range dates {
				x, _ := strconv.ParseFloat(m[1], 64)
				w := 0.6 * ChartPhoneFont * float64(len([]rune(m[3])))
				left := map[string]float64{"start": x, "middle": x - w/2, "end": x - w}[m[2]]
				if left < lastRight+8 {
					t.Errorf("date %q at %v overlaps the one before it (ends at %v)", m[3], left, lastRight)
				}
				lastRight = left + w
			}
		})
	}
}

func TestTrendSVG(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 11, d, 9, 0, 0, 0, time.UTC) }
	p := func(v int) *int { return &v }
	full := func(perf int) store.ScanScores {
		return store.ScanScores{Performance: p(perf), SEO: p(90), Accessibility: p(80), BestPractices: p(70)}
	}
	for _, tt := range []struct {
		name    string
		points  []TrendPoint
		want    []string
		notWant []string
		circles int
		paths   int
	}{
		{name: "no scans draw nothing", points: nil},
		{name: "one scan is a dot per category in the middle", points: []TrendPoint{{At: day(1), Scores: full(50)}},
			want: []string{`cx="357.5"`, `d="M357.5 142"`, ">1 Nov<", ">25<", ">75<"}, circles: 4, paths: 4},
		{name: "scores map 100 to the top and 0 to the bottom", points: []TrendPoint{{At: day(1), Scores: full(100)}, {At: day(2), Scores: full(0)}},
			want: []string{`d="M87 20 L628 264"`, ">12:00<", ">18:00<", ">2 Nov<", ">06:00<", "Performance 100 · 1 Nov 2026, 09:00 UTC"}, circles: 8, paths: 4},
		{name: "a missing score breaks its line", points: []TrendPoint{{At: day(1), Scores: full(10)}, {At: day(2), Scores: store.ScanScores{SEO: p(90), Accessibility: p(80), BestPractices: p(70)}}, {At: day(3), Scores: full(30)}},
			want: []string{`d="M87 239.6 M628 190.8"`}, circles: 11, paths: 4},
		{name: "two scans of one day are told apart by their times", points: []TrendPoint{{At: day(1), Scores: full(50)}, {At: day(1).Add(2 * time.Hour), Scores: full(60)}},
			want: []string{">1 Nov 09:00<", ">1 Nov 11:00<"}, circles: 8, paths: 4},
		{name: "a category with no score at all has no line", points: []TrendPoint{{At: day(1), Scores: store.ScanScores{SEO: p(1)}}, {At: day(2), Scores: store.ScanScores{SEO: p(2)}}},
			notWant: []string{"s-perf", "s-a11y"}, circles: 2, paths: 1},
		{name: "twenty daily scans label the weeks, from Monday 2 Nov", points: func() []TrendPoint {
			var ps []TrendPoint
			for i := 1; i <= 20; i++ {
				ps = append(ps, TrendPoint{At: day(i), Scores: full(i * 5)})
			}
			return ps
		}(), want: []string{">2 Nov<", ">9 Nov<", ">16 Nov<", "last 20 completed scans"}, circles: 80, paths: 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := string(TrendScores(tt.points))
			if len(tt.points) == 0 {
				if got != "" {
					t.Errorf("got %q, want nothing", got)
				}
				return
			}
			if !strings.HasPrefix(got, `<svg class="trend"`) || !strings.HasSuffix(got, "</svg>") {
				t.Errorf("not one svg element: %.80s", got)
			}
			if strings.Contains(got, "style=") {
				t.Error("inline style: the CSP forbids it")
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in\n%s", w, got)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("unexpected %q", w)
				}
			}
			if n := strings.Count(got, "<circle"); n != tt.circles {
				t.Errorf("%d circles, want %d", n, tt.circles)
			}
			if n := strings.Count(got, "<path"); n != tt.paths {
				t.Errorf("%d paths, want %d", n, tt.paths)
			}
		})
	}
}

// TestChartSpacesByTime: points sit where their times put them (two scans a day apart, the next a
// week later), the dates under the chart are round times between the ends, and nothing is
// drawn outside the drawing at the phone size: the top tick's "100" nor the dates at the edges.
func TestChartSpacesByTime(t *testing.T) {
	i := func(v int) *int { return &v }
	at := func(d, h int) time.Time { return time.Date(2026, 11, d, h, 0, 0, 0, time.UTC) }
	var points []TrendPoint
	for _, t := range []time.Time{at(1, 9), at(2, 9), at(9, 9)} {
		points = append(points, TrendPoint{At: t, Scores: store.ScanScores{Performance: i(100)}})
	}
	svg := string(TrendScores(points))
	// 87 to 628 over 8 days: the second scan a day in, the third at the end.
	contains := func(want string) {
		if !strings.Contains(svg, want) {
			t.Errorf("missing %q in\n%s", want, svg)
		}
	}
	contains(`d="M87 20 L154.6 20 L628 20"`)
	dates := regexp.MustCompile(`<text class="axis date" x="([0-9.]+)" y="[0-9.]+" text-anchor="middle">([^<]*)<`).FindAllStringSubmatch(svg, -1)
	var texts []string
	for _, m := range dates {
		texts = append(texts, m[2])
		x, _ := strconv.ParseFloat(m[1], 64)
		if w := 0.6 * ChartPhoneFont * float64(len([]rune(m[2]))); x-w/2 < 0 || x+w/2 > 640 {
			t.Errorf("the date %q at %v runs off the drawing at the phone size", m[2], x)
		}
	}
	if got := strings.Join(texts, " "); got != "3 Nov 5 Nov 7 Nov 9 Nov" {
		t.Errorf("dates %q, want round days between the ends", got)
	}
	top := regexp.MustCompile(`<text class="axis" x="[0-9.]+" y="([0-9.]+)" text-anchor="end">100<`).FindStringSubmatch(svg)
	if top == nil {
		t.Fatalf("no 100 on the axis:\n%s", svg)
	}
	if y, _ := strconv.ParseFloat(top[1], 64); y-0.75*ChartPhoneFont < 0 { // a digit's height, about 0.75 em, above its baseline
		t.Errorf("the top tick's label at y %v is cut off by the top of the drawing at the phone size", y)
	}
}
