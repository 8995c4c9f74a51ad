package analysis_test

import (
	"strings"
	"testing"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// lcpRun is a run of / whose LCP is the element hero with the resource of the given request
// (marked as the LCP's), and the phases the test gives.
func lcpRun(lcp float64, hero store.Element, ttfb, delay, load, render int, reqs ...store.Request) store.PageResult {
	return store.PageResult{PagePath: "/", Strategy: "mobile", CoreWebVitals: store.Vitals{LCP: fp(lcp)},
		Explain: &store.Explain{Requests: reqs, LCP: store.LCP{Element: &hero, TTFBMs: ttfb, LoadDelayMs: delay, LoadDurationMs: load, RenderDelayMs: render, Phased: true}}}
}

func lcpReq(url string, bytes int64, start, end int) store.Request {
	r := req(url, "Image", bytes, start, end)
	r.LCP = true
	return r
}

// TestCauseOfAHeavierLCPImageUnderANewURL (issue 42's first miss): an editor replaced the hero
// with a 2 MB PNG under a new URL. The LCP resource is matched through the LCP element, so the
// cause names the new file, how much heavier it is and how much later it arrived, never lab
// variance.
func TestCauseOfAHeavierLCPImageUnderANewURL(t *testing.T) {
	doc := req("https://a.test/", "Document", 9000, 0, 120)
	hero := store.Element{Selector: "body > section.hero > img.hero-img", Snippet: `<img src="/img/hero.jpg" class="hero-img">`}
	b := lcpRun(1500, hero, 120, 60, 1100, 220, doc, lcpReq("https://a.test/img/hero.jpg", 150_000, 180, 1280))
	hero.Snippet = `<img src="/img/hero-full.png" class="hero-img">`
	a := lcpRun(12000, hero, 120, 60, 11600, 220, doc, lcpReq("https://a.test/img/hero-full.png", 2_100_000, 180, 11780))
	c := analysis.Compare(b, a)
	if c.LCP.Request == nil || c.LCP.Request.MatchedBy != analysis.MatchedLCP || c.LCP.Request.Before == nil {
		t.Fatalf("LCP request %+v: want the new file matched to the old through the element", c.LCP.Request)
	}
	cause, ok := c.CauseOf("lcp")
	want := "LCP +10.5 s, mostly resource load duration: the LCP image is now /img/hero-full.png (was /img/hero.jpg), 1.9 MB heavier, arriving 10.5 s later"
	if !ok || cause.Sentence != want || cause.Confidence != analysis.ConfidenceHigh {
		t.Errorf("LCP cause %q (%s),\n want %q (high)", cause.Sentence, cause.Confidence, want)
	}
	if len(c.Added) != 1 || len(c.Removed) != 1 {
		t.Errorf("added %d removed %d: the files are still two URLs", len(c.Added), len(c.Removed))
	}
}

// TestLabVarianceOnlyWhenNothingChanged: "likely lab variance" is said only when no request,
// size, timing, LCP element or resource changed beyond noise; otherwise the largest change is
// named, with how much of the metric it explains.
func TestLabVarianceOnlyWhenNothingChanged(t *testing.T) {
	doc := req("https://a.test/", "Document", 2000, 0, 100)
	logo := req("https://a.test/logo.png", "Image", 30_000, 150, 260)
	css := req("https://a.test/site.css", "Stylesheet", 9000, 120, 520)
	css.RenderBlocking = true
	for _, tc := range []struct {
		name         string
		b, a         []store.Request
		want         string
		confidence   string
		labVariance  bool
		beforeV, aft float64
	}{
		{"nothing changed", []store.Request{doc, logo}, []store.Request{doc, logo}, "LCP +600 ms: " + analysis.NoChangeSentence, "", true, 2000, 2600},
		{"a request removed, nothing that explains LCP", []store.Request{doc, logo}, []store.Request{doc},
			"LCP +600 ms: no change explains it; the largest: the image /logo.png is no longer loaded (29 KB)", analysis.ConfidenceLow, false, 2000, 2600},
		{"a new render-blocking stylesheet explains part", []store.Request{doc}, []store.Request{doc, css},
			"LCP +1.0 s: new render-blocking stylesheet /site.css, which explains about 40% of it", analysis.ConfidenceMedium, false, 2000, 3000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, a := pair(store.Vitals{LCP: fp(tc.beforeV)}, store.Vitals{LCP: fp(tc.aft)}, tc.b, tc.a)
			c := analysis.Compare(b, a)
			cause, ok := c.CauseOf("lcp")
			if !ok || cause.Sentence != tc.want || cause.Confidence != tc.confidence {
				t.Errorf("cause %q (%q),\n want %q (%q)", cause.Sentence, cause.Confidence, tc.want, tc.confidence)
			}
			if got := strings.Contains(c.Summary, analysis.NoChangeSentence); got != tc.labVariance {
				t.Errorf("summary %q says lab variance: %v", c.Summary, got)
			}
		})
	}
}

// TestCategoryScoreMovedByAuditsThatApply (issue 43, the demo's recovery scan): when the chat
// widget is removed again, /pricing's accessibility drops 62 → 52 though no audit turned
// failing: the widget's passing ARIA audits no longer apply, so the failing ones weigh more.
// The cause names those audits, never lab variance.
func TestCategoryScoreMovedByAuditsThatApply(t *testing.T) {
	for _, page := range []string{"pricing.mobile", "pricing.desktop"} {
		c := analysis.Compare(run(t, "psi", page), run(t, "psi-before", page))
		cause, ok := c.CauseOf("accessibility")
		want := "Accessibility -10: 4 passing audits no longer apply (aria-allowed-attr, aria-conditional-attr, aria-valid-attr-value, aria-valid-attr), so those that fail weigh more"
		if !ok || cause.Sentence != want || cause.Confidence != analysis.ConfidenceHigh || strings.Contains(c.Summary, analysis.NoChangeSentence) {
			t.Errorf("%s: cause %q (%s), summary %q;\n want %q", page, cause.Sentence, cause.Confidence, c.Summary, want)
		}
	}
}

// TestNewThirdPartyCostFallsBackToBootupTime: a new third party whose main-thread time
// Lighthouse did not attribute to it (third-parties-insight says 0) is weighed and named by
// its scripts' bootup-time.
func TestNewThirdPartyCostFallsBackToBootupTime(t *testing.T) {
	doc := req("https://a.test/", "Document", 2000, 0, 100)
	tag := store.Request{URL: "https://tags.t.test/gtm.js", Entity: "t.test", ThirdParty: true, Type: "Script", Status: 200, TransferBytes: 40_000, StartMs: 150, EndMs: 400}
	b, a := pair(store.Vitals{TBT: fp(100)}, store.Vitals{TBT: fp(1000)}, []store.Request{doc}, []store.Request{doc, tag})
	a.Explain.Scripts = []store.ScriptCost{{URL: tag.URL, TotalMs: 900, ScriptingMs: 850, ParseMs: 40}}
	a.Explain.Entities = []store.Entity{{Name: "a.test", Requests: 1}, {Name: "t.test", ThirdParty: true, Requests: 1, TransferBytes: 40_000}}
	cause, _ := analysis.Compare(b, a).CauseOf("tbt")
	if want := "TBT +900 ms: new third party t.test: 1 request, 39 KB, 900 ms of main-thread work"; cause.Sentence != want || cause.Confidence != analysis.ConfidenceHigh {
		t.Errorf("cause %q (%s),\n want %q (high)", cause.Sentence, cause.Confidence, want)
	}
}

// TestCauseOfARenamedBundle (issue 42's code review): a content-hashed bundle renamed and
// grown by a build is one request that grew, named with its old name, weighed by its bytes at
// the lab's simulated throughput; not a script removed and a new render-blocking one added.
func TestCauseOfARenamedBundle(t *testing.T) {
	doc := req("https://a.test/", "Document", 2000, 0, 100)
	app := func(url string, bytes int64, end int) store.Request {
		r := req(url, "Script", bytes, 120, end)
		r.RenderBlocking = true
		return r
	}
	b, a := pair(store.Vitals{FCP: fp(1500)}, store.Vitals{FCP: fp(3300)},
		[]store.Request{doc, app("https://a.test/static/app.3f9a2c1b.js", 97_000, 400)}, []store.Request{doc, app("https://a.test/static/app.77d0e4aa.js", 460_000, 520)})
	a.Explain.ThroughputKbps = 1638.4
	c := analysis.Compare(b, a)
	if len(c.Added)+len(c.Removed)+len(c.RenderBlockingAdded) != 0 || len(c.Grown) != 1 || c.Grown[0].MatchedBy != analysis.MatchedName {
		t.Fatalf("added %d removed %d blocking %d grown %+v", len(c.Added), len(c.Removed), len(c.RenderBlockingAdded), c.Grown)
	}
	cause, _ := c.CauseOf("fcp")
	if want := "FCP +1.8 s: the render-blocking script /static/app.77d0e4aa.js (was /static/app.3f9a2c1b.js) grew by 354 KB"; cause.Sentence != want || cause.Confidence != analysis.ConfidenceHigh {
		t.Errorf("cause %q (%s),\n want %q (high)", cause.Sentence, cause.Confidence, want)
	}
}

// TestNewRenderBlockingRankedByLighthouseSavings: newly render-blocking requests are ranked by
// what Lighthouse estimates each cost the first render (the insight's wastedMs), not by how
// long they took: Lighthouse CI names the two stylesheets, not the quick inline-sized script.
func TestNewRenderBlockingRankedByLighthouseSavings(t *testing.T) {
	doc := req("https://a.test/", "Document", 2000, 0, 100)
	blocking := func(url, typ string, end, savings int) store.Request {
		r := req(url, typ, 9000, 110, end)
		r.RenderBlocking, r.BlockingMs = true, savings
		return r
	}
	b, a := pair(store.Vitals{FCP: fp(1500)}, store.Vitals{FCP: fp(2600)}, []store.Request{doc},
		[]store.Request{doc, blocking("https://a.test/inline.js", "Script", 900, 40), blocking("https://a.test/icons.css", "Stylesheet", 300, 520), blocking("https://a.test/carousel.css", "Stylesheet", 280, 500)})
	cause, _ := analysis.Compare(b, a).CauseOf("fcp")
	if want := "FCP +1.1 s: new render-blocking stylesheet /icons.css; new render-blocking stylesheet /carousel.css"; cause.Sentence != want {
		t.Errorf("cause %q,\n want %q", cause.Sentence, want)
	}
}

// TestLateContentNamesTheNewScriptThatRanBefore (issue 42's second miss): content inserted
// late with no culprit Lighthouse can name says which new script ran before the page last
// changed on screen, a new third party's first.
func TestLateContentNamesTheNewScriptThatRanBefore(t *testing.T) {
	doc := req("https://a.test/", "Document", 2000, 0, 100)
	own := req("https://a.test/late.js", "Script", 900, 300, 380)
	cmp := store.Request{URL: "https://cdn.c.test/cmp/consent.js", Entity: "c.test", ThirdParty: true, Type: "Script", Status: 200, TransferBytes: 800, StartMs: 700, EndMs: 900}
	after := store.Request{URL: "https://cdn.x.test/x.js", Entity: "x.test", ThirdParty: true, Type: "Script", Status: 200, TransferBytes: 800, StartMs: 2600, EndMs: 2700}
	b, a := pair(store.Vitals{CLS: fp(0)}, store.Vitals{CLS: fp(0.14)}, []store.Request{doc}, []store.Request{doc, own, cmp, after})
	a.Explain.Shifts = []store.LayoutShift{{Selector: "body > section.hero", Score: 0.14}}
	a.Explain.Entities = []store.Entity{{Name: "a.test"}, {Name: "c.test", ThirdParty: true, Requests: 1}, {Name: "x.test", ThirdParty: true, Requests: 1}}
	a.Explain.LastVisualChangeMs = 2500 // x.js arrived after the page last changed: not it
	cause, _ := analysis.Compare(b, a).CauseOf("cls")
	want := "CLS +0.14: content inserted later shifted body > section.hero (0.14), after the new script cdn.c.test/cmp/consent.js (third party c.test) ran"
	if cause.Sentence != want {
		t.Errorf("cause %q,\n want %q", cause.Sentence, want)
	}
}
