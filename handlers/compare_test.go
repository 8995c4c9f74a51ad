package handlers

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"sitepulse/handlers/svg/svgtest"
	"sitepulse/scanner/analysis"
	"sitepulse/scanner/lighthouse/lhtest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

var (
	panelRe  = regexp.MustCompile(`<summary><span class="mono">([^<]+)</span> <span class="muted">· (mobile|desktop)</span>`)
	causesRe = regexp.MustCompile(`(?s)<ul class="causes">(.*?)</ul>`)
	svgRe    = regexp.MustCompile(`(?s)<svg class="(?:waterfall|phases)".*?</svg>`)
	imgRe    = regexp.MustCompile(`<img src="([^"]+)"`)
)

// panels splits a scan page's "What changed" section into its panels by "path strategy".
func panels(t *testing.T, body string) map[string]string {
	t.Helper()
	out := map[string]string{}
	parts := strings.Split(body, `<details class="changed-page"`)
	for _, p := range parts[1:] {
		m := panelRe.FindStringSubmatch(p)
		if m == nil {
			t.Fatalf("a panel without its page: %.300s", p)
		}
		out[html.UnescapeString(m[1])+" "+m[2]] = strings.Split(p, "</details>")[0]
	}
	return out
}

// causesOf is the cause sentences of a panel, unescaped; "" when it names none.
func causesOf(panel string) string {
	m := causesRe.FindStringSubmatch(panel)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// The scan page of the demo's latest scan explains its regressions page by page as
// testdata/psi-before/site-before.diff says the publish changed them: / names the chat widget
// (widgetly.test) and the hero image, /pricing its slower document; /blog, /about and /fast get no
// panel, and their comparison names no cause. Its drawings are well-formed SVG, its filmstrips
// pictures the image routes serve.
func TestScanPageWhatChanged(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newAPIFixture(t, b.Open(t))
			resp, body := f.do(t, "GET", "/sites/"+f.a.siteID+"/scans/"+f.a.scanID, "", "", cookie(f.a.session))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("scan page: %d", resp.StatusCode)
			}
			got := panels(t, body)
			for _, want := range []string{"/ mobile", "/ desktop", "/pricing mobile", "/pricing desktop"} {
				if got[want] == "" {
					t.Errorf("no What changed panel for %s; panels: %v", want, keys(got))
				}
			}
			if len(got) != 4 {
				t.Errorf("panels for %v, want / and /pricing on both strategies only", keys(got))
			}
			for _, strategy := range []string{"mobile", "desktop"} {
				home := causesOf(got["/ "+strategy])
				for _, want := range []string{"new third party widgetly.test", "the LCP image /static/img/hero.jpg arrived", "unsized image"} {
					if !strings.Contains(home, want) {
						t.Errorf("/ %s: the causes do not say %q: %s", strategy, want, home)
					}
				}
				if pricing := causesOf(got["/pricing "+strategy]); !strings.Contains(pricing, "the document /pricing took") {
					t.Errorf("/pricing %s: the causes do not name the slower document: %s", strategy, pricing)
				}
			}
			svgs := svgRe.FindAllString(body, -1)
			if len(svgs) != 8 { // a waterfall and the phases of each panel
				t.Errorf("%d drawings, want 8", len(svgs))
			}
			for _, svg := range svgs {
				svgtest.WellFormed(t, svg)
			}
			srcs := map[string]bool{}
			for _, m := range imgRe.FindAllStringSubmatch(got["/ mobile"], -1) {
				srcs[html.UnescapeString(m[1])] = true
			}
			if len(srcs) < 2 {
				t.Errorf("/ mobile's filmstrips show %d pictures", len(srcs))
			}
			for src := range srcs {
				if resp, _ := f.do(t, "GET", src, "", "", cookie(f.a.session)); resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/jpeg" {
					t.Errorf("%s: %d %s", src, resp.StatusCode, resp.Header.Get("Content-Type"))
				}
			}

			for _, path := range []string{"/blog/", "/about", "/fast"} {
				for _, strategy := range []string{"mobile", "desktop"} {
					resp, body := f.do(t, "GET", compareURL(f.a.siteID, f.a.prevScanID, f.a.scanID, path, store.Strategy(strategy)), "", "", cookie(f.a.session))
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("compare %s %s: %d", path, strategy, resp.StatusCode)
					}
					if c := causesOf(body); c != "" {
						t.Errorf("%s %s: a cause was invented: %s", path, strategy, c)
					}
					text := html.UnescapeString(body)
					if !strings.Contains(text, analysis.NoChangeSentence) && !strings.Contains(text, analysis.NoRegressionSentence) {
						t.Errorf("%s %s: the compare page does not say nothing measurable got worse", path, strategy)
					}
				}
			}
		})
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The compare page opens on the page that got worst, serves any two completed scans of the site
// to its members, the earlier one first, and answers every other request with the UI's error
// pages: 404 for a scan that is someone else's or another site's, 400 and 422 for parameters
// that cannot be, never a 500.
func TestComparePage(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newAPIFixture(t, b.Open(t))
			ctx := context.Background()
			a := cookie(f.a.session)
			base := "/sites/" + f.a.siteID + "/compare?"
			resp, body := f.do(t, "GET", base+"from="+f.a.prevScanID+"&to="+f.a.scanID, "", "", a)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("compare: %d", resp.StatusCode)
			}
			picked := regexp.MustCompile(`aria-current="page"><span class="mono">([^<]+)</span>`).FindStringSubmatch(body)
			if picked == nil || (picked[1] != "/" && picked[1] != "/pricing") || causesOf(body) == "" {
				t.Errorf("the compare page does not open on a page that got worse: %v", picked)
			}
			for _, svg := range svgRe.FindAllString(body, -1) {
				svgtest.WellFormed(t, svg)
			}
			if !strings.Contains(body, `action="/sites/`+f.a.siteID+`/compare"`) {
				t.Error("no form to pick other scans")
			}

			// The scan page links here, with a form of the site's completed scans; the site page
			// from its trend and history.
			_, scanPage := f.do(t, "GET", "/sites/"+f.a.siteID+"/scans/"+f.a.scanID, "", "", a)
			if !strings.Contains(scanPage, "Compare with another scan") || !strings.Contains(scanPage, `<option value="`+f.a.prevScanID+`" selected>`) {
				t.Error("the scan page has no form to compare with another scan")
			}
			_, sitePage := f.do(t, "GET", "/sites/"+f.a.siteID, "", "", a)
			if !strings.Contains(html.UnescapeString(sitePage), "/compare?from="+f.a.prevScanID+"&to="+f.a.scanID) {
				t.Error("the site page does not link the latest scan's comparison with the previous one")
			}
			if !strings.Contains(sitePage, `href="/sites/`+f.a.siteID+`/scans/`+f.a.scanID+`#what-changed"`) {
				t.Error("the site page's regressions do not link to what changed on the latest scan")
			}

			// The later scan first: the same comparison, the earlier scan before.
			resp, _ = f.do(t, "GET", base+"from="+f.a.scanID+"&to="+f.a.prevScanID+"&page=%2F&strategy=mobile", "", "", a)
			if loc, _ := url.Parse(resp.Header.Get("Location")); resp.StatusCode != http.StatusSeeOther ||
				loc.Query().Get("from") != f.a.prevScanID || loc.Query().Get("to") != f.a.scanID || loc.Query().Get("page") != "/" {
				t.Errorf("the later scan first: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
			}

			otherSite := f.newSite(t, f.a.userID, "Another of A's")
			otherScan := f.recordScan(t, otherSite, fixtureResults(t, "home.mobile"), f.now)
			queued := store.Scan{ID: store.NewID(), SiteID: f.a.siteID, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: f.now}
			must(t, f.st.EnqueueScan(ctx, queued, store.KindScan, f.now))
			valid := "from=" + f.a.prevScanID + "&to=" + f.a.scanID
			for _, tc := range []struct {
				name   string
				path   string
				cred   cred
				status int
			}{
				{"a stranger, A's site and scans", base + valid, cookie(f.b.session), 404},
				{"a stranger, A's scans through their own site", "/sites/" + f.b.siteID + "/compare?" + valid, cookie(f.b.session), 404},
				{"A's scans through A's other site", "/sites/" + otherSite + "/compare?" + valid, a, 404},
				{"a scan of A's other site", base + "from=" + otherScan + "&to=" + f.a.scanID, a, 404},
				{"an unknown scan", base + "from=" + store.NewID() + "&to=" + f.a.scanID, a, 404},
				{"without the earlier scan", base + "to=" + f.a.scanID, a, 400},
				{"a scan id that is none", base + "from=x&to=" + f.a.scanID, a, 400},
				{"one scan twice", base + "from=" + f.a.scanID + "&to=" + f.a.scanID, a, 422},
				{"a scan that has not completed", base + "from=" + f.a.scanID + "&to=" + queued.ID, a, 422},
				{"a page that is no path", base + valid + "&page=pricing&strategy=mobile", a, 400},
				{"a strategy that is none", base + valid + "&page=%2F&strategy=both", a, 400},
				{"a control character", base + valid + "&page=%2F%00&strategy=mobile", a, 400},
				{"a page neither scan audited", base + valid + "&page=%2Fnowhere&strategy=mobile", a, 404},
				{"signed out", base + valid, cred{}, 303},
			} {
				resp, body := f.do(t, "GET", tc.path, "", "", tc.cred)
				if resp.StatusCode != tc.status {
					t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.status)
				}
				if resp.StatusCode >= 400 && !strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
					t.Errorf("%s: not the UI's error page: %s", tc.name, resp.Header.Get("Content-Type"))
				}
				if strings.Contains(body, "widgetly") {
					t.Errorf("%s: the answer shows what changed", tc.name)
				}
			}
		})
	}
}

// A scan with more regressed pages than the scan page explains shows the first
// maxChangePanels and sends the reader to the compare page for the rest.
func TestScanPageBoundsPanels(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newAPIFixture(t, b.Open(t))
			site := f.newSite(t, f.a.userID, "Many pages")
			before, after := lhtest.Explained(t, "../testdata/psi-before/home.mobile.json"), lhtest.Explained(t, "../testdata/psi/home.mobile.json")
			var bs, as []store.PageResult
			for i := range maxChangePanels + 2 {
				b, a := before, after
				b.PagePath = "/p-" + strings.Repeat("x", i)
				a.PagePath = b.PagePath
				bs, as = append(bs, b), append(as, a)
			}
			from := f.recordScan(t, site, bs, f.now.Add(-time.Hour))
			to := f.recordScan(t, site, as, f.now)
			_, body := f.do(t, "GET", "/sites/"+site+"/scans/"+to, "", "", cookie(f.a.session))
			if got := len(panels(t, body)); got != maxChangePanels {
				t.Errorf("%d panels, want %d", got, maxChangePanels)
			}
			if !strings.Contains(body, "The first 10 are here") || !strings.Contains(html.UnescapeString(body), "/compare?from="+from+"&to="+to) {
				t.Error("the scan page does not send the reader to the compare page for the other pages")
			}
		})
	}
}

// confidenceRe is a cause of a "What changed" panel with how sure it is beside it (issue 42):
// the sentence, then a tag saying "high", "medium" or "low confidence" with a title saying what
// that means.
var confidenceRe = regexp.MustCompile(`<li><span class="cause-text">([^<]*)</span> <span class="tag conf conf-(high|medium|low)" title="([^"]+)">(high|medium|low) confidence</span></li>`)

// Every cause of the scan page's panels and of the compare page says how sure it is, the
// confidence analysis.Compare gave it, with a title saying what that means.
func TestWhatChangedSaysHowSure(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newAPIFixture(t, b.Open(t))
			pairs, err := f.st.PreviousPairs(context.Background(), f.a.userID, f.a.scanID)
			must(t, err)
			want := map[string]string{} // sentence → confidence, of every cause of the demo's pages
			for _, c := range analysis.CompareAll(pairs.Pairs) {
				for _, x := range c.Causes {
					want[x.Sentence] = x.Confidence
				}
			}
			check := func(where, body string) {
				t.Helper()
				items := strings.Count(causesOf(body), "<li>")
				tagged := confidenceRe.FindAllStringSubmatch(body, -1)
				if items == 0 || len(tagged) < items {
					t.Errorf("%s: %d of %d causes say how sure they are: %s", where, len(tagged), items, causesOf(body))
				}
				for _, m := range tagged {
					sentence := html.UnescapeString(m[1])
					if w, ok := want[sentence]; !ok || w != m[2] || m[2] != m[4] {
						t.Errorf("%s: %q tagged %s (%s), want %q", where, sentence, m[2], m[4], w)
					}
					if !strings.Contains(html.UnescapeString(m[3]), "of the metric's change") {
						t.Errorf("%s: the tag's title does not say what %s means: %q", where, m[2], m[3])
					}
				}
			}
			_, body := f.do(t, "GET", "/sites/"+f.a.siteID+"/scans/"+f.a.scanID, "", "", cookie(f.a.session))
			got := panels(t, body)
			for key, panel := range got {
				check("scan page "+key, panel)
			}
			_, body = f.do(t, "GET", compareURL(f.a.siteID, f.a.prevScanID, f.a.scanID, "/", store.StrategyMobile), "", "", cookie(f.a.session))
			check("compare page / mobile", body)
		})
	}
}

// TestCompareOpensOnTheLatestTwo: the compare page opened without scans (from the address bar,
// a bookmark) opens on the site's latest two completed scans, the earlier first; a site with
// fewer says it needs two, and offers what there is, rather than a 400.
func TestCompareOpensOnTheLatestTwo(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newAPIFixture(t, b.Open(t))
			a := cookie(f.a.session)
			resp, _ := f.do(t, "GET", "/sites/"+f.a.siteID+"/compare", "", "", a)
			loc, _ := url.Parse(resp.Header.Get("Location"))
			if resp.StatusCode != http.StatusSeeOther || loc.Query().Get("from") != f.a.prevScanID || loc.Query().Get("to") != f.a.scanID {
				t.Fatalf("without scans: %d to %q, want 303 to from=%s&to=%s", resp.StatusCode, resp.Header.Get("Location"), f.a.prevScanID, f.a.scanID)
			}
			resp, body := f.do(t, "GET", loc.String(), "", "", a)
			wantStatus(t, resp, http.StatusOK)
			contains(t, body, `<option value="`+f.a.prevScanID+`" selected>`)

			one := f.newSite(t, f.a.userID, "One scan")
			f.recordScan(t, one, fixtureResults(t, "home.mobile"), f.now)
			resp, body = f.do(t, "GET", "/sites/"+one+"/compare", "", "", a)
			wantStatus(t, resp, http.StatusOK)
			contains(t, body, "Comparing needs two completed scans of this site; it has 1 so far.")
			if strings.Contains(body, `name="from"`) {
				t.Error("a site with one completed scan is offered a form to pick two")
			}
		})
	}
}
