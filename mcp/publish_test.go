package mcp

import (
	"context"
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
			j, err := f.st.ClaimJob(ctx, store.KindScan, "w", f.now)
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
