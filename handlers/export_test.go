package handlers

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"sitepulse/scanner/analysis"
	"sitepulse/store"
	"sitepulse/store/memory"
	"sitepulse/store/storetest"
)

// TestExport checks GET /api/sites/{siteId}/export against the interface: file name, columns, formats
// on the memory store and on Postgres.
func TestExport(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { testExport(t, b.Open(t)) })
	}
}

var wantCSVHeader = []string{"Page URL", "Page Path", "Strategy", "Performance", "SEO", "Accessibility", "Best Practices",
	"LCP (ms)", "CLS", "INP (ms)", "FCP (ms)", "TTFB (ms)", "CrUX LCP", "CrUX CLS", "CrUX INP", "Has CrUX Data", "Top Opportunities"}

var opportunitiesRe = regexp.MustCompile(`^([^;]+ \(\d+ms\))(; [^;]+ \(\d+ms\))*$`)

func testExport(t *testing.T, st store.Store) {
	f := newAPIFixture(t, st)
	ctx := context.Background()
	a := f.a
	base := "/api/sites/" + a.siteID + "/export"
	scans, err := st.CompletedScans(ctx, a.userID, a.siteID, 2)
	must(t, err)
	previous := scans[1].ID
	latestResults, _ := st.PageResults(ctx, a.userID, a.scanID)
	previousResults, _ := st.PageResults(ctx, a.userID, previous)
	neverScanned := f.newSite(t, a.userID, "Never Scanned")

	t.Run("CSV: headers, file name and the header row in the interface's order", func(t *testing.T) {
		resp, body := f.do(t, "GET", base, "", "", cookie(a.session))
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %.300s", resp.StatusCode, body)
		}
		for k, want := range map[string]string{
			"Content-Type":        "text/csv; charset=utf-8",
			"Content-Disposition": "attachment; filename=demo-site-scan-" + a.scanID[:8] + ".csv",
			"Cache-Control":       "no-store",
		} {
			if got := resp.Header.Get(k); got != want {
				t.Errorf("%s = %q, want %q", k, got, want)
			}
		}
		rows := readCSV(t, body)
		if !reflect.DeepEqual(rows[0], wantCSVHeader) {
			t.Errorf("header = %q\nwant     %q", rows[0], wantCSVHeader)
		}
		if len(rows)-1 != len(latestResults) {
			t.Fatalf("%d rows, want one per page and strategy: %d", len(rows)-1, len(latestResults))
		}
		withOpps := 0
		for i, row := range rows[1:] {
			r := latestResults[i]
			if row[0] != r.PageURL || row[1] != r.PagePath || row[2] != string(r.Strategy) {
				t.Errorf("row %d = %q, want %s %s %s", i, row[:3], r.PageURL, r.PagePath, r.Strategy)
			}
			if r.Scores.Performance != nil && row[3] != itoa(*r.Scores.Performance) {
				t.Errorf("row %d performance %q, want %d", i, row[3], *r.Scores.Performance)
			}
			if row[15] != "true" && row[15] != "false" {
				t.Errorf("row %d Has CrUX Data = %q", i, row[15])
			}
			if len(r.Opportunities) > 0 {
				withOpps++
				if !opportunitiesRe.MatchString(row[16]) || !strings.HasPrefix(row[16], r.Opportunities[0].Title+" (") {
					t.Errorf("row %d Top Opportunities = %q", i, row[16])
				}
			}
		}
		if withOpps == 0 {
			t.Error("no row has opportunities; the fixtures do")
		}
		// The Top Opportunities cell is quoted text, as the interface says, even when empty.
		line := strings.SplitN(body, "\r\n", 3)[1]
		if !strings.HasSuffix(line, `"`) {
			t.Errorf("Top Opportunities not quoted: %s", line)
		}
	})

	t.Run("JSON: an array of page results with exactly the interface's keys", func(t *testing.T) {
		resp, body := f.do(t, "GET", base+"?format=json", "", "", cookie(a.session))
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %.300s", resp.StatusCode, body)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
		if cd := resp.Header.Get("Content-Disposition"); cd != "attachment; filename=demo-site-scan-"+a.scanID[:8]+".json" {
			t.Errorf("Content-Disposition %q", cd)
		}
		var pages []map[string]json.RawMessage
		must(t, json.Unmarshal([]byte(body), &pages))
		if len(pages) != len(latestResults) {
			t.Fatalf("%d pages, want %d", len(pages), len(latestResults))
		}
		for i, p := range pages {
			wantKeys(t, p, "pageUrl", "pagePath", "strategy", "scores", "coreWebVitals", "crux", "opportunities", "thirdPartyScripts", "a11yIssues",
				"requests", "changes")
			for key, want := range map[string][]string{
				"coreWebVitals": {"lcp", "cls", "inp", "fcp", "ttfb"},
				"scores":        {"performance", "seo", "accessibility", "bestPractices"},
				"crux":          {"lcp", "cls", "inp", "hasCruxData"},
			} {
				var sub map[string]json.RawMessage
				must(t, json.Unmarshal(p[key], &sub))
				wantKeys(t, sub, want...)
			}
			var path string
			json.Unmarshal(p["pagePath"], &path)
			if path != latestResults[i].PagePath {
				t.Errorf("page %d path %q, want %q", i, path, latestResults[i].PagePath)
			}
		}
	})

	t.Run("JSON: each page's requests, and what changed since the previous scan's run of it", func(t *testing.T) {
		_, body := f.do(t, "GET", base+"?format=json", "", "", cookie(a.session))
		var pages []struct {
			PagePath string
			Strategy store.Strategy
			Requests []map[string]json.RawMessage
			Changes  *analysis.Comparison
		}
		must(t, json.Unmarshal([]byte(body), &pages))
		pairs, err := st.PreviousPairs(ctx, a.userID, a.scanID)
		must(t, err)
		// The demo's latest two scans are the sample site after and before the publish of
		// testdata/psi-before/site-before.diff.
		says := map[string]string{"/": "widgetly.test", "/pricing": "the document /pricing took"}
		named := 0
		for _, p := range pages {
			if len(p.Requests) == 0 {
				t.Errorf("%s %s: no requests", p.PagePath, p.Strategy)
			}
			for _, q := range p.Requests {
				wantKeys(t, q, "url", "type", "transferBytes", "startMs", "endMs", "renderBlocking", "lcp")
			}
			i := slices.IndexFunc(pairs.Pairs, func(r store.RunPair) bool { return r.After.PagePath == p.PagePath && r.After.Strategy == p.Strategy })
			if i < 0 {
				if p.Changes != nil {
					t.Errorf("%s %s: changes without a previous run", p.PagePath, p.Strategy)
				}
				continue
			}
			want := analysis.Compare(pairs.Pairs[i].Before, pairs.Pairs[i].After)
			if p.Changes == nil || p.Changes.Summary != want.Summary || len(p.Changes.Added) != len(want.Added) || !p.Changes.Explained {
				t.Errorf("%s %s: changes %+v, want Compare's of the two runs: %s", p.PagePath, p.Strategy, p.Changes, want.Summary)
				continue
			}
			// Each cause says how sure it is, as Compare does (issue 42).
			for j, c := range p.Changes.Causes {
				if j >= len(want.Causes) || c.Confidence != want.Causes[j].Confidence || c.Confidence == "" {
					t.Errorf("%s %s: cause %q has confidence %q, want Compare's (high, medium or low)", p.PagePath, p.Strategy, c.Sentence, c.Confidence)
				}
			}
			if w, ok := says[p.PagePath]; ok && !strings.Contains(p.Changes.Summary, w) || !ok && len(p.Changes.Causes) != 0 {
				t.Errorf("%s %s: %s", p.PagePath, p.Strategy, p.Changes.Summary)
			} else if ok {
				named++
			}
		}
		if named < 2 {
			t.Errorf("%d pages of / and /pricing say what changed, want both", named)
		}
		// The site's first scan has nothing to compare with.
		first, err := st.CompletedScans(ctx, a.userID, a.siteID, 100)
		must(t, err)
		_, body = f.do(t, "GET", base+"?format=json&scanId="+first[len(first)-1].ID, "", "", cookie(a.session))
		var old []map[string]json.RawMessage
		must(t, json.Unmarshal([]byte(body), &old))
		for _, p := range old {
			if string(p["changes"]) != "null" {
				t.Errorf("the first scan's page has changes: %s", p["changes"])
			}
		}
	})

	t.Run("scanId exports that scan of the site", func(t *testing.T) {
		resp, body := f.do(t, "GET", base+"?scanId="+previous, "", "", cookie(a.session))
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %.300s", resp.StatusCode, body)
		}
		if cd := resp.Header.Get("Content-Disposition"); !strings.Contains(cd, "-scan-"+previous[:8]+".csv") {
			t.Errorf("Content-Disposition %q names another scan", cd)
		}
		rows := readCSV(t, body)
		if len(rows)-1 != len(previousResults) {
			t.Fatalf("%d rows, want %d", len(rows)-1, len(previousResults))
		}
		for i, row := range rows[1:] {
			if want := previousResults[i].Scores.Performance; want != nil && row[3] != itoa(*want) {
				t.Errorf("row %d performance %s, want the earlier scan's %d", i, row[3], *want)
			}
		}
	})

	t.Run("a scan with no results exports the header alone", func(t *testing.T) {
		site := f.newSite(t, a.userID, "Empty Scan")
		scanID := f.recordScan(t, site, nil, f.now)
		resp, body := f.do(t, "GET", "/api/sites/"+site+"/export?scanId="+scanID, "", "", cookie(a.session))
		if resp.StatusCode != 200 || len(readCSV(t, body)) != 1 {
			t.Errorf("status %d body %q", resp.StatusCode, body)
		}
		resp, body = f.do(t, "GET", "/api/sites/"+site+"/export?format=json", "", "", cookie(a.session))
		if resp.StatusCode != 200 || strings.TrimSpace(body) != "[]" {
			t.Errorf("json: status %d body %q", resp.StatusCode, body)
		}
	})

	t.Run("a scan that is not complete is 404 saying so, not a CSV with only a header", func(t *testing.T) {
		site := f.newSite(t, a.userID, "Queued Scan")
		sc := store.Scan{ID: store.NewID(), SiteID: site, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: f.now}
		must(t, f.st.EnqueueScan(context.Background(), sc, store.KindDemo, f.now))
		for _, format := range []string{"csv", "json"} {
			resp, body := f.do(t, "GET", "/api/sites/"+site+"/export?format="+format+"&scanId="+sc.ID, "", "", cookie(a.session))
			if resp.StatusCode != 404 || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(body, `"error":"scan is queued, not complete`) {
				t.Errorf("%s: status %d %q body %s", format, resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
		}
	})

	refusals := []struct {
		name   string
		path   string
		cred   cred
		status int
	}{
		{"no session cookie is 401", base, cred{}, 401},
		{"an API key is 401", base, bearer(a.apiKey), 401},
		{"an OAuth access token is 401", base, bearer(a.accessToken), 401},
		{"an unknown session is 401", base, cookie("forged"), 401},
		{"another user's site is 404", base, cookie(f.b.session), 404},
		{"another user's site is 404 in JSON too", base + "?format=json", cookie(f.b.session), 404},
		{"another user's scan on one's own site is 404", "/api/sites/" + f.b.siteID + "/export?scanId=" + a.scanID, cookie(f.b.session), 404},
		{"a scan of another site of the same user is 404", "/api/sites/" + neverScanned + "/export?scanId=" + a.scanID, cookie(a.session), 404},
		{"an unknown site is 404", "/api/sites/" + store.NewID() + "/export", cookie(a.session), 404},
		{"a site id that is not a uuid is 404", "/api/sites/demo/export", cookie(a.session), 404},
		{"an unknown scan is 404", base + "?scanId=" + store.NewID(), cookie(a.session), 404},
		{"a site without completed scans is 404", "/api/sites/" + neverScanned + "/export", cookie(a.session), 404},
		{"an unknown format is 422", base + "?format=xlsx", cookie(a.session), 422},
		{"a scanId that is not a uuid is 422", base + "?scanId=latest", cookie(a.session), 422},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := f.do(t, "GET", tt.path, "", "", tt.cred)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, tt.status, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" || resp.Header.Get("Content-Disposition") != "" {
				t.Errorf("Content-Type %q, Content-Disposition %q: a refusal is a JSON error", ct, resp.Header.Get("Content-Disposition"))
			}
			if strings.Contains(body, "demo.sitepulse.test") || strings.Contains(body, "Demo Site") {
				t.Errorf("refusal leaks A's data: %.300s", body)
			}
		})
	}
}

// TestExportGuardsFormulas: cells a spreadsheet would run get a leading "'".
func TestExportGuardsFormulas(t *testing.T) {
	st := memory.New()
	f := newAPIFixture(t, st)
	r := fixtureResults(t, "home.mobile")[0]
	r.PagePath = "=HYPERLINK(\"http://evil.test\",\"x\")"
	r.PageURL = "@SUM(1+1)"
	r.Opportunities = append([]store.Opportunity{{Title: "+cmd|' /C calc'!A0", SavingsMs: 1200}}, r.Opportunities...)
	tab := r
	tab.PagePath, tab.Strategy = "\t-2+3", store.StrategyDesktop
	site := f.newSite(t, f.a.userID, "=Evil Site")
	scanID := f.recordScan(t, site, []store.PageResult{r, tab}, f.now)

	resp, body := f.do(t, "GET", "/api/sites/"+site+"/export", "", "", cookie(f.a.session))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if cd := resp.Header.Get("Content-Disposition"); cd != "attachment; filename=evil-site-scan-"+scanID[:8]+".csv" {
		t.Errorf("Content-Disposition %q", cd)
	}
	rows := readCSV(t, body)
	got := map[string]bool{}
	for _, row := range rows[1:] {
		for _, cell := range row {
			got[cell] = true
			if cell != "" && strings.ContainsRune("=+-@\t\r", rune(cell[0])) {
				t.Errorf("unguarded cell %q", cell)
			}
		}
	}
	for _, want := range []string{`'=HYPERLINK("http://evil.test","x")`, "'@SUM(1+1)", "'\t-2+3"} {
		if !got[want] {
			t.Errorf("no guarded cell %q in %q", want, rows[1:])
		}
	}
	if !strings.HasPrefix(rows[1][16], "'+cmd|' /C calc'!A0 (1200ms); ") {
		t.Errorf("Top Opportunities = %q", rows[1][16])
	}
}

func TestExportFilename(t *testing.T) {
	id := "0123abcd-0000-4000-8000-000000000000"
	for name, want := range map[string]string{
		"Demo Site":               "demo-site-scan-0123abcd",
		"  Ünïcode & Co. (EU)!  ": "n-code-co-eu-scan-0123abcd",
		"---":                     "site-scan-0123abcd",
		"shop.example.com":        "shop-example-com-scan-0123abcd",
		`a"b;c\r\nfilename=x.exe`: "a-b-c-r-nfilename-x-exe-scan-0123abcd",
	} {
		if got := exportFilename(name, id); got != want {
			t.Errorf("exportFilename(%q) = %q, want %q", name, got, want)
		}
	}
}

func readCSV(t *testing.T, body string) [][]string {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatalf("not CSV: %v\n%.500s", err, body)
	}
	return rows
}

func wantKeys(t *testing.T, m map[string]json.RawMessage, want ...string) {
	t.Helper()
	var got []string
	for k := range m {
		got = append(got, k)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("keys %v, want %v", got, want)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// failingResults is a store whose page-result stream breaks after `after` rows.
type failingResults struct {
	store.Store
	after int
}

func (f failingResults) ExportScan(ctx context.Context, userID, siteID, scanID string, full bool, head func(store.Site, *store.Scan) error, fn func(store.PageResult, *store.PageResult) error) error {
	n := 0
	err := f.Store.ExportScan(ctx, userID, siteID, scanID, full, head, func(r store.PageResult, previous *store.PageResult) error {
		if n == f.after {
			return errors.New("connection reset by peer")
		}
		n++
		return fn(r, previous)
	})
	if err == nil && n == f.after {
		return errors.New("connection reset by peer")
	}
	return err
}

// TestExportStreamErrors: a store failure before the first row is a clean 500 JSON error; one
// after rows went out aborts the response, so the download fails instead of looking complete.
func TestExportStreamErrors(t *testing.T) {
	for _, format := range []string{"csv", "json"} {
		t.Run(format+": failure before the first row is a 500", func(t *testing.T) {
			f := newAPIFixture(t, failingResults{Store: memory.New(), after: 0})
			resp, body := f.do(t, "GET", "/api/sites/"+f.a.siteID+"/export?format="+format, "", "", cookie(f.a.session))
			if resp.StatusCode != 500 || resp.Header.Get("Content-Disposition") != "" || !strings.Contains(body, `"error"`) {
				t.Errorf("status %d, disposition %q, body %q", resp.StatusCode, resp.Header.Get("Content-Disposition"), body)
			}
		})
		t.Run(format+": failure mid-stream aborts the download", func(t *testing.T) {
			f := newAPIFixture(t, failingResults{Store: memory.New(), after: 3})
			req, _ := http.NewRequest("GET", f.URL+"/api/sites/"+f.a.siteID+"/export?format="+format, nil)
			req.AddCookie(&http.Cookie{Name: "session", Value: f.a.session})
			resp, err := http.DefaultTransport.RoundTrip(req)
			must(t, err)
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if _, err := io.ReadAll(resp.Body); err == nil {
				t.Error("the truncated download read as complete")
			}
		})
	}
}

// A hostile site name cannot make a header proxies reject: the file name is at most 100 bytes,
// and a name with letters beyond ASCII also gets RFC 6266's filename* (RFC 5987 UTF-8),
// cut at a character boundary.
func TestExportContentDispositionCapped(t *testing.T) {
	id := "0123abcd-0000-4000-8000-000000000000"
	for _, tt := range []struct {
		name, format, want string
	}{
		{"Demo Site", "csv", "attachment; filename=demo-site-scan-0123abcd.csv"},
		{"Ünïcode & Co. (EU)!", "json", "attachment; filename=n-code-co-eu-scan-0123abcd.json; filename*=UTF-8''%C3%BCn%C3%AFcode-co-eu-scan-0123abcd.json"},
		{"日本", "csv", "attachment; filename=site-scan-0123abcd.csv; filename*=UTF-8''%E6%97%A5%E6%9C%AC-scan-0123abcd.csv"},
	} {
		if got := contentDisposition(tt.name, id, tt.format); got != tt.want {
			t.Errorf("contentDisposition(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
	for _, name := range []string{strings.Repeat("a", 100000), strings.Repeat("é", 100000), strings.Repeat("a b ", 30000), "x" + strings.Repeat("日", 40)} {
		for _, format := range []string{"csv", "json"} {
			cd := contentDisposition(name, id, format)
			ascii, rest, _ := strings.Cut(strings.TrimPrefix(cd, "attachment; filename="), "; ")
			if len(ascii) > 100 || !strings.HasSuffix(ascii, "-scan-0123abcd."+format) {
				t.Errorf("%.10q: filename %q (%d bytes), want at most 100 ending in the scan", name, ascii, len(ascii))
			}
			if rest == "" {
				continue
			}
			enc, ok := strings.CutPrefix(rest, "filename*=UTF-8''")
			dec, err := url.PathUnescape(enc)
			if !ok || err != nil || len(dec) > 100 || !utf8.ValidString(dec) || !strings.HasSuffix(dec, "-scan-0123abcd."+format) {
				t.Errorf("%.10q: filename* %q decodes to %q (%d bytes): want valid UTF-8 of at most 100 bytes", name, rest, dec, len(dec))
			}
		}
	}
}
