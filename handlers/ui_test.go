package handlers

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/demo"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// uiFixture is a server whose user A is the demo account (a site with two real completed scans,
// the latest with regressions) and whose user B is a stranger with a site of their own.
type uiFixture struct {
	ts             *testServer
	a, b           *browser
	site           string // A's demo site
	scan, prevScan string // A's latest and previous completed scans
	bSite          string // B's site
}

// eachBackend runs a web UI test on a fresh fixture over every store (memory, and Postgres when
// DATABASE_URL is set), so bad input that only a database refuses is caught too.
func eachBackend(t *testing.T, poll time.Duration, test func(*testing.T, *uiFixture)) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) { test(t, newUIFixture(t, poll, b.Open(t))) })
	}
}

// newUIFixtureWith is newUIFixture with the handler's dependencies changed by with.
func newUIFixtureWith(t *testing.T, poll time.Duration, st store.Store, with func(*Deps)) *uiFixture {
	if with == nil {
		return newUIFixture(t, poll, st)
	}
	return newUIFixture(t, poll, st, with)
}

// newUIFixture serves the web UI over st with the accounts of uiFixture; each with changes the
// handler's dependencies before it is built.
func newUIFixture(t *testing.T, poll time.Duration, st store.Store, with ...func(*Deps)) *uiFixture {
	t.Helper()
	ts := &testServer{store: st, now: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	d := Deps{BaseURL: "http://sitepulse.test",
		Now: func() time.Time { return ts.now }, PasswordIterations: 1000, ScanPollInterval: poll,
		Replayed: func(s store.Site) bool { return s.Domain == "demo.sitepulse.test" }}
	for _, w := range with {
		w(&d)
	}
	h, err := NewHandler(withServers(st, d))
	if err != nil {
		t.Fatal(err)
	}
	ts.Server = httptest.NewServer(h)
	t.Cleanup(ts.Close)

	ctx := context.Background()
	demo, err := demo.Seed(ctx, st, demo.Fixtures{FS: os.DirFS(".."), Before: "testdata/psi-before", Latest: "testdata/psi"},
		ts.now.Add(-time.Hour), 1000)
	if err != nil {
		t.Fatal(err)
	}
	f := &uiFixture{ts: ts, site: demo.SiteID, scan: demo.LatestScanID}
	f.a = ts.browser(t)
	resp, _ := f.a.post("/login", url.Values{"email": {demo.Email}, "password": {demo.Password}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("demo login: %d", resp.StatusCode)
	}
	f.a.refreshCSRF()
	u, _ := st.UserByEmail(ctx, demo.Email)
	f.a.userID = u.ID
	scans, err := st.CompletedScans(ctx, u.ID, demo.SiteID, 2)
	if err != nil || len(scans) != 2 {
		t.Fatalf("demo scans: %v %d", err, len(scans))
	}
	f.prevScan = scans[1].ID

	f.b = ts.browser(t)
	f.b.signup("b@example.com")
	ub, _ := st.UserByEmail(ctx, "b@example.com")
	f.b.userID = ub.ID
	f.bSite = store.NewID()
	if err := st.CreateSite(ctx, store.Site{ID: f.bSite, UserID: ub.ID, Name: "B's shop", Domain: "b.example"}); err != nil {
		t.Fatal(err)
	}
	return f
}

func (b *browser) postCSRF(path string, form url.Values) (*http.Response, string) {
	b.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf_token", b.csrf)
	return b.post(path, form)
}

func TestUIPages(t *testing.T) { eachBackend(t, 0, testUIPages) }

func testUIPages(t *testing.T, f *uiFixture) {
	pageOf := "/sites/" + f.site + "/scans/" + f.scan + "/page?path=%2Fpricing&strategy=mobile"
	for _, tt := range []struct {
		name, path string
		want       []string
	}{
		{"the sites list shows each site with its health badge and an add link", "/",
			[]string{"Demo Site", "demo.sitepulse.test", `class="badge big`, `href="/sites/new"`, "Last published", "Last scan",
				`<a href="/sites/` + f.site + `/scans/` + f.scan + `">`}},
		{"the site page shows both strategies, vitals, trend, regressions, history and exports", "/sites/" + f.site,
			[]string{"Mobile", "Desktop", "Core Web Vitals", `<svg class="trend"`, "Regressions", "Scan history",
				"/api/sites/" + f.site + "/export?format=csv&amp;scanId=" + f.scan, "format=json", "Scan now",
				"/sites/" + f.site + "/edit", "/sites/" + f.site + "/budgets", "/pricing", "budgets broken", ">replay</span>"}},
		{"the site page shows the site id to copy and this site's budget check for CI", "/sites/" + f.site,
			[]string{`<code id="site-id">` + f.site + `</code>`, `data-copy="site-id"`, `/static/copy.js`, "GitHub Actions step",
				"curl -sS -X POST http://sitepulse.test/api/external/budget-check", `{&#34;siteId&#34;:&#34;` + f.site + `&#34;}`,
				"secrets.SITEPULSE_API_KEY", `href="/settings#api-keys"`}},
		{"the site page says who published before the latest scan and marks the publish on the trend", "/sites/" + f.site,
			[]string{`<span class="published">Published by Ana, 1 Nov 10:00</span>`, `<g class="publish">`, "<title>Published by Ana, 1 Nov 10:00</title>",
				"Dashed lines mark the 1 publish since the first scan of the chart"}},
		{"the scan page a publish started says who published", "/sites/" + f.site + "/scans/" + f.scan,
			[]string{`<span class="published">Published by Ana, 1 Nov 10:00</span>`}},
		{"the scan page lists every page and strategy", "/sites/" + f.site + "/scans/" + f.scan,
			[]string{"/pricing", "desktop", "mobile", "Export CSV", "page?path=%2fpricing&amp;strategy=mobile", ">replay</span>"}},
		{"the drill-down shows opportunities, LCP element, shifts, third parties, accessibility", pageOf,
			[]string{"Opportunities", "Largest Contentful Paint element", "Layout shifts", "Third-party scripts", "Accessibility issues", "See desktop",
				"Lab metrics", "Field data"}},
		{"the site page's trend has tabs for scores, health, LCP, CLS and TBT", "/sites/" + f.site,
			[]string{`id="trend-scores" checked`, `id="trend-health"`, `id="trend-lcp"`, `id="trend-cls"`, `id="trend-tbt"`,
				"Largest Contentful Paint of the slowest page", `aria-label="Total Blocking Time of the last 2 completed scans`}},
		{"the site page labels INP, a CrUX value, as field data", "/sites/" + f.site,
			[]string{`<span class="v-name">INP <abbr class="v-src" title="field data: real users, Chrome UX Report">field</abbr></span>`, "INP is field data"}},
		{"the budgets page lists every metric and the demo's alert rule", "/sites/" + f.site + "/budgets",
			[]string{`name="budget_performance"`, `name="budget_cls"`, "Alert rules", "TBT", "Add a rule"}},
		{"the edit form is filled in", "/sites/" + f.site + "/edit", []string{`value="Demo Site"`, "Delete this site"}},
		{"the add form is empty", "/sites/new", []string{"Add a site", `name="domain"`, `name="pages"`}},
		{"the reports page explains how reports are made", "/reports", []string{"Client reports", "Share a report"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := f.a.get(tt.path)
			wantStatus(t, resp, http.StatusOK)
			for _, w := range tt.want {
				contains(t, body, w)
			}
		})
	}
}

func TestScanNotStartedByAPublishNamesNoPublisher(t *testing.T) {
	eachBackend(t, 0, func(t *testing.T, f *uiFixture) {
		resp, body := f.a.get("/sites/" + f.site + "/scans/" + f.prevScan)
		wantStatus(t, resp, http.StatusOK)
		if strings.Contains(body, `class="published"`) {
			t.Errorf("the previous scan, started by no publish, names a publisher")
		}
	})
}

func TestNotFoundNavigation(t *testing.T) { eachBackend(t, 0, testNotFoundNavigation) }

func testNotFoundNavigation(t *testing.T, f *uiFixture) {
	resp, body := f.a.get("/no-such-page")
	wantStatus(t, resp, http.StatusNotFound)
	for _, w := range []string{"There is no page at this address.", `<a href="/settings">Settings</a>`, `action="/logout"`} {
		contains(t, body, w)
	}
	if strings.Contains(body, `href="/login"`) {
		t.Error("a signed-in user's 404 page offers to log in")
	}
	anon := f.ts.browser(t)
	resp, body = anon.get("/no-such-page")
	wantStatus(t, resp, http.StatusNotFound)
	contains(t, body, `href="/login"`)
}

// TestUIOwnerScoping walks every web UI route with user B's session on user A's ids: each
// answers 404 and A's data is unchanged.
func TestUIOwnerScoping(t *testing.T) { eachBackend(t, time.Millisecond, testUIOwnerScoping) }

func testUIOwnerScoping(t *testing.T, f *uiFixture) {
	ctx := context.Background()
	rep := store.Report{ID: store.NewID(), TokenHash: store.HashSecret(store.NewID()), ScanID: f.scan, UserID: f.a.userID, Title: "A's report", CreatedAt: f.ts.now}
	if err := f.ts.store.CreateReport(ctx, rep); err != nil {
		t.Fatal(err)
	}
	rules, _ := f.ts.store.AlertRules(ctx, f.a.userID, f.site)
	if len(rules) == 0 {
		t.Fatal("demo has no alert rule")
	}
	rule := rules[0].ID
	sitePath := "/sites/" + f.site
	scanPath := sitePath + "/scans/" + f.scan
	for _, tt := range []struct{ method, path string }{
		{"GET", sitePath}, {"GET", sitePath + "/edit"}, {"POST", sitePath}, {"POST", sitePath + "/delete"},
		{"POST", sitePath + "/scan"}, {"GET", scanPath}, {"GET", scanPath + "/events"},
		{"GET", scanPath + "/page?path=/pricing&strategy=mobile"}, {"GET", sitePath + "/budgets"},
		{"POST", sitePath + "/budgets"}, {"POST", sitePath + "/alert-rules"}, {"POST", sitePath + "/alert-rules/" + rule + "/delete"},
		{"POST", "/reports/" + rep.ID + "/revoke"},
		// A's scan under B's own site, and ids that are not ids at all.
		{"GET", "/sites/" + f.bSite + "/scans/" + f.scan}, {"GET", "/sites/" + f.bSite + "/scans/" + f.scan + "/events"},
		{"GET", "/sites/not-a-uuid"}, {"GET", "/sites/" + f.bSite + "/scans/x'--"}, {"POST", "/reports/nope/revoke"},
		{"GET", "/sites/" + strings.ToUpper(f.site)},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			var resp *http.Response
			if tt.method == "GET" {
				resp, _ = f.b.get(tt.path)
			} else {
				resp, _ = f.b.postCSRF(tt.path, url.Values{"name": {"pwned"}, "domain": {"evil.example"}, "confirm": {"yes"},
					"metric": {"lcp"}, "operator": {"max"}, "threshold": {"1"}, "budget_lcp": {"1"}})
			}
			wantStatus(t, resp, http.StatusNotFound)
		})
	}
	site, err := f.ts.store.Site(ctx, f.a.userID, f.site)
	if err != nil || site.Name != "Demo Site" {
		t.Errorf("A's site changed: %+v %v", site, err)
	}
	if b, _ := f.ts.store.Budgets(ctx, f.a.userID, f.site); len(b) != 0 {
		// The demo seeds budgets; B must not have replaced them with {lcp: 1}.
		if b["lcp"].Threshold == 1 {
			t.Errorf("A's budgets changed: %v", b)
		}
	}
	if got, _ := f.ts.store.AlertRules(ctx, f.a.userID, f.site); len(got) != len(rules) {
		t.Errorf("A's alert rules: %d, want %d", len(got), len(rules))
	}
	if reps, _ := f.ts.store.ReportsOf(ctx, f.a.userID); len(reps) != 1 || reps[0].RevokedAt != nil {
		t.Errorf("A's report revoked by B: %+v", reps)
	}
	if scans, _ := f.ts.store.ScansOf(ctx, f.a.userID, f.site, 10); len(scans) != 2 {
		t.Errorf("B enqueued a scan of A's site: %d scans", len(scans))
	}
	// And B's own list never shows A's site.
	_, body := f.b.get("/")
	if strings.Contains(body, "Demo Site") {
		t.Error("B's sites list shows A's site")
	}
}

func TestPageDetailBadInput(t *testing.T) { eachBackend(t, 0, testPageDetailBadInput) }

func testPageDetailBadInput(t *testing.T, f *uiFixture) {
	base := "/sites/" + f.site + "/scans/" + f.scan + "/page?"
	for _, q := range []string{"path=%2Fnope&strategy=mobile", "path=%2F&strategy=tablet", "path=&strategy=mobile", "path=pricing",
		"path=%2F%00&strategy=mobile", "path=%2F%ff%fe&strategy=mobile", "path=%2F" + strings.Repeat("a", 3000)} {
		t.Run(q, func(t *testing.T) {
			resp, _ := f.a.get(base + q)
			wantStatus(t, resp, http.StatusNotFound)
		})
	}
	resp, body := f.a.get(base + "path=%2F")
	wantStatus(t, resp, http.StatusOK)
	contains(t, body, "mobile")
}

func TestUICSRFRefused(t *testing.T) { eachBackend(t, 0, testUICSRFRefused) }

func testUICSRFRefused(t *testing.T, f *uiFixture) {
	for _, path := range []string{"/sites", "/sites/" + f.site, "/sites/" + f.site + "/delete", "/sites/" + f.site + "/scan",
		"/sites/" + f.site + "/budgets", "/sites/" + f.site + "/alert-rules", "/reports/" + store.NewID() + "/revoke"} {
		wrong := "x" + f.a.csrf[1:]
		if wrong == f.a.csrf { // one token in 64 starts with x already
			wrong = "y" + f.a.csrf[1:]
		}
		for name, token := range map[string]string{"missing": "", "wrong": wrong} {
			t.Run(name+" token "+path, func(t *testing.T) {
				form := url.Values{"name": {"x"}, "domain": {"x.example"}, "confirm": {"yes"}}
				if token != "" {
					form.Set("csrf_token", token)
				}
				resp, _ := f.a.post(path, form)
				wantStatus(t, resp, http.StatusForbidden)
			})
		}
	}
	if _, err := f.ts.store.Site(context.Background(), f.a.userID, f.site); err != nil {
		t.Errorf("site deleted without a CSRF token: %v", err)
	}
	if scans, _ := f.ts.store.ScansOf(context.Background(), f.a.userID, f.site, 10); len(scans) != 2 {
		t.Errorf("scan enqueued without a CSRF token: %d scans", len(scans))
	}
}

func TestSiteForm(t *testing.T) { eachBackend(t, 0, testSiteForm) }

func testSiteForm(t *testing.T, f *uiFixture) {
	valid := func() url.Values {
		return url.Values{"name": {"Shop"}, "domain": {"shop.example.com"}, "platformSiteId": {"plat-1"}, "pages": {"/\r\n/pricing\n\n/pricing\n"}}
	}
	for _, tt := range []struct {
		name  string
		field string
		value string
		want  string
	}{
		{"an empty name", "name", " ", "name of 1 to 100"},
		{"a name too long", "name", strings.Repeat("n", 101), "name of 1 to 100"},
		{"an empty domain", "domain", "", "Enter a host"},
		{"localhost", "domain", "localhost:8080", "SCAN_ALLOW_PRIVATE is off"},
		{"an IP literal", "domain", "http://10.0.0.1/", "SCAN_ALLOW_PRIVATE is off"},
		{"a domain with another scheme", "domain", "ftp://shop.example.com", "Enter a host"},
		{"a domain with spaces", "domain", "shop example.com", "Enter a host"},
		{"a domain with credentials", "domain", "https://u:p@shop.example.com", "Enter a host"},
		{"a domain with a bad port", "domain", "shop.example.com:99999", "Enter a host"},
		{"a path without a slash", "pages", "/\npricing", "starts with a single"},
		{"a protocol-relative path", "pages", "//evil.example/", "starts with a single"},
		{"markup in a path is escaped", "pages", "<script>alert(1)</script>", "&lt;script&gt;"},
	} {
		t.Run(tt.name+" is refused", func(t *testing.T) {
			form := valid()
			form.Set(tt.field, tt.value)
			resp, body := f.a.postCSRF("/sites", form)
			wantStatus(t, resp, http.StatusUnprocessableEntity)
			contains(t, body, tt.want)
			contains(t, body, `aria-invalid="true"`)
			if strings.Contains(body, "<script>alert") {
				t.Error("unescaped input on the page")
			}
		})
	}

	// A valid site is created, normalised, and shown.
	form := valid()
	form.Set("domain", "HTTPS://Shop.Example.com:8443/")
	resp, _ := f.a.postCSRF("/sites", form)
	wantStatus(t, resp, http.StatusSeeOther)
	loc := resp.Header.Get("Location")
	if !strings.HasPrefix(loc, "/sites/") || !strings.HasSuffix(loc, "?done=site-added") {
		t.Fatalf("Location %q", loc)
	}
	id := strings.TrimSuffix(strings.TrimPrefix(loc, "/sites/"), "?done=site-added")
	site, err := f.ts.store.Site(context.Background(), f.a.userID, id)
	if err != nil {
		t.Fatal(err)
	}
	if site.Domain != "shop.example.com:8443" || site.PlatformSiteID != "" || strings.Join(site.Pages, ",") != "/,/pricing" {
		t.Errorf("stored %+v", site)
	}
	_, body := f.a.get(loc)
	contains(t, body, "Site added")
	contains(t, body, "No completed scan yet")

	// A platform site id is set only through a verified connection: the form's
	// field is gone, and a posted one is ignored, also one naming another account's site.
	form = valid()
	form.Set("name", "Shop 2")
	form.Set("platformSiteId", "demo-site")
	resp, _ = f.a.postCSRF("/sites/"+id, form)
	wantStatus(t, resp, http.StatusSeeOther)
	if s, _ := f.ts.store.Site(context.Background(), f.a.userID, id); s.Name != "Shop 2" || s.PlatformSiteID != "" {
		t.Errorf("after edits: %+v", s)
	}

	// Deleting needs the confirmation box.
	resp, body = f.a.postCSRF("/sites/"+id+"/delete", nil)
	wantStatus(t, resp, http.StatusUnprocessableEntity)
	contains(t, body, "Tick the box")
	resp, _ = f.a.postCSRF("/sites/"+id+"/delete", url.Values{"confirm": {"yes"}})
	wantStatus(t, resp, http.StatusSeeOther)
	resp, _ = f.a.get("/sites/" + id)
	wantStatus(t, resp, http.StatusNotFound)
}

func TestScanNow(t *testing.T) { eachBackend(t, 0, testScanNow) }

func testScanNow(t *testing.T, f *uiFixture) {
	ctx := context.Background()
	resp, _ := f.a.postCSRF("/sites/"+f.site+"/scan", nil)
	wantStatus(t, resp, http.StatusSeeOther)
	loc := resp.Header.Get("Location")
	prefix := "/sites/" + f.site + "/scans/"
	if !strings.HasPrefix(loc, prefix) {
		t.Fatalf("Location %q", loc)
	}
	scan, err := f.ts.store.Scan(ctx, f.a.userID, strings.TrimPrefix(loc, prefix))
	if err != nil {
		t.Fatal(err)
	}
	if scan.Status != store.StatusQueued || scan.Trigger != store.TriggerManual || scan.Strategy != store.StrategyBoth {
		t.Errorf("scan %+v", scan)
	}
	job, err := f.ts.store.ClaimJob(ctx, store.KindScan, "test", f.ts.now.Add(time.Second), 0)
	if err != nil || job.ScanID != scan.ID {
		t.Errorf("job on queue scan: %+v %v", job, err)
	}
	_, body := f.a.get(loc)
	contains(t, body, `id="progress"`)
	contains(t, body, `/static/scan.js`)

	// A second press while the first is in flight is SCAN_ALREADY_ACTIVE, shown kindly.
	resp, _ = f.a.postCSRF("/sites/"+f.site+"/scan", nil)
	wantStatus(t, resp, http.StatusSeeOther)
	if got := resp.Header.Get("Location"); got != "/sites/"+f.site+"?done=scan-active" {
		t.Fatalf("Location %q", got)
	}
	_, body = f.a.get(resp.Header.Get("Location"))
	contains(t, body, "already has a scan queued, so no new one was started")
	contains(t, body, "Follow its progress")
}

func TestBudgetsEditor(t *testing.T) { eachBackend(t, 0, testBudgetsEditor) }

func testBudgetsEditor(t *testing.T, f *uiFixture) {
	ctx := context.Background()
	path := "/sites/" + f.site + "/budgets"
	before, _ := f.ts.store.Budgets(ctx, f.a.userID, f.site)

	for _, tt := range []struct {
		name, field, value, want string
	}{
		{"not a number", "budget_lcp", "fast", "Enter a time such as 2.5s"},
		{"a score above 100", "budget_performance", "120", "between 0 and 100"},
		{"a negative time", "budget_ttfb", "-1", "time between 0 and 600s"},
		{"a CLS above 10", "budget_cls", "25", "CLS is between 0 and 10"},
		{"NaN", "budget_tbt", "NaN", "Enter a time such as 2.5s"},
	} {
		t.Run("a budget that is "+tt.name+" is refused", func(t *testing.T) {
			resp, body := f.a.postCSRF(path, url.Values{"budget_seo": {"80"}, tt.field: {tt.value}})
			wantStatus(t, resp, http.StatusUnprocessableEntity)
			contains(t, body, tt.want)
			contains(t, body, "nothing was saved")
			if got, _ := f.ts.store.Budgets(ctx, f.a.userID, f.site); len(got) != len(before) {
				t.Errorf("budgets changed to %v", got)
			}
		})
	}

	t.Run("a budget for an unknown strategy is refused", func(t *testing.T) {
		resp, body := f.a.postCSRF(path, url.Values{"budget_seo": {"80"}, "strategy_seo": {"tablet"}})
		wantStatus(t, resp, http.StatusUnprocessableEntity)
		contains(t, body, "Choose both, mobile or desktop")
	})

	resp, _ := f.a.postCSRF(path, url.Values{"budget_performance": {"90"}, "strategy_performance": {"mobile"},
		"budget_lcp": {" 2500 "}, "strategy_lcp": {"desktop"}, "budget_cls": {"0.1"}, "budget_seo": {""}})
	wantStatus(t, resp, http.StatusSeeOther)
	got, _ := f.ts.store.Budgets(ctx, f.a.userID, f.site)
	want := map[string]store.Budget{"performance": {Threshold: 90, Strategy: "mobile"}, "lcp": {Threshold: 2500, Strategy: "desktop"}, "cls": {Threshold: 0.1, Strategy: "both"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("budgets %v, want %v (a form without a strategy means both)", got, want)
	}
	_, body := f.a.get(path)
	contains(t, body, `value="2500"`)
	contains(t, body, `<option value="mobile" selected>mobile only</option>`)

	// Alert rules: refused with a message per field, added, changed, deleted.
	for _, tt := range []struct {
		name string
		form url.Values
		want string
	}{
		{"an unknown metric", url.Values{"metric": {"speed"}, "operator": {"max"}, "threshold": {"1"}}, "Choose a metric"},
		{"an unknown operator", url.Values{"metric": {"lcp"}, "operator": {"eq"}, "threshold": {"1"}}, "at least"},
		{"a missing threshold", url.Values{"metric": {"lcp"}, "operator": {"max"}, "threshold": {""}}, "Enter a time such as 2.5s"},
		{"a score threshold out of range", url.Values{"metric": {"seo"}, "operator": {"min"}, "threshold": {"101"}}, "between 0 and 100"},
	} {
		t.Run("a rule with "+tt.name+" is refused", func(t *testing.T) {
			resp, body := f.a.postCSRF("/sites/"+f.site+"/alert-rules", tt.form)
			wantStatus(t, resp, http.StatusUnprocessableEntity)
			contains(t, body, tt.want)
		})
	}
	rules0, _ := f.ts.store.AlertRules(ctx, f.a.userID, f.site)
	resp, _ = f.a.postCSRF("/sites/"+f.site+"/alert-rules", url.Values{"metric": {"inp"}, "operator": {"max"}, "threshold": {"200"}})
	wantStatus(t, resp, http.StatusSeeOther)
	rules, _ := f.ts.store.AlertRules(ctx, f.a.userID, f.site)
	if len(rules) != len(rules0)+1 {
		t.Fatalf("rules %+v", rules)
	}
	added := rules[len(rules)-1]
	if added.Metric != "inp" || added.Operator != "max" || added.Threshold != 200 {
		t.Errorf("added %+v", added)
	}
	_, body = f.a.get(path)
	contains(t, body, `<select id="o-`+added.ID+`" name="operator"`)
	resp, _ = f.a.postCSRF("/sites/"+f.site+"/alert-rules", url.Values{"metric": {"inp"}, "operator": {"min"}, "threshold": {"300"}, "replaces": {added.ID}})
	wantStatus(t, resp, http.StatusSeeOther)
	rules, _ = f.ts.store.AlertRules(ctx, f.a.userID, f.site)
	if r := rules[len(rules)-1]; len(rules) != len(rules0)+1 || r.Threshold != 300 || r.Operator != "min" || r.ID != added.ID {
		t.Errorf("after change: %+v, want rule %s changed in place to at least 300", rules, added.ID)
	}
	changed := rules[len(rules)-1].ID
	resp, _ = f.a.postCSRF("/sites/"+f.site+"/alert-rules/"+changed+"/delete", nil)
	wantStatus(t, resp, http.StatusSeeOther)
	resp, _ = f.a.postCSRF("/sites/"+f.site+"/alert-rules/"+changed+"/delete", nil)
	wantStatus(t, resp, http.StatusNotFound)
	if rules, _ = f.ts.store.AlertRules(ctx, f.a.userID, f.site); len(rules) != len(rules0) {
		t.Errorf("after delete: %+v", rules)
	}
	// Changing a rule deleted meanwhile (in another tab) adds it again.
	resp, _ = f.a.postCSRF("/sites/"+f.site+"/alert-rules", url.Values{"metric": {"inp"}, "operator": {"max"}, "threshold": {"400"}, "replaces": {changed}})
	wantStatus(t, resp, http.StatusSeeOther)
	if rules, _ = f.ts.store.AlertRules(ctx, f.a.userID, f.site); len(rules) != len(rules0)+1 || rules[len(rules)-1].Threshold != 400 || rules[len(rules)-1].ID == changed {
		t.Errorf("changing a deleted rule: %+v", rules)
	}
	// Another user's rule id in "replaces" changes nothing of theirs: it is a new rule of A's.
	bRule := store.AlertRule{ID: store.NewID(), SiteID: f.bSite, Metric: "seo", Operator: "min", Threshold: 50, CreatedAt: f.ts.now}
	if err := f.ts.store.AddAlertRule(ctx, f.b.userID, bRule); err != nil {
		t.Fatal(err)
	}
	resp, _ = f.a.postCSRF("/sites/"+f.site+"/alert-rules", url.Values{"metric": {"seo"}, "operator": {"min"}, "threshold": {"99"}, "replaces": {bRule.ID}})
	wantStatus(t, resp, http.StatusSeeOther)
	if bRules, _ := f.ts.store.AlertRules(ctx, f.b.userID, f.bSite); len(bRules) != 1 || bRules[0] != bRule {
		t.Errorf("B's rules after A's change naming B's rule: %+v", bRules)
	}
}

func TestReportsPage(t *testing.T) { eachBackend(t, 0, testReportsPage) }

func testReportsPage(t *testing.T, f *uiFixture) {
	ctx := context.Background()
	exp := f.ts.now.Add(30 * 24 * time.Hour)
	rep := store.Report{ID: store.NewID(), TokenHash: store.HashSecret("t1"), ScanID: f.scan, UserID: f.a.userID,
		Title: "Q4 <b>report</b>", CreatedAt: f.ts.now, ExpiresAt: &exp}
	if err := f.ts.store.CreateReport(ctx, rep); err != nil {
		t.Fatal(err)
	}
	_, body := f.a.get("/reports")
	contains(t, body, "Q4 &lt;b&gt;report&lt;/b&gt;")
	contains(t, body, "1 Dec 2026")
	contains(t, body, "/reports/"+rep.ID+"/revoke")
	contains(t, body, `<a href="/sites/`+f.site+`/scans/`+f.scan+`">Demo Site</a>`)
	_, body = f.b.get("/reports")
	if strings.Contains(body, "&lt;b&gt;report") {
		t.Error("B sees A's report")
	}
	resp, _ := f.a.postCSRF("/reports/"+rep.ID+"/revoke", nil)
	wantStatus(t, resp, http.StatusSeeOther)
	_, body = f.a.get("/reports?done=report-revoked")
	contains(t, body, "revoked")
	if reps, _ := f.ts.store.ReportsOf(ctx, f.a.userID); reps[0].RevokedAt == nil {
		t.Error("report not revoked")
	}
}

// readEvents reads server-sent `status` events until the stream ends, calling each after
// every event; each returns false to stop reading.
func readEvents(t *testing.T, resp *http.Response, each func(scanEvent) bool) {
	t.Helper()
	sc := bufio.NewScanner(resp.Body)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			if event != "status" {
				t.Errorf("event %q", event)
			}
			var e scanEvent
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &e); err != nil {
				t.Fatalf("data %q: %v", line, err)
			}
			if !each(e) {
				return
			}
		}
	}
}

func TestScanEvents(t *testing.T) { eachBackend(t, 5*time.Millisecond, testScanEvents) }

func testScanEvents(t *testing.T, f *uiFixture) {
	ctx := context.Background()
	st := f.ts.store

	t.Run("a completed scan gets one event and the stream ends", func(t *testing.T) {
		resp, err := f.a.c.Get(f.ts.URL + "/sites/" + f.site + "/scans/" + f.scan + "/events")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		wantStatus(t, resp, http.StatusOK)
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			t.Errorf("Content-Type %q", ct)
		}
		var got []scanEvent
		readEvents(t, resp, func(e scanEvent) bool { got = append(got, e); return true })
		if len(got) != 1 || got[0].Status != store.StatusComplete || got[0].ScanID != f.scan || got[0].PagesTotal != got[0].PagesDone || got[0].PagesTotal == 0 {
			t.Errorf("events %+v", got)
		}
	})

	t.Run("a live scan streams queued, running with progress and audits in flight, complete, then ends", func(t *testing.T) {
		scan := store.Scan{ID: store.NewID(), SiteID: f.site, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: f.ts.now}
		if err := st.EnqueueScan(ctx, scan, store.KindScan, f.ts.now); err != nil {
			t.Fatal(err)
		}
		resp, err := f.a.c.Get(f.ts.URL + "/sites/" + f.site + "/scans/" + scan.ID + "/events")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var job store.Job
		var seen []store.ScanStatus
		var last scanEvent
		completed := false
		readEvents(t, resp, func(e scanEvent) bool {
			last = e
			if len(seen) == 0 || seen[len(seen)-1] != e.Status {
				seen = append(seen, e.Status)
			}
			switch {
			case e.Status == store.StatusQueued && job.ID == 0:
				if job, err = st.ClaimJob(ctx, store.KindScan, "w", f.ts.now.Add(time.Second), 0); err != nil {
					t.Fatal(err)
				}
				// Written before the scan runs, so that every running event carries it.
				if err := st.SetAuditsInFlight(ctx, job.Lease(), 3); err != nil {
					t.Fatal(err)
				}
				if err := st.StartScan(ctx, job.Lease(), 4, f.ts.now); err != nil {
					t.Fatal(err)
				}
				_, body := f.a.get("/sites/" + f.site + "/scans/" + scan.ID)
				contains(t, body, "0 of 4 audits done · 3 in flight")
			case e.Status == store.StatusRunning:
				if e.PagesTotal != 4 || e.PagesFailed != 0 || e.AuditsInFlight != 3 || e.Progress != "0 of 4 audits done · 3 in flight" {
					t.Errorf("running event %+v, want 4 audits, none failed, 3 in flight", e)
				}
				// The stream may have sent a second running event before this one was read;
				// the scan is completed once.
				if !completed {
					if err := st.CompleteScan(ctx, job.Lease(), store.ScanScores{}, f.ts.now); err != nil {
						t.Fatal(err)
					}
					completed = true
				}
			}
			return true // the server ends the stream itself
		})
		if fmt.Sprint(seen) != "[queued running complete]" || last.Status != store.StatusComplete {
			t.Errorf("statuses %v, last %+v", seen, last)
		}
	})

	t.Run("a scan waiting for its next attempt says why and until when, on the page and in the stream", func(t *testing.T) {
		scan := store.Scan{ID: store.NewID(), SiteID: f.site, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: f.ts.now}
		if err := st.EnqueueScan(ctx, scan, store.KindScan, f.ts.now); err != nil {
			t.Fatal(err)
		}
		job, err := st.ClaimJob(ctx, store.KindScan, "w", f.ts.now.Add(time.Second), 0)
		if err != nil {
			t.Fatal(err)
		}
		const reason = "PSI unavailable until 23 Nov 2026, 12:30 UTC: PSI answered 503 <three> times"
		runAt := f.ts.now.Add(30 * time.Minute).Truncate(time.Minute)
		if err := st.RetryJob(ctx, job.Lease(), runAt, reason); err != nil {
			t.Fatal(err)
		}
		_, body := f.a.get("/sites/" + f.site + "/scans/" + scan.ID)
		contains(t, body, "Waiting for the next try at <span data-wait-at><time datetime=\""+runAt.UTC().Format(time.RFC3339)+"\">"+runAt.UTC().Format("2 Jan 2006, 15:04")+" UTC</time></span>")
		contains(t, body, "PSI answered 503 &lt;three&gt; times")
		_, body = f.b.get("/sites/" + f.site + "/scans/" + scan.ID)
		if strings.Contains(body, "PSI answered") {
			t.Error("B sees the wait of A's scan")
		}

		resp, err := f.a.c.Get(f.ts.URL + "/sites/" + f.site + "/scans/" + scan.ID + "/events")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var first *scanEvent
		readEvents(t, resp, func(e scanEvent) bool {
			if first == nil {
				first = &e
				job, err := st.ClaimJob(ctx, store.KindScan, "w", f.ts.now.Add(time.Hour), 0)
				if err != nil {
					t.Fatal(err)
				}
				if err := st.StartScan(ctx, job.Lease(), 1, f.ts.now); err != nil {
					t.Fatal(err)
				}
				if err := st.CompleteScan(ctx, job.Lease(), store.ScanScores{}, f.ts.now); err != nil {
					t.Fatal(err)
				}
			} else if e.Waiting != nil && e.Status != store.StatusQueued {
				// The stream polls on its own ticker: on a loaded machine it may send a second
				// queued event, still waiting, before this callback claims the job. Once the
				// scan runs again, no event may say it waits.
				t.Errorf("a scan running again still waits: %+v", e)
			}
			return true
		})
		if first == nil || first.Waiting == nil || first.Waiting.Reason != reason || !first.Waiting.RunAt.Equal(runAt) {
			t.Errorf("first event %+v, want it waiting for %q", first, reason)
		}
	})

	t.Run("a scan whose site is deleted while it runs ends its stream saying so", func(t *testing.T) {
		site := store.Site{ID: store.NewID(), UserID: f.a.userID, Name: "Doomed", Domain: "doomed.example", CreatedAt: f.ts.now}
		if err := st.CreateSite(ctx, site); err != nil {
			t.Fatal(err)
		}
		scan := store.Scan{ID: store.NewID(), SiteID: site.ID, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: f.ts.now}
		if err := st.EnqueueScan(ctx, scan, store.KindScan, f.ts.now); err != nil {
			t.Fatal(err)
		}
		resp, err := f.a.c.Get(f.ts.URL + "/sites/" + site.ID + "/scans/" + scan.ID + "/events")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got []scanEvent
		readEvents(t, resp, func(e scanEvent) bool {
			if len(got) == 0 {
				if err := st.DeleteSite(ctx, f.a.userID, site.ID); err != nil {
					t.Fatal(err)
				}
			}
			got = append(got, e)
			return true // the server ends the stream itself
		})
		last := got[len(got)-1]
		if len(got) < 2 || got[0].Status != store.StatusQueued || last.Status != "deleted" || last.Message != "This site was deleted" {
			t.Errorf("events %+v, want queued then deleted with its message", got)
		}
	})

	t.Run("signed out, the stream is not served", func(t *testing.T) {
		resp, err := http.Get(f.ts.URL + "/sites/" + f.site + "/scans/" + f.scan + "/events")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.Request.URL.Path != "/login" {
			t.Errorf("ended at %s, want the login page", resp.Request.URL.Path)
		}
	})
}

func TestScanPageFailedWithPageErrors(t *testing.T) {
	eachBackend(t, 0, testScanPageFailedWithPageErrors)
}

func testScanPageFailedWithPageErrors(t *testing.T, f *uiFixture) {
	ctx := context.Background()
	st := f.ts.store
	scan := store.Scan{ID: store.NewID(), SiteID: f.site, Strategy: store.StrategyBoth, Trigger: store.TriggerWebhook, CreatedAt: f.ts.now}
	if err := st.EnqueueScan(ctx, scan, store.KindScan, f.ts.now); err != nil {
		t.Fatal(err)
	}
	job, err := st.ClaimJob(ctx, store.KindScan, "w", f.ts.now.Add(time.Second), 0)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.StartScan(ctx, job.Lease(), 4, f.ts.now))
	dns := "PSI request failed: dial tcp: lookup www.googleapis.com: no such host (gave up after 3 attempts)"
	for _, e := range []store.PageError{
		{ScanID: scan.ID, PagePath: "/", PageURL: "https://demo.sitepulse.test/", Strategy: "mobile", Error: "Lighthouse error NO_FCP <b>"},
		{ScanID: scan.ID, PagePath: "/", PageURL: "https://demo.sitepulse.test/", Strategy: "desktop", Error: dns},
		{ScanID: scan.ID, PagePath: "/about", PageURL: "https://demo.sitepulse.test/about", Strategy: "mobile", Error: dns},
	} {
		must(st.SavePageError(ctx, job.Lease(), e))
	}
	r := fixtureResults(t, "about.desktop")[0]
	r.PagePath = "/about"
	must(st.SavePageResult(ctx, job.Lease(), r))

	_, body := f.a.get("/sites/" + f.site + "/scans/" + scan.ID)
	contains(t, body, "1 done, 3 failed of 4 audits")
	contains(t, body, `<rect class="bar-done" width="1" height="1"></rect><rect class="bar-failed" x="1" width="3" height="1"></rect>`)

	must(st.FailScan(ctx, job.Lease(), "no page could be audited", f.ts.now))
	resp, body := f.a.get("/sites/" + f.site + "/scans/" + scan.ID)
	wantStatus(t, resp, http.StatusOK)
	for _, w := range []string{"This scan failed.</strong> No page could be audited.", "Audits that failed",
		"2 audits could not reach PageSpeed Insights (DNS lookup failed): check the network or PAGESPEED_API_URL.",
		"1 audit failed: the error is below.", "<details><summary>Error and pages</summary>", "NO_FCP &lt;b&gt;",
		`<span class="mono">/</span> desktop, <span class="mono">/about</span> mobile`, "by a publish"} {
		contains(t, body, w)
	}
	if strings.Contains(body, "scan.js") {
		t.Error("a finished scan loads the live-progress script")
	}
	_, body = f.a.get("/sites/" + f.site)
	contains(t, body, "failed")
	contains(t, body, "2 audits could not reach PageSpeed Insights (DNS lookup failed)")
	contains(t, body, `href="/sites/`+f.site+`/scans/`+scan.ID+`#errors"`)
}
