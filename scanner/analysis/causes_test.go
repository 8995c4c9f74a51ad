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
			"LCP +600 ms: the image /logo.png is no longer loaded (29 KB), which explains none of it", analysis.ConfidenceLow, false, 2000, 2600},
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
