package handlers

import (
	"net/http"
	"strings"
	"testing"
)

// TestPageDetailShowsUnitsAndLearnMoreLinks: what an opportunity could save and what a third
// party blocks are times, so they carry their unit; Lighthouse's "Learn more" links stay links.
func TestPageDetailShowsUnitsAndLearnMoreLinks(t *testing.T) {
	eachBackend(t, 0, func(t *testing.T, f *uiFixture) {
		resp, body := f.a.get("/sites/" + f.site + "/scans/" + f.scan + "/page?path=%2Fpricing&strategy=mobile")
		wantStatus(t, resp, http.StatusOK)
		for _, w := range []string{`<td class="num">3.0 s</td>`, `<td data-label="Blocking" class="num">1.0 s</td>`,
			`<a href="https://dequeuniversity.com/rules/axe/`, `rel="noopener noreferrer"`} {
			contains(t, body, w)
		}
	})
}

// TestLighthouseText: a description from a report is text; its links are kept only when they
// are https, escaped, and open with no handle on this page.
func TestLighthouseText(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"a Learn more link stays a link", "Labels help. [Learn more about labels](https://dequeuniversity.com/rules/axe/4.10/label).",
			`Labels help. <a href="https://dequeuniversity.com/rules/axe/4.10/label" rel="noopener noreferrer" target="_blank">Learn more about labels</a>.`},
		{"backticks go", "Use `<html lang>`.", "Use &lt;html lang&gt;."},
		{"a javascript: link keeps only its words", "[click](javascript:alert(1))", "click)"},
		{"an http link keeps only its words", "[Learn more](http://example.com/x)", "Learn more"},
		{"a link with no host keeps only its words", "[Learn more](https:/x)", "Learn more"},
		{"raw HTML is escaped", `<img src=x onerror=alert(1)> [a"b](https://e.test/"onmouseover=x)`,
			`&lt;img src=x onerror=alert(1)&gt; <a href="https://e.test/%22onmouseover=x" rel="noopener noreferrer" target="_blank">a&#34;b</a>`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(lighthouseText(tt.in)); got != tt.want {
				t.Errorf("lighthouseText(%q)\n got %s\nwant %s", tt.in, got, tt.want)
			}
		})
	}
	if strings.Contains(string(lighthouseText("[x](https://e.test/<b>)")), "<b>") {
		t.Error("a tag inside a link's URL is not escaped")
	}
}

// TestScanPageCountsRegressedPages: the demo's latest scan regressed / and /pricing on both
// strategies; that is 2 pages, not "4 pages".
func TestScanPageCountsRegressedPages(t *testing.T) {
	eachBackend(t, 0, func(t *testing.T, f *uiFixture) {
		resp, body := f.a.get("/sites/" + f.site + "/scans/" + f.scan)
		wantStatus(t, resp, http.StatusOK)
		contains(t, body, "2 pages regressed (4 page/strategy runs) since the scan of")
	})
}
