package handlers

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"sitepulse/scanner/lighthouse/lhtest"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// BenchmarkReadsPostgres measures a request end to end through the HTTP server on Postgres for
// the reads issue 25 trims: the site page, the export, the budget check and MCP's
// get_latest_scan. The demo site gets 20 completed scans of 50 pages, each audited mobile and
// desktop, so the site page's trend reads a full window.
func BenchmarkReadsPostgres(b *testing.B) {
	f := newAPIFixture(b, storetest.Postgres(b))
	a := f.a
	fixtures := fixtureResults(b, "home.mobile", "home.desktop", "about.mobile", "about.desktop", "blog.mobile", "blog.desktop")
	for s := 0; s < 20; s++ {
		var results = fixtures[:0:0]
		for p := 0; p < 50; p++ {
			for _, r := range fixtures[:2] {
				r.PagePath = fmt.Sprintf("/page-%02d", p)
				r.PageURL = "https://demo.sitepulse.test" + r.PagePath
				results = append(results, r)
			}
		}
		f.recordScan(b, a.siteID, results, f.now.Add(time.Duration(s+1)*time.Minute*5))
	}
	mcp := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_latest_scan","arguments":{"siteId":"` + a.siteID + `"}}}`
	cases := []struct {
		name, method, path, body string
		c                        cred
	}{
		{"site page", "GET", "/sites/" + a.siteID, "", cookie(a.session)},
		{"export csv", "GET", "/api/sites/" + a.siteID + "/export", "", cookie(a.session)},
		{"export json", "GET", "/api/sites/" + a.siteID + "/export?format=json", "", cookie(a.session)},
		{"budget check", "POST", "/api/external/budget-check", `{"siteId":"` + a.siteID + `"}`, bearer(a.apiKey)},
		{"MCP get_latest_scan", "POST", "/api/mcp", mcp, bearer(a.accessToken)},
	}
	for _, c := range cases {
		contentType := ""
		if c.body != "" {
			contentType = "application/json"
		}
		if resp, body := f.do(b, c.method, c.path, contentType, c.body, c.c); resp.StatusCode != 200 {
			b.Fatalf("%s: %d %.300s", c.name, resp.StatusCode, body)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f.do(b, c.method, c.path, contentType, c.body, c.c)
			}
		})
	}
}

// BenchmarkSitePagePostgres measures the site page on Postgres as a site's history grows: 10
// and 120 completed scans of 50 pages, each audited mobile and desktop (issue 25: the trend
// reads per-scan summaries, so the page's cost should not grow with history).
func BenchmarkSitePagePostgres(b *testing.B) {
	for _, scans := range []int{10, 120} {
		b.Run(fmt.Sprintf("scans=%d", scans), func(b *testing.B) {
			f := newAPIFixture(b, storetest.Postgres(b))
			a := f.a
			fixtures := fixtureResults(b, "home.mobile", "home.desktop")
			results := fixtures[:0:0]
			for p := 0; p < 50; p++ {
				for _, r := range fixtures {
					r.PagePath = fmt.Sprintf("/page-%02d", p)
					r.PageURL = "https://demo.sitepulse.test" + r.PagePath
					results = append(results, r)
				}
			}
			for s := 0; s < scans; s++ {
				f.recordScan(b, a.siteID, results, f.now.Add(time.Duration(s+1)*time.Minute*5))
			}
			path := "/sites/" + a.siteID
			if resp, body := f.do(b, "GET", path, "", "", cookie(a.session)); resp.StatusCode != 200 {
				b.Fatalf("%d %.300s", resp.StatusCode, body)
			}
			b.ReportAllocs()
			for b.Loop() {
				f.do(b, "GET", path, "", "", cookie(a.session))
			}
		})
	}
}

// BenchmarkComparePage measures the compare page's server time (issues 33 and 42): the handler,
// from the request to the rendered page, on memory and on Postgres, for two runs of a page of 100
// requests each (the fixtures' home page on mobile before and after the publish, its requests
// repeated to 100 by lhtest.Repeated) and of 300 requests each (testdata/why/gallery-300.mobile: two
// real Lighthouse runs of a page that makes 300 requests) with their pictures: the pairs' read,
// analysis.Compare, the pictures' lists, the waterfall (40 rows drawn), the phases and the
// template.
func BenchmarkComparePage(b *testing.B) {
	hundred := func(b *testing.B) (before, after store.PageResult) {
		before, after = lhtest.Explained(b, "../testdata/psi-before/home.mobile.json"), lhtest.Explained(b, "../testdata/psi/home.mobile.json")
		before.Explain, after.Explain = lhtest.Repeated(before.Explain, 100), lhtest.Repeated(after.Explain, 100)
		return before, after
	}
	gallery := func(b *testing.B) (before, after store.PageResult) {
		return lhtest.Explained(b, "../testdata/why/gallery-300.mobile/before.json"), lhtest.Explained(b, "../testdata/why/gallery-300.mobile/after.json")
	}
	for _, size := range []struct {
		requests int
		path     string
		runs     func(b *testing.B) (before, after store.PageResult)
	}{{100, "/", hundred}, {300, "/gallery", gallery}} {
		for _, be := range storetest.Backends(b) {
			b.Run(fmt.Sprintf("requests=%d/%s", size.requests, be.Name), func(b *testing.B) {
				f := newAPIFixture(b, be.Open(b))
				site := f.newSite(b, f.a.userID, fmt.Sprintf("%d requests", size.requests))
				before, after := size.runs(b)
				if n := len(after.Explain.Requests); n != size.requests || len(before.Explain.Requests) != size.requests {
					b.Fatalf("runs of %d and %d requests, want %d", len(before.Explain.Requests), n, size.requests)
				}
				from := f.recordScan(b, site, []store.PageResult{before}, f.now.Add(-time.Hour))
				to := f.recordScan(b, site, []store.PageResult{after}, f.now)
				req := httptest.NewRequest("GET", compareURL(site, from, to, size.path, store.StrategyMobile), nil)
				req.AddCookie(&http.Cookie{Name: "session", Value: f.a.session})
				serve := func() *httptest.ResponseRecorder {
					rec := httptest.NewRecorder()
					f.Config.Handler.ServeHTTP(rec, req)
					return rec
				}
				if rec := serve(); rec.Code != 200 || !strings.Contains(rec.Body.String(), "requests are not drawn") {
					b.Fatalf("compare page: %d %.300s", rec.Code, rec.Body.String())
				}
				b.ReportAllocs()
				for b.Loop() {
					serve()
				}
			})
		}
	}
}
