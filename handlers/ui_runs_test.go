package handlers

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"sitepulse/store"
)

// TestUIMedianOfRuns: a page result kept as the median of re-audits says so on the page view;
// one audited once says nothing of runs.
func TestUIMedianOfRuns(t *testing.T) { eachBackend(t, 0, testUIMedianOfRuns) }

func testUIMedianOfRuns(t *testing.T, f *uiFixture) {
	ctx := context.Background()
	st := f.ts.store
	sc := store.Scan{ID: store.NewID(), SiteID: f.site, Strategy: store.StrategyBoth, Trigger: store.TriggerManual, CreatedAt: f.ts.now}
	if err := st.EnqueueScan(ctx, sc, store.KindScan, f.ts.now); err != nil {
		t.Fatal(err)
	}
	j, err := st.ClaimJob(ctx, store.KindScan, "w", f.ts.now, 0)
	if err != nil || j.ScanID != sc.ID {
		t.Fatalf("claim: %v %s", err, j.ScanID)
	}
	prev, err := st.PageResult(ctx, f.a.userID, f.scan, "/pricing", "mobile")
	if err != nil {
		t.Fatal(err)
	}
	confirmed := prev
	confirmed.Runs = 3
	once, _ := st.PageResult(ctx, f.a.userID, f.scan, "/pricing", "desktop")
	for _, r := range []store.PageResult{confirmed, once} {
		if err := st.SavePageResult(ctx, j.Lease(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CompleteScan(ctx, j.Lease(), store.ScanScores{}, f.ts.now); err != nil {
		t.Fatal(err)
	}
	page := func(strategy string) string {
		resp, body := f.a.get("/sites/" + f.site + "/scans/" + sc.ID + "/page?" + url.Values{"path": {"/pricing"}, "strategy": {strategy}}.Encode())
		wantStatus(t, resp, http.StatusOK)
		return body
	}
	contains(t, page("mobile"), "median of 3 runs")
	if body := page("desktop"); strings.Contains(body, "median of") {
		t.Error("a page audited once says it is a median")
	}
}
