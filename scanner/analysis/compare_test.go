package analysis_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sitepulse/scanner/analysis"
	"sitepulse/scanner/lighthouse"
	"sitepulse/store"
)

// run extracts a real PSI response of testdata: dir "psi-before" or "psi", name "home.mobile".
func run(t *testing.T, dir, name string) store.PageResult {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", dir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := lighthouse.ExtractPSI(b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The ground truth is testdata/psi-before/site-before.diff: between the two sets one publish
// added a chat widget (cdn.widgetly.test's widget.js, over http, and its font CSS,
// render-blocking) to / and /pricing, a promo banner injected 1.8 s after load, unsized images
// and a partner logo without alt text to /, made the hero image arrive 1.2 s later (1.5 s of
// server delay instead of 0.3 s) and the /pricing document 0.8 s later (0.9 s instead of 0.08 s). /blog, /about and /fast did not change. What Compare
// names, page by page and strategy by strategy, must be that and only that.
func TestCompareFixturePairs(t *testing.T) {
	type cause struct {
		metric string
		phase  string   // for LCP: the phase it is "mostly"
		says   []string // what its sentence names
	}
	tests := []struct {
		page    string
		causes  []cause // every metric that got worse, in ComparedMetrics order
		added   []string
		slower  []string
		failing []string // some of the audits that turned failing
	}{
		{page: "home.mobile",
			causes: []cause{
				{metric: "performance", says: []string{"Performance -33", "widgetly.test", "hero.jpg"}},
				{metric: "tbt", says: []string{"TBT +1.5 s: new third party widgetly.test: 3 requests, 138 KB, 1.0 s of main-thread work"}},
				{metric: "lcp", phase: store.PhaseLoadDuration, says: []string{
					"LCP +1.2 s, mostly resource load duration: the LCP image /static/img/hero.jpg arrived 1.1 s later; new third party widgetly.test: 3 requests, 138 KB"}},
				{metric: "cls", says: []string{"CLS +0.39", "unsized image body > section.hero > img.hero-img (/static/img/hero.jpg) shifted body > main (0.27)",
					"images without width and height: /static/img/hero.jpg, /static/img/partner-logo.png", "content inserted later shifted body > main (0.12)"}},
				{metric: "fcp", says: []string{"FCP +1.0 s: new render-blocking stylesheet cdn.widgetly.test/fonts/brand.css (third party widgetly.test)"}},
				{metric: "speedIndex", says: []string{"hero.jpg arrived 1.1 s later", "widgetly.test"}},
				// The widget's chat bubble, and the partner logo that lost its alt text.
				{metric: "accessibility", says: []string{"Accessibility -10: aria-prohibited-attr now fails (Elements use prohibited ARIA attributes: body > div.chat-bubble)",
					"image-alt now fails (Image elements do not have [alt] attributes: body > main > img)"}},
				{metric: "seo", says: []string{"SEO -8: image-alt now fails"}},
			},
			added:   []string{"cdn.widgetly.test/fonts/brand.css", "cdn.widgetly.test/widget.js", "cdn.widgetly.test/fonts/brand.ttf"},
			slower:  []string{"/static/img/hero.jpg"},
			failing: []string{"cls-culprits-insight", "unsized-images", "font-display-insight"}},
		{page: "home.desktop",
			causes: []cause{
				{metric: "performance", says: []string{"Performance -49", "widgetly.test", "hero.jpg"}},
				{metric: "tbt", says: []string{"new third party widgetly.test"}},
				{metric: "lcp", phase: store.PhaseLoadDuration, says: []string{"mostly resource load duration: the LCP image /static/img/hero.jpg arrived 1.2 s later"}},
				// The banner pushed the hero's own section down: its image, inside it, cannot have.
				{metric: "cls", says: []string{"unsized image body > section.hero > img.hero-img (/static/img/hero.jpg) shifted body > main (0.34)",
					"images without width and height: /static/img/hero.jpg, /static/img/partner-logo.png", "content inserted later shifted body > section.hero (0.06)"}},
				{metric: "fcp", says: []string{"new render-blocking stylesheet cdn.widgetly.test/fonts/brand.css"}},
				{metric: "speedIndex", says: []string{"hero.jpg", "widgetly.test"}},
				{metric: "accessibility", says: []string{"aria-prohibited-attr now fails", "image-alt now fails"}},
				{metric: "seo", says: []string{"image-alt now fails"}},
			},
			added:   []string{"cdn.widgetly.test/fonts/brand.css", "cdn.widgetly.test/widget.js", "cdn.widgetly.test/fonts/brand.ttf"},
			slower:  []string{"/static/img/hero.jpg"},
			failing: []string{"cls-culprits-insight", "unsized-images"}},
		{page: "pricing.mobile",
			causes: []cause{
				{metric: "performance", says: []string{"Performance -36", "widgetly.test", "/pricing"}},
				{metric: "tbt", says: []string{"TBT +2.6 s: new third party widgetly.test: 1 request, 1 KB"}},
				{metric: "lcp", phase: store.PhaseTTFB, says: []string{
					"LCP +1.0 s, mostly time to first byte: the document /pricing took 803 ms longer to arrive (server response 89 ms → 901 ms)"}},
				{metric: "fcp", says: []string{"the document /pricing took 803 ms longer"}},
				{metric: "ttfb", says: []string{"TTFB +812 ms: the document /pricing took 803 ms longer to arrive (server response 89 ms → 901 ms)"}},
				// The widget is loaded over http.
				{metric: "bestPractices", says: []string{"Best practices -19: is-on-https now fails (Does not use HTTPS: cdn.widgetly.test/widget.js)"}},
			},
			added:   []string{"cdn.widgetly.test/widget.js"},
			slower:  []string{"/pricing"},
			failing: []string{"document-latency-insight"}},
		{page: "pricing.desktop",
			causes: []cause{
				{metric: "performance", says: []string{"Performance -37"}},
				{metric: "tbt", says: []string{"new third party widgetly.test"}},
				{metric: "lcp", phase: store.PhaseTTFB, says: []string{"mostly time to first byte: the document /pricing took 816 ms longer"}},
				{metric: "fcp", says: []string{"the document /pricing took 816 ms longer"}},
				{metric: "speedIndex", says: []string{"/pricing", "widgetly.test"}},
				{metric: "ttfb", says: []string{"TTFB +820 ms: the document /pricing"}},
				{metric: "bestPractices", says: []string{"is-on-https now fails"}},
			},
			added:  []string{"cdn.widgetly.test/widget.js"},
			slower: []string{"/pricing"}},
		// Unchanged pages: nothing is named, nothing listed.
		{page: "blog.mobile"}, {page: "blog.desktop"}, {page: "about.mobile"}, {page: "about.desktop"}, {page: "fast.mobile"}, {page: "fast.desktop"},
	}
	for _, tt := range tests {
		t.Run(tt.page, func(t *testing.T) {
			before, after := run(t, "psi-before", tt.page), run(t, "psi", tt.page)
			c := analysis.Compare(before, after)
			if !c.Explained || c.PagePath != after.PagePath || c.Strategy != after.Strategy {
				t.Fatalf("explained %v, page %s %s", c.Explained, c.PagePath, c.Strategy)
			}
			if len(c.Causes) != len(tt.causes) {
				var got []string
				for _, x := range c.Causes {
					got = append(got, x.Sentence)
				}
				t.Fatalf("%d causes, want %d:\n%s", len(c.Causes), len(tt.causes), strings.Join(got, "\n"))
			}
			for i, want := range tt.causes {
				got := c.Causes[i]
				if got.Metric != want.metric || got.Phase != want.phase || len(got.Reasons) == 0 || len(got.Reasons) > analysis.MaxReasons {
					t.Errorf("cause %d: %s, phase %q, %d reasons; want %s, phase %q", i, got.Metric, got.Phase, len(got.Reasons), want.metric, want.phase)
				}
				for _, s := range want.says {
					if !strings.Contains(got.Sentence, s) {
						t.Errorf("%s: %q\n does not say %q", got.Metric, got.Sentence, s)
					}
				}
				if !c.Regressed(got.Metric) {
					t.Errorf("a cause of %s, which did not get worse", got.Metric)
				}
			}
			urls := func(list []analysis.RequestChange) []string {
				var out []string
				for _, r := range list {
					out = append(out, r.URL)
				}
				return out
			}
			suffixes(t, "added", urls(c.Added), tt.added)
			suffixes(t, "slower", urls(c.Slower), tt.slower)
			for _, id := range tt.failing {
				found := false
				for _, a := range c.TurnedFailing {
					found = found || a.ID == id
				}
				if !found {
					t.Errorf("%s did not turn failing", id)
				}
			}
			if len(tt.causes) == 0 {
				// The unchanged pages: no invented cause and no change beyond noise.
				if c.Changed() || len(c.Removed)+len(c.Grown) > 0 || c.Summary != analysis.NoChangeSentence {
					t.Errorf("an unchanged page: added %v removed %v grown %v slower %v third parties %+v scripts %+v new shifts %+v turned failing %+v; summary %q",
						urls(c.Added), urls(c.Removed), urls(c.Grown), urls(c.Slower), c.ThirdPartiesAdded, c.Scripts, c.Shifts.New, c.TurnedFailing, c.Summary)
				}
				return
			}
			if len(c.Removed) != 0 || len(c.ThirdPartiesRemoved) != 0 {
				t.Errorf("removed %v, third parties removed %+v: the publish removed nothing", urls(c.Removed), c.ThirdPartiesRemoved)
			}
			if len(c.ThirdPartiesAdded) != 1 || c.ThirdPartiesAdded[0].Name != "widgetly.test" || c.ThirdPartiesAdded[0].Hosts[0] != "cdn.widgetly.test" {
				t.Errorf("third parties added %+v, want widgetly.test", c.ThirdPartiesAdded)
			}
		})
	}
}

// suffixes checks that got lists, in any order, URLs ending in each of want and nothing else.
func suffixes(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s %v, want %v", what, got, want)
		return
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.HasSuffix(g, w)
		}
		if !found {
			t.Errorf("%s %v, want %v", what, got, want)
		}
	}
}

// The parts of a comparison that the surfaces draw: bytes by type and party, LCP phases and
// element, the layout shifts of both runs, the render-blocking requests added.
func TestCompareParts(t *testing.T) {
	c := analysis.Compare(run(t, "psi-before", "home.mobile"), run(t, "psi", "home.mobile"))
	var third analysis.BytesChange
	for _, b := range c.Bytes {
		if b.Type == "Font" && b.ThirdParty {
			third = b
		}
	}
	if third.RequestsBefore != 0 || third.RequestsAfter != 1 || third.BytesAfter != 139756 {
		t.Errorf("third-party fonts %+v, want the new 139,756 B font", third)
	}
	if len(c.LCP.Phases) != 4 || c.LCP.Phases[2] != (analysis.PhaseChange{Phase: store.PhaseLoadDuration, Before: 355, After: 1518, Delta: 1163}) {
		t.Errorf("phases %+v", c.LCP.Phases)
	}
	if c.LCP.ElementChanged || c.LCP.ElementAfter.Selector != "body > section.hero > img.hero-img" {
		t.Errorf("LCP element %+v changed %v", c.LCP.ElementAfter, c.LCP.ElementChanged)
	}
	if r := c.LCP.Request; r == nil || r.EndDelta != 1141 || r.BytesDelta != 0 || !strings.HasSuffix(r.URL, "/static/img/hero.jpg") {
		t.Errorf("LCP request %+v", r)
	}
	if len(c.Shifts.Before) != 0 || len(c.Shifts.After) != 2 || len(c.Shifts.New) != 2 {
		t.Errorf("shifts %+v", c.Shifts)
	}
	if len(c.RenderBlockingAdded) != 1 || !strings.HasSuffix(c.RenderBlockingAdded[0].URL, "/fonts/brand.css") || c.RenderBlockingAdded[0].Before != nil {
		t.Errorf("render-blocking added %+v", c.RenderBlockingAdded)
	}
	if len(c.Scripts) != 1 || c.Scripts[0].URL != "http://cdn.widgetly.test/widget.js" || c.Scripts[0].BeforeMs != 0 {
		t.Errorf("scripts %+v", c.Scripts)
	}
}

// store.Request of a test run: an explanation made up by the test, not a Lighthouse result.
func req(url, typ string, bytes int64, start, end int) store.Request {
	return store.Request{URL: url, Entity: "a.test", Type: typ, Status: 200, TransferBytes: bytes, StartMs: start, EndMs: end}
}

func fp(v float64) *float64 { return &v }
func ip(v int) *int         { return &v }

// pair is two runs of / on mobile with the given metrics and requests.
func pair(before, after store.Vitals, b, a []store.Request) (store.PageResult, store.PageResult) {
	return store.PageResult{PagePath: "/", Strategy: "mobile", CoreWebVitals: before, Explain: &store.Explain{Requests: b}},
		store.PageResult{PagePath: "/", Strategy: "mobile", CoreWebVitals: after, Explain: &store.Explain{Requests: a}}
}

// The noise thresholds, at and past their bounds.
func TestCompareNoise(t *testing.T) {
	doc := req("https://a.test/", "Document", 2000, 0, 100)
	tests := []struct {
		name      string
		before    store.Vitals
		after     store.Vitals
		b, a      []store.Request
		regressed []string
		grown     int
		slower    int
	}{
		{name: "LCP up NoiseMs is noise", before: store.Vitals{LCP: fp(900)}, after: store.Vitals{LCP: fp(900 + analysis.NoiseMs)}},
		{name: "LCP up NoiseMs + 1 but not NoiseShare is noise", before: store.Vitals{LCP: fp(5000)}, after: store.Vitals{LCP: fp(5000 + analysis.NoiseMs + 1)}},
		{name: "LCP up past both bounds got worse", before: store.Vitals{LCP: fp(900)}, after: store.Vitals{LCP: fp(1001)}, regressed: []string{"lcp"}},
		{name: "TBT from 0 up NoiseMs + 1 got worse", before: store.Vitals{TBT: fp(0)}, after: store.Vitals{TBT: fp(analysis.NoiseMs + 1)}, regressed: []string{"tbt"}},
		{name: "CLS up NoiseCLS is noise", before: store.Vitals{CLS: fp(0.05)}, after: store.Vitals{CLS: fp(0.05 + analysis.NoiseCLS)}},
		{name: "CLS up more got worse", before: store.Vitals{CLS: fp(0.05)}, after: store.Vitals{CLS: fp(0.08)}, regressed: []string{"cls"}},
		{name: "a metric better is not worse", before: store.Vitals{LCP: fp(3000)}, after: store.Vitals{LCP: fp(1000)}},
		{name: "a metric one run lacks is not compared", before: store.Vitals{}, after: store.Vitals{LCP: fp(9000)}},
		{name: "a request grown NoiseBytes is noise",
			b: []store.Request{doc, req("https://a.test/a.js", "Script", 4000, 10, 50)}, a: []store.Request{doc, req("https://a.test/a.js", "Script", 4000+analysis.NoiseBytes, 10, 50)}},
		{name: "a request grown past both bounds grew",
			b: []store.Request{doc, req("https://a.test/a.js", "Script", 4000, 10, 50)}, a: []store.Request{doc, req("https://a.test/a.js", "Script", 6100, 10, 50)}, grown: 1},
		{name: "a large request grown NoiseBytes + 1 but under NoiseBytesShare is noise",
			b: []store.Request{doc, req("https://a.test/a.jpg", "Image", 800000, 10, 50)}, a: []store.Request{doc, req("https://a.test/a.jpg", "Image", 800000+analysis.NoiseBytes+1, 10, 50)}},
		{name: "a request NoiseRequestMs longer is noise",
			b: []store.Request{doc, req("https://a.test/a.jpg", "Image", 9000, 10, 50)}, a: []store.Request{doc, req("https://a.test/a.jpg", "Image", 9000, 10, 50+analysis.NoiseRequestMs)}},
		{name: "a request past both bounds longer is slower",
			b: []store.Request{doc, req("https://a.test/a.jpg", "Image", 9000, 10, 50)}, a: []store.Request{doc, req("https://a.test/a.jpg", "Image", 9000, 10, 201)}, slower: 1},
		{name: "a long request NoiseRequestMs + 1 longer but under NoiseRequestShare is noise",
			b: []store.Request{doc, req("https://a.test/a.jpg", "Image", 9000, 0, 1000)}, a: []store.Request{doc, req("https://a.test/a.jpg", "Image", 9000, 0, 1000+analysis.NoiseRequestMs+1)}},
		{name: "a request that only started later is not slower",
			b: []store.Request{doc, req("https://a.test/a.jpg", "Image", 9000, 10, 50)}, a: []store.Request{doc, req("https://a.test/a.jpg", "Image", 9000, 900, 940)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, a := pair(tt.before, tt.after, tt.b, tt.a)
			c := analysis.Compare(b, a)
			var got []string
			for _, m := range c.Metrics {
				if m.Regressed {
					got = append(got, m.Metric)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.regressed, ",") {
				t.Errorf("regressed %v, want %v", got, tt.regressed)
			}
			if len(c.Grown) != tt.grown || len(c.Slower) != tt.slower || len(c.Added)+len(c.Removed) != 0 {
				t.Errorf("grown %d slower %d added %d removed %d; want %d, %d, 0, 0", len(c.Grown), len(c.Slower), len(c.Added), len(c.Removed), tt.grown, tt.slower)
			}
			for _, x := range c.Causes { // with no request beyond noise the cause is lab variance
				if tt.grown+tt.slower == 0 && (len(x.Reasons) != 0 || !strings.HasSuffix(x.Sentence, analysis.NoChangeSentence)) {
					t.Errorf("cause %q named %+v", x.Sentence, x.Reasons)
				}
			}
		})
	}
	// The score: down NoiseScore is noise, one more got worse.
	for drop, want := range map[int]bool{analysis.NoiseScore: false, analysis.NoiseScore + 1: true} {
		b := store.PageResult{Scores: store.PageScores{Performance: ip(90)}}
		a := store.PageResult{Scores: store.PageScores{Performance: ip(90 - drop)}}
		if got := analysis.Compare(b, a).Regressed("performance"); got != want {
			t.Errorf("performance down %d: regressed %v, want %v", drop, got, want)
		}
	}
}

// A metric that got worse with nothing measurable changed says lab variance, not a cause; one
// whose runs were stored without what explains them says so.
func TestCompareSentencesWithoutACause(t *testing.T) {
	doc := req("https://a.test/", "Document", 2000, 0, 100)
	b, a := pair(store.Vitals{LCP: fp(2000)}, store.Vitals{LCP: fp(2600)}, []store.Request{doc}, []store.Request{doc})
	c := analysis.Compare(b, a)
	if len(c.Causes) != 1 || c.Causes[0].Sentence != "LCP +600 ms: "+analysis.NoChangeSentence || c.Summary != c.Causes[0].Sentence {
		t.Errorf("causes %+v, summary %q", c.Causes, c.Summary)
	}
	b.Explain = nil
	c = analysis.Compare(b, a)
	if c.Explained || len(c.Causes) != 1 || c.Causes[0].Sentence != "LCP +600 ms: "+analysis.NotExplainedSentence {
		t.Errorf("without explain data: %+v", c.Causes)
	}
	// Something changed, nothing got worse.
	b, a = pair(store.Vitals{LCP: fp(2000)}, store.Vitals{LCP: fp(2000)}, []store.Request{doc}, []store.Request{doc, req("https://a.test/new.js", "Script", 900, 200, 240)})
	if c := analysis.Compare(b, a); len(c.Causes) != 0 || len(c.Added) != 1 || c.Summary != analysis.NoRegressionSentence {
		t.Errorf("added %+v, causes %+v, summary %q", c.Added, c.Causes, c.Summary)
	}
}

// Requests are matched by URL without its query first, then by host and path: a cache-busting
// query or a move to https is the same request, another path is not.
func TestCompareMatchesRequests(t *testing.T) {
	b := []store.Request{req("http://a.test/app.js?v=1", "Script", 5000, 10, 60), req("http://cdn.a.test/x.css", "Stylesheet", 900, 10, 40),
		req("http://a.test/old.png", "Image", 900, 10, 40)}
	a := []store.Request{req("http://a.test/app.js?v=2", "Script", 5000, 10, 60), req("https://cdn.a.test:8443/x.css", "Stylesheet", 900, 10, 40),
		req("http://a.test/new.png", "Image", 900, 10, 40)}
	rb, ra := pair(store.Vitals{}, store.Vitals{}, b, a)
	c := analysis.Compare(rb, ra)
	if len(c.Added) != 1 || c.Added[0].URL != "http://a.test/new.png" || len(c.Removed) != 1 || c.Removed[0].URL != "http://a.test/old.png" {
		t.Errorf("added %+v removed %+v", c.Added, c.Removed)
	}
}

func TestFormat(t *testing.T) {
	for _, tt := range []struct {
		metric string
		d      float64
		want   string
	}{{"lcp", 1237.2, "+1.2 s"}, {"lcp", 810, "+810 ms"}, {"tbt", -45, "-45 ms"}, {"cls", 0.3896, "+0.39"}, {"performance", -33, "-33"}} {
		if got := analysis.FormatDelta(tt.metric, tt.d); got != tt.want {
			t.Errorf("FormatDelta(%s, %v) = %q, want %q", tt.metric, tt.d, got, tt.want)
		}
	}
}

// Scripts that take more of the main thread explain TBT: the page's own by path, its inline
// scripts (bootup-time counts them as the document's) as such; a new third party's scripts are
// that party's reason, not a script's.
func TestCompareScripts(t *testing.T) {
	doc := req("https://a.test/", "Document", 2000, 0, 100)
	widget := store.Request{URL: "https://cdn.w.test/w.js", Entity: "w.test", ThirdParty: true, Type: "Script", Status: 200, TransferBytes: 900, StartMs: 200, EndMs: 260}
	b, a := pair(store.Vitals{TBT: fp(100)}, store.Vitals{TBT: fp(900)}, []store.Request{doc}, []store.Request{doc, widget})
	b.Explain.Scripts = []store.ScriptCost{{URL: "https://a.test/", TotalMs: 100}, {URL: "https://a.test/app.js", TotalMs: 300}}
	a.Explain.Scripts = []store.ScriptCost{{URL: "https://a.test/", TotalMs: 300}, {URL: "https://a.test/app.js", TotalMs: 700}, {URL: widget.URL, TotalMs: 500}}
	a.Explain.Entities = []store.Entity{{Name: "a.test", Requests: 1}, {Name: "w.test", ThirdParty: true, Requests: 1, TransferBytes: 900, MainThreadMs: 480}}
	c := analysis.Compare(b, a)
	cause, ok := c.CauseOf("tbt")
	want := "TBT +800 ms: new third party w.test: 1 request, 1 KB, 480 ms of main-thread work; the script /app.js takes 400 ms more main-thread time"
	if !ok || cause.Sentence != want {
		t.Errorf("TBT cause %q,\n want %q", cause.Sentence, want)
	}
	if len(c.Scripts) != 3 {
		t.Errorf("scripts %+v", c.Scripts)
	}
	a.Explain.Scripts[1].TotalMs = 300 // app.js unchanged: the inline scripts come second
	if cause, _ := analysis.Compare(b, a).CauseOf("tbt"); !strings.HasSuffix(cause.Sentence, "; the page's inline scripts take 200 ms more main-thread time") {
		t.Errorf("TBT cause %q", cause.Sentence)
	}
}

// TestCauseSentenceSaysWhyWhenNoCause: a regression by the alerts' rule always gets a sentence;
// when Compare names no cause, it says why: the change is within run-to-run noise, the earlier
// run was kept without what explains it, or the metric is field data no lab run measures.
func TestCauseSentenceSaysWhyWhenNoCause(t *testing.T) {
	fast := run(t, "psi", "fast.mobile")
	at := func(r store.PageResult, lcp, inp float64) store.PageResult {
		r.CoreWebVitals.LCP, r.CoreWebVitals.INP = &lcp, &inp
		return r
	}
	bare := fast
	bare.Explain = nil
	for _, tt := range []struct {
		name          string
		before, after store.PageResult
		metric, says  string
	}{
		{"an LCP that crossed 2.5 s by 100 ms", at(fast, 2450, 100), at(fast, 2550, 100), "lcp", "LCP +100 ms: within run-to-run noise, so no cause is named"},
		{"a run kept without what explains it", at(bare, 1000, 100), at(fast, 4500, 100), "lcp", "LCP +3.5 s: " + analysis.NotExplainedSentence},
		{"INP from the field", at(fast, 1000, 150), at(fast, 1000, 600), "inp", "INP +450 ms: field data of real visits (the Chrome UX report), which no lab run explains"},
		{"a cause Compare names", run(t, "psi-before", "pricing.mobile"), run(t, "psi", "pricing.mobile"), "lcp", "LCP +1.0 s, mostly time to first byte: the document /pricing took 803 ms longer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			changes := analysis.RegressedChanges([]store.RunPair{{Before: tt.before, After: tt.after}})
			if len(changes) != 1 {
				t.Fatalf("%d regressed pages, want 1", len(changes))
			}
			i := slices.IndexFunc(changes[0].Regressions, func(r analysis.Regression) bool { return r.Metric == tt.metric })
			if i < 0 {
				t.Fatalf("no %s regression: %+v", tt.metric, changes[0].Regressions)
			}
			if got := changes[0].CauseSentence(changes[0].Regressions[i]); !strings.HasPrefix(got, tt.says) {
				t.Errorf("sentence %q, want it to start %q", got, tt.says)
			}
		})
	}
}
