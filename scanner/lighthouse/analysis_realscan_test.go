package lighthouse

import (
	"testing"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
)

// The analysis run on the real Lighthouse runs in testdata, as a scan of them would store them.

// extractAll extracts real fixtures, as a scan of them would store them.
func extractAll(t *testing.T, names ...string) []store.PageResult {
	t.Helper()
	var out []store.PageResult
	for _, n := range names {
		r, err := ExtractPSI(fixture(t, n))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

var allFixtures = []string{"home.mobile.json", "home.desktop.json", "blog.mobile.json", "blog.desktop.json", "pricing.mobile.json",
	"pricing.desktop.json", "about.mobile.json", "about.desktop.json", "fast.mobile.json", "fast.desktop.json"}

func TestAccessibilityIssuesOnRealScan(t *testing.T) {
	results := extractAll(t, allFixtures...)
	all := analysis.AccessibilityIssues(results, "all")
	if all.PagesAnalyzed != 5 || all.AvgAccessibilityScore == nil || *all.AvgAccessibilityScore != 73 {
		t.Errorf("pages %d avg %s", all.PagesAnalyzed, show(all.AvgAccessibilityScore))
	}
	golden(t, "analysis/accessibility_all.json", all)
	for _, sev := range analysis.Severities {
		some := analysis.AccessibilityIssues(results, sev)
		for _, g := range some.Issues {
			if g.Severity != sev {
				t.Errorf("filter %s returned %s", sev, g.Severity)
			}
		}
	}
	for i, g := range all.Issues {
		if g.PagesAffected != len(g.AffectedPaths) || g.PagesAffected == 0 {
			t.Errorf("group %s: %d pages, paths %v", g.ID, g.PagesAffected, g.AffectedPaths)
		}
		if i > 0 && severityRank(all.Issues[i-1].Severity) > severityRank(g.Severity) {
			t.Errorf("not ordered by severity at %s", g.ID)
		}
	}
}

func severityRank(s string) int {
	for i, v := range analysis.Severities {
		if v == s {
			return i
		}
	}
	return -1
}

func TestThirdPartiesOnRealScan(t *testing.T) {
	results := extractAll(t, allFixtures...)
	got, pages := analysis.ThirdParties(results)
	if pages != 5 {
		t.Errorf("pagesAnalyzed %d", pages)
	}
	// widgetly is on / and /pricing (mobile, LH13 main-thread ms 1049 and 1049): average 1049,
	// impact 2 x 1049; hotjar on / and /blog/ (120 and 122 ms).
	want := `[{"domain":"cdn.widgetly.test","totalTransferBytes":142426,"avgBlockingMs":1049,"pagesAffected":2,"impactScore":2098},{"domain":"static.hotjar.com","totalTransferBytes":1012,"avgBlockingMs":121,"pagesAffected":2,"impactScore":242}]`
	if show(got) != want {
		t.Errorf("got  %s\nwant %s", show(got), want)
	}
	desktopOnly, pages := analysis.ThirdParties(extractAll(t, "home.desktop.json"))
	if pages != 1 || len(desktopOnly) != 2 {
		t.Errorf("desktop fallback: %s %d", show(desktopOnly), pages)
	}
	none, pages := analysis.ThirdParties(nil)
	if len(none) != 0 || pages != 0 || show(none) != "[]" {
		t.Errorf("empty: %s", show(none))
	}
}

func TestWorstPage(t *testing.T) {
	results := extractAll(t, allFixtures...)
	for strategy, want := range map[store.Strategy]string{"mobile": "/", "desktop": "/"} {
		w, ok := analysis.WorstPage(results, strategy)
		if !ok || w.PagePath != want {
			t.Errorf("%s: worst %q", strategy, w.PagePath)
		}
	}
}
