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
