package lighthouse

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sitepulse/store"
)

// explainFixtures are the real runs with what explains them: the latest set, its Lighthouse 12
// copies, and the set before the publish (testdata/psi-before).
func explainFixtures(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, name := range fixtureNames() {
		out[name] = fixture(t, name)
	}
	before, _ := filepath.Glob("../../testdata/psi-before/*.json")
	for _, f := range before {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out["before/"+filepath.Base(f)] = b
	}
	if len(out) != 25 {
		t.Fatalf("%d fixtures, want 25", len(out))
	}
	return out
}

// Every real run's explain data extracts to its golden file, and survives its stored form.
func TestExplainGolden(t *testing.T) {
	for name, body := range explainFixtures(t) {
		t.Run(name, func(t *testing.T) {
			r, err := ExtractPSI(body)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("explain", strings.ReplaceAll(name, "/", "_")), r.Explain)
			back, err := store.DecodeExplain(store.EncodeExplain(r.Explain))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, r.Explain) {
				t.Errorf("the stored form does not give back what was extracted:\n got %+v\nwant %+v", back, r.Explain)
			}
		})
	}
}

// What the fixtures' READMEs and site-before.diff say of each run comes out of its explain data:
// the LCP request, the render-blocking requests, the third parties, the layout shifts.
func TestExplainFacts(t *testing.T) {
	tests := []struct {
		file           string
		requests       int
		lcpRequest     string // path of the LCP request; "" for a text LCP
		phases         [4]int // TTFB, load delay, load duration, render delay
		renderBlocking []string
		thirdParties   []string // entity names
		shifts         int
		failing        []string // some of the failing audits
	}{
		{"home.mobile.json", 10, "/static/img/hero.jpg", [4]int{7, 26, 1518, 777},
			[]string{"/static/css/main.css", "/fonts/brand.css", "/static/js/vendor.js"}, []string{"widgetly.test", "Hotjar"}, 2,
			[]string{"cls-culprits-insight", "unsized-images", "render-blocking-insight", "font-display-insight"}},
		{"before/home.mobile.json", 7, "/static/img/hero.jpg", [4]int{16, 39, 355, 1830},
			[]string{"/static/css/main.css", "/static/js/vendor.js"}, []string{"Hotjar"}, 0, []string{"render-blocking-insight"}},
		{"pricing.mobile.json", 6, "", [4]int{906, 0, 0, 1028},
			[]string{"/static/css/main.css", "/static/js/vendor.js"}, []string{"widgetly.test"}, 0, []string{"document-latency-insight"}},
		{"before/pricing.mobile.json", 5, "", [4]int{96, 0, 0, 2228},
			[]string{"/static/css/main.css", "/static/js/vendor.js"}, nil, 0, nil},
		{"blog.desktop.json", 11, "/static/img/post-1.jpg?delay=400", [4]int{5, 18, 425, 363},
			[]string{"/static/css/main.css", "/wp-includes/js/jquery.min.js?ver=3.7.1"}, []string{"Hotjar"}, 1, []string{"unsized-images"}},
		{"fast.mobile.json", 2, "/static/img/fast-hero.webp", [4]int{7, 15, 49, 19}, nil, nil, 0, nil},
		// Lighthouse 12.8 has the insights too (observed phases); its LCP request is named by
		// prioritize-lcp-image.
		{"lh12/home.mobile.json", 10, "/static/img/hero.jpg", [4]int{7, 22, 1529, 771},
			[]string{"/static/css/main.css", "/fonts/brand.css", "/static/js/vendor.js"}, []string{"widgetly.test", "Hotjar"}, 2,
			[]string{"unsized-images", "render-blocking-resources", "third-party-summary"}},
	}
	all := explainFixtures(t)
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r, err := ExtractPSI(all[tt.file])
			if err != nil {
				t.Fatal(err)
			}
			e := r.Explain
			if len(e.Requests) != tt.requests {
				t.Errorf("%d requests, want %d", len(e.Requests), tt.requests)
			}
			lcp, ok := e.LCPRequest()
			if tt.lcpRequest == "" && ok || tt.lcpRequest != "" && (!ok || !strings.HasSuffix(lcp.URL, tt.lcpRequest)) {
				t.Errorf("LCP request %q, want %q", lcp.URL, tt.lcpRequest)
			}
			if got := [4]int{e.LCP.TTFBMs, e.LCP.LoadDelayMs, e.LCP.LoadDurationMs, e.LCP.RenderDelayMs}; got != tt.phases || !e.LCP.Phased {
				t.Errorf("phases %v, want %v", got, tt.phases)
			}
			var blocking, third []string
			for _, q := range e.Requests {
				if q.RenderBlocking {
					blocking = append(blocking, q.URL)
				}
			}
			for _, en := range e.Entities {
				if en.ThirdParty {
					third = append(third, en.Name)
				}
			}
			if len(blocking) != len(tt.renderBlocking) {
				t.Errorf("render-blocking %v, want %v", blocking, tt.renderBlocking)
			}
			for i := range min(len(blocking), len(tt.renderBlocking)) {
				if !strings.HasSuffix(blocking[i], tt.renderBlocking[i]) {
					t.Errorf("render-blocking %v, want %v", blocking, tt.renderBlocking)
				}
			}
			if !reflect.DeepEqual(third, tt.thirdParties) {
				t.Errorf("third parties %v, want %v", third, tt.thirdParties)
			}
			if len(e.Shifts) != tt.shifts {
				t.Errorf("%d layout shifts, want %d: %+v", len(e.Shifts), tt.shifts, e.Shifts)
			}
			for _, id := range tt.failing {
				if _, ok := e.Failed(id); !ok {
					t.Errorf("%s not among the failing audits", id)
				}
			}
			if doc, ok := e.Document(); !ok || doc.Type != "Document" || doc.ThirdParty {
				t.Errorf("document %+v", doc)
			}
		})
	}
}

// TestExplainSize measures what keeping a run's explain data costs, over the 20 Lighthouse 13
// runs of testdata/psi and testdata/psi-before: the stored result (store.EncodeResult, the
// jsonb today's page rows hold) and the explain data (store.EncodeExplain), on average per
// audited page. The budget (issue 33): at most 8 KB more per page. .ci/README.md keeps the
// figures: go test ./scanner/lighthouse -run TestExplainSize -v
func TestExplainSize(t *testing.T) {
	var results, explains, runs int
	for name, body := range explainFixtures(t) {
		if strings.HasPrefix(name, "lh12/") {
			continue
		}
		r, err := ExtractPSI(body)
		if err != nil {
			t.Fatal(err)
		}
		results += len(store.EncodeResult(r))
		explains += len(store.EncodeExplain(r.Explain))
		runs++
	}
	avgResult, avgExplain := results/runs, explains/runs
	t.Logf("%d runs: result %d B per page (EncodeResult), explain data %d B per page (EncodeExplain): %+d B, %.2fx",
		runs, avgResult, avgExplain, avgExplain, float64(avgResult+avgExplain)/float64(avgResult))
	if avgExplain > 8<<10 {
		t.Errorf("explain data takes %d B per page, over the 8 KB budget", avgExplain)
	}
}

// without is a real PSI response with some audits removed, and the LCP element's snippet
// replaced when snippet is not empty: how an older or thinner report looks to the fallbacks.
func without(t *testing.T, body []byte, snippet string, audits ...string) []byte {
	t.Helper()
	var resp map[string]any
	if err := json.Unmarshal(body, &resp); err != nil {
		t.Fatal(err)
	}
	lhr := resp["lighthouseResult"].(map[string]any)
	all := lhr["audits"].(map[string]any)
	for _, id := range audits {
		delete(all, id)
	}
	if snippet != "" {
		b, _ := json.Marshal(all["lcp-breakdown-insight"])
		b = []byte(strings.ReplaceAll(string(b), `\u003cimg src=\"/static/img/hero.jpg\"`, snippet))
		var a any
		json.Unmarshal(b, &a)
		all["lcp-breakdown-insight"] = a
	}
	out, _ := json.Marshal(resp)
	return out
}

// Each part of the explain data falls back by audit id when the report lacks the first source.
func TestExplainFallbacks(t *testing.T) {
	lh12 := fixture(t, "lh12/home.mobile.json")
	lh13 := fixture(t, "home.mobile.json")
	t.Run("phases from largest-contentful-paint-element without lcp-breakdown-insight", func(t *testing.T) {
		r, err := ExtractPSI(without(t, lh12, "", "lcp-breakdown-insight"))
		if err != nil {
			t.Fatal(err)
		}
		if got := [4]int{r.Explain.LCP.TTFBMs, r.Explain.LCP.LoadDelayMs, r.Explain.LCP.LoadDurationMs, r.Explain.LCP.RenderDelayMs}; got != [4]int{701, 0, 4851, 2749} {
			t.Errorf("phases %v", got)
		}
		if q, ok := r.Explain.LCPRequest(); !ok || !strings.HasSuffix(q.URL, "/static/img/hero.jpg") {
			t.Errorf("LCP request %+v", q)
		}
	})
	t.Run("the LCP request by when the load phase ended, when the element names no src", func(t *testing.T) {
		r, err := ExtractPSI(without(t, lh13, `\u003cimg`))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(r.Explain.LCP.Element.Snippet, "src=") {
			t.Fatalf("snippet still names the src: %s", r.Explain.LCP.Element.Snippet)
		}
		if q, ok := r.Explain.LCPRequest(); !ok || !strings.HasSuffix(q.URL, "/static/img/hero.jpg") {
			t.Errorf("LCP request %+v", q)
		}
	})
	t.Run("shifts from layout-shifts without cls-culprits-insight, render-blocking from the Lighthouse 12 audit", func(t *testing.T) {
		r, err := ExtractPSI(without(t, lh12, "", "cls-culprits-insight", "render-blocking-insight"))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Explain.Shifts) != 2 || r.Explain.Shifts[0].Causes[0].Cause != "Media element lacking an explicit size" {
			t.Errorf("shifts %+v", r.Explain.Shifts)
		}
		n := 0
		for _, q := range r.Explain.Requests {
			if q.RenderBlocking {
				n++
			}
		}
		if n != 3 {
			t.Errorf("%d render-blocking requests, want 3", n)
		}
	})
	t.Run("a report without any of them extracts an empty explanation, not an error", func(t *testing.T) {
		r, err := ExtractPSI(without(t, lh13, "", "network-requests", "lcp-breakdown-insight", "cls-culprits-insight", "layout-shifts",
			"mainthread-work-breakdown", "bootup-time", "third-parties-insight", "render-blocking-insight"))
		if err != nil {
			t.Fatal(err)
		}
		e := r.Explain
		if len(e.Requests) != 0 || e.LCP.Phased || len(e.Shifts) != 0 || len(e.Scripts) != 0 || len(e.Failing) == 0 {
			t.Errorf("explain %+v", e)
		}
	})
}

// A page with thousands of requests and frames keeps what bounds allow: its document, its LCP
// request and its render-blocking requests among MaxExplainRequests, MaxExplainEntities parties,
// MaxPageImages pictures. The report is a real one with its lists multiplied.
func TestExplainBounds(t *testing.T) {
	var resp map[string]any
	if err := json.Unmarshal(fixture(t, "home.mobile.json"), &resp); err != nil {
		t.Fatal(err)
	}
	audits := resp["lighthouseResult"].(map[string]any)["audits"].(map[string]any)
	details := audits["network-requests"].(map[string]any)["details"].(map[string]any)
	items := details["items"].([]any)
	for i := range 3000 {
		r := map[string]any{}
		for k, v := range items[5].(map[string]any) { // the partner logo, 10,850 B
			r[k] = v
		}
		r["url"] = fmt.Sprintf("http://cdn%d.example.test/img/%d.png?%s", i, i, strings.Repeat("q", 500))
		r["entity"], r["transferSize"] = fmt.Sprintf("cdn%d.example.test", i), float64(1000+i)
		items = append(items, r)
	}
	details["items"] = items
	strip := audits["screenshot-thumbnails"].(map[string]any)["details"].(map[string]any)
	frames := strip["items"].([]any)
	for i := range 40 {
		f := map[string]any{}
		for k, v := range frames[0].(map[string]any) {
			f[k] = v
		}
		data := f["data"].(string)
		f["data"], f["timing"] = data[:len(data)-8]+fmt.Sprintf("%04d", i)+data[len(data)-4:], float64(4000+i)
		frames = append(frames, f)
	}
	strip["items"] = frames
	body, _ := json.Marshal(resp)
	r, err := ExtractPSI(body)
	if err != nil {
		t.Fatal(err)
	}
	e := r.Explain
	if len(e.Requests) != store.MaxExplainRequests || len(e.Entities) != store.MaxExplainEntities || len(r.Images) != store.MaxPageImages {
		t.Errorf("%d requests, %d entities, %d pictures", len(e.Requests), len(e.Entities), len(r.Images))
	}
	doc, ok := e.Document()
	lcp, okLCP := e.LCPRequest()
	blocking := 0
	for _, q := range e.Requests {
		if len(q.URL) > store.MaxExplainText {
			t.Fatalf("a URL of %d bytes kept", len(q.URL))
		}
		if q.RenderBlocking {
			blocking++
		}
	}
	if !ok || doc.Type != "Document" || !okLCP || !strings.HasSuffix(lcp.URL, "/static/img/hero.jpg") || blocking != 3 {
		t.Errorf("document %v, LCP request %q, %d render-blocking: the requests that matter were not kept", ok, lcp.URL, blocking)
	}
	total := 0
	for _, x := range e.Totals {
		total += x.Requests
	}
	if total != 3010 {
		t.Errorf("totals count %d requests, want every one of the 3,010", total)
	}
	if n := len(store.EncodeExplain(e)); n > 64<<10 {
		t.Errorf("the bounded explain data takes %d B", n)
	}
}

// TestBackgroundURL: an LCP element whose image is its inline style's background (the real
// snippet of the Lighthouse CI server's dkdevelopment.net fixture, and as Lighthouse escapes
// quotes in others) names that image.
func TestBackgroundURL(t *testing.T) {
	for snippet, want := range map[string]string{
		`<header class="masthead" style="background-image: url('/img/DKOffice.jpg')">`:                      "/img/DKOffice.jpg",
		`<div class="hero" style="background: #000 url(&quot;/static/img/hero.jpg&quot;) center / cover;">`: "/static/img/hero.jpg",
		`<div class="hero" style="background-image:url(/a/b.webp)">`:                                        "/a/b.webp",
		`<div class="hero">`: "",
	} {
		got := ""
		if m := backgroundURL.FindStringSubmatch(snippet); m != nil {
			got = m[1]
		}
		if got != want {
			t.Errorf("%s: %q, want %q", snippet, got, want)
		}
	}
}
