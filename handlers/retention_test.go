package handlers

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"sitepulse/handlers/svg"
	"sitepulse/scanner/analysis"
	"sitepulse/store"
	"sitepulse/store/storetest"
)

// Retention (issue 25): pruning old scans' page details leaves the site page, its trend
// included, exactly as it was; a pruned scan's page says its details were removed by the
// workspace's retention setting, and an MCP tool asked for its pages says so too.
func TestRetentionPrunedScan(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			ctx := context.Background()
			st := b.Open(t)
			f := newAPIFixture(t, st)
			a := f.a
			results := fixtureResults(t, "home.mobile", "home.desktop", "about.mobile")
			var old []string
			for i := range 3 {
				old = append(old, f.recordScan(t, a.siteID, results, f.now.Add(-time.Duration(300-i)*24*time.Hour)))
			}
			must(t, st.SetRetention(ctx, a.userID, 90))
			_, before := f.do(t, "GET", "/sites/"+a.siteID, "", "", cookie(a.session))
			if !strings.Contains(before, "of the last") {
				t.Fatalf("no trend on the site page: %.300s", before)
			}
			report := func() (string, string) {
				call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"generate_client_report","arguments":{"scanId":"` + old[0] + `"}}}`
				_, body := f.do(t, "POST", "/api/mcp", "application/json", call, bearer(a.accessToken))
				_, link, _ := strings.Cut(body, "/report/")
				token, _, _ := strings.Cut(link, `\"`)
				return token, body
			}
			madeBefore, body := report()
			if madeBefore == "" || strings.Contains(body, `"isError":true`) {
				t.Fatalf("report of an old scan before pruning: %.300s", body)
			}
			n, err := st.PruneDetails(ctx, f.now, store.PruneBatch)
			must(t, err)
			if n == 0 {
				t.Fatal("nothing pruned")
			}
			_, after := f.do(t, "GET", "/sites/"+a.siteID, "", "", cookie(a.session))
			if after != before {
				t.Error("the site page changed when old scans' page details were pruned")
			}
			resp, body := f.do(t, "GET", "/sites/"+a.siteID+"/scans/"+old[0], "", "", cookie(a.session))
			if resp.StatusCode != 200 {
				t.Fatalf("pruned scan page: %d", resp.StatusCode)
			}
			for _, want := range []string{"page details were removed", "retention setting", "kept 90 days", "Scores"} {
				if !strings.Contains(body, want) {
					t.Errorf("the pruned scan's page lacks %q", want)
				}
			}
			resp, body = f.do(t, "GET", "/sites/"+a.siteID+"/scans/"+old[0]+"/page?path=/&strategy=mobile", "", "", cookie(a.session))
			if resp.StatusCode != 410 || !strings.Contains(body, "retention setting") {
				t.Errorf("a pruned scan's page detail: %d %.200s", resp.StatusCode, body)
			}
			// What was made of the scan before says its details are gone rather than showing
			// empty tables; nothing new is made of it.
			resp, body = f.do(t, "GET", "/api/sites/"+a.siteID+"/export?scanId="+old[0], "", "", cookie(a.session))
			if resp.StatusCode != 410 || !strings.Contains(body, "retention setting") {
				t.Errorf("export of a pruned scan: %d %.200s", resp.StatusCode, body)
			}
			resp, body = f.do(t, "GET", "/report/"+madeBefore, "", "", cred{})
			if resp.StatusCode != 410 || !strings.Contains(body, "retention setting") {
				t.Errorf("a report of a scan pruned since: %d %.300s", resp.StatusCode, body)
			}
			if token, body := report(); token != "" || !strings.Contains(body, `"isError":true`) || !strings.Contains(body, "retention setting") {
				t.Errorf("generate_client_report of a pruned scan: %.300s", body)
			}
			for _, tool := range []string{"get_page_details", "get_lcp_elements"} {
				call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{"scanId":"` + old[0] + `"}}}`
				_, body = f.do(t, "POST", "/api/mcp", "application/json", call, bearer(a.accessToken))
				if !strings.Contains(body, `"isError":true`) || !strings.Contains(body, "retention setting") {
					t.Errorf("%s of a pruned scan: %.300s", tool, body)
				}
			}
		})
	}
}

// A summary answers what the trend and the strategy cards computed from page rows before:
// the site's vital (worst page, mobile when scanned) and each strategy's scores and worst pages.
func TestSummaryMatchesPageRows(t *testing.T) {
	all := fixtureResults(t, "home.mobile", "home.desktop", "about.mobile", "about.desktop", "blog.mobile", "blog.desktop")
	for _, results := range [][]store.PageResult{all, all[:1], {all[1], all[3]}, all[2:]} {
		sum := store.Summarize(results)
		for _, m := range append(svg.TrendVitals, "inp", "fcp", "ttfb", "speedIndex", "tti") {
			got, want := sum.SiteVital(m), analysis.SiteVital(results, m)
			if (got == nil) != (want == nil) || got != nil && *got != *want {
				t.Errorf("%d results, %s: summary %v, page rows %v", len(results), m, got, want)
			}
		}
		for _, sv := range strategyViews(sum) {
			var mine []store.PageResult
			for _, r := range results {
				if r.Strategy == sv.Strategy {
					mine = append(mine, r)
				}
			}
			if got, want := sv.Scores, analysis.ScanScores(mine); !reflect.DeepEqual(got, want) || sv.Pages != len(mine) {
				t.Errorf("%s scores %+v of %d pages, page rows give %+v of %d", sv.Strategy, got, sv.Pages, want, len(mine))
			}
			for _, vv := range sv.Vitals {
				var worst *float64
				path := ""
				for _, r := range mine {
					if x := analysis.VitalOf(r.CoreWebVitals, vv.Metric); x != nil && (worst == nil || *x > *worst) {
						worst, path = x, r.PagePath
					}
				}
				if (worst == nil) != (vv.Value == nil) || worst != nil && (*worst != *vv.Value || path != vv.PagePath) {
					t.Errorf("%s %s: summary %v on %q, page rows %v on %q", sv.Strategy, vv.Metric, vv.Value, vv.PagePath, worst, path)
				}
			}
		}
	}
}
