package mcp

import (
	"context"
	"strings"
	"testing"
	"time"

	"sitepulse/store"
	"sitepulse/store/storetest"
)

// TestRegressionReportSaysWhoPublished: get_regression_report names the publish that started the
// latest scan (the demo's, by Ana), and says null for both when no publish started it.
func TestRegressionReportSaysWhoPublished(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newFixture(t, b.Open(t))
			// 2025-03-26 keeps the payload it was promised: the two fields came later.
			old := payload(t, f.tool(t, f.userID, "get_regression_report", map[string]any{"siteId": f.demo.SiteID}))
			if _, ok := old["publishedBy"]; ok {
				t.Errorf("a 2025-03-26 client got publishedBy: %v", old)
			}
			got := payload(t, f.reportAt20251125(t, f.userID, f.demo.SiteID))
			if got["publishedBy"] != "Ana" || got["publishedAt"] != f.now.Add(-time.Hour).Format(time.RFC3339) {
				t.Errorf("publishedBy %v, publishedAt %v; want Ana at %s", got["publishedBy"], got["publishedAt"], f.now.Add(-time.Hour).Format(time.RFC3339))
			}

			// A scan of the other site that no publish started.
			ctx := context.Background()
			sc := store.Scan{ID: store.NewID(), SiteID: f.otherSite, Strategy: store.StrategyMobile, Trigger: store.TriggerManual, CreatedAt: f.now}
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(f.st.EnqueueScan(ctx, sc, store.KindScan, f.now))
			j, err := f.st.ClaimJob(ctx, store.KindScan, "w", f.now, 0)
			must(err)
			must(f.st.StartScan(ctx, j.Lease(), 1, f.now))
			perf := 90
			must(f.st.SavePageResult(ctx, j.Lease(), store.PageResult{PagePath: "/", PageURL: "https://other.test/", Strategy: "mobile", Scores: store.PageScores{Performance: &perf}}))
			must(f.st.CompleteScan(ctx, j.Lease(), store.ScanScores{Performance: &perf}, f.now))
			got = payload(t, f.reportAt20251125(t, f.otherUser, f.otherSite))
			if v, ok := got["publishedBy"]; !ok || v != nil {
				t.Errorf("publishedBy = %v (present %t), want null", v, ok)
			}
			if v, ok := got["publishedAt"]; !ok || v != nil {
				t.Errorf("publishedAt = %v (present %t), want null", v, ok)
			}
		})
	}
}

// reportAt20251125 calls get_regression_report of siteID as userID at 2025-11-25, an era whose
// payload has publishedBy and publishedAt.
func (f *fixture) reportAt20251125(t *testing.T, userID, siteID string) map[string]any {
	t.Helper()
	_, m := f.send(t, userID, map[string]string{"Mcp-Protocol-Version": "2025-11-25"},
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_regression_report","arguments":{"siteId":"`+siteID+`"}}}`)
	r, ok := m["result"].(map[string]any)
	if !ok {
		t.Fatalf("get_regression_report: %v", m)
	}
	return r
}

// TestRegressionReportSaysConfirmed: from 2025-06-18 on each regression says whether it was
// confirmed, that is whether the page was audited again (REGRESSION_CONFIRM_RUNS) and the kept
// median run still regressed: runs > 1. 2025-03-26 keeps the interface's payload, without it.
func TestRegressionReportSaysConfirmed(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newFixture(t, b.Open(t))
			ctx := context.Background()
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			scan := func(at time.Time, results ...store.PageResult) {
				sc := store.Scan{ID: store.NewID(), SiteID: f.otherSite, Strategy: store.StrategyMobile, Trigger: store.TriggerManual, CreatedAt: at}
				must(f.st.EnqueueScan(ctx, sc, store.KindScan, at))
				j, err := f.st.ClaimJob(ctx, store.KindScan, "w", at, 0)
				must(err)
				must(f.st.StartScan(ctx, j.Lease(), len(results), at))
				for _, r := range results {
					must(f.st.SavePageResult(ctx, j.Lease(), r))
				}
				must(f.st.CompleteScan(ctx, j.Lease(), store.ScanScores{}, at))
			}
			page := func(path string, perf, runs int) store.PageResult {
				return store.PageResult{PagePath: path, PageURL: "https://other.test" + path, Strategy: "mobile", Runs: runs, Scores: store.PageScores{Performance: &perf}}
			}
			scan(f.now.Add(-2*time.Hour), page("/a", 90, 1), page("/b", 90, 1))
			scan(f.now.Add(-time.Hour), page("/a", 50, 3), page("/b", 60, 1))

			got := payload(t, f.reportAt20251125(t, f.otherUser, f.otherSite))
			regs, _ := got["regressions"].([]any)
			if len(regs) != 2 {
				t.Fatalf("regressions %v, want two", got["regressions"])
			}
			for i, want := range []struct {
				path      string
				confirmed bool
				runs      float64
			}{{"/a", true, 3}, {"/b", false, 1}} {
				r := regs[i].(map[string]any)
				if r["pagePath"] != want.path || r["confirmed"] != want.confirmed || r["runs"] != want.runs {
					t.Errorf("regression %d = %v, want %s confirmed %t after %v runs", i, r, want.path, want.confirmed, want.runs)
				}
			}
			old := payload(t, f.tool(t, f.otherUser, "get_regression_report", map[string]any{"siteId": f.otherSite}))
			for _, r := range old["regressions"].([]any) {
				if _, ok := r.(map[string]any)["confirmed"]; ok {
					t.Errorf("a 2025-03-26 client got confirmed: %v", r)
				}
			}
		})
	}
}

// TestTrendMarksPublishes: from 2025-06-18 on get_trend carries the site's publishes since its
// first scan, and the trend view's chart (the web UI's chart code) marks each, titled with who
// published; 2025-03-26 keeps the interface's payload.
func TestTrendMarksPublishes(t *testing.T) {
	for _, b := range storetest.Backends(t) {
		t.Run(b.Name, func(t *testing.T) {
			f := newFixture(t, b.Open(t))
			old := payload(t, f.tool(t, f.userID, "get_trend", map[string]any{"siteId": f.demo.SiteID}))
			if _, ok := old["publishes"]; ok {
				t.Errorf("a 2025-03-26 client got publishes: %v", old["publishes"])
			}
			_, m := f.send(t, f.userID, map[string]string{"Mcp-Protocol-Version": "2025-11-25"},
				`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_trend","arguments":{"siteId":"`+f.demo.SiteID+`"}}}`)
			r, _ := m["result"].(map[string]any)
			got := payload(t, r)
			pubs, _ := got["publishes"].([]any)
			if len(pubs) != 1 {
				t.Fatalf("publishes %v, want the demo's one", got["publishes"])
			}
			p := pubs[0].(map[string]any)
			if p["publishedBy"] != "Ana" || p["publishedAt"] != f.now.Add(-time.Hour).Format(time.RFC3339) {
				t.Errorf("publish %v, want Ana at %s", p, f.now.Add(-time.Hour).Format(time.RFC3339))
			}
			view, _ := r["_meta"].(map[string]any)[metaView].(map[string]any)
			chart, _ := view["chart"].(string)
			if !strings.Contains(chart, `<g class="publish">`) || !strings.Contains(chart, "<title>Published by Ana, ") {
				t.Errorf("the trend chart marks no publish: %.300s", chart)
			}
		})
	}
}
